/* data_gen_planted: planted ranking labels; see data_gen_planted.h. */
#include "tools/data_gen_planted.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/check.h"
#include "base/log.h"
#include "base/rng.h"
#include "data/h5io.h"
#include "eval/metrics_ranking.h"

enum { KEY_PL_ITEM = 0x706c69, KEY_PL_USER = 0x706c75, KEY_PL_EVENT = 0x706c65 };

int64_t planted_parse(const char *text)
{
    if (!strcmp(text, "planted"))
        return 1;
    long long k = 0;
    int used = 0;
    if (sscanf(text, "planted:%lld%n", &k, &used) == 1 && !text[used] && k >= 1 && k <= 1000000)
        return k;
    fatal("--labels: '%s' is not planted or planted:K (K >= 1: the test events per user over "
          "which the optimum is recorded, those of data.split = last:K)", text);
}

void planted_init(struct planted *pl, struct dataset_writer *w, int64_t k, uint64_t seed,
                  int64_t users, int64_t items, double *pop)
{
    memset(pl, 0, sizeof *pl);
    pl->k = k;
    pl->seed = seed;
    pl->users = users;
    pl->items = items;
    pl->q = xmalloc((size_t)((items + 1) * PLANTED_F) * sizeof *pl->q);
    pl->c = xmalloc((size_t)(items + 1) * sizeof *pl->c);
    for (int64_t i = 0; i <= items; i++) {
        struct rng r;
        rng_init(&r, rng_key(seed, (uint64_t)i, KEY_PL_ITEM));
        for (int f = 0; f < PLANTED_F; f++)
            pl->q[i * PLANTED_F + f] = (float)rng_normal(&r);
        pl->c[i] = (float)(0.7 * rng_normal(&r));
    }
    pl->pop = pop;
    for (int64_t i = 1; i <= items; i++)
        for (int f = 0; f < PLANTED_F; f++)
            pl->qbar[f] += pop[i] * pl->q[i * PLANTED_F + f];
    char err[4400];
    if ((pl->slot_click = dataset_writer_event_feature(w, "click", 1, 0, err, sizeof err)) < 0 ||
        (pl->slot_rating = dataset_writer_event_feature(w, "rating", 1, 0, err, sizeof err)) < 0) {
        dataset_writer_abort(w);
        fatal("%s", err);
    }
}

static void keep(struct planted *pl, double p, double pv, float y, double mean, double meanv,
                 float r)
{
    if (pl->n == pl->cap) {
        pl->cap = pl->cap ? 2 * pl->cap : 4096;
        pl->p = xrealloc(pl->p, (size_t)pl->cap * sizeof *pl->p);
        pl->pv = xrealloc(pl->pv, (size_t)pl->cap * sizeof *pl->pv);
        pl->mean = xrealloc(pl->mean, (size_t)pl->cap * sizeof *pl->mean);
        pl->meanv = xrealloc(pl->meanv, (size_t)pl->cap * sizeof *pl->meanv);
        pl->y = xrealloc(pl->y, (size_t)pl->cap * sizeof *pl->y);
        pl->r = xrealloc(pl->r, (size_t)pl->cap * sizeof *pl->r);
    }
    pl->p[pl->n] = p;
    pl->pv[pl->n] = pv;
    pl->y[pl->n] = y;
    pl->mean[pl->n] = mean;
    pl->meanv[pl->n] = meanv;
    pl->r[pl->n++] = r;
}

/* The probability and mean of an event of item factors q and logit s0
 * without the previous item's term, averaged over that item. */
static void visible(const struct planted *pl, const float *q, double s0, double *p, double *mean)
{
    double acc = 0, qq = 0;
    for (int64_t i = 1; i <= pl->items; i++) {
        double dot = 0;
        for (int f = 0; f < PLANTED_F; f++)
            dot += (double)pl->q[i * PLANTED_F + f] * q[f];
        acc += pl->pop[i] / (1.0 + exp(-(s0 + 0.6 * dot / PLANTED_F)));
    }
    for (int f = 0; f < PLANTED_F; f++)
        qq += pl->qbar[f] * q[f];
    *p = acc;
    *mean = 3.0 + 0.8 * (s0 + 0.6 * qq / PLANTED_F);
}

