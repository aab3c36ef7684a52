/* train: the training loop; see train.h.
 *
 * Start-up resolves the configuration (train_conf.c), opens the dataset,
 * builds the model, the item table and the dense optimizer, and resumes
 * from a checkpoint if asked (train_ckpt.c). The loop runs global steps
 * s = first .. total - 1: the planner says which sequences of the step's
 * global batch this rank trains on (and, with parallel.overlap, which ones
 * it trains on at s + 1, prepared during step s), train_step() runs the
 * step (one loss on any number of ranks), then come the progress line
 * and, at the end of an epoch, validation, then the checkpoint (which
 * records it). The run ends with validation, its checkpoint and test, or
 * early on a signal (preempt.c) with a checkpoint. */
#include "train/train.h"
#include "train/train_dyn.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/blas.h"
#include "backend/devstats.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/metrics.h"
#include "cli/banner.h"
#include "comm/comm_fail.h"
#include "eval/eval.h"
#include "eval/eval_ranking.h"
#include "train/checkpoint.h"
#include "train/checkpoint_dyn.h"
#include "train/train_ckpt.h"
#include "train/train_report.h"
#include "train/guard.h"
#include "train/preempt.h"
#include "train/step_feat.h"
#include "train/step_rank.h"
#include "train/watchdog.h"

/* --- start-up ------------------------------------------------------------------- */

/* Open data.path: rank 0 first, so that a bad file gives one message; then
 * the others (a rank that cannot see the file is named). */
static void open_dataset(struct trainer *tr)
{
    char err[1024], msg[1100];
    const char *path = tr->conf.data_path;
    int bad = tr->c->rank == 0 && dataset_open(&tr->ds, path, err, sizeof err);
    snprintf(msg, sizeof msg, "data.path: %s", err);
    comm_fail_agree(tr->c, bad, msg);
    bad = tr->c->rank != 0 && dataset_open(&tr->ds, path, err, sizeof err);
    snprintf(msg, sizeof msg, "data.path: %s", err);
    comm_fail_agree(tr->c, bad, msg);
}

/* embedding.placement: where the item table's shard and its optimizer
 * state live (NULL: host memory). device needs a device backend (CUDA, or
 * the fake device) and room: the shard and its state within half of the
 * device's free memory divided among the ranks sharing the device,
 * agreed over all ranks. auto = host for now: the device path is not yet
 * verified on a GPU. */
static const struct backend_ops *table_placement(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    if (cf->placement != PLACE_DEVICE) {
        if (cf->placement == PLACE_AUTO && !backend_is_host(tr->be))
            log_info("notice: embedding.placement=auto: host memory (the device placement is "
                     "not yet verified on a GPU; ask for it with embedding.placement=device)");
        return NULL;
    }
    if (backend_is_host(tr->be))
        fatal("embedding.placement = device needs a device backend (device.type=cuda, or auto "
              "with a GPU, or the fake device); this rank computes on the %s backend: use "
              "embedding.placement=host or auto",
              tr->be->name);
    const int64_t slots = tr->ds.num_items / tr->c->g[COMM_EMB].size + 1;
    const int64_t sf = emb_optim_state_floats(cf->emb_optim.kind, cf->d);
    const double need = (double)slots * (double)(cf->d + sf) * 4.0 +
                        (cf->emb_optim.kind == EMB_OPT_ADAM ? 8.0 * (double)slots : 0.0);
    size_t free_b = 0, total_b = 0;
    char err[256];
    if (tr->be->device_memory(&free_b, &total_b, err, sizeof err))
        fatal("embedding.placement = device: %s", err);
    const int sharers = tr->dev.sharers > 1 ? tr->dev.sharers : 1;
    const double room = 0.5 * (double)free_b / sharers;
    int64_t short_here = need > room;
    if (comm_allreduce_max_i64(tr->c, short_here))
        fatal("embedding.placement = device: the item table's shard and its %s state need "
              "%.3g GiB per rank, more than %.3g GiB (half of the %.3g GiB free on a rank's "
              "device, shared by %d rank%s): use embedding.placement=host, or more devices (a "
              "cache of hot rows for tables larger than device memory does not exist yet)",
              emb_optim_name(cf->emb_optim.kind), need / 1073741824.0, room / 1073741824.0,
              (double)free_b / 1073741824.0, sharers, sharers == 1 ? "" : "s");
    log_info("embedding.placement: device (%.3f GiB per rank: the shard and its %s state)",
             need / 1073741824.0, emb_optim_name(cf->emb_optim.kind));
    return tr->be;
}

