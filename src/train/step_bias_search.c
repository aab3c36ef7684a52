/* step_bias_search: model.bias_prior = auto and model.recency = auto, each
 * chosen on the run's validation events: the start-up fit (bias_fit) at
 * every value of a doubling grid, the other setting fixed (the priors at
 * the given or placeholder half-life first: both rows' prior, then the
 * item rows', then the user rows'; then the half-life), scored by its loss
 * on each user's validation events predicted after his training events
 * (train.select's task's; without one, the tasks' weighted mean); the
 * lowest wins. The fits of a round (a grid, or what is left of it) are
 * shared among the ranks, each fit whole on one rank (every rank reads
 * every user), the losses gathered: the same losses, choice and log on any
 * number of ranks; the half-life's fits share the smoothed means (fitted
 * once: the priors are fixed), and the events are read once
 * (tr->bias_events, step_bias_init).
 *
 * In a stream (step_bias_window) model.recency = auto is chosen again
 * before each window on the previous one, "off" among the candidates,
 * scored by the tasks' weighted mean: the smoothed means fitted once (the
 * priors are fixed), the half-lives' fits shared among the ranks (each fit
 * whole on one rank: the same losses on any P), the events read once
 * (tr->bias_events). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "comm/comm.h"
#include "data/split_ranking.h"
#include "train/step_bias_pass.h"
#include "train/step_task.h"
#include "train/train.h"

/* What val_loss's pass accumulates per task over the validation events. */
struct val_sums {
    const struct task *task;
    const struct task_conf *tc;
    int K;
    const float *item, *user, *A;             /* the start-up rows (user scaled), A or NULL */
    double n[RANK_MAX_TASKS], loss[RANK_MAX_TASKS], sz[RANK_MAX_TASKS], szz[RANK_MAX_TASKS];
    float *r;                                 /* [cap, K] one user's history terms */
    int64_t cap;
};

