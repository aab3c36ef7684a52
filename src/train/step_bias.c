/* step_bias: the initial values of the ranking logits' per-item and
 * per-user terms (model.bias; model/task_bias.h), from the training
 * labels: the smoothed means of the user+item baseline (eval_retrieval.c), so
 * that the model starts where that baseline ends. Per task k, over the
 * training events (validation and test excluded), with prior =
 * train.baseline_prior pseudo-counts and y the label (a regression task's
 * standardised as the head's: (y - mean) / std):
 *   mu        the mean label
 *   b_i       sum over item i's events of (y - mu) / (n_i + prior)
 *   b_u       sum over user u's events of (y - mu - b_i) / (n_u + prior)
 * regression (the logit is the standardised prediction):
 *   item row  mu + b_i          user row  b_u
 * binary (logits; s(p) = log(p / (1 - p)), p clamped to [1e-6, 1 - 1e-6]):
 *   item row  s(mu + b_i)       user row  s(mu + m_u + b_u) - s(mu + m_u)
 * with m_u the mean of b_i over u's labelled events: the user's shift of
 * the baseline's probability at its typical item, as a shift of the logit.
 * Every rank reads every user (two passes, in chunks): the same values on
 * any number of ranks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "train/step_task.h"
#include "train/train.h"

#define BIAS_USERS 4096 /* users per read */

static double logit(double p)
{
    p = p < 1e-6 ? 1e-6 : p > 1 - 1e-6 ? 1 - 1e-6 : p;
    return log(p / (1 - p));
}

/* One chunk of users [u0, u1): their events' items and labels. */
struct chunk {
    int64_t *items;
    float *lab;
    int64_t cap;
};

static void chunk_read(struct trainer *tr, struct chunk *c, int64_t u0, int64_t u1)
{
    const struct dataset *ds = &tr->ds;
    const struct label_conf *lc = &tr->conf.task.labels;
    const int64_t e0 = ds->offsets[u0], n = ds->offsets[u1] - e0;
    if (n > c->cap) {
        c->cap = n;
        c->items = xrealloc(c->items, (size_t)n * sizeof *c->items);
        c->lab = xrealloc(c->lab, (size_t)(n * lc->n) * sizeof *c->lab);
    }
    char err[1024];
    if (dataset_read_users(ds, u0, u1, c->items, NULL, NULL, err, sizeof err))
        fatal("model.bias: %s", err);
    dataset_raw_numbers(ds, c->items, n); /* a raw dataset: rows by item number */
    labels_read_events(ds, lc, e0, n, c->lab);
}

/* What the passes accumulate (step_bias_init). */
struct bias_sums {
    const struct task *task;
    int K;
    double *ni, *si;                      /* [items, K]: counts, sums (then b_i) */
    double cnt[RANK_MAX_TASKS], sum[RANK_MAX_TASKS], mu[RANK_MAX_TASKS];
    double prior;
    const struct task_conf *tc;
    float *user;                          /* [users, K] */
};

/* Every user's training events, chunk by chunk: visit(s, c, u, e0, n) with
 * the user's first training event at c's index e0 and n of them. */
static void each_user(struct trainer *tr, struct chunk *c, struct bias_sums *s,
                      void (*visit)(struct bias_sums *, const struct chunk *, int64_t, int64_t,
                                    int64_t))
{
    const struct dataset *ds = &tr->ds;
    for (int64_t u0 = 0; u0 < ds->num_users; u0 += BIAS_USERS) {
        const int64_t u1 = u0 + BIAS_USERS < ds->num_users ? u0 + BIAS_USERS : ds->num_users;
        chunk_read(tr, c, u0, u1);
        for (int64_t u = u0; u < u1; u++) {
            int64_t a, b;
            rsplit_bounds(&tr->rsplit, ds, u, &a, &b);
            visit(s, c, u, ds->offsets[u] - ds->offsets[u0], a);
        }
    }
}

/* pass 1: the items' counts and sums, the tasks' means */
static void add_items(struct bias_sums *s, const struct chunk *c, int64_t u, int64_t o,
                      int64_t a)
{
    (void)u;
    const int K = s->K;
    for (int64_t e = o; e < o + a; e++)
        for (int k = 0; k < K; k++) {
            const float y = c->lab[e * K + k];
            if (isnan(y))
                continue;
            const double v = task_ranking_z(s->task, k, y);
            s->ni[c->items[e] * K + k] += 1;
            s->si[c->items[e] * K + k] += v;
            s->cnt[k] += 1;
            s->sum[k] += v;
        }
}

/* pass 2: a user's row, from the items' b_i */
static void add_user(struct bias_sums *s, const struct chunk *c, int64_t u, int64_t o, int64_t a)
{
    const int K = s->K;
    for (int k = 0; k < K; k++) {
        double n = 0, r = 0, m = 0;
        for (int64_t e = o; e < o + a; e++) {
            const float y = c->lab[e * K + k];
            if (isnan(y))
                continue;
            const double bi = s->si[c->items[e] * K + k];
            n += 1;
            r += task_ranking_z(s->task, k, y) - s->mu[k] - bi;
            m += bi;
        }
        const double bu = n + s->prior > 0 ? r / (n + s->prior) : 0;
        m = n > 0 ? m / n : 0;
        s->user[u * K + k] = (float)(s->tc->t[k].kind == TASK_BINARY
                                         ? logit(s->mu[k] + m + bu) - logit(s->mu[k] + m)
                                         : bu);
    }
}

void step_bias_init(struct trainer *tr)
{
    const struct task_conf *tc = &tr->conf.task;
    if (tc->type != TASK_RANKING || !tc->bias)
        return;
    const int K = tc->n;
    const int64_t NI = tc->bias_items, NU = tc->bias_users;
    struct bias_sums s = {.task = &tr->task, .K = K, .prior = tc->prior, .tc = tc};
    s.ni = xcalloc((size_t)(NI * K), sizeof *s.ni);
    s.si = xcalloc((size_t)(NI * K), sizeof *s.si);
    struct chunk c = {0};
    each_user(tr, &c, &s, add_items);
    float *item = xmalloc((size_t)(NI * K) * sizeof *item);
    s.user = xcalloc((size_t)(NU * K), sizeof *s.user);
    for (int k = 0; k < K; k++)
        s.mu[k] = s.cnt[k] > 0 ? s.sum[k] / s.cnt[k] : 0;
    for (int64_t i = 0; i < NI; i++) /* si becomes b_i */
        for (int k = 0; k < K; k++) {
            double *b = &s.si[i * K + k];
            *b = (*b - s.ni[i * K + k] * s.mu[k]) / (s.ni[i * K + k] + s.prior);
            if (s.ni[i * K + k] + s.prior <= 0)
                *b = 0;
            item[i * K + k] = (float)(tc->t[k].kind == TASK_BINARY ? logit(s.mu[k] + *b)
                                                                   : s.mu[k] + *b);
        }
    each_user(tr, &c, &s, add_user);
    task_ranking_set_bias(&tr->task, item, s.user);
    free(c.items);
    free(c.lab);
    free(s.ni);
    free(s.si);
    free(item);
    free(s.user);
}