/* parallel.transport = copy-engine | kernel: the rows and gradients of the
 * tables in device memory go through CUDA IPC between the ranks of a node
 * too (emb_ipc.c), MPI between nodes. auto leaves them on MPI (the dense
 * all-reduce alone takes IPC): this path is not yet verified on a GPU.
 * Collective. */
static void table_transport(struct trainer *tr)
{
    const char *tp = tr->conf.transport;
    const int kernel = !strcmp(tp, "kernel");
    if (!kernel && strcmp(tp, "copy-engine") != 0)
        return;
    int n = 0;
    for (int i = 0; i < tr->reg.n; i++) {
        struct emb_table *t = &tr->reg.tables[i];
        if (backend_is_host(t->be) || t->G < 2)
            continue;
        char err[512], msg[700];
        int bad = emb_ipc_init(t, tr->c, kernel, err, sizeof err);
        snprintf(msg, sizeof msg, "parallel.transport = %s: embedding table '%s': %s", tp,
                 t->conf.name, err);
        comm_fail_agree(tr->c, bad, msg);
        n++;
    }
    int64_t local = 0;
    for (int p = 0; p < tr->c->g[COMM_EMB].size; p++)
        local += p != tr->c->g[COMM_EMB].rank && !comm_peer_remote(tr->c, COMM_EMB, p);
    if (n)
        log_info("parallel.transport: %s: embedding rows and gradients of %d device table%s "
                 "through CUDA IPC to %lld peer%s on this node, MPI to the others", tp, n,
                 n == 1 ? "" : "s", (long long)local, local == 1 ? "" : "s");
    else
        log_info("parallel.transport: %s: embedding exchanges by MPI (no table in device memory "
                 "shared by several ranks; embedding.placement=device moves them to IPC)", tp);
}

void trainer_check_table(const struct trainer *tr, const struct emb_table_conf *ec)
{
    if (ec->dyn.on)
        return; /* a pool that grows to embedding.capacity (train_dyn_describe) */
    const int64_t G = ec->replicated ? 1 : tr->c->g[COMM_EMB].size;
    const int width = ec->subspace_k > 0 ? ec->subspace_k : ec->dim;
    const double slots = (double)(ec->rows / G + 1);
    const double bytes = slots * (double)(width + emb_optim_state_floats(ec->optim.kind, width)) *
                             4.0 + (ec->optim.kind == EMB_OPT_ADAM ? 8.0 * slots : 0.0);
    const double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (mem > 0 && bytes > mem) {
        const int items = !strcmp(ec->name, "items");
        fatal("data.path = %s: %s = %lld: table '%s' needs %.4g GiB per rank (%.0f rows of %d "
              "floats and the %s state%s), more than this node's %.4g GiB of memory",
              tr->conf.data_path, items ? "attribute num_items" : "attribute cardinality - 1",
              (long long)ec->rows, ec->name, bytes / 1073741824.0, slots, width,
              emb_optim_name(ec->optim.kind), ec->replicated ? ", replicated" : "",
              mem / 1073741824.0);
    }
}

void trainer_open(struct trainer *tr)
{
    struct train_conf *cf = &tr->conf;
    char err[1024] = "";
    int bad = train_conf_check(tr->p, tr->c->size, err, sizeof err) ||
              train_conf_resolve(tr->p, tr->c->size, cf, err, sizeof err);
    comm_fail_agree(tr->c, bad, err); /* every rank finds the same */
    if (comm_setup_groups(tr->c, cf->embedding_group, err, sizeof err))
        fatal("%s", err); /* checked above */
    open_dataset(tr);
    if (cf->task.type == TASK_RANKING)
        return; /* ranking's split: trainer_build, after the task's set-up */
    tr->n_train = split_train_users(&tr->ds, cf->split, &tr->train_users);
    snprintf(err, sizeof err, "%s: no user has enough events to train on (need >= %d)",
             cf->data_path, split_holdout(cf->split) + 2);
    comm_fail_agree(tr->c, tr->n_train == 0, err);
}

void trainer_setup(struct trainer *tr)
{
    trainer_open(tr);
    trainer_build(tr);
}

