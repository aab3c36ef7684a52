/* train: the training loop; see train.h.
 *
 * Start-up resolves the configuration (train_conf.c), opens the dataset,
 * builds the model, the item table and the dense optimizer, and resumes
 * from a checkpoint if asked. The loop runs global steps s = first ..
 * total - 1: the planner says which sequences of the step's global batch
 * this rank trains on (and, with parallel.overlap, which ones it trains on
 * at s + 1, prepared during step s), train_step() runs the step (one loss
 * on any number of ranks), then come the progress line, checkpoints and,
 * at the end of an epoch, validation. The run ends with validation and
 * test, or early on a signal (preempt.c) with a checkpoint. */
#include "train/train.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/blas.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/metrics.h"
#include "cli/banner.h"
#include "eval/eval.h"
#include "train/checkpoint.h"
#include "train/guard.h"
#include "train/preempt.h"
#include "train/watchdog.h"

/* --- start-up ------------------------------------------------------------------- */

/* Open data.path: rank 0 first, so that a bad file gives one message. */
static void open_dataset(struct trainer *tr)
{
    char err[1024];
    const char *path = tr->conf.data_path;
    int64_t ok = 1;
    if (tr->c->rank == 0 && dataset_open(&tr->ds, path, err, sizeof err))
        fatal("data.path: %s", err);
    comm_bcast_bytes(tr->c, &ok, sizeof ok, 0);
    if (tr->c->rank != 0 && dataset_open(&tr->ds, path, err, sizeof err))
        fatal("data.path: %s", err);
}

/* embedding.placement: where the item table's shard and its optimizer
 * state live (NULL: host memory). device needs the CUDA backend and room:
 * the shard and its state within half of the device's free memory (ranks
 * sharing a GPU share it), agreed over all ranks. auto = host for now: the
 * device path is not yet verified on a GPU. */
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
        fatal("embedding.placement = device needs the CUDA backend (device.type=cuda or auto "
              "with a GPU); this rank computes on the %s backend: use embedding.placement=host "
              "or auto",
              tr->be->name);
    const int64_t slots = tr->ds.num_items / tr->c->g[COMM_EMB].size + 1;
    const int64_t sf = emb_optim_state_floats(cf->emb_optim.kind, cf->d);
    const double need = (double)slots * (double)(cf->d + sf) * 4.0 +
                        (cf->emb_optim.kind == EMB_OPT_ADAM ? 8.0 * (double)slots : 0.0);
    size_t free_b = 0, total_b = 0;
    char err[256];
    if (tr->be->device_memory(&free_b, &total_b, err, sizeof err))
        fatal("embedding.placement = device: %s", err);
    int64_t short_here = need > 0.5 * (double)free_b;
    if (comm_allreduce_max_i64(tr->c, short_here))
        fatal("embedding.placement = device: the item table's shard and its %s state need "
              "%.2f GiB per rank, more than half of the %.2f GiB free on a rank's device: use "
              "embedding.placement=host, or more ranks (a cache of hot rows for tables larger "
              "than device memory does not exist yet)",
              emb_optim_name(cf->emb_optim.kind), need / 1073741824.0,
              (double)free_b / 1073741824.0);
    log_info("embedding.placement: device (%.3f GiB per rank: the shard and its %s state)",
             need / 1073741824.0, emb_optim_name(cf->emb_optim.kind));
    return tr->be;
}

void trainer_setup(struct trainer *tr)
{
    struct train_conf *cf = &tr->conf;
    char err[1024];
    if (train_conf_resolve(tr->p, tr->c->size, cf, err, sizeof err))
        fatal("%s", err);
    if (comm_setup_groups(tr->c, cf->embedding_group, err, sizeof err))
        fatal("%s", err);
    open_dataset(tr);
    tr->with_ts = cf->use_timestamps && tr->ds.has_timestamps;
    cf->model.time_bias = tr->with_ts;
    device_select(tr->c, tr->p, &tr->dev);
    tr->be = tr->dev.be;
    int threads = blas_set_threads(tr->c->g[COMM_NODE].size);
    log_info("backend %s: %d BLAS thread%s per rank (%d rank%s on this node)", tr->be->name,
             threads, threads == 1 ? "" : "s", tr->c->g[COMM_NODE].size,
             tr->c->g[COMM_NODE].size == 1 ? "" : "s");
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
    if (cf->node_size > 0) /* debug.node_size: the byte counters' nodes */
        comm_set_node_size(tr->c, (int)cf->node_size);
    tr->items = emb_registry_add(&tr->reg, tr->c, &ec);
    dense_optim_init(&tr->optim, &cf->dense_optim, &tr->m);
    train_step_init(tr);
    tr->n_train = split_train_users(&tr->ds, cf->split, &tr->train_users);
    if (tr->n_train == 0)
        fatal("%s: no user has enough events to train on (need >= %d)", cf->data_path,
              split_holdout(cf->split) + 2);
}

