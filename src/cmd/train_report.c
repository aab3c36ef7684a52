/* train_report: what a training run reports; see train_report.h. */
#include "cmd/train_report.h"

#include <stdio.h>
#include <stdlib.h>

#include "backend/devstats.h"
#include "backend/peak.h"
#include "base/check.h"
#include "base/log.h"
#include "base/metrics.h"
#include "cmd/eval_trainer.h"
#include "embedding/emb_cache.h"
#include "eval/eval_ranking.h"
#include "train/bias_rows.h"
#include "train/train_cache.h"
#include "train/train_dyn.h"

/* The item table's wire bytes per step since the last progress line, summed
 * over ranks (collective: every rank reports), into metrics fields. */
static void report_wire(const struct emb_wire_stats *w, struct metrics_line *l)
{
    /* gradients per backward: under prefetch a lookup is counted when the
     * next step's ids go out, one step before its gradients */
    const double n = w->lookups ? (double)w->lookups : 1, base = (double)w->fp32;
    const double nb = w->backwards ? (double)w->backwards : n;
    metrics_num(l, "rows_bytes", w->rows / n);
    metrics_num(l, "grads_bytes", w->grads / nb);
    metrics_num(l, "rows_bytes_xnode", w->rows_xnode / n);
    metrics_num(l, "grads_bytes_xnode", w->grads_xnode / nb);
    metrics_num(l, "fp32_bytes_nodedup", base / n);
    metrics_num(l, "rows_ratio", w->fp32 > 0 ? (double)w->rows / base : 0);
    metrics_num(l, "grads_ratio", w->fp32 > 0 ? (double)w->grads / base : 0);
}

/* parallel.overlap = prefetch: the unique rows requested (summed over
 * ranks, per step) that came ahead and late, and the collision fraction
 * (late / both); 0 when nothing was prefetched. */
static double collision(const struct emb_wire_stats *w)
{
    const int64_t all = w->pf_rows + w->pf_late;
    return all > 0 ? (double)w->pf_late / (double)all : 0;
}

static void report_prefetch(const struct emb_wire_stats *w, struct metrics_line *l)
{
    const double n = w->lookups ? (double)w->lookups : 1;
    metrics_num(l, "collision", collision(w));
    metrics_num(l, "rows_prefetched", w->pf_rows / n);
    metrics_num(l, "rows_late", w->pf_late / n);
}

/* The bytes copied through CUDA IPC (parallel.transport = copy-engine |
 * kernel: rows, gradients, the dense all-reduce within a node) per step of
 * the interval, summed over ranks (collective). */
static void report_ipc(struct trainer *tr, int64_t steps, struct metrics_line *l)
{
    int64_t ipc = 0;
    for (int ph = 0; ph < COMM_NPHASES; ph++)
        ipc += tr->c->counters.ipc[ph];
    const double b = comm_allreduce_sum_f64(tr->c, COMM_DP, (double)(ipc - tr->ipc_mark));
    tr->ipc_mark = ipc;
    metrics_num(l, "ipc_bytes", b / (double)(steps > 0 ? steps : 1));
}

/* parallel.split_long over a logging interval: the sequences cut, their
 * chunks, and the key/value bytes sent to other ranks per step (summed
 * over ranks; collective), onto the progress line's metrics. */
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

/* Per node (up to XSENT_NODES, in the order of their first ranks), the
 * bytes its ranks sent to other nodes per step of the interval: ids, rows
 * and gradients of the embedding tables (every table's), as xsent_ids.N,
 * xsent_rows.N, xsent_grads.N (ids and rows per lookup, gradients per
 * backward, as report_wire: under prefetch the next step's are counted
 * when posted); and dense_bytes, the gradient bytes a rank all-reduced per
 * step (the vector, not the wire). What crosses each node's link, for
 * bench/bound.py. Collective over world. */
