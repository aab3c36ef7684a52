/* train_stream: the stream schedule's loop over time windows; see
 * train_stream.h.
 *
 * Window k is [t0 + k len, t0 + (k + 1) len). Its split (data/window.h,
 * window_split: user u's events [0, a) before it, [a, b) in it) drives
 * both halves:
 *   evaluation  a split whose validation part is the window's sampled
 *               events (eval.max_events): each candidate sees the user's
 *               newest data.max_seq_len - 1 events before the window, not
 *               the window's earlier events (the ranking evaluation's
 *               candidates, batch_ranking.h); the baselines (train.baseline's
 *               smoothed means) fitted on every event before the window;
 *   training    the users active in the window (an order keyed by the seed
 *               and k), train.batch_size a step, cost-balanced by the
 *               planner; each sequence the newest data.max_seq_len events
 *               before the window's end, of which only the window's are
 *               targets (rsplit.from: the history's labels stay inputs).
 * Everything is keyed by the window, the user and the position, never by
 * the rank: the same losses and metrics on any P. The checkpoint records
 * the windows trained (tr->windows); train.resume continues with the next
 * one. A signal stops the run between steps with the last window's
 * checkpoint kept (a window is never half in a checkpoint). */
#include "cmd/train_stream.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/devstats.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/metrics.h"
#include "ckpt/ckpt_train.h"
#include "cli/cli.h"
#include "comm/comm_fail.h"
#include "cmd/eval_trainer.h"
#include "cmd/train_report.h"
#include "data/batch_window.h"
#include "data/window.h"
#include "data/stream_files.h"
#include "data/stream_follow.h"
#include "embedding/emb_cache.h"
#include "eval/eval.h"
#include "train/guard.h"
#include "train/preempt.h"
#include "train/step_task.h"
#include "train/train_cache.h"
#include "train/watchdog.h"


#define SHOWN_MAX RANK_MAX_TASKS

/* The metrics a window line shows: ranking each task's AUC (binary) or
 * MSE, retrieval HR@10 and NDCG@10; their names, metrics-file keys and
 * values in an evaluation. */
struct shown {
    int n;
    char name[SHOWN_MAX][64], key[SHOWN_MAX][64];
    double v[SHOWN_MAX];
};

static void shown_of(const struct trainer *tr, const struct eval_result *e, struct shown *sh)
{
    const struct task_conf *tc = &tr->conf.task;
    if (tc->type == TASK_RETRIEVAL) {
        sh->n = 2;
        snprintf(sh->name[0], sizeof sh->name[0], "HR@%d", eval_hr_k[1]);
        snprintf(sh->key[0], sizeof sh->key[0], "hr@%d", eval_hr_k[1]);
        sh->v[0] = e->r.hr[1];
        snprintf(sh->name[1], sizeof sh->name[1], "NDCG@%d", eval_ndcg_k[0]);
        snprintf(sh->key[1], sizeof sh->key[1], "ndcg@%d", eval_ndcg_k[0]);
        sh->v[1] = e->r.ndcg[0];
        return;
    }
    sh->n = tc->n;
    for (int t = 0; t < tc->n; t++) {
        const int bin = tc->t[t].kind == TASK_BINARY;
        snprintf(sh->name[t], sizeof sh->name[t], "%s %s", tc->t[t].name, bin ? "AUC" : "MSE");
        snprintf(sh->key[t], sizeof sh->key[t], "%s.%s", tc->t[t].name, bin ? "auc" : "mse");
        sh->v[t] = bin ? e->k.t[t].auc : e->k.t[t].mse;
    }
}

/* "20k" */
static void count_text(int64_t n, char *buf, size_t len)
{
    if (n >= 10000000)
        snprintf(buf, len, "%.0fM", (double)n / 1e6);
    else if (n >= 10000)
        snprintf(buf, len, "%.0fk", (double)n / 1e3);
    else
        snprintf(buf, len, "%lld", (long long)n);
}

/* The window's training users (a < b) into tr, and tr->rsplit as the
 * window's training split (events before b, targets from a); the events
 * it trains (a user's newest N) into *trained, the window's into *events. */