void trainer_free(struct trainer *tr)
{
    watchdog_stop();
    train_step_free(tr);
    dense_optim_free(&tr->optim);
    emb_registry_free(&tr->reg);
    model_free(&tr->m);
    free(tr->train_users);
    dataset_close(&tr->ds);
    steptime_free(&tr->st);
    if (tr->metrics)
        fclose(tr->metrics);
    tr->metrics = NULL;
}

/* train.resume = auto: the newest checkpoint in dir that verifies (rank 0
 * lists, every rank verifies its share; a damaged one is skipped, saying
 * why) into path; "" when there is none. Collective. */
static void newest_good(struct comm *c, const char *dir, char *path, size_t len)
{
    int64_t *steps = NULL;
    int64_t n = c->rank == 0 ? checkpoint_list(dir, &steps) : 0;
    comm_bcast_bytes(c, &n, sizeof n, 0);
    if (c->rank != 0)
        steps = xmalloc((size_t)(n ? n : 1) * sizeof *steps);
    comm_bcast_bytes(c, steps, (size_t)n * sizeof *steps, 0);
    path[0] = '\0';
    for (int64_t i = 0; i < n && !path[0]; i++) {
        char err[1024];
        snprintf(path, len, "%s/ckpt-%lld.h5", dir, (long long)steps[i]);
        if (checkpoint_verify_all(c, path, err, sizeof err) != 0) {
            if (c->rank == 0)
                log_warn("train.resume = auto: skipping a damaged checkpoint: %s", err);
            path[0] = '\0';
        }
    }
    free(steps);
    if (n > 0 && !path[0])
        fatal("train.resume = auto: none of the %lld checkpoints in %s verifies (see above); "
              "move them away to start afresh", (long long)n, dir);
}

/* train.resume: "" (afresh), "auto" (the newest good checkpoint in
 * output.checkpoint_dir, if any) or a path, which must verify; rank 0
 * chooses, every rank reads. Then the metrics file (appended to by a
 * resumed run) and the checkpoint folder. */
static void resume_or_start(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    const char *ckdir = cf->checkpoint_dir;
    char resume[4200] = "", err[1024];
    const int is_auto = !strcmp(cf->resume, "auto");
    if (is_auto && !ckdir[0])
        fatal("train.resume = auto needs output.checkpoint_dir");
    if (is_auto)
        newest_good(tr->c, ckdir, resume, sizeof resume);
    else if (cf->resume[0]) {
        snprintf(resume, sizeof resume, "%s", cf->resume);
        if (checkpoint_verify_all(tr->c, resume, err, sizeof err) != 0 && tr->c->rank == 0)
            fatal("train.resume = %s (refused)", err);
    }
    comm_bcast_bytes(tr->c, resume, sizeof resume, 0);
    if (is_auto && !resume[0])
        log_info("train.resume = auto: no checkpoint in %s, starting afresh", ckdir);
    if (resume[0]) {
        struct checkpoint_io io;
        char cost[256];
        checkpoint_io_begin(&io);
        checkpoint_read(tr, resume);
        checkpoint_io_end(&io, tr->c, resume, cost, sizeof cost);
        log_info("resumed from %s at step %lld (read %s)", resume, (long long)tr->step, cost);
    }
    if (tr->c->rank == 0)
        tr->metrics = metrics_open(cf->metrics, resume[0] != '\0');
    if (ckdir[0] && tr->c->rank == 0 && mkdir(ckdir, 0777) != 0 && errno != EEXIST)
        fatal("output.checkpoint_dir = %s: cannot create: %s", ckdir, strerror(errno));
}

static void save_checkpoint(struct trainer *tr)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/ckpt-%lld.h5", tr->conf.checkpoint_dir, (long long)tr->step);
    watchdog_beat("in", "a checkpoint write");
    struct checkpoint_io io;
    char cost[256];
    checkpoint_io_begin(&io);
    checkpoint_write(tr, path);
    checkpoint_io_end(&io, tr->c, path, cost, sizeof cost);
    log_info("checkpoint %s (%s)", path, cost);
    if (tr->c->rank == 0)
        checkpoint_retain(tr->conf.checkpoint_dir, tr->conf.keep_checkpoints);
}

