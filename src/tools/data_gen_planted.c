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
#include "tools/gen_posterior.h"

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

static void keep(struct planted *pl, const struct planted_row *row)
{
    if (pl->n == pl->cap) {
        pl->cap = pl->cap ? 2 * pl->cap : 4096;
        pl->rows = xrealloc(pl->rows, (size_t)pl->cap * sizeof *pl->rows);
    }
    pl->rows[pl->n++] = *row;
}

/* A user's history for the posterior of theta = (p_u, a_u): event j has
 * s_j = b[j] + x[j].theta, its click y[j] and rating r[j]. */
struct planted_hist {
    int64_t n;
    double *x, *b;
    const float *y, *r;
};

#define PL_D (PLANTED_F + 1)

static void planted_loglik(void *ctx, const double *t, double *lp, double *g, double *h)
{
    const struct planted_hist *u = ctx;
    for (int64_t j = 0; j < u->n; j++) {
        const double *x = u->x + j * PL_D;
        double s = u->b[j];
        for (int f = 0; f < PL_D; f++)
            s += x[f] * t[f];
        const double sig = 1.0 / (1.0 + exp(-s)), e = u->r[j] - 3.0 - 0.8 * s;
        /* the click: y log sig + (1 - y) log(1 - sig); the rating: N(3 + 0.8 s, 0.25) */
        *lp += (u->y[j] ? -log1p(exp(-s)) : -log1p(exp(s))) - e * e / 0.5;
        const double ds = u->y[j] - sig + 0.8 * e / 0.25, dss = -sig * (1 - sig) - 0.64 / 0.25;
        for (int i = 0; i < PL_D; i++) {
            g[i] += ds * x[i];
            for (int k = 0; k < PL_D; k++)
                h[i * PL_D + k] += dss * x[i] * x[k];
        }
    }
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

/* The posterior optimum's probability of an event of item factors q and
 * logit mean s0 (without the previous item's term) and logit variance v,
 * averaged over the previous item. */
static double posterior_unseen(const struct planted *pl, const float *q, double s0, double v)
{
    double acc = 0;
    for (int64_t i = 1; i <= pl->items; i++) {
        double dot = 0;
        for (int f = 0; f < PLANTED_F; f++)
            dot += (double)pl->q[i * PLANTED_F + f] * q[f];
        acc += pl->pop[i] * gen_post_probit(s0 + 0.6 * dot / PLANTED_F, v);
    }
    return acc;
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
    int64_t maxlen = 1;
    for (int64_t u = 0; u < nu; u++)
        maxlen = lengths[u] > maxlen ? lengths[u] : maxlen;
    double *xs = xmalloc((size_t)(maxlen * PL_D) * sizeof *xs);
    double *bs = xmalloc((size_t)maxlen * sizeof *bs);
    for (int64_t u = 0, at = 0; u < nu; u++) {
        struct rng r;
        rng_init(&r, rng_key(pl->seed, (uint64_t)(u0 + u), KEY_PL_USER));
        double p_u[PLANTED_F];
        for (int f = 0; f < PLANTED_F; f++)
            p_u[f] = rng_normal(&r);
        const double a_u = 0.5 * rng_normal(&r);
        rng_init(&r, rng_key(pl->seed, (uint64_t)(u0 + u), KEY_PL_EVENT));
        const int64_t first = at, hist = lengths[u] > pl->k ? lengths[u] - pl->k : 0;
        double theta[PL_D], cov[PL_D * PL_D];
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
            /* what the posterior sees: s = b + x.(p_u, a_u) */
            double *x = xs + j * PL_D;
            for (int f = 0; f < PLANTED_F; f++)
                x[f] = 0.6 * q[f] / sf;
            x[PLANTED_F] = 1;
            bs[j] = -0.2 + pl->c[items[at]] + 0.6 * prev / PLANTED_F;
            if (j == hist) { /* the history's end: the user's posterior */
                struct planted_hist h = {hist, xs, bs, click + first, rating + first};
                const double pv[PL_D] = {1, 1, 1, 1, 0.25};
                gen_post_fit(PL_D, pv, planted_loglik, &h, theta, cov);
            }
            if (j >= hist) {
                struct planted_row row = {.p = p, .pv = p, .mean = mean, .meanv = mean,
                                          .y = click[at], .r = rating[at]};
                double m = bs[j], v = gen_post_var(PL_D, cov, x);
                for (int f = 0; f < PL_D; f++)
                    m += x[f] * theta[f];
                row.pp = gen_post_probit(m, v);
                row.meanp = 3.0 + 0.8 * m;
                if (j > hist && j > 0) { /* its previous item is not shown */
                    visible(pl, q, s - 0.6 * prev / PLANTED_F, &row.pv, &row.meanv);
                    const double m0 = m - 0.6 * prev / PLANTED_F;
                    double qq = 0;
                    for (int f = 0; f < PLANTED_F; f++)
                        qq += pl->qbar[f] * q[f];
                    row.pp = posterior_unseen(pl, q, m0, v);
                    row.meanp = 3.0 + 0.8 * (m0 + 0.6 * qq / PLANTED_F);
                }
                keep(pl, &row);
            }
        }
    }
    free(xs);
    free(bs);
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

/* The AUC, logloss, NE and rating MSE of the predictions of pl's test
 * events (which: 0 true, 1 visible, 2 posterior) into o[4]. */
static void planted_score(const struct planted *pl, int which, double *o)
{
    const int64_t n1 = pl->n > 0 ? pl->n : 1;
    double *p = xmalloc((size_t)n1 * sizeof *p);
    float *y = xmalloc((size_t)n1 * sizeof *y);
    double ll = 0, pos = 0, se = 0;
    for (int64_t i = 0; i < pl->n; i++) {
        const struct planted_row *w = &pl->rows[i];
        p[i] = which == 0 ? w->p : which == 1 ? w->pv : w->pp;
        y[i] = w->y;
        const double e = w->r - (which == 0 ? w->mean : which == 1 ? w->meanv : w->meanp);
        ll -= y[i] ? log(p[i]) : log1p(-p[i]);
        pos += y[i];
        se += e * e;
    }
    const double n = (double)n1, rate = pos / n;
    const double h = rate > 0 && rate < 1 ? -(rate * log(rate) + (1 - rate) * log1p(-rate)) : NAN;
    o[0] = metrics_auc(pl->n, p, y);
    o[1] = ll / n;
    o[2] = ll / n / h;
    o[3] = se / n;
    free(p);
    free(y);
}

void planted_finish(struct planted *pl, const char *path)
{
    static const char *const pre[3] = {"planted", "planted_visible", "planted_posterior"};
    static const char *const what[4] = {"auc", "logloss", "ne", "mse"};
    double o[3][4];
    for (int k = 0; k < 3; k++)
        planted_score(pl, k, o[k]);
    char tasks[128];
    snprintf(tasks, sizeof tasks, "click:binary:click,rating:regression:rating");
    struct h5io f;
    int bad = h5io_open_rw(&f, path, NULL, 0, NULL, NULL);
    if (!bad) {
        for (int k = 0; k < 3; k++)
            for (int m = 0; m < 4; m++) {
                char name[64];
                snprintf(name, sizeof name, "%s_%s", pre[k], what[m]);
                bad = bad || h5io_attr_f64(&f, f.f, name, o[k][m]);
            }
        if (pl->scores && !bad) {
            const struct h5io_layout lay = {0};
            const int64_t rows = pl->items + 1;
            double *buf = xmalloc((size_t)(rows * PL_D) * sizeof *buf);
            for (int64_t i = 0; i < rows; i++) {
                for (int fi = 0; fi < PLANTED_F; fi++)
                    buf[i * PL_D + fi] = pl->q[i * PLANTED_F + fi];
                buf[i * PL_D + PLANTED_F] = pl->c[i];
            }
            hid_t d = h5io_dset(&f, f.f, "planted_items", H5T_IEEE_F64LE, rows, PL_D, &lay);
            bad = d < 0 || h5io_write_rows(&f, d, H5T_NATIVE_DOUBLE, 0, 1, rows, PL_D, buf);
            if (d >= 0)
                H5Dclose(d);
            d = bad ? -1 : h5io_dset(&f, f.f, "planted_pop", H5T_IEEE_F64LE, rows, 1, &lay);
            bad = d < 0 || h5io_write_rows(&f, d, H5T_NATIVE_DOUBLE, 0, 1, rows, 1, pl->pop);
            if (d >= 0)
                H5Dclose(d);
            free(buf);
        }
        bad = bad || h5io_attr_i64(&f, f.f, "planted_test_events", pl->k) ||
              h5io_attr_str(&f, f.f, "planted_tasks", tasks);
        bad = h5io_close(&f) || bad;
    }
    if (bad) {
        unlink(path);
        fatal("data gen --labels planted: %s: cannot write the planted_* attributes (%s; the "
              "file was removed)", path, f.desc[0] ? f.desc : "HDF5 error");
    }
    log_info("data gen: planted labels: on each user's last %lld events (%lld): optimal click "
             "AUC %.4f NE %.4f (logloss %.4f), rating MSE %.4f; of what an evaluation shows "
             "(test events after the first without their previous item): AUC %.4f NE %.4f MSE "
             "%.4f; with the user's factors from their history's posterior: AUC %.4f NE %.4f "
             "MSE %.4f",
             (long long)pl->k, (long long)pl->n, o[0][0], o[0][2], o[0][1], o[0][3], o[1][0],
             o[1][2], o[1][3], o[2][0], o[2][2], o[2][3]);
    free(pl->q);
    free(pl->c);
    free(pl->rows);
    free(pl->pop);
    memset(pl, 0, sizeof *pl);
}