void trainer_build(struct trainer *tr)
{
    struct train_conf *cf = &tr->conf;
    char err[1024];
    tr->with_ts = cf->use_timestamps && tr->ds.has_timestamps;
    cf->model.time_bias = tr->with_ts;
    device_select(tr->c, tr->p, &tr->dev);
    tr->be = tr->dev.be;
    int threads = blas_set_threads(tr->c->g[COMM_NODE].size);
    log_info("backend %s: %d BLAS thread%s per rank (%d rank%s on this node)", tr->be->name,
             threads, threads == 1 ? "" : "s", tr->c->g[COMM_NODE].size,
             tr->c->g[COMM_NODE].size == 1 ? "" : "s");
    task_setup_conf(tr);
    step_feat_setup(tr); /* before the model: contextual tokens are positions */
    task_setup_model(tr);
    if (model_init(&tr->m, &cf->model, tr->be, cf->seed, err, sizeof err))
        fatal("%s", err);
    struct emb_table_conf ec = {.rows = tr->ds.num_items, .dim = cf->d, .init = EMB_INIT_NORMAL,
                                .init_scale = cf->emb_init_std, .seed = cf->seed,
                                .optim = cf->emb_optim, .placement = table_placement(tr)};
    snprintf(ec.name, sizeof ec.name, "items");
    ec.rows_codec = cf->rows_codec;
    ec.grads_codec = cf->grads_codec;
    ec.subspace_k = cf->subspace_k;
    ec.subspace_identity = cf->subspace_identity;
    ec.dyn = cf->dyn;
    if (cf->node_size > 0) /* debug.node_size: the byte counters' nodes */
        comm_set_node_size(tr->c, (int)cf->node_size);
    trainer_check_table(tr, &ec);
    tr->items = emb_registry_add(&tr->reg, tr->c, &ec);
    step_feat_tables(tr);
    train_dyn_describe(tr);
    table_transport(tr);
    task_setup_init(tr);
    dense_optim_init(&tr->optim, &cf->dense_optim, &tr->m);
    train_step_init(tr);
    if (cf->task.type == TASK_RANKING) { /* the retrieval split: trainer_open */
        char err[8192];
        tr->n_train = rsplit_train_users(&tr->rsplit, &tr->ds, &tr->train_users);
        snprintf(err, sizeof err, "%s: no user has a training event under data.split = %s",
                 cf->data_path, params_str(tr->p, P_data_split));
        comm_fail_agree(tr->c, tr->n_train == 0, err); /* every rank finds the same */
    }
}

void trainer_free(struct trainer *tr)
{
    watchdog_stop();
    train_dyn_view_end(tr); /* recommend, score, export: the dense view of a dynamic table */
    train_step_free(tr);
    dense_optim_free(&tr->optim);
    emb_registry_free(&tr->reg);
    step_feat_teardown(tr);
    task_teardown(tr);
    model_free(&tr->m);
    free(tr->train_users);
    dataset_close(&tr->ds);
    steptime_free(&tr->st);
    if (tr->metrics)
        fclose(tr->metrics);
    tr->metrics = NULL;
}

/* train.keep_best: the best validation's checkpoint, DIR/best.h5 */
static void best_path(const struct trainer *tr, char *path, size_t len)
{
    snprintf(path, len, "%s/best.h5", tr->conf.checkpoint_dir);
}

/* Validation after `epochs` epochs; keeps the best NDCG@10 (ranking:
 * train.select's AUC; and with train.keep_best its checkpoint). */
static void validate(struct trainer *tr, int64_t epochs, double loss)
{
    struct eval_result val;
    watchdog_beat("in", "validation");
    eval_run(tr, 0, &val);
    train_report_eval(tr, "val", epochs, &val, loss);
    tr->val_epoch = epochs;
    if (eval_select(tr, &val) > tr->best_val) {
        tr->best_val = eval_select(tr, &val);
        tr->best_epoch = epochs;
        if (tr->conf.keep_best) {
            char path[4200];
            best_path(tr, path, sizeof path);
            checkpoint_write(tr, path);
            log_info("keep_best: validation %s %.4f at epoch %lld: %s", eval_select_name(tr),
                     eval_select_value(tr, tr->best_val), (long long)epochs, path);
        }
    }
}