/* --- reporting --------------------------------------------------------------- */

/* The item table's wire bytes per step since the last progress line, summed
 * over ranks (collective: every rank reports), into metrics fields. */
static void report_wire(const struct emb_wire_stats *w, struct metrics_line *l)
{
    const double n = w->lookups ? (double)w->lookups : 1, base = (double)w->fp32;
    metrics_num(l, "rows_bytes", w->rows / n);
    metrics_num(l, "grads_bytes", w->grads / n);
    metrics_num(l, "rows_bytes_xnode", w->rows_xnode / n);
    metrics_num(l, "grads_bytes_xnode", w->grads_xnode / n);
    metrics_num(l, "fp32_bytes_nodedup", base / n);
    metrics_num(l, "rows_ratio", w->fp32 > 0 ? (double)w->rows / base : 0);
    metrics_num(l, "grads_ratio", w->fp32 > 0 ? (double)w->grads / base : 0);
}

/* parallel.split_long over a logging interval: the sequences cut, their
 * chunks, and the key/value bytes sent to other ranks per step (summed
 * over ranks; collective), onto the progress line's metrics. */
struct split_stats {
    int64_t steps, seqs, chunks, kv_mark;
};

static void report_split(struct trainer *tr, struct split_stats *sx, struct metrics_line *l)
{
    const int64_t kv = tr->c->counters.bytes[COMM_PH_KV];
    const double bytes = comm_allreduce_sum_f64(tr->c, COMM_DP, (double)(kv - sx->kv_mark));
    const double n = sx->steps ? (double)sx->steps : 1;
    log_info("split_long: %lld sequence%s cut into %lld chunks in %lld step%s; keys/values "
             "%.0f bytes/step between ranks", (long long)sx->seqs, sx->seqs == 1 ? "" : "s",
             (long long)sx->chunks, (long long)sx->steps, sx->steps == 1 ? "" : "s", bytes / n);
    metrics_int(l, "split_sequences", sx->seqs);
    metrics_int(l, "split_chunks", sx->chunks);
    metrics_num(l, "kv_bytes", bytes / n);
    *sx = (struct split_stats){.kv_mark = kv};
}

static void report_progress(struct trainer *tr, const struct step_stats *st, double loss,
                            double samples_s, double tokens_s, double eta, int64_t total,
                            struct split_stats *sx)
{
    struct emb_wire_stats w;
    emb_table_wire_take(tr->items, tr->c, &w);
    const double nw = w.lookups ? (double)w.lookups : 1;
    log_info("epoch %lld step %lld/%lld loss %.6f samples/s %.1f tokens/s %.0f bubble %.1f%% "
             "imbalance %.2f comm exposed %.1f ms overlap %.0f%% bytes/step rows %.0f grads "
             "%.0f (%.3f of fp32 without de-duplication) ETA %.0fs",
             (long long)tr->epoch + 1, (long long)tr->step, (long long)total, loss, samples_s,
             tokens_s, 100 * st->bubble, st->imbalance, st->wait_ms, 100 * st->overlap,
             w.rows / nw, w.grads / nw,
             w.fp32 > 0 ? (double)(w.rows + w.grads) / (2.0 * (double)w.fp32) : 0, eta);
    struct metrics_line l;
    metrics_begin(&l, "train");
    metrics_int(&l, "epoch", tr->epoch + 1);
    metrics_int(&l, "step", tr->step);
    metrics_num(&l, "loss", loss);
    metrics_num(&l, "samples_per_s", samples_s);
    metrics_num(&l, "tokens_per_s", tokens_s);
    metrics_num(&l, "bubble", st->bubble);
    metrics_num(&l, "imbalance", st->imbalance);
    char key[48];
    for (int ph = 0; ph < PH_COUNT; ph++) {
        snprintf(key, sizeof key, "%s_ms", phase_name((enum phase)ph));
        metrics_num(&l, key, st->phase_ms[ph]);
    }
    metrics_num(&l, "wait_ms", st->wait_ms);
    metrics_num(&l, "exposed_comm_ms", st->wait_ms);
    metrics_num(&l, "overlap", st->overlap);
    report_wire(&w, &l);
    if (tr->conf.nonfinite_skip)
        metrics_int(&l, "skipped_steps", tr->skipped);
    if (tr->conf.split_long.on)
        report_split(tr, sx, &l);
    metrics_end(&l, tr->metrics);
}