void planted_events(struct planted *pl, struct dataset_writer *w, int64_t u0, int64_t nu,
                    const int64_t *lengths, const int64_t *items)
{
    int64_t events = 0;
    for (int64_t u = 0; u < nu; u++)
        events += lengths[u];
    float *click = xmalloc((size_t)(events ? events : 1) * sizeof *click);
    float *rating = xmalloc((size_t)(events ? events : 1) * sizeof *rating);
    const double sf = sqrt((double)PLANTED_F);
    for (int64_t u = 0, at = 0; u < nu; u++) {
        struct rng r;
        rng_init(&r, rng_key(pl->seed, (uint64_t)(u0 + u), KEY_PL_USER));
        double p_u[PLANTED_F];
        for (int f = 0; f < PLANTED_F; f++)
            p_u[f] = rng_normal(&r);
        const double a_u = 0.5 * rng_normal(&r);
        rng_init(&r, rng_key(pl->seed, (uint64_t)(u0 + u), KEY_PL_EVENT));
        for (int64_t j = 0; j < lengths[u]; j++, at++) {
            const float *q = pl->q + items[at] * PLANTED_F;
            double pq = 0, prev = 0;
            for (int f = 0; f < PLANTED_F; f++)
                pq += p_u[f] * q[f];
            if (j > 0)
                for (int f = 0; f < PLANTED_F; f++)
                    prev += (double)pl->q[items[at - 1] * PLANTED_F + f] * q[f];
            const double s = -0.2 + a_u + pl->c[items[at]] + 0.6 * pq / sf +
                             0.6 * prev / PLANTED_F;
            const double p = 1.0 / (1.0 + exp(-s)), mean = 3.0 + 0.8 * s;
            click[at] = rng_uniform(&r) < p ? 1.0f : 0.0f;
            rating[at] = (float)(mean + 0.5 * rng_normal(&r));
            if (j >= lengths[u] - pl->k) {
                double pv = p, meanv = mean;
                if (j > lengths[u] - pl->k && j > 0) /* its previous item is not shown */
                    visible(pl, q, s - 0.6 * prev / PLANTED_F, &pv, &meanv);
                keep(pl, p, pv, click[at], mean, meanv, rating[at]);
            }
        }
    }
    char err[4400];
    if (dataset_writer_append_feature(w, pl->slot_click, events, NULL, click, err, sizeof err) ||
        dataset_writer_append_feature(w, pl->slot_rating, events, NULL, rating, err,
                                      sizeof err)) {
        dataset_writer_abort(w);
        fatal("%s", err);
    }
    free(click);
    free(rating);
}

void planted_finish(struct planted *pl, const char *path)
{
    double ll = 0, llv = 0, pos = 0, se = 0, sev = 0;
    for (int64_t i = 0; i < pl->n; i++) {
        const double p = pl->p[i], pv = pl->pv[i], y = pl->y[i];
        const double e = pl->r[i] - pl->mean[i], ev = pl->r[i] - pl->meanv[i];
        ll -= y * log(p) + (1 - y) * log1p(-p);
        llv -= y * log(pv) + (1 - y) * log1p(-pv);
        pos += y;
        se += e * e;
        sev += ev * ev;
    }
    const double n = pl->n > 0 ? (double)pl->n : 1, rate = pos / n;
    const double h = rate > 0 && rate < 1 ? -(rate * log(rate) + (1 - rate) * log1p(-rate)) : NAN;
    const double auc = metrics_auc(pl->n, pl->p, pl->y), aucv = metrics_auc(pl->n, pl->pv, pl->y);
    ll /= n;
    llv /= n;
    char tasks[128];
    snprintf(tasks, sizeof tasks, "click:binary:click,rating:regression:rating");
    struct h5io f;
    int bad = h5io_open_rw(&f, path, NULL, 0, NULL, NULL);
    if (!bad) {
        bad = h5io_attr_f64(&f, f.f, "planted_auc", auc) ||
              h5io_attr_f64(&f, f.f, "planted_logloss", ll) ||
              h5io_attr_f64(&f, f.f, "planted_ne", ll / h) ||
              h5io_attr_f64(&f, f.f, "planted_mse", se / n) ||
              h5io_attr_f64(&f, f.f, "planted_visible_auc", aucv) ||
              h5io_attr_f64(&f, f.f, "planted_visible_logloss", llv) ||
              h5io_attr_f64(&f, f.f, "planted_visible_ne", llv / h) ||
              h5io_attr_f64(&f, f.f, "planted_visible_mse", sev / n) ||
              h5io_attr_i64(&f, f.f, "planted_test_events", pl->k) ||
              h5io_attr_str(&f, f.f, "planted_tasks", tasks);
        bad = h5io_close(&f) || bad;
    }
    if (bad) {
        unlink(path);
        fatal("data gen --labels planted: %s: cannot write the planted_* attributes (%s; the "
              "file was removed)", path, f.desc[0] ? f.desc : "HDF5 error");
    }
    log_info("data gen: planted labels: on each user's last %lld events (%lld): optimal click "
             "AUC %.4f NE %.4f (logloss %.4f, positive rate %.3f), rating MSE %.4f; of what an "
             "evaluation shows (test events after the first without their previous item): AUC "
             "%.4f NE %.4f MSE %.4f",
             (long long)pl->k, (long long)pl->n, auc, ll / h, ll, rate, se / n, aucv, llv / h,
             sev / n);
    free(pl->q);
    free(pl->c);
    free(pl->p);
    free(pl->pv);
    free(pl->pop);
    free(pl->mean);
    free(pl->meanv);
    free(pl->y);
    free(pl->r);
    memset(pl, 0, sizeof *pl);
}