/* train.keep_best: the last step's test is reported as test-last, then the
 * best validation's checkpoint is loaded and tested (into test). */
static void test_best(struct trainer *tr, struct eval_result *test, double loss)
{
    train_report_eval(tr, "test-last", tr->epoch, test, loss);
    const int64_t step = tr->step, epoch = tr->epoch;
    char path[4200];
    best_path(tr, path, sizeof path);
    checkpoint_read(tr, path);
    log_info("keep_best: testing %s (epoch %lld, step %lld)", path, (long long)tr->best_epoch,
             (long long)tr->step);
    eval_run(tr, 1, test);
    train_report_eval(tr, "test", tr->best_epoch, test, loss);
    tr->step = step;
    tr->epoch = epoch;
}

/* The test after the last step and its validation (and the popularity
 * baseline). */
static void final_evaluation(struct trainer *tr, struct eval_result *test, double loss)
{
    watchdog_beat("in", "the test evaluation");
    eval_run(tr, 1, test);
    if (tr->conf.keep_best)
        test_best(tr, test, loss);
    else
        train_report_eval(tr, "test", tr->epoch, test, loss);
    if (tr->conf.baseline && tr->conf.task.type == TASK_RANKING) {
        static const char *split[4] = {"test-baseline-global", "test-baseline-item",
                                       "test-baseline-user", "test-baseline-user+item"};
        struct rank_metrics base[4];
        watchdog_beat("in", "the baselines");
        eval_ranking_baselines(tr, 1, base);
        for (int m = 0; m < 4; m++) {
            struct eval_result r = {.ranking = 1, .k = base[m]};
            train_report_eval(tr, split[m], tr->epoch, &r, 0);
        }
    } else if (tr->conf.baseline) {
        struct eval_result pop = {0};
        eval_popular(tr, 1, &pop.r);
        train_report_eval(tr, "test-popular", tr->epoch, &pop, 0);
    }
}

/* A run stopped by signal sig after tr->step: its checkpoint (save: not
 * yet written), then the metrics line. */
static void report_stop(struct trainer *tr, int sig, double loss, int save)
{
    if (save)
        train_ckpt_save(tr);
    struct metrics_line l;
    metrics_begin(&l, "stop");
    metrics_int(&l, "epoch", tr->epoch);
    metrics_int(&l, "step", tr->step);
    metrics_num(&l, "loss", loss);
    metrics_num(&l, "samples_per_s", 0);
    metrics_num(&l, "tokens_per_s", 0);
    metrics_int(&l, "signal", sig);
    metrics_int(&l, "exit_code", PREEMPT_EXIT_CODE);
    metrics_int(&l, "checkpoint", tr->conf.checkpoint_dir[0] ? 1 : 0);
    metrics_end(&l, tr->metrics);
}

/* --- the loop ---------------------------------------------------------------- */

/* Throughput counters of a logging interval. */
struct loop_clock {
    double start, last;     /* run start, last progress line */
    int64_t first_step;     /* the step this run started at */
    struct interval iv;     /* this interval's work (seconds set at the line) */
    struct split_stats split; /* this interval's */
};

/* After step tr->step: the progress line every train.log_every steps (and
 * at the end), which is also when balance_adapt learns. */
static void after_step(struct trainer *tr, struct planner *pl, struct loop_clock *lc,
                       struct step_stats *stats, double loss, int64_t total)
{
    const struct train_conf *cf = &tr->conf;
    if (steptime_trace_write(&tr->st, tr->c, cf->trace, 0))
        log_info("trace: %s (%lld steps; open in https://ui.perfetto.dev)", cf->trace,
                 (long long)cf->trace_steps);
    if (tr->step % cf->log_every != 0 && tr->step != total)
        return;
    steptime_collect(&tr->st, tr->c, stats);
    planner_adapt(pl, tr, stats);
    double now = clock_seconds();
    double eta = (now - lc->start) / (double)(tr->step - lc->first_step) *
                 (double)(total - tr->step);
    lc->iv.seconds = now - lc->last;
    train_report_progress(tr, stats, loss, &lc->iv, eta, total, &lc->split);
    lc->last = now;
    lc->iv = (struct interval){0};
}

/* After step tr->step of S per epoch: at the end of an epoch due for
 * validation (train.eval_every; not the last step's: the final one), the
 * validation; 1 when train.patience ends the run there. */
