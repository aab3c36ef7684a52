/* step_bias: the initial values of the ranking logits' per-item and
 * per-user terms (model.bias; model/task_bias.h), from the training
 * labels: the smoothed means of the user+item baseline (eval_retrieval.c), so
 * that the model starts where that baseline ends. Per task k, over the
 * training events (validation and test excluded), with the item rows'
 * prior P_i and the user rows' P_u pseudo-counts (model.bias_prior, else
 * train.baseline_prior for both) and y the label (a regression task's
 * standardised as the head's: (y - mean) / std):
 *   mu        the mean label
 *   b_i       sum over item i's events of (y - mu) / (n_i + P_i)
 *   b_u       sum over user u's events of (y - mu - b_i) / (n_u + P_u)
 * regression (the logit is the standardised prediction):
 *   item row  mu + b_i          user row  b_u
 * binary (logits; s(p) = log(p / (1 - p)), p clamped to [1e-6, 1 - 1e-6]):
 *   item row  s(mu + b_i)       user row  s(mu + m_u + b_u) - s(mu + m_u)
 * with m_u the mean of b_i over u's labelled events: the user's shift of
 * the baseline's probability at its typical item, as a shift of the logit.
 * Every rank reads every user (two passes, in chunks): the same values on
 * any number of ranks.
 *
 * The test evaluation (step_bias_test_begin) predicts each user's test
 * events after the history of the training and validation events; the
 * terms then take in the validation labels as the user+item baseline of
 * the same test does: each row becomes its trained value plus the change
 * of its initial value when the validation events join the training
 * events (the same two passes over both).
 *
 * model.bias_prior = auto and model.recency = auto are chosen on the
 * validation events before the fit: step_bias_search.c; once for a run's
 * trainers (train.tune's candidates, the run) with tr->bias_choice. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "train/bias_ids.h"
#include "train/step_bias_pass.h"
#include "train/step_task.h"
#include "train/train.h"

#define BIAS_USERS 4096 /* users per read */

static double logit(double p)
{
    p = p < 1e-6 ? 1e-6 : p > 1 - 1e-6 ? 1 - 1e-6 : p;
    return log(p / (1 - p));
}

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
    const struct bias_ids *bi = tr->bias_ids; /* window files: the rows by raw id */
    for (int64_t e = 0; bi && e < n; e++)
        c->items[e] = bi->imap[c->items[e]];
    labels_read_events(ds, lc, e0, n, c->lab);
}

void bias_events_read(struct trainer *tr, int64_t max_bytes)
{
    const struct dataset *ds = &tr->ds;
    const int64_t n = ds->offsets[ds->num_users] - ds->offsets[0];
    bias_events_free(tr);
    if (n * (int64_t)(sizeof(int64_t) + (size_t)tr->conf.task.labels.n * sizeof(float)) >
        max_bytes)
        return;
    tr->bias_events = xcalloc(1, sizeof *tr->bias_events);
    chunk_read(tr, &tr->bias_events->c, 0, ds->num_users);
}

void bias_events_free(struct trainer *tr)
{
    if (!tr->bias_events)
        return;
    free(tr->bias_events->c.items);
    free(tr->bias_events->c.lab);
    free(tr->bias_events);
    tr->bias_events = NULL;
}