static void window_training(struct trainer *tr, const struct rsplit *ws, int64_t *trained,
                            int64_t *events)
{
    const int64_t U = tr->ds.num_users, N = tr->conf.N;
    rsplit_free(&tr->rsplit);
    tr->rsplit.conf = ws->conf;
    tr->rsplit.bound = xmalloc((size_t)(U ? U : 1) * 2 * sizeof *tr->rsplit.bound);
    tr->rsplit.from = xmalloc((size_t)(U ? U : 1) * sizeof *tr->rsplit.from);
    free(tr->train_users);
    tr->train_users = xmalloc((size_t)(U ? U : 1) * sizeof *tr->train_users);
    tr->n_train = 0;
    *trained = *events = 0;
    const int retrieval = tr->conf.task.type == TASK_RETRIEVAL;
    for (int64_t u = 0; u < U; u++) {
        const int64_t a = ws->bound[2 * u], b = ws->bound[2 * u + 1];
        tr->rsplit.bound[2 * u] = tr->rsplit.bound[2 * u + 1] = b;
        tr->rsplit.from[u] = a;
        if (b <= a)
            continue;
        *events += b - a;
        int64_t first, sup = b - a < N ? b - a : N; /* ranking: the newest N events */
        if (retrieval) /* the targets among the newest N inputs' next events */
            batch_window_inputs(&tr->rsplit, &tr->ds, (int)N, u, &first, &sup);
        if (sup > 0) {
            tr->train_users[tr->n_train++] = u;
            *trained += sup;
        }
    }
}

/* Window k's evaluation: the model and the baselines on its sampled events;
 * *no_base: no event before the window (the stream's first window from the
 * first event): the baseline (ranking's user+item means, retrieval's most
 * popular items) has nothing to predict from, and its figures are not
 * shown. */
static void window_eval(struct trainer *tr, const struct rsplit *ws,
                        const struct bias_values *bias0, int64_t k, struct eval_result *model,
                        struct eval_result *base, int64_t *n_eval, int *no_base)
{
    int64_t before = 0;
    for (int64_t u = 0; u < tr->ds.num_users; u++)
        before += ws->bound[2 * u];
    *no_base = before == 0;
    struct rsplit es;
    *n_eval = window_eval_sample(ws, &tr->ds, tr->conf.seed, k, tr->conf.stream.max_events, &es);
    struct eval_ctx ev;
    eval_ctx_of(tr, &ev);
    ev.rsplit = &es;
    ev.window = tr->conf.task.type == TASK_RETRIEVAL; /* ranking's candidates are the split's */
    watchdog_beat("in", "a window's evaluation");
    if (ev.window) { /* retrieval: an event of a user without a history is not ranked */
        int64_t *u, *e, skipped;
        batch_window_entries(&es, &tr->ds, &u, &e, &skipped);
        free(u);
        free(e);
        *n_eval -= skipped;
    }
    /* model.bias: the rows take in the labels of the events before the window, as the
     * online baseline's means do (step_task.h) */
    struct bias_values *now = bias0 ? step_bias_values(tr, ws, 0) : NULL;
    float *saved = step_bias_shift(tr, bias0, now);
    eval_run(&ev, 0, model);
    step_bias_restore(tr, saved);
    step_bias_values_free(now);
    const char *names[EVAL_MAX_BASELINES];
    const int nb = eval_baselines(&ev, 0, base, names);
    if (nb < 1)
        fatal("stream: the task has no baseline");
    base[0] = base[nb - 1]; /* retrieval: the popular items; ranking: user+item */
    rsplit_free(&es);
}

/* The peak resident memory (VmHWM) of this window in MiB (since its
 * cli_peak_reset): rank 0's and the largest of any rank; -1 unknown. */
static void window_peak(struct trainer *tr, double *r0, double *max)
{
    int64_t *all = xmalloc((size_t)tr->c->size * sizeof *all), top = -1;
    comm_allgather_i64(tr->c, COMM_WORLD, cli_proc_status_kib("VmHWM"), all);
    for (int r = 0; r < tr->c->size; r++)
        top = all[r] > top ? all[r] : top;
    *r0 = all[0] >= 0 ? (double)all[0] / 1024.0 : -1;
    *max = top >= 0 ? (double)top / 1024.0 : -1;
    free(all);
}

/* The window line and its metrics line (event "window"); base: the
 * baseline shown (window_eval; no_base: absent, "-" and null); halflife
 * the history terms' under model.recency = auto (0: off; < 0: not
 * shown). A window
 * with both the model's and the baseline's figure of a metric adds both
 * to the running average (avg), so that the two means are over the same
 * windows. */