static int epoch_end(struct trainer *tr, int64_t S, int64_t total, double loss,
                     struct loop_clock *lc)
{
    const struct train_conf *cf = &tr->conf;
    const int64_t done = tr->step / S; /* epochs completed */
    if (tr->step % S != 0 || cf->eval_every <= 0 || done % cf->eval_every != 0 ||
        tr->step >= total)
        return 0;
    double t_eval = clock_seconds();
    validate(tr, done, loss);
    lc->last += clock_seconds() - t_eval; /* throughput counts training only */
    struct devstats skip; /* the device counters count training only */
    devstats_take(&skip);
    if (cf->patience > 0 && done - tr->best_epoch >= cf->patience * cf->eval_every) {
        log_info("patience: no better validation %s in %lld validations (best %.4f at "
                 "epoch %lld): stopping after epoch %lld", eval_select_name(tr),
                 (long long)cf->patience, eval_select_value(tr, tr->best_val), (long long)tr->best_epoch,
                 (long long)done);
        return 1;
    }
    return 0;
}

/* Steps tr->step .. total - 1; returns the signal that stopped it early
 * (0: none). *loss: the last step's; *early: train.patience ended the run
 * right after a validation. */
static int train_loop(struct trainer *tr, int64_t total, int64_t *last_ckpt, double *loss,
                      struct loop_clock *lc, int *early)
{
    const struct train_conf *cf = &tr->conf;
    struct planner pl;
    planner_init(&pl, tr);
    const int64_t S = pl.steps_per_epoch;
    const int lookahead = cf->overlap != OVERLAP_NONE;
    struct step_stats stats = {0};
    int stop = 0;
    tr->epoch = tr->step / S;
    struct devstats setup; /* the counters count the steps, not the start-up */
    devstats_take(&setup);
    /* resumed from a checkpoint written at an epoch's end before its
     * validation (a stop): that validation first, as the run would have */
    if (tr->step > 0 && tr->val_epoch < tr->step / S)
        *early = epoch_end(tr, S, total, 0, lc); /* 1: patience ends the run there */
    while (tr->step < total && !*early) {
        tr->epoch = tr->step / S;
        watchdog_step(tr->step + 1);
        steptime_begin(&tr->st);
        if (tr->c->rank == cf->hang_rank && tr->step + 1 == cf->hang_step)
            watchdog_debug_hang(); /* debug.hang_rank */
        if (tr->c->rank == cf->signal_rank && tr->step + 1 == cf->signal_step)
            raise(SIGTERM); /* debug.signal_rank */
        const struct step_plan *now = planner_plan(&pl, tr, tr->step);
        const struct step_plan *next =
            lookahead && tr->step + 1 < total ? planner_plan(&pl, tr, tr->step + 1) : NULL;
        steptime_phase(&tr->st, PH_PLAN);
        int64_t tokens;
        *loss = train_step(tr, now, next, &tokens);
        steptime_end(&tr->st, now->cost);
        tr->step++;
        guard_after_step(tr, loss, tr->sparse_sq, tr->dense_sq);
        lc->iv.steps++;
        lc->iv.samples += (double)now->global_B;
        lc->iv.tokens += (double)tokens;
        lc->iv.pairs += now->pairs;
        lc->iv.flops += tr->flops.per_token * (double)now->tokens + tr->flops.per_pair * now->pairs;
        lc->split.steps++;
        lc->split.seqs += now->pieces.nsplit;
        lc->split.chunks += now->pieces.n - (now->global_B - now->pieces.nsplit);
        after_step(tr, &pl, lc, &stats, *loss, total);
        if ((stop = preempt_requested(tr->c)) != 0)
            break; /* its checkpoint: train_main */
        /* the epoch's validation, then the checkpoint, which records it (the
         * last step's: train_main, after the final validation) */
        const int64_t validations = tr->val_epoch;
        if ((*early = epoch_end(tr, S, total, *loss, lc)) != 0)
            break;
        const int ckpt = cf->checkpoint_dir[0] && cf->checkpoint_every > 0 &&
                         tr->step % cf->checkpoint_every == 0 && tr->step < total;
        if (ckpt) {
            train_ckpt_save(tr);
            *last_ckpt = tr->step;
        } else if (ckpt_delta_due(tr, total)) /* output.checkpoint_delta_every */
            ckpt_delta_save(tr);
        /* a signal during a validation or a checkpoint: stop now, not a step later */
        if ((ckpt || tr->val_epoch != validations) && (stop = preempt_requested(tr->c)) != 0)
            break;
    }
    if (!stop && tr->step > 0) /* the epochs done, counting a partial last one */
        tr->epoch = (tr->step - 1) / S + 1;
    train_step_drain(tr); /* a next step prepared ahead is not run */
    if (steptime_trace_write(&tr->st, tr->c, cf->trace, 1)) /* fewer steps than trace_steps */
        log_info("trace: %s (%lld steps; open in https://ui.perfetto.dev)", cf->trace,
                 (long long)tr->step);
    free(stats.tau);
    free(stats.cost_sum);
    planner_free(&pl);
    return stop;
}

