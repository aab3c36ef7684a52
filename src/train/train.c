/* train: the training loop; see train.h.
 *
 * One step on every rank (DESIGN.md §5): the global batch (train.batch_size
 * users of the epoch's permutation) is split into equal contiguous shares;
 * each rank reads its sequences, draws the negatives of every position
 * (keyed by the token), looks up the unique ids of inputs, targets and
 * negatives in one exchange, runs the model and the loss, sends the
 * embedding gradients back to the owners (sparse update) and all-reduces
 * the dense gradients, which are already normalised by the global number of
 * supervised positions. The same global batch gives the same loss on any
 * number of ranks. */
#include "train/train.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "cli/banner.h"
#include "backend/blas.h"
#include "base/check.h"
#include "train/checkpoint.h"
#include "base/clock.h"
#include "eval/eval.h"
#include "base/metrics.h"
#include "train/preempt.h"
#include "train/planner.h"

static void setup(struct trainer *tr)
{
    struct params *p = tr->p;
    char err[1024];
    if (comm_setup_groups(tr->c, params_i64(p, P_parallel_embedding_group), err, sizeof err))
        fatal("%s", err);
    const char *path = params_str(p, P_data_path);
    if (!path[0])
        fatal("data.path is not set: name an HDF5 dataset (freescale data import / data gen)");
    /* rank 0 opens first so that a bad file gives one message */
    int64_t ok = 1;
    if (tr->c->rank == 0 && dataset_open(&tr->ds, path, err, sizeof err))
        fatal("data.path: %s", err);
    comm_bcast_bytes(tr->c, &ok, sizeof ok, 0);
    if (tr->c->rank != 0 && dataset_open(&tr->ds, path, err, sizeof err))
        fatal("data.path: %s", err);
    tr->split = (enum split_mode)params_i64(p, P_data_split);
    tr->N = (int)params_i64(p, P_data_max_seq_len);
    tr->d = (int)params_i64(p, P_model_dim);
    tr->bce = !strcmp(params_str(p, P_train_loss), "bce");
    tr->R = tr->bce ? 1 : (int)params_i64(p, P_train_negatives);
    tr->seed = (uint64_t)params_i64(p, P_train_seed);
    tr->with_ts = params_i64(p, P_data_timestamps) && tr->ds.has_timestamps;
    device_select(tr->c, p, &tr->dev);
    tr->be = tr->dev.be;
    int threads = blas_set_threads(tr->c->g[COMM_NODE].size);
    log_info("backend %s: %d BLAS thread%s per rank (%d rank%s on this node)", tr->be->name,
             threads, threads == 1 ? "" : "s", tr->c->g[COMM_NODE].size,
             tr->c->g[COMM_NODE].size == 1 ? "" : "s");
    struct model_conf mc = {
        .type = params_i64(p, P_model_type) == 0 ? MODEL_HSTU : MODEL_SASREC,
        .d = tr->d, .layers = (int)params_i64(p, P_model_layers),
        .heads = (int)params_i64(p, P_model_heads), .max_len = tr->N,
        .dropout = (float)params_f64(p, P_model_dropout), .time_bias = tr->with_ts};
    tr->normalize_items = mc.type == MODEL_HSTU;
    if (model_init(&tr->m, &mc, tr->be, tr->seed, err, sizeof err))
        fatal("%s", err);
    struct emb_table_conf ec = {.rows = tr->ds.num_items, .dim = tr->d, .init = EMB_INIT_NORMAL,
                                .init_scale = (float)params_f64(p, P_embedding_init_std),
                                .seed = tr->seed};
    snprintf(ec.name, sizeof ec.name, "items");
    ec.optim = (struct emb_optim_conf){
        .kind = (enum emb_optimizer)emb_optim_parse(params_str(p, P_embedding_optimizer)),
        .lr = (float)params_f64(p, P_embedding_lr),
        .weight_decay = (float)params_f64(p, P_embedding_weight_decay), .eps = 1e-8f,
        .beta1 = 0.9f, .beta2 = 0.98f};
    tr->items = emb_registry_add(&tr->reg, tr->c, &ec);
    tr->adam_m = xcalloc((size_t)tr->m.nparams, sizeof *tr->adam_m);
    tr->adam_v = xcalloc((size_t)tr->m.nparams, sizeof *tr->adam_v);
    for (int i = 0; i < tr->m.nparams; i++) {
        size_t bytes = (size_t)tr->m.params[i].n * sizeof(float);
        tr->adam_m[i] = tr->be->alloc(bytes);
        tr->adam_v[i] = tr->be->alloc(bytes);
    }
    tr->stage = NULL;
    train_step_setup(tr);
    if (!backend_is_host(tr->be) && !tr->dev.direct && !tr->ipc)
        tr->stage = tr->be->host_alloc((size_t)tr->m.ngrad * sizeof(float));
    tr->n_train = split_train_users(&tr->ds, tr->split, &tr->train_users);
    if (tr->n_train == 0)
        fatal("%s: no user has enough events to train on (need >= %d)", path,
              split_holdout(tr->split) + 2);
    tr->metrics = NULL; /* opened once the resume point is known */
    tr->trace_path = params_str(p, P_output_trace);
    tr->slow = 1.0;
    const char *slow = params_str(p, P_debug_slow_rank);
    if (slow[0]) {
        int rank;
        double factor;
        char tail;
        if (sscanf(slow, "%d:%lf%c", &rank, &factor, &tail) != 2 || rank < 0 || factor < 1)
            fatal("debug.slow_rank = '%s': expected RANK:FACTOR with FACTOR >= 1", slow);
        if (rank >= tr->c->size)
            fatal("debug.slow_rank = '%s': rank %d does not exist (%d ranks)", slow, rank,
                  tr->c->size);
        if (rank == tr->c->rank)
            tr->slow = factor;
    }
}