static void window_report(struct trainer *tr, int64_t k, int64_t ta, const struct eval_result *m,
                          const struct eval_result *base, int no_base, int64_t n_eval, int64_t users,
                          int64_t trained, int64_t events, double loss, int64_t steps,
                          double tokens, double t_train, double secs, double halflife,
                          struct stream_avg *avg)
{
    const struct task_conf *tc = &tr->conf.task;
    char when[64], ntr[32], ev[1400] = "", line[1400];
    window_time_text(ta, when, sizeof when);
    count_text(trained, ntr, sizeof ntr);
    struct shown sm, sb;
    shown_of(tr, m, &sm);
    shown_of(tr, base, &sb);
    for (int t = 0; no_base && t < sb.n; t++)
        sb.v[t] = NAN;
    size_t n = 0;
    int in_mean = 0;
    for (int t = 0; t < sm.n && n < sizeof ev; t++) {
        char bt[32] = "-";
        if (!isnan(sb.v[t]))
            snprintf(bt, sizeof bt, "%.4f", sb.v[t]);
        n += (size_t)snprintf(ev + n, sizeof ev - n, "%s%s %.4f (baseline %s)", t ? ", " : "",
                              sm.name[t], sm.v[t], bt);
        if (n_eval > 0 && !isnan(sm.v[t]) && !isnan(sb.v[t])) {
            avg->n[t]++;
            avg->model[t] += sm.v[t];
            avg->nb[t]++;
            avg->base[t] += sb.v[t];
            in_mean = 1;
        }
    }
    if (in_mean) {
        if (avg->nw++ == 0)
            avg->first = k;
        avg->last = k;
    }
    snprintf(line, sizeof line, "window %lld [%s, +%s): train %lld users %s events",
             (long long)k, when, tr->conf.stream.len_text, (long long)users, ntr);
    if (trained < events)
        snprintf(line + strlen(line), sizeof line - strlen(line), " (%lld not trained: %s)",
                 (long long)(events - trained), tc->type == TASK_RETRIEVAL
                 ? "a user's first event, or beyond data.max_seq_len inputs"
                 : "beyond data.max_seq_len");
    double peak, peak_max;
    window_peak(tr, &peak, &peak_max);
    char mem[96] = "";
    if (peak >= 0 && tr->c->size > 1)
        snprintf(mem, sizeof mem, ", peak memory %.0f MiB (rank 0; any rank up to %.0f)", peak,
                 peak_max);
    else if (peak >= 0)
        snprintf(mem, sizeof mem, ", peak memory %.0f MiB", peak);
    struct train_cache_figs cs; /* embedding.cache (collective) */
    char cline[1024];
    const int cached = train_cache_take(tr, 1, &cs, cline, sizeof cline);
    char rec[64] = "";
    if (halflife == 0)
        snprintf(rec, sizeof rec, ", model.recency off");
    else if (halflife > 0)
        snprintf(rec, sizeof rec, ", model.recency %g", halflife);
    log_info("%s, eval %s%s, %.1f s%s%s", line, n_eval ? ev : "no events", rec, secs, mem, cline);
    struct metrics_line l;
    metrics_begin(&l, "window");
    metrics_int(&l, "window", k);
    metrics_int(&l, "start", ta);
    metrics_int(&l, "end", ta + tr->conf.stream.len);
    metrics_int(&l, "epoch", tr->epoch);
    metrics_int(&l, "step", tr->step);
    metrics_num_exact(&l, "loss", loss);
    metrics_num(&l, "samples_per_s", t_train > 0 ? (double)users / t_train : 0);
    metrics_num(&l, "tokens_per_s", t_train > 0 ? tokens / t_train : 0);
    metrics_int(&l, "steps", steps);
    metrics_int(&l, "train_users", users);
    metrics_int(&l, "train_events", trained);
    metrics_int(&l, "window_events", events);
    metrics_int(&l, "eval_events", n_eval);
    metrics_num(&l, "train_s", t_train);
    metrics_num(&l, "seconds", secs);
    metrics_num(&l, "peak_mib", peak); /* VmHWM over the window: rank 0, any rank */
    metrics_num(&l, "peak_mib_max", peak_max);
    if (halflife >= 0) /* model.recency = auto: the window's half-life (0: off) */
        metrics_num(&l, "recency", halflife);
    if (cached) /* embedding.cache: the window's figures */
        train_cache_metrics(&cs, &l);
    struct eval_ctx ec;
    eval_ctx_of(tr, &ec);
    eval_result_json(&ec, m, &l);
    char key[96];
    for (int t = 0; t < sb.n; t++) {
        snprintf(key, sizeof key, "baseline.%s", sb.key[t]);
        metrics_num_exact(&l, key, sb.v[t]);
    }
    for (int t = 0; tc->type == TASK_RANKING && t < tc->n; t++) { /* and NE or MAE */
        const int bin = tc->t[t].kind == TASK_BINARY;
        snprintf(key, sizeof key, "baseline.%s.%s", tc->t[t].name, bin ? "ne" : "mae");
        metrics_num_exact(&l, key, no_base ? NAN : bin ? base->k.t[t].ne : base->k.t[t].mae);
    }
    metrics_end(&l, tr->metrics);
}