static void report_eval(struct trainer *tr, const char *split, int64_t epoch,
                        const struct eval_metrics *em, double loss)
{
    char line[512];
    eval_metrics_format(em, line, sizeof line);
    log_info("eval %-4s epoch %lld step %lld: %s", split, (long long)epoch, (long long)tr->step,
             line);
    struct metrics_line l;
    metrics_begin(&l, "eval");
    metrics_str(&l, "split", split);
    metrics_int(&l, "epoch", epoch);
    metrics_int(&l, "step", tr->step);
    metrics_num(&l, "loss", loss);
    metrics_num(&l, "samples_per_s", 0);
    metrics_num(&l, "tokens_per_s", 0);
    eval_metrics_json(em, &l);
    metrics_end(&l, tr->metrics);
}

/* train.keep_best: the best validation's checkpoint, DIR/best.h5 */
static void best_path(const struct trainer *tr, char *path, size_t len)
{
    snprintf(path, len, "%s/best.h5", tr->conf.checkpoint_dir);
}

/* Validation after `epochs` epochs; keeps the best NDCG@10 (and with
 * train.keep_best its checkpoint). */
static void validate(struct trainer *tr, int64_t epochs, double loss)
{
    struct eval_metrics val;
    watchdog_beat("in", "validation");
    eval_split(tr, 0, &val);
    report_eval(tr, "val", epochs, &val, loss);
    if (val.ndcg[0] > tr->best_val) {
        tr->best_val = val.ndcg[0];
        tr->best_epoch = epochs;
        if (tr->conf.keep_best) {
            char path[4200];
            best_path(tr, path, sizeof path);
            checkpoint_write(tr, path);
            log_info("keep_best: validation NDCG@10 %.4f at epoch %lld: %s", tr->best_val,
                     (long long)epochs, path);
        }
    }
}

/* train.keep_best: the last step's test is reported as test-last, then the
 * best validation's checkpoint is loaded and tested (into test). */
static void test_best(struct trainer *tr, struct eval_metrics *test, double loss)
{
    report_eval(tr, "test-last", tr->epoch, test, loss);
    const int64_t step = tr->step, epoch = tr->epoch;
    char path[4200];
    best_path(tr, path, sizeof path);
    checkpoint_read(tr, path);
    log_info("keep_best: testing %s (epoch %lld, step %lld)", path, (long long)tr->best_epoch,
             (long long)tr->step);
    eval_split(tr, 1, test);
    report_eval(tr, "test", tr->best_epoch, test, loss);
    tr->step = step;
    tr->epoch = epoch;
}

/* Validation (unless the loop's last step was just validated) and test
 * after the last step (and the popularity baseline). */
static void final_evaluation(struct trainer *tr, struct eval_metrics *test, double loss,
                             int validated)
{
    if (!validated)
        validate(tr, tr->epoch, loss);
    watchdog_beat("in", "the test evaluation");
    eval_split(tr, 1, test);
    if (tr->conf.keep_best)
        test_best(tr, test, loss);
    else
        report_eval(tr, "test", tr->epoch, test, loss);
    if (tr->conf.baseline) {
        struct eval_metrics pop;
        eval_popular(tr, 1, &pop);
        report_eval(tr, "test-popular", tr->epoch, &pop, 0);
    }
}

static void report_summary(struct trainer *tr, const struct eval_metrics *test, double loss,
                           int64_t steps_run, double secs)
{
    if (tr->best_epoch >= 0)
        log_info("done: step %lld (%lld steps in this run, %.1f s); best validation NDCG@10 "
                 "%.4f at epoch %lld",
                 (long long)tr->step, (long long)steps_run, secs, tr->best_val,
                 (long long)tr->best_epoch);
    else
        log_info("done: step %lld (%lld steps in this run, %.1f s); no validation was run",
                 (long long)tr->step, (long long)steps_run, secs);
    if (tr->skipped)
        log_info("%lld step%s had a non-finite loss or gradient and no update "
                 "(train.nonfinite = skip)", (long long)tr->skipped, tr->skipped == 1 ? "" : "s");
    struct metrics_line l;
    metrics_begin(&l, "summary");
    metrics_int(&l, "epoch", tr->epoch);
    metrics_int(&l, "step", tr->step);
    metrics_num(&l, "loss", loss);
    metrics_num(&l, "samples_per_s", 0);
    metrics_num(&l, "tokens_per_s", 0);
    metrics_num(&l, "seconds", secs);
    metrics_int(&l, "best_epoch", tr->best_epoch);
    metrics_int(&l, "skipped_steps", tr->skipped);
    if (test)
        eval_metrics_json(test, &l);
    metrics_end(&l, tr->metrics);
}

/* --- the loop ---------------------------------------------------------------- */