static double softplus(double x)
{
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

/* One user's validation events [s->a, b) predicted by the start-up values
 * after his training events (as the validation evaluation sees them). */
static void val_user(struct bias_sums *s, const struct chunk *c, int64_t u, int64_t o, int64_t b)
{
    struct val_sums *v = s->vs;
    const int K = v->K;
    const int64_t a = s->a;
    if (b <= a)
        return;
    if (v->A) { /* the validation events take the terms of the training events before them */
        if (b > v->cap) {
            v->cap = b + b / 2;
            v->r = xrealloc(v->r, (size_t)(v->cap * K) * sizeof *v->r);
        }
        const int64_t off[2] = {0, b}, nc = b - a;
        task_ranking_recency_terms(v->task, 1, off, &nc, c->items + o, c->lab + o * K, v->r);
    }
    for (int64_t e = a; e < b; e++) {
        const float *irow = v->item + c->items[o + e] * K;
        for (int k = 0; k < K; k++) {
            const float y = c->lab[(o + e) * K + k];
            if (isnan(y))
                continue;
            double eta = (double)irow[k] + v->user[u * K + k];
            for (int j = 0; v->A && j < K; j++)
                eta += (double)v->A[k * K + j] * v->r[e * K + j];
            const double z = task_ranking_z(v->task, k, y);
            v->loss[k] += v->tc->t[k].kind == TASK_BINARY ? softplus(eta) - z * eta
                                                          : (z - eta) * (z - eta);
            v->n[k] += 1;
            v->sz[k] += z;
            v->szz[k] += z * z;
        }
    }
}

/* The start-up values' validation loss: per task (per[k]) a binary task's
 * NE (log loss over the entropy of the validation labels' mean) or a
 * regression task's MSE over the labels' variance; returned their mean
 * weighted by the tasks' weights; -1 when no task has validation labels. */
static double val_loss(struct trainer *tr, const float *item, const float *user, const float *A,
                       double *per)
{
    const struct task_conf *tc = &tr->conf.task;
    const int K = tc->n;
    struct val_sums v = {.task = &tr->task, .tc = tc, .K = K, .item = item, .user = user, .A = A};
    struct bias_sums pass = {.K = K, .vs = &v, .val = 1};
    struct chunk c = {0};
    bias_each_user(tr, &c, &pass, val_user);
    free(c.items);
    free(c.lab);
    free(v.r);
    double num = 0, den = 0;
    for (int k = 0; k < K; k++) {
        per[k] = NAN;
        if (v.n[k] <= 0)
            continue;
        const double m = v.sz[k] / v.n[k];
        const double norm = tc->t[k].kind == TASK_BINARY
                                ? (m > 0 && m < 1 ? -(m * log(m) + (1 - m) * log(1 - m)) : 0)
                                : v.szz[k] / v.n[k] - m * m;
        if (norm <= 0)
            continue;
        per[k] = v.loss[k] / v.n[k] / norm;
        num += tc->t[k].weight * per[k];
        den += tc->t[k].weight;
    }
    return den > 0 ? num / den : -1;
}

#define GRID_N 9 /* the grids: the prior 0.5 .. 128, the half-life 1 .. 256, doubling */

/* The start-up fit at priors (pi, pu) and half-life H (0: no history
 * terms) on tr->rsplit's training events, its loss on the validation events:
 * task k's (per's) or, k < 0 or without task k's labels, val_loss's mean
 * over the tasks. */
static double fit_loss(struct trainer *tr, double pi, double pu, double H, int k, float *item,
                       float *user, float *centre, float *A, float *uscale)
{
    double per[RANK_MAX_TASKS];
    bias_fit(tr, pi, pu, H, item, user, centre, A, uscale);
    const double all = val_loss(tr, item, user, H > 0 ? A : NULL, per);
    return k >= 0 && !isnan(per[k]) ? per[k] : all;
}

/* The losses of n <= GRID_N candidates shared among the ranks: candidate
 * i's fit(ctx, i) whole on rank i % P, every rank's gathered into loss[i]
 * (each fit with the same values in the same order on whichever rank: the
 * same losses on any P). */
static void shared_losses(struct trainer *tr, int n, double (*fit)(void *ctx, int i), void *ctx,
                          double *loss)
{
    const int P = tr->c->size, R = tr->c->rank;
    double mine[GRID_N];
    for (int i = 0; i < GRID_N; i++)
        mine[i] = i < n && i % P == R ? fit(ctx, i) : 0;
    double *all = xmalloc((size_t)P * GRID_N * sizeof *all);
    comm_allgather_bytes(tr->c, COMM_WORLD, mine, sizeof mine, all);
    for (int i = 0; i < n; i++)
        loss[i] = all[(i % P) * GRID_N + i];
    free(all);
}

/* The half-lives 2^i (i < GRID_N) with the smoothed means item, user0 and
 * the task's centres fixed (bias_fit_values'): candidate i's user rows
 * user0 copied into user, then bias_fit_terms and val_loss (task k's, as
 * fit_loss's; k < 0: the tasks' mean). */
struct halflives {
    struct trainer *tr;
    const float *item, *user0;
    float *user;
    int k;
};

static double halflife_fit(void *ctx, int i)
{
    struct halflives *h = ctx;
    const struct task_conf *tc = &h->tr->conf.task;
    float A[RANK_MAX_TASKS * RANK_MAX_TASKS], uscale[RANK_MAX_TASKS];
    double per[RANK_MAX_TASKS];
    memcpy(h->user, h->user0, (size_t)(tc->bias_users * tc->n) * sizeof *h->user);
    bias_fit_terms(h->tr, pow(2.0, i), h->item, h->user, A, uscale);
    const double all = val_loss(h->tr, h->item, h->user, A, per);
    return h->k >= 0 && !isnan(per[h->k]) ? per[h->k] : all;
}

/* What one auto search needs: the trainer, the fit's scratch arrays, the
 * round's candidates and the log of every value scored. */
struct search {
    struct trainer *tr;
    const char *name;
    float *item, *user, *centre, *A, *uscale, *user0;
    double H, q[GRID_N][2]; /* the priors' round: the half-life, each candidate's priors */
    char buf[2048];
    size_t len;
};

static double prior_fit(void *ctx, int i)
{
    struct search *S = ctx;
    return fit_loss(S->tr, S->q[i][0], S->q[i][1], S->H, S->tr->conf.task.select, S->item,
                    S->user, S->centre, S->A, S->uscale);
}

/* A loss scored, logged as "label loss" (refused when no labels scored). */
static void record(struct search *S, const char *label, double loss)
{
    if (loss < 0)
        fatal("%s = auto: data.split = %s leaves no validation labels to choose on (give "
              "it a number, or a split with validation events)", S->name,
              params_str(S->tr->p, P_data_split));
    if (S->len + 48 < sizeof S->buf)
        S->len += (size_t)snprintf(S->buf + S->len, sizeof S->buf - S->len, "%s%s %.5f",
                                   S->len ? ", " : "", label, loss);
}

/* The priors' round of n candidates (S->q), shared among the ranks, logged
 * in order; the first lowest of them below *best moves *best and pr[c]
 * (c = 2: both, pr[0] = pr[1]) to it. */
static void prior_round(struct search *S, int n, int c, double *best, double pr[2])
{
    double loss[GRID_N];
    char label[64];
    shared_losses(S->tr, n, prior_fit, S, loss);
    for (int i = 0; i < n; i++) {
        if (c == 2)
            snprintf(label, sizeof label, "%g", S->q[i][0]);
        else
            snprintf(label, sizeof label, "%g,%g", S->q[i][0], S->q[i][1]);
        record(S, label, loss[i]);
        if (*best < 0 || loss[i] < *best) {
            *best = loss[i];
            if (c == 2)
                pr[0] = pr[1] = S->q[i][0];
            else
                pr[c] = S->q[i][c];
        }
    }
}

/* The priors' search: both rows' prior on the grid, then the item rows'
 * with the user rows' fixed, then the user rows' with the item rows' fixed
 * (the value already scored skipped); pr[0], pr[1]: the item rows', the
 * user rows' prior chosen (a lower loss only moves it: the first of equals). */
static void choose_prior(struct search *S, double H, double pr[2])
{
    double best = -1;
    S->H = H;
    for (int i = 0; i < GRID_N; i++)
        S->q[i][0] = S->q[i][1] = 0.5 * pow(2.0, i);
    prior_round(S, GRID_N, 2, &best, pr);
    for (int c = 0; c < 2; c++) {
        int n = 0;
        for (int i = 0; i < GRID_N; i++) {
            const double v = 0.5 * pow(2.0, i);
            if (v == pr[c])
                continue;
            S->q[n][0] = pr[0];
            S->q[n][1] = pr[1];
            S->q[n++][c] = v;
        }
        prior_round(S, n, c, &best, pr);
    }
}

/* model.recency's search: the half-life 1 .. 256 doubling, the priors
 * fixed (their smoothed means fitted once). */
static double choose_recency(struct search *S)
{
    struct trainer *tr = S->tr;
    const struct task_conf *tc = &tr->conf.task;
    double best = -1, at = 0, loss[GRID_N];
    char label[64];
    bias_fit_values(tr, tc->bias_prior, tc->bias_prior_user, S->item, S->user0, S->centre);
    struct halflives h = {.tr = tr, .item = S->item, .user0 = S->user0, .user = S->user,
                          .k = tc->select};
    shared_losses(tr, GRID_N, halflife_fit, &h, loss);
    for (int i = 0; i < GRID_N; i++) {
        snprintf(label, sizeof label, "%g", pow(2.0, i));
        record(S, label, loss[i]);
        if (best < 0 || loss[i] < best) {
            best = loss[i];
            at = pow(2.0, i);
        }
    }
    return at;
}

void bias_search(struct trainer *tr, float *item, float *user, float *centre, float *A,
                 float *uscale)
{
    struct task_conf *tc = &tr->conf.task;
    struct search S = {.tr = tr, .item = item, .user = user, .centre = centre, .A = A,
                       .uscale = uscale};
    if (tc->recency_auto)
        S.user0 = xmalloc((size_t)(tc->bias_users * tc->n) * sizeof *S.user0);
    char what[160] = "NE, or MSE / variance, weighted over the tasks";
    if (tc->select >= 0)
        snprintf(what, sizeof what, "train.select's task %s: %s", tc->t[tc->select].name,
                 tc->t[tc->select].kind == TASK_BINARY ? "NE" : "MSE / variance");
    if (tc->prior_auto) {
        double pr[2];
        S.name = "model.bias_prior";
        choose_prior(&S, tc->recency, pr);
        tc->bias_prior = pr[0];
        tc->bias_prior_user = pr[1];
        log_info("model.bias_prior = auto: the start-up fit's validation loss (%s) by value "
                 "(both rows', or the item rows', the user rows'): %s; chosen %g,%g", what,
                 S.buf, pr[0], pr[1]);
    }
    if (tc->recency_auto) {
        S.name = "model.recency";
        S.len = 0;
        S.buf[0] = 0;
        tc->recency = choose_recency(&S);
        log_info("model.recency = auto: the start-up fit's validation loss (%s) by value: %s; "
                 "chosen %g", what, S.buf, tc->recency);
    }
    free(S.user0);
}

double step_bias_window(struct trainer *tr, const struct bias_values *from,
                        const struct rsplit *prev, const struct rsplit *now)
{
    const struct task_conf *tc = &tr->conf.task;
    if (tc->type != TASK_RANKING || !tc->bias || !tc->recency_auto || !from)
        return -1;
    const int K = tc->n;
    const int64_t NI = tc->bias_items, NU = tc->bias_users;
    float *item = xmalloc((size_t)(NI * K) * sizeof *item);
    float *user = xmalloc((size_t)(NU * K) * sizeof *user);
    float *user0 = xmalloc((size_t)(NU * K) * sizeof *user0);
    float *centre = xmalloc((size_t)(NI * K) * sizeof *centre);
    float *kept = NULL; /* the task's centres: the fits set theirs */
    if (task_ranking_centres(&tr->task)) {
        kept = xmalloc((size_t)(NI * K) * sizeof *kept);
        memcpy(kept, task_ranking_centres(&tr->task), (size_t)(NI * K) * sizeof *kept);
    }
    float A[RANK_MAX_TASKS * RANK_MAX_TASKS], uscale[RANK_MAX_TASKS];
    double per[RANK_MAX_TASKS], loss[GRID_N], best = -1, at = -1;
    const struct rsplit keep = tr->rsplit;
    bias_events_read(tr, BIAS_EVENTS_MAX); /* the passes below read them once */
    tr->rsplit = *prev; /* fitted before the previous window, scored on its events */
    /* the smoothed means are every candidate's (the priors are fixed): once; "off" scored on
     * every rank, then the half-lives 1 .. 256 shared among the ranks */
    bias_fit_values(tr, tc->bias_prior, tc->bias_prior_user, item, user0, centre);
    const double off = val_loss(tr, item, user0, NULL, per);
    if (off >= 0) { /* else no labels in the previous window: the choice stays */
        best = off;
        at = 0;
        struct halflives h = {.tr = tr, .item = item, .user0 = user0, .user = user, .k = -1};
        shared_losses(tr, GRID_N, halflife_fit, &h, loss);
        for (int i = 0; i < GRID_N; i++)
            if (loss[i] < best) {
                best = loss[i];
                at = pow(2.0, i);
            }
        /* the half-life the task is left with when "off" is chosen: the last candidate's */
        task_ranking_set_halflife(&tr->task, pow(2.0, GRID_N - 1));
    }
    if (at >= 0) { /* the chosen terms' matrix and the user rows' scales refitted on every
                    * event before this window (off: none, the scales 1) */
        tr->rsplit = *now;
        bias_fit(tr, tc->bias_prior, tc->bias_prior_user, at, item, user, centre, A, uscale);
        if (at == 0)
            memset(A, 0, sizeof A);
        task_ranking_set_recency(&tr->task, A);
        bias_rescale_users(tr, from, uscale);
    }
    bias_events_free(tr);
    tr->rsplit = keep;
    task_ranking_set_centres(&tr->task, kept, NI);
    free(kept);
    free(item);
    free(user);
    free(user0);
    free(centre);
    return at;
}