/* The running average: the model's and the baseline's means over the
 * windows with both figures (window_report), the first and the last of
 * them named. */
static void stream_summary(struct trainer *tr, const struct stream_avg *avg, int64_t k0,
                           int64_t k1, double secs)
{
    char ev[1400] = "";
    size_t n = 0;
    struct eval_result none;
    memset(&none, 0, sizeof none);
    struct shown sh; /* the names and keys */
    shown_of(tr, &none, &sh);
    struct metrics_line l;
    metrics_begin(&l, "stream");
    metrics_int(&l, "windows", k1 - k0);
    metrics_int(&l, "first_window", k0);
    metrics_int(&l, "step", tr->step);
    metrics_num(&l, "seconds", secs);
    metrics_int(&l, "evaluated", avg->n[0]); /* the windows of the mean, from window 0 */
    if (avg->nw > 0) {
        metrics_int(&l, "mean_first_window", avg->first);
        metrics_int(&l, "mean_last_window", avg->last);
    }
    for (int t = 0; t < sh.n && n < sizeof ev; t++) {
        const double a = avg->n[t] ? avg->model[t] / (double)avg->n[t] : NAN;
        const double b = avg->nb[t] ? avg->base[t] / (double)avg->nb[t] : NAN;
        char bt[32] = "-";
        if (!isnan(b))
            snprintf(bt, sizeof bt, "%.4f", b);
        n += (size_t)snprintf(ev + n, sizeof ev - n, "%s%s %.4f (baseline %s)", t ? ", " : "",
                              sh.name[t], a, bt);
        char key[96];
        metrics_num_exact(&l, sh.key[t], a);
        snprintf(key, sizeof key, "baseline.%s", sh.key[t]);
        metrics_num_exact(&l, key, b);
    }
    metrics_end(&l, tr->metrics);
    char over[160], done[96]; /* a resumed run may train none */
    if (avg->nw > 0 && avg->last - avg->first + 1 == avg->n[0])
        snprintf(over, sizeof over, "windows %lld .. %lld", (long long)avg->first,
                 (long long)avg->last);
    else if (avg->nw > 0)
        snprintf(over, sizeof over, "the %lld windows of %lld .. %lld with both figures",
                 (long long)avg->n[0], (long long)avg->first, (long long)avg->last);
    else /* none, or a checkpoint from before the windows were recorded */
        snprintf(over, sizeof over, "%lld windows with both figures", (long long)avg->n[0]);
    if (k1 > k0)
        snprintf(done, sizeof done, "windows %lld .. %lld", (long long)k0, (long long)k1 - 1);
    else
        snprintf(done, sizeof done, "no window trained (resumed after window %lld)",
                 (long long)k0 - 1);
    log_info("stream: %s in %.1f s; model and baseline means over %s: %s", done, secs, over, ev);
}

/* Window k's training steps; returns the signal that stopped them before
 * the last (0: none; one after the last leaves the window whole, recorded
 * and checkpointed before the caller stops); *loss the mean of the steps'
 * losses, *tokens their tokens. */