/* Throughput counters of a logging interval. */
struct loop_clock {
    double start, last;     /* run start, last progress line */
    int64_t first_step;     /* the step this run started at */
    int64_t samples, tokens;
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
    double now = clock_seconds(), dt = now - lc->last;
    double eta = (now - lc->start) / (double)(tr->step - lc->first_step) *
                 (double)(total - tr->step);
    report_progress(tr, stats, loss, lc->samples / dt, lc->tokens / dt, eta, total, &lc->split);
    lc->last = now;
    lc->samples = lc->tokens = 0;
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
    int stop = 0, ran = 0;
    tr->epoch = tr->step / S;
    while (tr->step < total) {
        tr->epoch = tr->step / S;
        watchdog_step(tr->step + 1);
        steptime_begin(&tr->st);
        if (tr->c->rank == cf->hang_rank && tr->step + 1 == cf->hang_step)
            watchdog_debug_hang(); /* debug.hang_rank */
        const struct step_plan *now = planner_plan(&pl, tr, tr->step);
        const struct step_plan *next =
            lookahead && tr->step + 1 < total ? planner_plan(&pl, tr, tr->step + 1) : NULL;
        steptime_phase(&tr->st, PH_PLAN);
        int64_t tokens;
        *loss = train_step(tr, now, next, &tokens);
        steptime_end(&tr->st, now->cost);
        tr->step++;
        guard_after_step(tr, loss);
        ran = 1;
        lc->samples += now->global_B;
        lc->tokens += tokens;
        lc->split.steps++;
        lc->split.seqs += now->pieces.nsplit;
        lc->split.chunks += now->pieces.n - (now->global_B - now->pieces.nsplit);
        after_step(tr, &pl, lc, &stats, *loss, total);
        if ((stop = preempt_requested(tr->c)) != 0)
            break;
        if (cf->checkpoint_dir[0] && cf->checkpoint_every > 0 &&
            tr->step % cf->checkpoint_every == 0) {
            save_checkpoint(tr);
            *last_ckpt = tr->step;
        }
        const int64_t done = tr->step / S; /* epochs completed */
        if (tr->step % S == 0 && cf->eval_every > 0 && done % cf->eval_every == 0 &&
            tr->step < total) {
            double t_eval = clock_seconds();
            validate(tr, done, *loss);
            lc->last += clock_seconds() - t_eval; /* throughput counts training only */
            if (cf->patience > 0 && done - tr->best_epoch >= cf->patience * cf->eval_every) {
                log_info("patience: no better validation NDCG@10 in %lld validations (best "
                         "%.4f at epoch %lld): stopping after epoch %lld",
                         (long long)cf->patience, tr->best_val, (long long)tr->best_epoch,
                         (long long)done);
                *early = 1;
                break;
            }
        }
    }
    if (ran && !stop) /* the epochs done, counting a partial last one */
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
    struct trainer tr = {.c = &c, .p = &p, .best_val = -1, .best_epoch = -1};
    trainer_setup(&tr);
    const struct train_conf *cf = &tr.conf;
    const int64_t steps_per_epoch = (tr.n_train + cf->batch_size - 1) / cf->batch_size;
    int64_t total = steps_per_epoch * cf->epochs;
    if (cf->max_steps > 0 && cf->max_steps < total)
        total = cf->max_steps;
    log_info("train: %lld users, %lld items, %lld training users, %lld steps per epoch, %lld steps",
             (long long)tr.ds.num_users, (long long)tr.ds.num_items, (long long)tr.n_train,
             (long long)steps_per_epoch, (long long)total);
    resume_or_start(&tr);
    watchdog_start((double)cf->timeout, c.rank, "step");
    preempt_install();
    steptime_init(&tr.st, cf->log_every, cf->trace[0] ? cf->trace_steps : 0);
    struct loop_clock lc = {.start = clock_seconds(), .first_step = tr.step};
    lc.last = lc.start;
    int64_t last_ckpt = -1;
    double loss = 0;
    int early = 0;
    int stop = train_loop(&tr, total, &last_ckpt, &loss, &lc, &early);
    if (cf->checkpoint_dir[0] && last_ckpt != tr.step)
        save_checkpoint(&tr);
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
    struct eval_metrics test;
    if (cf->final_eval)
        final_evaluation(&tr, &test, loss, early);
    report_summary(&tr, cf->final_eval ? &test : NULL, loss, tr.step - lc.first_step,
                   clock_seconds() - lc.start);
    trainer_free(&tr);
    comm_free(&c);
    return 0;
}