void bias_each_user(struct trainer *tr, struct chunk *c, struct bias_sums *s, bias_visit visit)
{
    const struct dataset *ds = &tr->ds;
    const struct chunk *in = tr->bias_events ? &tr->bias_events->c : c;
    for (int64_t u0 = 0; u0 < ds->num_users; u0 += BIAS_USERS) {
        const int64_t u1 = u0 + BIAS_USERS < ds->num_users ? u0 + BIAS_USERS : ds->num_users;
        const int64_t first = tr->bias_events ? 0 : u0; /* the user of in's event 0 */
        if (!tr->bias_events)
            chunk_read(tr, c, u0, u1);
        for (int64_t u = u0; u < u1; u++) {
            int64_t a, b;
            rsplit_bounds(s->sp ? s->sp : &tr->rsplit, ds, u, &a, &b);
            s->a = a;
            s->b = b;
            visit(s, in, tr->bias_ids ? tr->bias_ids->umap[u] : u, /* its row */
                  ds->offsets[u] - ds->offsets[first], s->val ? b : a);
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
        const double bu = n + s->prior_u > 0 ? r / (n + s->prior_u) : 0;
        m = n > 0 ? m / n : 0;
        s->user[u * K + k] = (float)(s->tc->t[k].kind == TASK_BINARY
                                         ? logit(s->mu[k] + m + bu) - logit(s->mu[k] + m)
                                         : bu);
    }
}

/* The smoothed means over each user's training events (val: and validation
 * events) as the rows' values: item [NI, K], user [NU, K]; with centre
 * [NI, K] (else NULL) each item's smoothed mean label mu + b_i (the history
 * terms' centres: model/task_recency.h). */
static void bias_values(struct trainer *tr, const struct rsplit *sp, int val, double prior_i,
                        double prior_u, float *item, float *user, float *centre)
{
    const struct task_conf *tc = &tr->conf.task;
    const int K = tc->n;
    const int64_t NI = tc->bias_items, NU = tc->bias_users;
    struct bias_sums s = {.task = &tr->task, .K = K, .prior = prior_i, .prior_u = prior_u,
                          .sp = sp, .val = val, .tc = tc};
    s.ni = xcalloc((size_t)(NI * K), sizeof *s.ni);
    s.si = xcalloc((size_t)(NI * K), sizeof *s.si);
    struct chunk c = {0};
    bias_each_user(tr, &c, &s, add_items);
    s.user = user;
    memset(user, 0, (size_t)(NU * K) * sizeof *user);
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
            if (centre)
                centre[i * K + k] = (float)(s.mu[k] + *b);
        }
    bias_each_user(tr, &c, &s, add_user);
    free(c.items);
    free(c.lab);
    free(s.ni);
    free(s.si);
}

/* --- model.recency: the fit of the history terms ------------------------------ */

struct fit_sums;
static void fit_user(struct fit_sums *f, const struct chunk *c, int64_t u, int64_t o, int64_t a);

static void fit_visit(struct bias_sums *s, const struct chunk *c, int64_t u, int64_t o, int64_t a)
{
    fit_user(s->fit, c, u, o, a);
}

#define FIT_ITERS 8   /* Newton steps (a regression task's first one is exact) */
#define FIT_DIM (RANK_MAX_TASKS + 1)

/* What one Newton step accumulates: per task k over its labelled training
 * events, with x = (user[u, k], r_1 .. r_K) and eta = item[i, k] + th_k .
 * x, g += (y - p) x
 * and H += w x x^T, (p, w) = (sigmoid(eta), p (1 - p)) for a binary task,
 * (eta, 1) for a regression task (y standardised). */
struct fit_sums {
    const struct task *task;
    const struct task_conf *tc;
    int K, D;
    const float *item, *user;                 /* the initial rows */
    double th[RANK_MAX_TASKS][FIT_DIM];
    double g[RANK_MAX_TASKS][FIT_DIM], H[RANK_MAX_TASKS][FIT_DIM * FIT_DIM];
    float *r;                                 /* [cap, K] one user's history terms */
    int64_t cap;
    float *all;        /* tr->bias_events: every event's terms [events, K], the same in every
                        * pass: computed in the first (kept = 1 after it), else NULL */
    int kept;
};