static int window_steps(struct trainer *tr, struct planner *pl, int64_t k, double *loss,
                        int64_t *nsteps, double *tokens)
{
    const struct train_conf *cf = &tr->conf;
    const int lookahead = cf->overlap != OVERLAP_NONE;
    planner_window(pl, tr);
    const int64_t S = pl->steps_per_epoch, steps = tr->n_train > 0 ? S : 0;
    struct step_stats stats = {0};
    struct interval iv = {0};
    struct split_stats sx = {0};
    double sum = 0, last = clock_seconds();
    int stop = 0;
    *tokens = 0;
    *nsteps = 0;
    for (int64_t s = 0; s < steps && !stop; s++) {
        watchdog_step(tr->step + 1);
        steptime_begin(&tr->st);
        if (tr->c->rank == cf->signal_rank && tr->step + 1 == cf->signal_step)
            raise(SIGTERM); /* debug.signal_rank */
        const struct step_plan *now = planner_plan(pl, tr, k * S + s);
        const struct step_plan *next =
            lookahead && s + 1 < steps ? planner_plan(pl, tr, k * S + s + 1) : NULL;
        steptime_phase(&tr->st, PH_PLAN);
        int64_t tok;
        double l = train_step(tr, now, next, &tok);
        if (tr->tdata.stream) /* retrieval: tok counts the targets; the positions, as epochs */
            tok = now->tokens - (int64_t)tr->tdata.context * now->global_B;
        steptime_end(&tr->st, now->cost);
        tr->step++;
        guard_after_step(tr, &l, tr->sparse_sq, tr->dense_sq);
        sum += l;
        (*nsteps)++;
        *tokens += (double)tok;
        iv.steps++;
        iv.samples += (double)now->global_B;
        iv.tokens += (double)tok;
        iv.pairs += now->pairs;
        train_interval_flops(tr, now, &iv);
        sx.steps++; /* parallel.split_long (ranking): the cuts, as epochs */
        sx.seqs += now->pieces.nsplit;
        sx.chunks += now->pieces.n - (now->global_B - now->pieces.nsplit);
        if (tr->step % cf->log_every == 0 || s + 1 == steps) {
            steptime_collect(&tr->st, tr->c, &stats);
            planner_adapt(pl, tr, &stats);
            const double t = clock_seconds();
            iv.seconds = t - last;
            train_report_progress(tr, &stats, l, &iv, 0, tr->step + (steps - s - 1), &sx);
            last = t;
            iv = (struct interval){0};
        }
        if (s + 1 < steps) /* after the last step the window is whole: the caller's check */
            stop = preempt_requested(tr->c);
    }
    train_step_drain(tr);
    free(stats.tau);
    free(stats.tau_cpu);
    free(stats.cost_sum);
    *loss = *nsteps ? sum / (double)*nsteps : 0;
    return stop;
}

/* The split of the events in [t0, t1) (window_split; fatal on every rank
 * when it fails); returns how many there are. */
static int64_t range_split(struct trainer *tr, int64_t t0, int64_t t1, struct rsplit *s)
{
    char err[1024] = "";
    comm_fail_agree(tr->c, window_split(&tr->ds, t0, t1, s, err, sizeof err) != 0, err);
    int64_t n = 0;
    for (int64_t u = 0; u < tr->ds.num_users; u++)
        n += s->bound[2 * u + 1] - s->bound[2 * u];
    return n;
}

/* Window files: how many hold events before time t. */
static int64_t files_before(const struct trainer *tr, int64_t t)
{
    int64_t n = 0;
    while (n < tr->files->n && tr->files->f[n].t_first < t)
        n++;
    return n;
}

/* Window files, resumed after window k - 1 (end t): the files with events
 * before t must be those the checkpoint's windows were trained on (a file
 * delivered late, with events before windows already trained, would have
 * changed them). 0, or -1 + err naming the file. */
static int files_resume_check(const struct trainer *tr, int64_t t, char *err, size_t errlen)
{
    const int64_t now = files_before(tr, t), was = tr->files_before;
    if (was < 0 || now == was)
        return 0;
    char when[64];
    window_time_text(t, when, 64);
    if (now > was) /* the checkpoint holds the count, not the names */
        return errorf(err, errlen, "data.path: %lld files have events before the end of window "
                      "%lld (%s), already trained, and %lld had when it was trained: a file "
                      "delivered late (one of those up to %s) cannot be trained in order; move "
                      "it out of the stream, or start a new run", (long long)now,
                      (long long)tr->windows - 1, when, (long long)was,
                      tr->files->f[now - 1].path);
    return errorf(err, errlen, "data.path: the checkpoint's windows were trained on %lld files "
                  "with events before %s, and %lld are there now: a file of the stream is "
                  "missing (the first after %s)", (long long)was, when, (long long)now,
                  now > 0 ? tr->files->f[now - 1].path : "the start");
}

/* train.follow: the windows the files complete, at most cap: window k is
 * complete when the files hold an event at or after its end (a later file
 * starts after the last one's last event). */