#define XSENT_NODES 32
static void report_links(struct trainer *tr, const struct emb_wire_stats *w, int64_t steps,
                         struct metrics_line *l)
{
    struct comm *c = tr->c;
    const enum comm_phase ph[3] = {COMM_PH_IDS, COMM_PH_ROWS, COMM_PH_GRADS};
    const char *name[3] = {"ids", "rows", "grads"};
    const double n = steps > 0 ? (double)steps : 1, nl = w->lookups ? (double)w->lookups : n;
    const double per[3] = {nl, nl, w->backwards ? (double)w->backwards : nl};
    double mine[3];
    for (int k = 0; k < 3; k++) {
        mine[k] = (double)(c->counters.xbytes[ph[k]] - tr->xsent_mark[k]) / per[k];
        tr->xsent_mark[k] = c->counters.xbytes[ph[k]];
    }
    const int64_t dense = c->counters.bytes[COMM_PH_DENSE];
    metrics_num(l, "dense_bytes", comm_allreduce_max_f64(c, COMM_WORLD,
                                                         (double)(dense - tr->xsent_mark[3]) / n));
    tr->xsent_mark[3] = dense;
    const int P = c->size;
    if (!c->node_of)
        return;
    double *all = xmalloc((size_t)P * sizeof mine);
    comm_allgather_bytes(c, COMM_WORLD, mine, sizeof mine, all);
    int node = 0;
    for (int r = 0; r < P && node < XSENT_NODES; r++) {
        if (c->node_of[r] != r) /* a node's first rank (its leader) sums its ranks */
            continue;
        double sum[3] = {0, 0, 0};
        for (int q = 0; q < P; q++)
            for (int k = 0; c->node_of[q] == r && k < 3; k++)
                sum[k] += all[3 * q + k];
        for (int k = 0; k < 3; k++) {
            char key[40];
            snprintf(key, sizeof key, "xsent_%s.%d", name[k], node);
            metrics_num(l, key, sum[k]);
        }
        node++;
    }
    free(all);
}

/* model.bias's rows (train/bias_rows.h) over a logging interval: the
 * bytes sent to other ranks per training step, summed over ranks
 * (collective), and what the dense all-reduce of the same tables counted
 * (every rank its whole tables a step, P > 1), onto the progress line's
 * metrics. */
static void report_bias(struct trainer *tr, struct metrics_line *l)
{
    int64_t bytes, steps;
    bias_rows_traffic_take(tr->bias, &bytes, &steps);
    const double b = comm_allreduce_sum_f64(tr->c, COMM_DP, (double)bytes);
    const struct task_conf *tc = &tr->conf.task;
    const int P = tr->c->g[COMM_DP].size;
    metrics_num(l, "bias_bytes", b / (double)(steps > 0 ? steps : 1));
    metrics_num(l, "bias_dense_bytes",
                P > 1 ? (double)P * (double)((tc->bias_items + tc->bias_users) * tc->n) * 4 : 0);
}

/* The device counters (devstats.h) per step over the interval's steps,
 * the largest of any rank (collective), onto the metrics line: zeros on
 * the CPU backend. */
static void report_device(struct trainer *tr, int64_t steps, struct metrics_line *l)
{
    struct devstats d;
    devstats_take(&d);
    const double n = steps > 0 ? (double)steps : 1;
    metrics_num(l, "device_syncs", comm_allreduce_max_f64(tr->c, COMM_DP, (double)d.syncs) / n);
    metrics_num(l, "h2d_bytes", comm_allreduce_max_f64(tr->c, COMM_DP, (double)d.h2d) / n);
    metrics_num(l, "d2h_bytes", comm_allreduce_max_f64(tr->c, COMM_DP, (double)d.d2h) / n);
    metrics_num(l, "device_allocs",
                comm_allreduce_max_f64(tr->c, COMM_DP, (double)d.allocs) / n);
}

/* The device-side phase timers over the interval (gputime.h), means over
 * the ranks (collective): v[0] gpu_ms, v[1] gpu_busy, then the phases' ms;
 * 0 without a device. */
