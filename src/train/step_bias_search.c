/* step_bias_search: model.bias_prior = auto and model.recency = auto, each
 * chosen on the run's validation events: the start-up fit (bias_fit) at
 * every value of a doubling grid, the other setting fixed (the prior at the
 * given or placeholder half-life first, then the half-life), scored by its
 * loss on each user's validation events predicted after his training
 * events; the lowest wins. Every rank reads every user: the same choice on
 * any number of ranks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/check.h"
#include "base/log.h"
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

/* One grid's search: values[i] = v0 2^i; prior or half-life, the other
 * fixed. Logs every value's loss and the choice; returns it. */
static double choose(struct trainer *tr, const char *name, double v0, int is_prior,
                     float *item, float *user, float *centre, float *A, float *uscale)
{
    const struct task_conf *tc = &tr->conf.task;
    char buf[1024];
    size_t len = 0;
    double best = -1, at = 0, per[RANK_MAX_TASKS];
    for (int i = 0; i < GRID_N; i++) {
        const double v = v0 * pow(2.0, i);
        const double H = is_prior ? tc->recency : v;
        bias_fit(tr, is_prior ? v : tc->bias_prior, H, item, user, centre, A, uscale);
        const double loss = val_loss(tr, item, user, H > 0 ? A : NULL, per);
        if (loss < 0)
            fatal("%s = auto: data.split = %s leaves no validation labels to choose on (give "
                  "it a number, or a split with validation events)", name,
                  params_str(tr->p, P_data_split));
        if (len + 32 < sizeof buf)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%g %.5f", i ? ", " : "", v,
                                    loss);
        if (best < 0 || loss < best) {
            best = loss;
            at = v;
        }
    }
    log_info("%s = auto: the start-up fit's validation loss (NE, or MSE / variance, weighted "
             "over the tasks) by value: %s; chosen %g", name, buf, at);
    return at;
}

void bias_search(struct trainer *tr, float *item, float *user, float *centre, float *A,
                 float *uscale)
{
    struct task_conf *tc = &tr->conf.task;
    if (tc->prior_auto)
        tc->bias_prior = choose(tr, "model.bias_prior", 0.5, 1, item, user, centre, A, uscale);
    if (tc->recency_auto)
        tc->recency = choose(tr, "model.recency", 1, 0, item, user, centre, A, uscale);
}