static int64_t follow_complete(const struct trainer *tr, int64_t t0, int64_t cap)
{
    const int64_t last = tr->files->f[tr->files->n - 1].t_last, len = tr->conf.stream.len;
    const int64_t n = last >= t0 ? (last - t0) / len : 0;
    return n < cap ? n : cap;
}

/* train.follow's wait for the next file of the glob: rank 0 looks each
 * poll (stream_follow_look) and tells the others, who add the file; the
 * timeout counted on rank 0, the signals agreed (preempt_requested).
 * FOLLOW_NEW, FOLLOW_TIMEOUT or FOLLOW_STOP (*sig: the signal); an error
 * (a refused file, or one still incomplete at the timeout) stops the job
 * naming the file. */
static int follow_wait(struct trainer *tr, const char *pattern, double timeout, double *waited,
                       int *sig)
{
    const double start = clock_seconds();
    char err[1200] = "", why[1024] = "";
    for (;;) {
        int code = FOLLOW_NONE, pending = 0;
        watchdog_beat("in", "train.follow's wait for the next file");
        if (tr->c->rank == 0) {
            code = stream_follow_look(tr->files, pattern, &pending, why, sizeof why, err,
                                      sizeof err);
            if (code == FOLLOW_NONE && timeout > 0 && clock_seconds() - start >= timeout) {
                code = pending ? FOLLOW_ERROR : FOLLOW_TIMEOUT;
                if (pending)
                    snprintf(err, sizeof err, "train.follow: after train.follow_timeout (%g s) "
                             "the next file is still not complete: %.1000s", timeout, why);
            }
        }
        comm_bcast_bytes(tr->c, &code, sizeof code, 0);
        comm_fail_agree(tr->c, code == FOLLOW_ERROR && tr->c->rank == 0, err);
        *waited = clock_seconds() - start;
        if (code == FOLLOW_NEW) {
            char *path = tr->c->rank == 0 ? xstrdup(tr->files->f[tr->files->n - 1].path) : NULL;
            comm_bcast_string(tr->c, &path, 0);
            const int bad = tr->c->rank != 0 && stream_files_add(tr->files, path, err, sizeof err);
            comm_fail_agree(tr->c, bad, err);
            free(path);
            return FOLLOW_NEW;
        }
        if (code == FOLLOW_TIMEOUT)
            return FOLLOW_TIMEOUT;
        if ((*sig = preempt_requested(tr->c)))
            return FOLLOW_STOP;
        const struct timespec ts = {0, 250000000}; /* a look every 0.25 s */
        nanosleep(&ts, NULL);
    }
}