static int gpu_figures(struct trainer *tr, double v[2 + GPU_NPHASES])
{
    if (!gputime_take(&tr->gt, v + 2, &v[0], &v[1]))
        return 0;
    const double P = tr->c->g[COMM_DP].size;
    for (int i = 0; i < 2 + GPU_NPHASES; i++)
        v[i] = comm_allreduce_sum_f64(tr->c, COMM_DP, v[i]) / P;
    return 1;
}

static void report_gpu(const double v[2 + GPU_NPHASES], struct metrics_line *l)
{
    metrics_num(l, "gpu_ms", v[0]);
    metrics_num(l, "gpu_busy", v[1]);
    char key[48];
    for (int ph = 0; ph < GPU_NPHASES; ph++) {
        snprintf(key, sizeof key, "gpu_%s_ms", gputime_name((enum gpu_phase)ph));
        metrics_num(l, key, v[2 + ph]);
    }
}

void train_report_progress(struct trainer *tr, const struct step_stats *st, double loss,
                            const struct interval *iv, double eta, int64_t total,
                            struct split_stats *sx)
{
    struct emb_wire_stats w;
    emb_table_wire_take(tr->items, tr->c, &w);
    const double nw = w.lookups ? (double)w.lookups : 1, dt = iv->seconds > 0 ? iv->seconds : 1;
    const double nbw = w.backwards ? (double)w.backwards : nw; /* report_wire */
    const double samples_s = iv->samples / dt, tokens_s = iv->tokens / dt;
    const double gflops = iv->flops / dt / 1e9;
    const double mfu = tr->peak_gflops > 0 ? gflops / tr->peak_gflops : 0;
    const double ml_gflops = iv->mlperf_flops / dt / 1e9; /* MLPerf DLRMv4's count */
    const double ml_mfu = tr->peak_gflops > 0 ? ml_gflops / tr->peak_gflops : 0;
    char ml[80] = "";
    if (tr->mlperf_on)
        snprintf(ml, sizeof ml, " mlperf_gflops %.1f mlperf_mfu %.1f%%", ml_gflops, 100 * ml_mfu);
    double gv[2 + GPU_NPHASES];
    char gpu[64] = "";
    const int on_gpu = gpu_figures(tr, gv);
    if (on_gpu)
        snprintf(gpu, sizeof gpu, " gpu %.1f ms/step busy %.0f%%", gv[0], 100 * gv[1]);
    char pf[80] = "";
    const int prefetch = tr->conf.overlap == OVERLAP_PREFETCH;
    if (prefetch)
        snprintf(pf, sizeof pf, " prefetch %.0f rows/step late %.0f (collision %.1f%%)",
                 w.pf_rows / nw, w.pf_late / nw, 100 * collision(&w));
    struct train_dyn_figs dyn; /* dynamic tables (collective) */
    char dline[512];
    train_dyn_take(tr, iv->steps, &dyn, dline, sizeof dline);
    struct train_cache_figs cs; /* embedding.cache (collective) */
    char cline[1024];
    const int cached = train_cache_take(tr, 0, &cs, cline, sizeof cline);
    double tl[RANK_MAX_TASKS];
    char tasks[RANK_MAX_TASKS * (TASK_NAME + 16)] = "";
    const int K = tr->task.ops->losses ? tr->conf.task.n : 0;
    if (K) { /* each task's loss (collective), mean over the interval */
        tr->task.ops->losses(&tr->task, tr->c, tl);
        size_t at = snprintf(tasks, sizeof tasks, " (");
        for (int k = 0; k < K; k++)
            at += (size_t)snprintf(tasks + at, sizeof tasks - at, "%s%s %.4f", k ? ", " : "",
                                   tr->conf.task.t[k].name, tl[k]);
        snprintf(tasks + at, sizeof tasks - at, ")");
    }
    char when[64]; /* the stream schedule: the window (numbered from 0, as its window line) */
    if (tr->conf.stream.on && tr->n_windows > 0)
        snprintf(when, sizeof when, "window %lld/%lld", (long long)tr->epoch,
                 (long long)tr->n_windows);
    else if (tr->conf.stream.on)
        snprintf(when, sizeof when, "window %lld", (long long)tr->epoch);
    else
        snprintf(when, sizeof when, "epoch %lld", (long long)tr->epoch + 1);
    log_info("%s step %lld/%lld loss %.6f%s samples/s %.1f tokens/s %.0f GFLOP/s %.1f "
             "MFU %.1f%%%s bubble %.1f%% imbalance %.2f comm exposed %.1f ms overlap %.0f%% "
             "bytes/step rows %.0f grads %.0f (%.3f of fp32 without de-duplication)%s%s%s%s "
             "ETA %.0fs",
             when, (long long)tr->step, (long long)total, loss, tasks,
             samples_s, tokens_s, gflops, 100 * mfu, ml, 100 * st->bubble, st->imbalance, st->wait_ms,
             100 * st->overlap, w.rows / nw, w.grads / nbw,
             w.fp32 > 0 ? (double)(w.rows + w.grads) / (2.0 * (double)w.fp32) : 0, pf, dline,
             cline, gpu, eta);
    struct metrics_line l;
    metrics_begin(&l, "train");
    metrics_int(&l, "epoch", tr->epoch + 1);
    metrics_int(&l, "step", tr->step);
    metrics_num(&l, "loss", loss);
    metrics_num(&l, "lr", dense_optim_lr(&tr->optim, tr->step - 1)); /* the last step's */
    for (int k = 0; k < K; k++) {
        char key[TASK_NAME + 8];
        snprintf(key, sizeof key, "loss.%s", tr->conf.task.t[k].name);
        metrics_num(&l, key, tl[k]);
    }
    metrics_num(&l, "samples_per_s", samples_s);
    metrics_num(&l, "tokens_per_s", tokens_s);
    metrics_num(&l, "gflops", gflops);
    metrics_num(&l, "mfu", mfu);
    metrics_num(&l, "interval_s", iv->seconds);
    metrics_num(&l, "tokens", iv->tokens);
    metrics_num(&l, "attn_pairs", iv->pairs);
    metrics_num(&l, "flops", iv->flops);
    metrics_num(&l, "peak_gflops", tr->peak_gflops);
    if (tr->mlperf_on) {
        metrics_num(&l, "mlperf_flops", iv->mlperf_flops);
        metrics_num(&l, "mlperf_gflops", ml_gflops);
        metrics_num(&l, "mlperf_mfu", ml_mfu);
    }
    metrics_num(&l, "bubble", st->bubble);
    metrics_num(&l, "imbalance", st->imbalance);
    char key[48];
    for (int ph = 0; ph < PH_COUNT; ph++) {
        snprintf(key, sizeof key, "%s_ms", phase_name((enum phase)ph));
        metrics_num(&l, key, st->phase_ms[ph]);
        snprintf(key, sizeof key, "%s_mpi_ms", phase_name((enum phase)ph));
        metrics_num(&l, key, st->phase_wait_ms[ph]);
    }
    metrics_num(&l, "wait_ms", st->wait_ms);
    metrics_num(&l, "exposed_comm_ms", st->wait_ms);
    metrics_num(&l, "overlap", st->overlap);
    report_wire(&w, &l);
    train_dyn_metrics(&dyn, &l);
    if (cached)
        train_cache_metrics(&cs, &l);
    if (prefetch)
        report_prefetch(&w, &l);
    report_device(tr, iv->steps, &l);
    report_ipc(tr, iv->steps, &l);
    report_links(tr, &w, iv->steps, &l);
    if (on_gpu)
        report_gpu(gv, &l);
    if (tr->conf.nonfinite_skip)
        metrics_int(&l, "skipped_steps", tr->skipped);
    if (tr->conf.split_long.on)
        report_split(tr, sx, &l);
    if (tr->bias)
        report_bias(tr, &l);
    metrics_end(&l, tr->metrics);
}