static void report_progress(struct trainer *tr, const struct step_stats *st, double loss,
                            double samples_s, double tokens_s, double eta, int64_t total)
{
    log_info("epoch %lld step %lld/%lld loss %.6f samples/s %.1f tokens/s %.0f bubble %.1f%% "
             "imbalance %.2f comm exposed %.1f ms overlap %.0f%% ETA %.0fs",
             (long long)tr->epoch + 1, (long long)tr->step, (long long)total, loss, samples_s,
             tokens_s, 100 * st->bubble, st->imbalance, st->wait_ms, 100 * st->overlap, eta);
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
    metrics_end(&l, tr->metrics);
}

static void report_eval(struct trainer *tr, const char *split, const struct eval_metrics *em,
                        double loss)
{
    char line[512];
    eval_metrics_format(em, line, sizeof line);
    log_info("eval %-4s epoch %lld step %lld: %s", split, (long long)tr->epoch,
             (long long)tr->step, line);
    struct metrics_line l;
    metrics_begin(&l, "eval");
    metrics_str(&l, "split", split);
    metrics_int(&l, "epoch", tr->epoch);
    metrics_int(&l, "step", tr->step);
    metrics_num(&l, "loss", loss);
    metrics_num(&l, "samples_per_s", 0);
    metrics_num(&l, "tokens_per_s", 0);
    eval_metrics_json(em, &l);
    metrics_end(&l, tr->metrics);
}