int train_stream_run(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    const struct window_conf *wc = &cf->stream;
    char err[1024] = "";
    int64_t first = 0, last = 0, t0 = 0, nw = 0;
    int bad = 0;
    if (tr->files) { /* window files: their time range (data/stream_files.h) */
        first = tr->files->f[0].t_first;
        last = tr->files->f[tr->files->n - 1].t_last;
    } else
        bad = window_range(&tr->ds, &first, &last, err, sizeof err);
    bad = bad || window_resolve(wc, first, last, &t0, &nw, err, sizeof err);
    comm_fail_agree(tr->c, bad, err); /* every rank reads the same */
    /* model.bias starts from data.split's training labels: causal only when
     * they all come before the stream */
    const struct rsplit_conf *sc = &tr->rsplit.conf;
    if (cf->task.bias && !(sc->mode == RSPLIT_TIME && sc->t_val <= t0)) {
        char when[64];
        window_time_text(t0, when, sizeof when);
        snprintf(err, sizeof err, "train.schedule = stream: model.bias = on starts from the "
                 "labels of data.split's training events, and with data.split = %.200s some come "
                 "after the stream's start (%s, %lld); use data.split = time:V,T with V at or "
                 "before it (the events before the stream), or model.bias = off",
                 params_str(tr->p, P_data_split), when, (long long)t0);
        bad = 1;
    }
    if ((cf->split_long.on || cf->split_long.force >= 2) && cf->task.type == TASK_RETRIEVAL) {
        snprintf(err, sizeof err, "train.schedule = stream with train.task = retrieval: "
                 "parallel.split_long cuts the sequences of a step into pieces, which "
                 "retrieval's window batches do not take (ranking's do); use "
                 "parallel.split_long = off");
        bad = 1;
    }
    /* raw ids: a user's random keys from its raw id, as in window files */
    if (!bad && tr->ds.raw_ids && tr->ds.has_user_map && !tr->ds.user_keys)
        bad = !(tr->ds.user_keys = dataset_read_map(&tr->ds, "user_map", err, sizeof err));
    comm_fail_agree(tr->c, bad, err);
    tr->tdata.stream = cf->task.type == TASK_RETRIEVAL; /* its batches: batch_window.h */
    char a[64], z[64];
    window_time_text(t0, a, sizeof a);
    window_time_text(t0 + nw * wc->len, z, sizeof z);
    log_info("stream: %lld windows of %s from %s to %s (events %lld .. %lld), each evaluated "
             "(at most %lld events) then trained once", (long long)nw, wc->len_text, a, z,
             (long long)first, (long long)last, (long long)wc->max_events);
    train_ckpt_start(tr); /* train.resume: tr->windows, the next window */
    log_release();
    if (tr->windows > 0)
        log_info("stream: resuming after window %lld (step %lld)", (long long)tr->windows - 1,
                 (long long)tr->step);
    if (tr->files && tr->windows > 0)
        comm_fail_agree(tr->c, files_resume_check(tr, t0 + tr->windows * wc->len, err,
                                                  sizeof err) != 0, err);
    train_utilisation_setup(tr);
    eval_trainer_reserve(tr); /* the memory of the largest batch, from the first window */
    watchdog_start((double)cf->timeout, tr->c->rank, "step");
    preempt_install();
    steptime_init(&tr->st, cf->log_every, 0);
    struct devstats setup; /* the counters count the steps, not the start-up */
    devstats_take(&setup);
    struct planner pl;
    planner_init(&pl, tr);
    struct stream_avg *avg = &tr->avg; /* the sums of windows 0 .. (checkpointed) */
    const double start = clock_seconds();
    const int64_t k0 = tr->windows;
    const int64_t every = cf->checkpoint_every > 0 ? cf->checkpoint_every : 1;
    int stop = 0, mid = 0; /* mid: stopped inside a window */
    const int follow = params_i64(tr->p, P_train_follow) != 0;
    char pattern[4096] = "";
    double follow_timeout = 0;
    if (follow) { /* checked by train_conf_check */
        if (stream_follow_pattern(cf->data_path, pattern, sizeof pattern, err, sizeof err) ||
            stream_duration_parse("train.follow_timeout",
                                  params_str(tr->p, P_train_follow_timeout), &follow_timeout, err,
                                  sizeof err))
            fatal("%s", err);
        log_info("train.follow: following %s (windows trained once the files hold an event "
                 "after their end; %s%s%s)", pattern, wc->end_set ? "until data.stream_end" :
                 "no data.stream_end", follow_timeout > 0 ? ", train.follow_timeout " : "",
                 follow_timeout > 0 ? params_str(tr->p, P_train_follow_timeout) : "");
    }
    const int64_t cap = follow && !wc->end_set ? INT64_MAX : nw;
    tr->n_windows = cap < INT64_MAX ? cap : 0; /* the progress lines: window k/N */
    int64_t n_now = follow ? follow_complete(tr, t0, cap) : nw;
    /* model.bias: the values it started from (data.split's training events, before the
     * stream), for the shift to each window's earlier events (window_eval) */
    struct bias_values *bias0 = tr->files ? NULL : step_bias_values(tr, NULL, 0);
    /* model.recency = auto: the half-life of the window line (0: off); the start-up choice
     * until a window's (step_bias_window) */
    double halflife = cf->task.recency_auto ? cf->task.recency : -1;
    const int64_t t_val = sc->t_val; /* window 0's "previous window": data.split's validation */
    int64_t n_val = 0; /* its events: the least a window's choice is made on */
    if (bias0 && cf->task.recency_auto) {
        struct rsplit v;
        n_val = range_split(tr, t_val, t0, &v);
        rsplit_free(&v);
    }
    for (int64_t k = k0; k < cap && !stop; k++) {
        while (k >= n_now && follow && !stop) { /* wait for the file that completes window k */
            double waited;
            const int r = follow_wait(tr, pattern, follow_timeout, &waited, &stop);
            if (r == FOLLOW_NEW) {
                n_now = follow_complete(tr, t0, cap);
                log_info("train.follow: %s added after %.1f s (windows complete: %lld)",
                         tr->files->f[tr->files->n - 1].path, waited, (long long)n_now);
            } else if (r == FOLLOW_TIMEOUT) {
                /* window k is trained once an event at or after its end arrives: before, a
                 * later file may still add to it (a file may start inside a window) */
                const int64_t ka = t0 + k * wc->len;
                const struct stream_file *fl = &tr->files->f[tr->files->n - 1];
                char left[900] = "", a[64], z[64];
                window_time_text(ka, a, sizeof a);
                window_time_text(fl->t_last, z, sizeof z);
                if (fl->t_last >= ka)
                    snprintf(left, sizeof left, "; window %lld [%s, +%s) is not trained: %.500s "
                             "has events in it (to %s), but its end is not known until a file "
                             "with an event at or after it arrives (train.resume = auto trains "
                             "it then)", (long long)k, a, wc->len_text, fl->path, z);
                char after[64] = "with no window trained";
                if (k > 0)
                    snprintf(after, sizeof after, "after window %lld", (long long)k - 1);
                log_info("train.follow: no new file for %.1f s (train.follow_timeout): ending "
                         "%s%s", waited, after, left);
                break;
            } else if (cf->checkpoint_dir[0] && k > k0 && k % every != 0)
                train_ckpt_save(tr); /* a signal while waiting */
        }
        if (k >= n_now || stop)
            break;
        const double tw = clock_seconds();
        cli_peak_reset(); /* the window's peak memory (window_report) */
        const int64_t ta = t0 + k * wc->len;
        struct rsplit ws;
        if (tr->files) /* the window's dataset from the files */
            comm_fail_agree(tr->c, trainer_window(tr, ta, ta + wc->len, err, sizeof err) != 0,
                            err);
        comm_fail_agree(tr->c, window_split(&tr->ds, ta, ta + wc->len, &ws, err, sizeof err) != 0,
                        err);
        if (bias0 && cf->task.recency_auto) { /* chosen on window k - 1 (and the windows
                                               * before it, down to n_val events), or before
                                               * window 0 on data.split's validation [V, t0) */
            struct rsplit prev; /* back by whole windows until it holds n_val events */
            int64_t from = k > 0 ? ta - wc->len : t_val;
            while (range_split(tr, from, ta, &prev) < n_val && from > t_val) {
                rsplit_free(&prev);
                from = from - wc->len > t_val ? from - wc->len : t_val;
            }
            const double h = step_bias_window(tr, bias0, &prev, &ws);
            rsplit_free(&prev);
            if (h >= 0)
                halflife = h;
        }
        struct eval_result model, base[EVAL_MAX_BASELINES];
        int64_t n_eval, trained, events, steps;
        int no_base;
        window_eval(tr, &ws, bias0, k, &model, base, &n_eval, &no_base);
        window_training(tr, &ws, &trained, &events);
        rsplit_free(&ws);
        const double t_train = clock_seconds();
        double loss, tokens;
        stop = mid = window_steps(tr, &pl, k, &loss, &steps, &tokens);
        if (stop)
            break; /* the window half trained: not recorded (its checkpoint: the last) */
        const double now = clock_seconds();
        tr->windows = tr->epoch = k + 1;
        if (tr->files)
            tr->files_before = files_before(tr, ta + wc->len);
        window_report(tr, k, ta, &model, base, no_base, n_eval, tr->n_train, trained, events, loss, steps,
                      tokens, now - t_train, now - tw, halflife, avg);
        if (cf->checkpoint_dir[0] && ((k + 1) % every == 0 || k + 1 == n_now))
            train_ckpt_save(tr);
        stop = preempt_requested(tr->c);
        if (stop && cf->checkpoint_dir[0] && (k + 1) % every != 0)
            train_ckpt_save(tr);
    }
    planner_free(&pl);
    step_bias_values_free(bias0);
    if (stop) {
        if (!cf->checkpoint_dir[0])
            log_warn("stopped by signal %d without output.checkpoint_dir: nothing was saved",
                     stop);
        char part[160] = "";
        if (mid)
            snprintf(part, sizeof part, " (window %lld, begun, is not recorded: a resume trains "
                     "it again from the last window's checkpoint)", (long long)tr->windows);
        log_info("stopped by signal %d at step %lld after window %lld%s; exit code %d: run "
                 "again with train.resume=auto to continue", stop, (long long)tr->step,
                 (long long)tr->windows - 1, part, PREEMPT_EXIT_CODE);
        return PREEMPT_EXIT_CODE;
    }
    stream_summary(tr, avg, k0, tr->windows, clock_seconds() - start);
    return 0;
}