void train_report_eval(struct trainer *tr, const char *split, int64_t epoch,
                        const struct eval_result *em, double loss)
{
    struct eval_ctx ev;
    eval_ctx_of(tr, &ev);
    char line[2048];
    eval_result_format(&ev, em, line, sizeof line);
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
    eval_result_json(&ev, em, &l);
    metrics_end(&l, tr->metrics);
}

void train_report_summary(struct trainer *tr, const struct eval_result *test, double loss,
                           int64_t steps_run, double secs)
{
    struct eval_ctx ev;
    eval_ctx_of(tr, &ev);
    if (tr->best_epoch >= 0)
        log_info("done: step %lld (%lld steps in this run, %.1f s); best validation %s "
                 "%.4f at epoch %lld",
                 (long long)tr->step, (long long)steps_run, secs, eval_select_name(&ev),
                 eval_select_value(&ev, tr->best_val), (long long)tr->best_epoch);
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
    if (tr->conf.task.type == TASK_RANKING && tr->conf.task.bias) { /* as chosen at start-up */
        metrics_num(&l, "bias_prior", tr->conf.task.bias_prior); /* the item rows' */
        metrics_num(&l, "bias_prior_user", tr->conf.task.bias_prior_user);
        metrics_num(&l, "recency", tr->conf.task.recency);
    }
    if (test)
        eval_result_json(&ev, test, &l);
    metrics_end(&l, tr->metrics);
}