static void fit_user(struct fit_sums *f, const struct chunk *c, int64_t u, int64_t o, int64_t a)
{
    const int K = f->K, D = f->D;
    if (!f->all && a > f->cap) {
        f->cap = a + a / 2;
        f->r = xrealloc(f->r, (size_t)(f->cap * K) * sizeof *f->r);
    }
    float *r = f->all ? f->all + o * K : f->r; /* an event's terms: of the events before it */
    const int64_t off[2] = {0, a};
    if (!f->kept)
        task_ranking_recency_terms(f->task, 1, off, NULL, c->items + o, c->lab + o * K, r);
    for (int64_t e = 0; e < a; e++) {
        const float *irow = f->item + c->items[o + e] * K;
        for (int k = 0; k < K; k++) {
            const float y = c->lab[(o + e) * K + k];
            if (isnan(y))
                continue;
            /* eta summed as x is built (in the same order): no reload of x */
            const double *th = f->th[k];
            double x[FIT_DIM], eta = irow[k];
            x[0] = f->user[u * K + k];
            eta += th[0] * x[0];
            for (int j = 0; j < K; j++) {
                x[1 + j] = r[e * K + j];
                eta += th[1 + j] * x[1 + j];
            }
            double p = eta, w = 1;
            if (f->tc->t[k].kind == TASK_BINARY) {
                p = 1 / (1 + exp(-eta));
                w = p * (1 - p);
            }
            const double res = task_ranking_z(f->task, k, y) - p;
            for (int i = 0; i < D; i++) {
                f->g[k][i] += res * x[i];
                for (int j = 0; j < D; j++)
                    f->H[k][i * D + j] += w * x[i] * x[j];
            }
        }
    }
}

/* Solve H d = g (n x n, H symmetric positive semi-definite) by Gaussian
 * elimination with partial pivoting, a ridge of 1e-9 of the diagonal's
 * mean keeping it regular. */
static void solve(int n, double *H, double *g, double *d)
{
    double tr = 0;
    for (int i = 0; i < n; i++)
        tr += H[i * n + i];
    for (int i = 0; i < n; i++)
        H[i * n + i] += 1e-9 * (tr > 0 ? tr / n : 1) + 1e-300;
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int i = c + 1; i < n; i++)
            if (fabs(H[i * n + c]) > fabs(H[p * n + c]))
                p = i;
        for (int j = 0; j < n; j++) {
            const double t = H[c * n + j];
            H[c * n + j] = H[p * n + j];
            H[p * n + j] = t;
        }
        const double t = g[c];
        g[c] = g[p];
        g[p] = t;
        for (int i = c + 1; i < n; i++) {
            const double m = H[i * n + c] / H[c * n + c];
            for (int j = c; j < n; j++)
                H[i * n + j] -= m * H[c * n + j];
            g[i] -= m * g[c];
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        double v = g[i];
        for (int j = i + 1; j < n; j++)
            v -= H[i * n + j] * d[j];
        d[i] = v / H[i * n + i];
    }
}

/* The history terms' matrix A [K, K] and the user terms' scales, fitted
 * on the training events by maximum likelihood with the initial item rows
 * as offsets (every rank reads every user: the same values on any P); the
 * user rows are scaled in place. (The item rows' own scale or the other
 * tasks' item rows cannot be fitted so: on the training events an item's
 * smoothed mean holds the event's own label.) */
static void recency_fit(struct trainer *tr, const float *item, float *user, float *A,
                        float *uscale)
{
    const struct task_conf *tc = &tr->conf.task;
    const int K = tc->n;
    struct fit_sums *f = xcalloc(1, sizeof *f);
    *f = (struct fit_sums){.task = &tr->task, .tc = tc, .K = K, .D = K + 1, .item = item,
                           .user = user};
    for (int k = 0; k < K; k++)
        f->th[k][0] = 1; /* the user terms as they are, nothing else */
    struct chunk c = {0};
    struct bias_sums pass = {.K = K, .fit = f};
    if (tr->bias_events)
        f->all = xmalloc((size_t)((tr->ds.offsets[tr->ds.num_users] - tr->ds.offsets[0]) * K) *
                         sizeof *f->all);
    for (int it = 0; it < FIT_ITERS; it++) {
        memset(f->g, 0, sizeof f->g);
        memset(f->H, 0, sizeof f->H);
        bias_each_user(tr, &c, &pass, fit_visit);
        f->kept = f->all != NULL;
        for (int k = 0; k < K; k++) {
            double d[FIT_DIM];
            solve(f->D, f->H[k], f->g[k], d);
            for (int j = 0; j < f->D; j++)
                f->th[k][j] += d[j];
        }
    }
    for (int k = 0; k < K; k++) {
        uscale[k] = (float)f->th[k][0];
        for (int j = 0; j < K; j++)
            A[k * K + j] = (float)f->th[k][1 + j];
        for (int64_t u = 0; u < tc->bias_users; u++)
            user[u * K + k] *= uscale[k];
    }
    free(c.items);
    free(c.lab);
    free(f->r);
    free(f->all);
    free(f);
}