int train_main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: mpirun -np P freescale train FILE.in [section.key=value ...]\n");
        return 2;
    }
    struct comm c;
    struct params p;
    banner_start(&c, &p, &argc, &argv, argv[1], argc - 2, argv + 2);
    struct trainer tr = {.c = &c, .p = &p, .best_val = -1, .best_epoch = -1, .val_epoch = -1};
    trainer_open(&tr); /* a bad parameter or dataset: the first thing on the screen */
    train_ckpt_check_dir(&tr); /* and a checkpoint directory of another run */
    banner_show(&c, &p);
    trainer_build(&tr);
    const struct train_conf *cf = &tr.conf;
    const int64_t steps_per_epoch = (tr.n_train + cf->batch_size - 1) / cf->batch_size;
    int64_t total = steps_per_epoch * cf->epochs;
    if (cf->max_steps > 0 && cf->max_steps < total)
        total = cf->max_steps;
    log_info("train: %lld users, %lld items, %lld training users, %lld steps per epoch, %lld steps",
             (long long)tr.ds.num_users, (long long)tr.ds.num_items, (long long)tr.n_train,
             (long long)steps_per_epoch, (long long)total);
    tr.optim.conf.total_steps = total; /* train.lr_schedule's end */
    if (tr.optim.conf.schedule != LR_CONSTANT)
        log_info("train.lr_schedule = %s: the learning rates decay from step %lld to 0 at step "
                 "%lld", lr_schedule_name(tr.optim.conf.schedule),
                 (long long)tr.optim.conf.warmup_steps, (long long)total);
    train_ckpt_start(&tr);
    train_utilisation_setup(&tr);
    watchdog_start((double)cf->timeout, c.rank, "step");
    preempt_install();
    steptime_init(&tr.st, cf->log_every, cf->trace[0] ? cf->trace_steps : 0);
    struct loop_clock lc = {.start = clock_seconds(), .first_step = tr.step};
    lc.last = lc.start;
    int64_t last_ckpt = -1;
    double loss = 0;
    int early = 0;
    int stop = train_loop(&tr, total, &last_ckpt, &loss, &lc, &early);
    /* the final validation before the final checkpoint, which records it */
    const int validated = early || !cf->final_eval || tr.val_epoch == tr.epoch;
    if (!stop && !validated)
        validate(&tr, tr.epoch, loss);
    if (stop) /* the metrics file says it first (mpirun, ending, may not pass the ranks' last
                 lines on, and SIGKILL may follow): the checkpoint, then this line */
        report_stop(&tr, stop, loss, cf->checkpoint_dir[0] && last_ckpt != tr.step);
    else if (cf->checkpoint_dir[0] && last_ckpt != tr.step)
        train_ckpt_save(&tr);
    if (stop) { /* preempted: the state is saved, no evaluation */
        if (!cf->checkpoint_dir[0])
            log_warn("stopped by signal %d without output.checkpoint_dir: nothing was saved",
                     stop);
        log_info("stopped by signal %d after step %lld; exit code %d: run again with "
                 "train.resume=auto to continue", stop, (long long)tr.step, PREEMPT_EXIT_CODE);
        trainer_free(&tr);
        comm_free(&c);
        return PREEMPT_EXIT_CODE;
    }
    struct eval_result test;
    if (cf->final_eval)
        final_evaluation(&tr, &test, loss);
    train_report_summary(&tr, cf->final_eval ? &test : NULL, loss, tr.step - lc.first_step,
                   clock_seconds() - lc.start);
    trainer_free(&tr);
    comm_free(&c);
    return 0;
}