/* Validation and test after the last step (and the popularity baseline). */
static void final_evaluation(struct trainer *tr, struct eval_metrics *test, double loss)
{
    struct eval_metrics val;
    eval_split(tr, 0, &val);
    report_eval(tr, "val", &val, loss);
    if (val.ndcg[0] > tr->best_val) {
        tr->best_val = val.ndcg[0];
        tr->best_epoch = tr->epoch;
    }
    eval_split(tr, 1, test);
    report_eval(tr, "test", test, loss);
    if (params_i64(tr->p, P_train_baseline)) {
        struct eval_metrics pop;
        eval_popular(tr, 1, &pop);
        report_eval(tr, "test-popular", &pop, 0);
    }
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
    setup(&tr);
    const int64_t Bg = params_i64(&p, P_train_batch_size);
    const int64_t epochs = params_i64(&p, P_train_epochs), max_steps = params_i64(&p, P_train_max_steps);
    const int64_t steps_per_epoch = (tr.n_train + Bg - 1) / Bg;
    int64_t total = steps_per_epoch * epochs;
    if (max_steps > 0 && max_steps < total)
        total = max_steps;
    log_info("train: %lld users, %lld items, %lld training users, %lld steps per epoch, %lld steps",
             (long long)tr.ds.num_users, (long long)tr.ds.num_items, (long long)tr.n_train,
             (long long)steps_per_epoch, (long long)total);
    const char *ckdir = params_str(&p, P_output_checkpoint_dir);
    char resume[4200];
    snprintf(resume, sizeof resume, "%s", params_str(&p, P_train_resume));
    if (!strcmp(resume, "auto")) { /* the newest complete checkpoint, if any */
        if (!ckdir[0])
            fatal("train.resume = auto needs output.checkpoint_dir");
        if (checkpoint_newest(ckdir, resume, sizeof resume))
            resume[0] = '\0';
        if (!resume[0])
            log_info("train.resume = auto: no checkpoint in %s, starting afresh", ckdir);
    }
    if (resume[0]) {
        checkpoint_read(&tr, resume);
        log_info("resumed from %s at step %lld", resume, (long long)tr.step);
    }
    if (c.rank == 0) /* a resumed run appends to the metrics of its first part */
        tr.metrics = metrics_open(params_str(&p, P_output_metrics), resume[0] != '\0');
    if (ckdir[0] && c.rank == 0 && mkdir(ckdir, 0777) != 0 && errno != EEXIST)
        fatal("output.checkpoint_dir = %s: cannot create: %s", ckdir, strerror(errno));
    const int64_t ck_every = params_i64(&p, P_train_checkpoint_every);
    int64_t last_ckpt = -1;
    int64_t *perm = xmalloc((size_t)tr.n_train * sizeof *perm);
    int64_t *mine = xmalloc((size_t)(Bg ? Bg : 1) * sizeof *mine);
    const int64_t log_every = params_i64(&p, P_train_log_every), eval_every = params_i64(&p, P_train_eval_every);
    double t_start = clock_seconds(), t_log = t_start, loss = 0;
    int64_t samples_log = 0, tokens_log = 0;
    int64_t first_step = tr.step;
    preempt_install();
    int stop_signal = 0;
    struct planner pl;
    planner_init(&pl, &tr, Bg);
    steptime_init(&tr.st, log_every, tr.trace_path[0] ? params_i64(&p, P_output_trace_steps) : 0);
    struct step_stats stats = {0};
    /* the next step's users, planned one step ahead for parallel.overlap */
    int64_t *perm_next = xmalloc((size_t)tr.n_train * sizeof *perm_next);
    int64_t *mine_next = xmalloc((size_t)(Bg ? Bg : 1) * sizeof *mine_next);
    double cost_next = 0;
    int64_t n_next = -1; /* planned: mine_next holds the current step's users */
    for (tr.epoch = tr.step / steps_per_epoch; tr.epoch < epochs && tr.step < total; tr.epoch++) {
        split_permutation(tr.seed, (uint64_t)tr.epoch, tr.n_train, perm);
        for (int64_t s = tr.step % steps_per_epoch; s < steps_per_epoch && tr.step < total; s++) {
            int64_t g0 = s * Bg, gB = g0 + Bg < tr.n_train ? Bg : tr.n_train - g0;
            steptime_begin(&tr.st);
            double my_cost;
            int64_t n_mine;
            if (n_next >= 0) { /* planned during the previous step */
                int64_t *t = mine;
                mine = mine_next;
                mine_next = t;
                n_mine = n_next;
                my_cost = cost_next;
            } else {
                n_mine = planner_assign(&pl, &tr, perm + g0, gB, mine, &my_cost);
            }
            n_next = -1;
            int64_t next_epoch = 0;
            if (tr.overlap != OVERLAP_NONE && tr.step + 1 < total) {
                int64_t ns = tr.step + 1;
                next_epoch = ns / steps_per_epoch;
                const int64_t *np = perm;
                if (next_epoch != tr.epoch) {
                    split_permutation(tr.seed, (uint64_t)next_epoch, tr.n_train, perm_next);
                    np = perm_next;
                }
                int64_t n0 = (ns % steps_per_epoch) * Bg;
                int64_t nB = n0 + Bg < tr.n_train ? Bg : tr.n_train - n0;
                n_next = planner_assign(&pl, &tr, np + n0, nB, mine_next, &cost_next);
            }
            steptime_phase(&tr.st, PH_PLAN);
            int64_t tokens;
            loss = train_step(&tr, mine, n_mine, n_next >= 0 ? mine_next : NULL, n_next,
                              next_epoch, &tokens);
            steptime_end(&tr.st, my_cost);
            tr.step++;
            samples_log += gB;
            tokens_log += tokens;
            if (steptime_trace_write(&tr.st, &c, tr.trace_path, 0))
                log_info("trace: %s (%lld steps; open in https://ui.perfetto.dev)",
                         tr.trace_path, (long long)params_i64(&p, P_output_trace_steps));
            if (tr.step % log_every == 0 || tr.step == total) {
                steptime_collect(&tr.st, &c, &stats);
                planner_adapt(&pl, &tr, &stats);
                double now = clock_seconds(), dt = now - t_log;
                double eta = (now - t_start) / (double)(tr.step - first_step) *
                             (double)(total - tr.step);
                report_progress(&tr, &stats, loss, samples_log / dt, tokens_log / dt, eta, total);
                t_log = now;
                samples_log = tokens_log = 0;
            }
            if ((stop_signal = preempt_requested(&c)) != 0)
                break;
            if (ckdir[0] && ck_every > 0 && tr.step % ck_every == 0) {
                char path[4200];
                snprintf(path, sizeof path, "%s/ckpt-%lld.h5", ckdir, (long long)tr.step);
                checkpoint_write(&tr, path);
                last_ckpt = tr.step;
                log_info("checkpoint %s", path);
            }
        }
        if (stop_signal)
            break;
        if (eval_every > 0 && (tr.epoch + 1) % eval_every == 0 && tr.step < total) {
            struct eval_metrics em;
            double t_eval = clock_seconds();
            eval_split(&tr, 0, &em);
            t_log += clock_seconds() - t_eval; /* throughput counts training only */
            report_eval(&tr, "val", &em, loss);
            if (em.ndcg[0] > tr.best_val) {
                tr.best_val = em.ndcg[0];
                tr.best_epoch = tr.epoch + 1;
            }
        }
    }
    train_step_drain(&tr); /* a next step prepared ahead is not run */
    free(perm_next);
    free(mine_next);
    if (ckdir[0] && last_ckpt != tr.step) {
        char path[4200];
        snprintf(path, sizeof path, "%s/ckpt-%lld.h5", ckdir, (long long)tr.step);
        checkpoint_write(&tr, path);
        log_info("checkpoint %s", path);
    }
    if (stop_signal) { /* preempted: the state is saved, no evaluation */
        if (!ckdir[0])
            log_warn("stopped by signal %d without output.checkpoint_dir: nothing was saved",
                     stop_signal);
        log_info("stopped by signal %d after step %lld; exit code %d: run again with "
                 "train.resume=auto to continue", stop_signal, (long long)tr.step,
                 PREEMPT_EXIT_CODE);
        if (tr.metrics)
            fclose(tr.metrics);
        comm_free(&c);
        return PREEMPT_EXIT_CODE;
    }
    const int final_eval = (int)params_i64(&p, P_train_final_eval);
    struct eval_metrics test;
    if (final_eval)
        final_evaluation(&tr, &test, loss);
    double secs = clock_seconds() - t_start;
    log_info("done: step %lld (%lld steps in this run, %.1f s); best validation NDCG@10 %.4f "
             "at epoch %lld",
             (long long)tr.step, (long long)(tr.step - first_step), secs, tr.best_val,
             (long long)tr.best_epoch);
    struct metrics_line l;
    metrics_begin(&l, "summary");
    metrics_int(&l, "epoch", tr.epoch);
    metrics_int(&l, "step", tr.step);
    metrics_num(&l, "loss", loss);
    metrics_num(&l, "samples_per_s", 0);
    metrics_num(&l, "tokens_per_s", 0);
    metrics_num(&l, "seconds", secs);
    metrics_int(&l, "best_epoch", tr.best_epoch);
    if (final_eval)
        eval_metrics_json(&test, &l);
    metrics_end(&l, tr.metrics);
    if (tr.metrics)
        fclose(tr.metrics);
    free(perm);
    free(mine);
    planner_free(&pl);
    steptime_free(&tr.st);
    free(stats.tau);
    free(stats.cost_sum);
    if (tr.ipc)
        dense_ipc_free(&tr.dipc);
    comm_free(&c);
    return 0;
}