/* The fit's figures, for the log. */
static void recency_log(const struct task_conf *tc, const float *uscale, const float *A)
{
    const int K = tc->n;
    char buf[1024];
    size_t len = 0;
    for (int k = 0; k < K && len + 64 < sizeof buf; k++) {
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s: user x %.3f, history",
                                k ? "; " : "", tc->t[k].name, uscale[k]);
        for (int j = 0; j < K && len + 16 < sizeof buf; j++)
            len += (size_t)snprintf(buf + len, sizeof buf - len, " %.3f", A[k * K + j]);
    }
    log_info("model.recency = %g: fitted on the training events: %s", tc->recency, buf);
}

/* The history and factor terms take their residuals against the items'
 * centres (model/task_recency.h). */
int bias_centres(const struct task_conf *tc)
{
    return tc->recency > 0 || tc->factors > 0;
}

void bias_fit_values(struct trainer *tr, double prior_i, double prior_u, float *item,
                     float *user, float *centre)
{
    const struct task_conf *tc = &tr->conf.task;
    bias_values(tr, NULL, 0, prior_i, prior_u, item, user, centre);
    if (centre)
        task_ranking_set_centres(&tr->task, centre, tc->bias_items);
}

void bias_fit_terms(struct trainer *tr, double H, const float *item, float *user, float *A,
                    float *uscale)
{
    for (int k = 0; k < tr->conf.task.n; k++)
        uscale[k] = 1;
    if (H > 0) {
        task_ranking_set_halflife(&tr->task, H);
        recency_fit(tr, item, user, A, uscale);
    }
}

void bias_fit(struct trainer *tr, double prior_i, double prior_u, double H, float *item,
              float *user, float *centre, float *A, float *uscale)
{
    bias_fit_values(tr, prior_i, prior_u, item, user, centre);
    bias_fit_terms(tr, H, item, user, A, uscale);
}

void step_bias_init(struct trainer *tr)
{
    struct task_conf *tc = &tr->conf.task;
    if (tc->type != TASK_RANKING || !tc->bias)
        return;
    const int K = tc->n;
    const int64_t NI = tc->bias_items;
    float *item = xmalloc((size_t)(NI * K) * sizeof *item);
    float *user = xmalloc((size_t)(tc->bias_users * K) * sizeof *user);
    float *centre = bias_centres(tc) ? xmalloc((size_t)(NI * K) * sizeof *centre) : NULL;
    float A[RANK_MAX_TASKS * RANK_MAX_TASKS];
    /* the events read once for the passes of the search's fits and of a
     * history terms' fit (bias_values' two, recency_fit's eight) */
    if (tc->prior_auto || tc->recency_auto || tc->recency > 0)
        bias_events_read(tr, BIAS_EVENTS_MAX);
    struct bias_choice *bc = tr->bias_choice;
    if (bc && bc->made) { /* the auto settings, chosen by an earlier trainer of the run */
        tc->bias_prior = bc->prior;
        tc->bias_prior_user = bc->prior_user;
        tc->recency = bc->recency;
        for (const char *l = bc->said; *l;) {
            const size_t n = strcspn(l, "\n");
            log_info("%.*s", (int)n, l);
            l += n + (l[n] == '\n');
        }
    } else {
        if (bc)
            log_keep(bc->said, sizeof bc->said);
        bias_search(tr, item, user, centre, A, tr->bias_uscale); /* the auto settings */
        if (bc) {
            log_keep(NULL, 0);
            bc->made = 1;
            bc->prior = tc->bias_prior;
            bc->prior_user = tc->bias_prior_user;
            bc->recency = tc->recency;
        }
    }
    bias_fit(tr, tc->bias_prior, tc->bias_prior_user, tc->recency, item, user, centre, A,
             tr->bias_uscale);
    bias_events_free(tr);
    if (tc->recency > 0) {
        task_ranking_set_recency(&tr->task, A);
        recency_log(tc, tr->bias_uscale, A);
    }
    task_ranking_set_bias(&tr->task, item, user);
    free(item);
    free(user);
    free(centre);
}