/* The model's FLOPs per token and attention pair, and the job's peak: each
 * rank's (device.peak_tflops, else its gemm rate measured now, all ranks
 * at once so that ranks sharing cores share the measurement) summed. MFU =
 * achieved model FLOP/s / that peak (doc/training.md). Collective. */
void train_utilisation_setup(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    const int ranking = cf->task.type == TASK_RANKING; /* the head: not counted */
    const int64_t rows = ranking ? 1 : cf->loss == LOSS_FULL ? tr->ds.num_items : (int64_t)cf->R + 1;
    cost_flops_auto(&cf->model, (int)(rows - 1 < INT32_MAX ? rows - 1 : INT32_MAX),
                    cf->loss == LOSS_BCE && !ranking, &tr->flops);
    const double mine = cf->peak_tflops > 0 ? 1e3 * cf->peak_tflops : backend_peak_gflops(tr->be);
    tr->peak_gflops = comm_allreduce_sum_f64(tr->c, COMM_DP, mine);
    char gemm[64]; /* the precision the run's gemm has (device.precision) */
    snprintf(gemm, sizeof gemm, "measured: %s gemm", precision_name(tr->dev.precision));
    log_info("utilisation: model FLOPs %.4g per token + %.4g per attention pair (forward and "
             "backward); peak %.1f GFLOP/s on rank 0 (%s), %.1f GFLOP/s for the job",
             tr->flops.per_token, tr->flops.per_pair, mine,
             cf->peak_tflops > 0 ? "device.peak_tflops" : gemm, tr->peak_gflops);
    /* the benchmark's count beside ours (HSTU ranking): qk = v = d / H per head */
    tr->mlperf_on = ranking && cf->model.type == MODEL_HSTU;
    if (tr->mlperf_on) {
        const struct model_conf *m = &cf->model;
        flops_mlperf_init(&tr->mlperf, m->d, m->heads, m->d / m->heads, m->d / m->heads,
                          m->layers);
        log_info("utilisation: MLPerf DLRMv4's count (doc/ranking.md) %.4g FLOPs per position "
                 "+ %.4g per squared sample length", tr->mlperf.per_token,
                 tr->mlperf.per_square);
    }
}

void train_interval_flops(const struct trainer *tr, const struct step_plan *now,
                          struct interval *iv)
{
    const double tokens = (double)now->tokens;
    iv->flops += tr->flops.per_token * tokens + tr->flops.per_pair * now->pairs;
    if (tr->mlperf_on)
        iv->mlperf_flops += flops_mlperf_count(&tr->mlperf, tokens,
                                               flops_mlperf_squares(tokens, now->pairs));
}