struct bias_values {
    float *v;        /* item [NI, K], user [NU, K], centre [NI, K] (model.recency, factors) */
};

struct bias_values *step_bias_values(struct trainer *tr, const struct rsplit *sp, int val)
{
    const struct task_conf *tc = &tr->conf.task;
    if (tc->type != TASK_RANKING || !tc->bias)
        return NULL;
    const int64_t ni = tc->bias_items * tc->n, nu = tc->bias_users * tc->n;
    struct bias_values *bv = xmalloc(sizeof *bv);
    bv->v = xmalloc((size_t)(2 * ni + nu) * sizeof *bv->v);
    bias_values(tr, sp, val, tc->bias_prior, tc->bias_prior_user, bv->v, bv->v + ni,
                bias_centres(tc) ? bv->v + ni + nu : NULL);
    return bv;
}

void bias_rescale_users(struct trainer *tr, const struct bias_values *from, const float *uscale)
{
    const struct task_conf *tc = &tr->conf.task;
    const int K = tc->n;
    const int64_t ni = tc->bias_items * K, nu = tc->bias_users * K;
    float *v = xmalloc((size_t)(ni + nu) * sizeof *v);
    task_ranking_get_bias(&tr->task, v, v + ni);
    for (int64_t j = 0; j < nu; j++)
        v[ni + j] += (uscale[j % K] - tr->bias_uscale[j % K]) * from->v[ni + j];
    task_ranking_set_bias(&tr->task, v, v + ni);
    for (int k = 0; k < K; k++)
        tr->bias_uscale[k] = uscale[k];
    free(v);
}

void step_bias_values_free(struct bias_values *bv)
{
    if (!bv)
        return;
    free(bv->v);
    free(bv);
}

float *step_bias_shift(struct trainer *tr, const struct bias_values *from,
                       const struct bias_values *to)
{
    if (!from || !to)
        return NULL;
    const struct task_conf *tc = &tr->conf.task;
    const int K = tc->n;
    const int64_t ni = tc->bias_items * K, nu = tc->bias_users * K, nc = bias_centres(tc) ? ni : 0;
    const size_t all = (size_t)(ni + nu + nc);
    float *saved = xmalloc(all * sizeof *saved), *v = xmalloc(all * sizeof *v);
    task_ranking_get_bias(&tr->task, saved, saved + ni);
    if (nc)
        memcpy(saved + ni + nu, task_ranking_centres(&tr->task), (size_t)nc * sizeof *saved);
    for (int64_t j = 0; j < ni + nu; j++) /* the trained value + what the new events add */
        v[j] = saved[j] +
               (j < ni ? 1.0f : tr->bias_uscale[(j - ni) % K]) * (to->v[j] - from->v[j]);
    task_ranking_set_bias(&tr->task, v, v + ni);
    if (nc) /* the history terms' centres: the items' means over the new events too */
        task_ranking_set_centres(&tr->task, to->v + ni + nu, tc->bias_items);
    free(v);
    return saved;
}

void step_bias_restore(struct trainer *tr, float *saved)
{
    if (!saved)
        return;
    const struct task_conf *tc = &tr->conf.task;
    const int64_t ni = tc->bias_items * tc->n, nu = tc->bias_users * tc->n;
    task_ranking_set_bias(&tr->task, saved, saved + ni);
    if (bias_centres(tc))
        task_ranking_set_centres(&tr->task, saved + ni + nu, tc->bias_items);
    free(saved);
}
