/* task_ranking: the ranking task's head and losses; see task.h.
 *
 * Head (L = model.head's widths + 1 layers), on the outputs x [T, d] of the
 * event tokens (every item position; the candidates in evaluation):
 *   h_0 = x,  h_{l+1} = ReLU(h_l W_l + b_l) (l < L - 1),  z = h_{L-1} W_{L-1} + b_{L-1}
 * z [T, K]: one logit per task. Losses per labelled position t and task k:
 *   binary      BCE with logits: softplus(z) - y z
 *   regression  (z - u)^2 with u = (y - mean_k) / std_k, the label
 *               standardised by the training labels' mean and standard
 *               deviation (head.stats); the prediction is mean_k + std_k z
 * loss = sum_k w_k (sum_t loss_tk) / N_k, N_k = the labelled positions of
 * task k over all ranks (one all-reduce), so the loss and its gradients are
 * the same on any number of ranks. On the model's backend (its memory: the
 * activations, the logits, dz; the labels and the tasks' coefficients
 * copied there each step): the GEMMs, the bias broadcast (index_rows of
 * row 0), ReLU, the losses (rank_loss) and the bias gradients (col_sums);
 * sums in double, in token order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/mirror.h"
#include "backend/stage.h"
#include "base/check.h"
#include "base/exact.h"
#include "data/pools.h"
#include "model/task.h"
#include "model/task_bias.h"
#include "model/task_factor.h"
#include "model/task_recency.h"

#define HEAD_MAX (TASK_MAX_MLP + 1)

struct rank_priv {
    struct model *m;
    const struct backend_ops *be;     /* the model's: every buffer below is in its memory */
    int K, L;
    int width[HEAD_MAX + 1];          /* width[0] = d, width[L] = K */
    struct dense_tensor *W[HEAD_MAX], *b[HEAD_MAX], *stats;
    struct dense_tensor *calib;       /* model.calibrate: head.calib [2, K] a, b; else NULL */
    int64_t cap;                      /* rows the buffers hold */
    float *h[HEAD_MAX + 1];           /* h[1 .. L]: [cap, width[l]] (h[0]: the input) */
    float *dh[2];                     /* [cap, max width] work */
    float *dz;                        /* [cap, K] d loss / d z */
    int64_t *zidx;                    /* [cap] zeros: the bias broadcast's source rows */
    struct mirror lab, coef, xin;     /* the labels [T, K], coef [4K], predict's input */
    double hcoef[4 * RANK_MAX_TASKS]; /* host */
    int64_t T;                        /* rows of the last forward */
    double *tacc;                     /* [2K] each task's loss sum since the last read */
    struct mirror tcoef;              /* [K, 4K] coef with the other tasks' weights 0 */
    double htcoef[4 * RANK_MAX_TASKS * RANK_MAX_TASKS];
    int64_t tsteps;                   /* losses added to tacc since the last read */
    int64_t xtacc[RANK_MAX_TASKS][EXACT_LIMBS + 1]; /* exact sums: tacc's sums (base/exact.h) */
    struct rank_bias bias;            /* model.bias (task_bias.h) */
    struct rank_recency rec;          /* model.recency (task_recency.h) */
    struct recency_rule rule;
    struct rank_factor fac;           /* model.factors (task_factor.h) */
    float *centre;                    /* [bias_items, K] host: the rule's per-item centres */
    float *rterm;                     /* [rcap, K] host: the training batch's history terms */
    int64_t rcap;
    float mean[RANK_MAX_TASKS], std[RANK_MAX_TASKS];
    struct stage *st;                 /* the step's uploads (labels, coefficients, the bias,
                                         recency and factor inputs): a pinned ring, no host
                                         wait */
    int stats_live;                   /* mean, std read in training: head.stats change only
                                         where a checkpoint is loaded, before the first step */
    int terms_only;                   /* debug.terms_only: z = the last layer's bias alone */
};

static void reserve(struct rank_priv *r, int64_t n)
{
    if (n <= r->cap)
        return;
    r->cap = n + n / 2;
    int wmax = 0;
    for (int l = 0; l <= r->L; l++)
        wmax = r->width[l] > wmax ? r->width[l] : wmax;
    const struct backend_ops *be = r->be;
    for (int l = 1; l <= r->L; l++) {
        be->free(r->h[l]);
        r->h[l] = be->alloc((size_t)(r->cap * r->width[l]) * sizeof(float));
    }
    for (int k = 0; k < 2; k++) {
        be->free(r->dh[k]);
        r->dh[k] = be->alloc((size_t)(r->cap * wmax) * sizeof(float));
    }
    be->free(r->dz);
    r->dz = be->alloc((size_t)(r->cap * r->K) * sizeof(float));
    be->free(r->zidx);
    r->zidx = be->alloc((size_t)r->cap * sizeof(int64_t)); /* zero-filled */
}

static void rank_reserve(struct task *t, int64_t n)
{
    struct rank_priv *r = t->priv;
    const int64_t had = r->cap;
    reserve(r, n);
    if (r->cap == had)
        return;
    int wmax = 0; /* zero-filled already: written, the pages are resident now */
    for (int l = 0; l <= r->L; l++)
        wmax = r->width[l] > wmax ? r->width[l] : wmax;
    for (int l = 1; l <= r->L; l++)
        r->be->zero(r->h[l], (size_t)(r->cap * r->width[l]) * sizeof(float));
    for (int k = 0; k < 2; k++)
        r->be->zero(r->dh[k], (size_t)(r->cap * wmax) * sizeof(float));
    r->be->zero(r->dz, (size_t)(r->cap * r->K) * sizeof(float));
}

/* z = the head on x [n, d]: r->h[L] [n, K] (activations kept). */
static void head_fwd(const struct backend_ops *be, struct rank_priv *r, const struct batch *rows,
                     const float *x)
{
    const int64_t n = rows->T;
    reserve(r, n);
    r->T = n;
    if (r->terms_only) { /* the sequence model's part left out: the constant alone */
        be->index_rows(n, r->K, r->b[r->L - 1]->w, r->zidx, r->h[r->L], NULL, 0);
        return;
    }
    const float *in = x;
    for (int l = 0; l < r->L; l++) {
        const int a = r->width[l], o = r->width[l + 1];
        float *y = r->h[l + 1];
        be->index_rows(n, o, r->b[l]->w, r->zidx, y, NULL, 0); /* every row: the bias */
        if (n > 0)
            model_gemm_rows(r->m, rows, 1, 0, o, a, in, a, r->W[l]->w, o, 1.0f, y, o);
        if (l + 1 < r->L)
            be->relu_fwd(n * o, y, y);
        in = y;
    }
}

static void read_stats(struct rank_priv *r, const struct backend_ops *be)
{
    float s[2 * RANK_MAX_TASKS];
    be->to_host(s, r->stats->w, (size_t)(2 * r->K) * sizeof *s);
    for (int k = 0; k < r->K; k++) {
        r->mean[k] = s[k];
        r->std[k] = s[r->K + k];
    }
}

float task_ranking_z(const struct task *t, int k, float y)
{
    const struct rank_priv *r = t->priv; /* head.stats as last read (read_stats) */
    return (y - r->mean[k]) / r->std[k];
}

static void rank_loss(struct task *t, struct task_step *st)
{
    struct rank_priv *r = t->priv;
    const struct task_conf *tc = t->conf;
    const int K = r->K;
    if (!r->stats_live) { /* once: they do not change while training */
        read_stats(r, st->be);
        r->stats_live = 1;
    }
    const struct batch rows = {.B = st->B, .T = st->T, .offsets = st->offsets}; /* its sequences */
    head_fwd(st->be, r, &rows, st->out);
    rank_bias_fwd(&r->bias, st->T, st->items, NULL, st->B, st->users, st->offsets, 1,
                  r->h[r->L]);
    if (r->rec.A) {
        if (st->T > r->rcap) {
            r->rcap = st->T + st->T / 2;
            r->rterm = xrealloc(r->rterm, (size_t)(r->rcap * K) * sizeof *r->rterm);
        }
        if (!st->rterms) /* else made where the batch was read */
            recency_terms(&r->rule, st->B, st->offsets, NULL, st->items,
                          st->all_labels ? st->all_labels : st->labels, r->rterm);
        rank_recency_fwd(&r->rec, st->T, st->rterms ? st->rterms : r->rterm, r->h[r->L]);
    }
    rank_factor_fwd(&r->fac, &r->rule, st->B, st->offsets, st->items,
                    st->all_labels ? st->all_labels : st->labels, r->h[r->L]);
    int64_t cnt[RANK_MAX_TASKS] = {0};
    for (int64_t i = 0; i < st->T * K; i++)
        cnt[i % K] += !isnan(st->labels[i]);
    if (st->c) /* NULL: this process alone (tests) */
        comm_allreduce_sum_i64v(st->c, COMM_DP, cnt, K);
    for (int k = 0; k < K; k++) { /* rank_loss's coefficients (backend.h) */
        r->hcoef[4 * k] = tc->t[k].kind == TASK_BINARY;
        r->hcoef[4 * k + 1] = cnt[k] > 0 ? tc->t[k].weight / (double)cnt[k] : 0;
        r->hcoef[4 * k + 2] = r->mean[k];
        r->hcoef[4 * k + 3] = r->std[k];
    }
    const struct backend_ops *be = st->be;
    const size_t lb = (size_t)(st->T > 0 ? st->T : 1) * (size_t)K * sizeof(float);
    const float *lab = mirror_bind(&r->lab, be, &backend_cpu, st->labels, lb);
    mirror_up_async(&r->lab, r->st, 0, (size_t)(st->T * K) * sizeof(float));
    const double *coef = mirror_bind(&r->coef, be, &backend_cpu, r->hcoef, sizeof r->hcoef);
    mirror_up_async(&r->coef, r->st, 0, sizeof r->hcoef);
    if (st->xloss) /* exact sums: each sequence's loss, added exactly (host memory) */
        for (int64_t b = 0; b < st->B; b++) {
            const int64_t t0 = st->offsets[b], L = st->offsets[b + 1] - t0;
            double a[2] = {0, 0};
            be->rank_loss(L, K, r->h[r->L] + t0 * K, lab + t0 * K, coef, r->dz + t0 * K, a);
            st->acc[0] += a[0];
            st->acc[1] += a[1];
            exact_add_double(st->xloss, a[0], st->xloss + EXACT_LIMBS);
        }
    else
        be->rank_loss(st->T, K, r->h[r->L], lab, coef, r->dz, st->acc);
    /* each task's part alone, for the progress line (task_ranking_losses):
     * the same loss with the other tasks' weights 0, its dz into scratch */
    for (int k = 0; k < K; k++)
        for (int j = 0; j < 4 * K; j++)
            r->htcoef[4 * K * k + j] = j / 4 == k || j % 4 != 1 ? r->hcoef[j] : 0.0;
    const double *tcoef = mirror_bind(&r->tcoef, be, &backend_cpu, r->htcoef,
                                      (size_t)(4 * K * K) * sizeof(double));
    mirror_up_async(&r->tcoef, r->st, 0, (size_t)(4 * K * K) * sizeof(double));
    for (int k = 0; k < K; k++) {
        if (!st->xloss) {
            be->rank_loss(st->T, K, r->h[r->L], lab, tcoef + 4 * K * k, r->dh[0], r->tacc + 2 * k);
            continue;
        }
        for (int64_t b = 0; b < st->B; b++) { /* exact sums: as the loss's */
            const int64_t t0 = st->offsets[b], L = st->offsets[b + 1] - t0;
            double a[2] = {0, 0};
            be->rank_loss(L, K, r->h[r->L] + t0 * K, lab + t0 * K, tcoef + 4 * K * k,
                          r->dh[0], a);
            exact_add_double(r->xtacc[k], a[0], r->xtacc[k] + EXACT_LIMBS);
        }
    }
    r->tsteps++;
}

int64_t task_ranking_losses(struct task *t, struct comm *c, double *loss)
{
    struct rank_priv *r = t->priv;
    const int K = r->K;
    double h[2 * RANK_MAX_TASKS];
    r->be->to_host(h, r->tacc, (size_t)(2 * K) * sizeof *h);
    const int64_t n = r->tsteps;
    for (int k = 0; k < K; k++) {
        double sum;
        if (model_exact(r->m)) { /* integer sums: the same bits on any number of ranks */
            if (c)
                comm_allreduce_sum_i64v(c, COMM_DP, r->xtacc[k], EXACT_LIMBS + 1);
            sum = exact_to_double(r->xtacc[k], r->xtacc[k][EXACT_LIMBS]);
            memset(r->xtacc[k], 0, sizeof r->xtacc[k]);
        } else
            sum = c ? comm_allreduce_sum_f64(c, COMM_DP, h[2 * k]) : h[2 * k];
        loss[k] = n > 0 ? sum / (double)n / t->conf->t[k].weight : 0;
    }
    r->be->zero(r->tacc, (size_t)(2 * K) * sizeof(double)); /* no host wait */
    r->tsteps = 0;
    return n;
}

static void rank_backward(struct task *t, struct task_step *st)
{
    struct rank_priv *r = t->priv;
    const struct backend_ops *be = st->be;
    const int64_t n = r->T;
    if (n != st->T)
        fatal("task_ranking: backward of %lld rows after a forward of %lld", (long long)st->T,
              (long long)n);
    const float *dy = r->dz;
    const struct batch rows = {.B = st->B, .T = n, .offsets = st->offsets}; /* its sequences */
    rank_bias_bwd(&r->bias, n, r->dz);
    rank_recency_bwd(&r->rec, n, r->dz);
    rank_factor_bwd(&r->fac, &r->rule, n, r->dz);
    if (r->terms_only) { /* the constant's gradient; none reaches the sequence model */
        model_grad_colsums(r->m, &rows, r->K, dy, r->b[r->L - 1]->g);
        be->zero(st->du, (size_t)(n * r->width[0]) * sizeof(float));
        return;
    }
    for (int l = r->L - 1; l >= 0; l--) {
        const int a = r->width[l], o = r->width[l + 1];
        const float *in = l ? r->h[l] : st->out;
        float *dx = l ? r->dh[l & 1] : st->du;
        model_grad_colsums(r->m, &rows, o, dy, r->b[l]->g); /* db: column sums of dy */
        if (n > 0) {
            model_grad_tokens(r->m, &rows, 1, a, o, in, a, dy, o, r->W[l]->g, o);
            model_gemm_rows(r->m, &rows, 1, 1, a, o, dy, o, r->W[l]->w, o, 0.0f, dx, a);
        }
        if (l > 0) /* through the ReLU of h_l (h_l > 0 iff its input was) */
            be->relu_bwd(n * a, in, dx, dx);
        dy = dx;
    }
}

static void rank_free(struct task *t)
{
    struct rank_priv *r = t->priv;
    if (!r)
        return;
    for (int l = 1; l <= r->L; l++)
        r->be->free(r->h[l]);
    r->be->free(r->dh[0]);
    r->be->free(r->dh[1]);
    r->be->free(r->dz);
    r->be->free(r->zidx);
    r->be->free(r->tacc);
    mirror_free(&r->tcoef);
    rank_bias_free(&r->bias);
    rank_recency_free(&r->rec);
    rank_factor_free(&r->fac);
    free(r->rterm);
    free(r->centre);
    mirror_free(&r->lab);
    mirror_free(&r->coef);
    mirror_free(&r->xin);
    stage_free(r->st);
    free(r);
    t->priv = NULL;
}

static void rank_batch(const struct task *t, const struct task_data *d, uint64_t epoch,
                       const int64_t *users, const int64_t *p0, const int64_t *p1, int64_t n,
                       struct seq_batch *sb)
{
    /* pieces: model positions (rank_train_tokens's), cut at events (train/step_feat.c) */
    const struct rank_pieces pc = {.p0 = p0, .p1 = p1, .head = d->context,
                                   .step = t->conf->actions == ACT_INTERLEAVE ? 2 : 1};
    batch_ranking_train(d->ds, d->rsplit, &t->conf->labels, d->N, d->with_ts, d->seed, epoch,
                        users, p0 ? &pc : NULL, n, sb);
}

static void rank_labels(const struct task *t, const struct task_data *d, struct seq_batch *sb)
{
    batch_ranking_read_labels(d->ds, &t->conf->labels, sb);
}

/* the training events of u's split, at most N (data.pools: its pooled ones) */
static int64_t rank_train_tokens(const struct task *t, const struct task_data *d, int64_t u)
{
    int64_t a, b;
    rsplit_bounds(d->rsplit, d->ds, u, &a, &b);
    struct pool_conf *pc = t->conf->labels.pools;
    const int64_t n = pc ? pools_count(d->ds, pc, u, a, pools_per(pc, d->N)) : a < d->N ? a : d->N;
    const int m = t->conf->actions == ACT_INTERLEAVE ? 2 : 1;
    return d->context + m * n;
}

static const struct task_ops ranking_ops = {
    .name = "ranking",
    .target_rows = 0,
    .normalised = 1,
    .batch = rank_batch,
    .labels = rank_labels,
    .train_tokens = rank_train_tokens,
    .loss = rank_loss,
    .backward = rank_backward,
    .losses = task_ranking_losses,
    .free = rank_free,
    .reserve = rank_reserve,
};

static void add_extra(struct model_conf *mc, const char *name, int rows, int cols, float scale,
                      int decay)
{
    if (mc->nextra == MODEL_MAX_EXTRA)
        fatal("model.head: more than %d head tensors", MODEL_MAX_EXTRA);
    struct model_extra *x = &mc->extra[mc->nextra++];
    snprintf(x->name, sizeof x->name, "%s", name);
    x->rows = rows;
    x->cols = cols;
    x->scale = scale;
    x->decay = decay;
}

void task_ranking_params(const struct task_conf *tc, struct model_conf *mc)
{
    char name[48];
    int in = mc->d;
    for (int l = 0; l <= tc->nmlp; l++) { /* torch's Linear initialisation */
        const int out = l < tc->nmlp ? tc->mlp[l] : tc->n;
        /* with the biases the last layer starts at 0: the logits start at them */
        const float s = tc->bias && l == tc->nmlp ? 0.0f : 1.0f / sqrtf((float)in);
        snprintf(name, sizeof name, "head.w%d", l);
        add_extra(mc, name, in, out, s, 1);
        snprintf(name, sizeof name, "head.b%d", l);
        add_extra(mc, name, 1, out, s, 0);
        in = out;
    }
    add_extra(mc, "head.stats", 2, tc->n, 0.0f, 0);
    if (tc->calibrate) /* a = 1, b = 0 (task_ranking_init) until a validation fits them */
        add_extra(mc, "head.calib", 2, tc->n, 0.0f, 0);
    if (tc->bias && !tc->bias_rows) { /* set by task_ranking_set_bias, then trained
                                       * without decay (else rows held outside) */
        if (tc->bias_items > INT32_MAX || tc->bias_users > INT32_MAX)
            fatal("model.bias: %lld items and %lld users: a dense tensor holds at most %d rows",
                  (long long)tc->bias_items, (long long)tc->bias_users, INT32_MAX);
        add_extra(mc, "bias.item", (int)tc->bias_items, tc->n, 0.0f, 0);
        add_extra(mc, "bias.user", (int)tc->bias_users, tc->n, 0.0f, 0);
    }
    if (tc->recency > 0) /* set by task_ranking_set_recency */
        add_extra(mc, "bias.recency", tc->n, tc->n, 0.0f, 0);
    if (tc->factors > 0) { /* the items' factors (model.factor_feature: its values'); the
                            * mix starts at 0 */
        add_extra(mc, "bias.factor",
                  (int)(tc->factor_values > 0 ? tc->factor_values : tc->bias_items), tc->factors,
                  FACTOR_INIT, 0);
        add_extra(mc, "bias.fmix", tc->n, tc->n, 0.0f, 0);
    }
}

void task_ranking_set_bias(struct task *t, const float *item, const float *user)
{
    struct rank_priv *r = t->priv;
    rank_bias_set(&r->bias, item, user);
}

void task_ranking_attach_bias(struct task *t, const struct rank_bias_rows *ext)
{
    struct rank_priv *r = t->priv;
    rank_bias_attach(&r->bias, ext);
}

void task_ranking_get_bias(const struct task *t, float *item, float *user)
{
    const struct rank_priv *r = t->priv;
    rank_bias_get(&r->bias, item, user);
}

int task_ranking_recency_on(const struct task *t)
{
    const struct rank_priv *r = t->priv;
    return r->rec.A != NULL;
}

void task_ranking_recency_terms(const struct task *t, int64_t B, const int64_t *offsets,
                                const int64_t *ncand, const int64_t *items, const float *labels,
                                float *out)
{
    const struct rank_priv *r = t->priv;
    recency_terms(&r->rule, B, offsets, ncand, items, labels, out);
}

int task_ranking_factor_on(const struct task *t)
{
    const struct rank_priv *r = t->priv;
    return r->fac.fac != NULL;
}

void task_ranking_factor_terms(const struct task *t, int64_t B, const int64_t *offsets,
                               const int64_t *ncand, const int64_t *items, const float *labels,
                               float *out)
{
    struct rank_priv *r = t->priv;
    rank_factor_terms(&r->fac, &r->rule, B, offsets, ncand, items, labels, out);
}

void task_ranking_set_factor_values(struct task *t, const int32_t *value, int64_t nitems)
{
    struct rank_priv *r = t->priv;
    rank_factor_set_values(&r->fac, value, nitems);
}

void task_ranking_set_centres(struct task *t, const float *centre, int64_t nitems)
{
    struct rank_priv *r = t->priv;
    free(r->centre);
    r->centre = NULL;
    if (centre) {
        r->centre = xmalloc((size_t)(nitems * r->K) * sizeof *r->centre);
        memcpy(r->centre, centre, (size_t)(nitems * r->K) * sizeof *r->centre);
    }
    r->rule.centre = r->centre;
    r->rule.nitems = centre ? nitems : 0;
}

const float *task_ranking_centres(const struct task *t)
{
    const struct rank_priv *r = t->priv;
    return r->centre;
}

void task_ranking_set_halflife(struct task *t, double H)
{
    struct rank_priv *r = t->priv;
    if (!(H > 0))
        fatal("task_ranking_set_halflife: half-life %g", H);
    r->rule.lam = pow(2.0, -1.0 / H);
}

void task_ranking_set_recency(struct task *t, const float *A)
{
    struct rank_priv *r = t->priv;
    if (r->rec.A)
        r->be->to_device(r->rec.A->w, A, (size_t)r->rec.A->n * sizeof *A);
}

void task_ranking_init(struct task *t, const struct task_conf *tc, struct model *m)
{
    struct rank_priv *r = xcalloc(1, sizeof *r);
    r->m = m;
    r->be = m->be;
    r->K = tc->n;
    r->L = tc->nmlp + 1;
    r->terms_only = tc->terms_only;
    r->width[0] = m->conf.d;
    char name[48];
    for (int l = 0; l < r->L; l++) {
        r->width[l + 1] = l < tc->nmlp ? tc->mlp[l] : tc->n;
        snprintf(name, sizeof name, "head.w%d", l);
        r->W[l] = model_param(m, name);
        snprintf(name, sizeof name, "head.b%d", l);
        r->b[l] = model_param(m, name);
        if (!r->W[l] || !r->b[l])
            fatal("task_ranking: the model has no %s (task_ranking_params before model_init)",
                  name);
    }
    r->stats = model_param(m, "head.stats");
    if (!r->stats)
        fatal("task_ranking: the model has no head.stats (task_ranking_params before model_init)");
    for (int k = 0; k < r->K; k++)
        r->std[k] = 1;
    r->tacc = r->be->alloc((size_t)(2 * r->K) * sizeof(double)); /* zero-filled */
    rank_bias_init(&r->bias, m, r->K, tc->bias, tc->bias_rows);
    rank_recency_init(&r->rec, m, r->K, tc->recency > 0);
    rank_factor_init(&r->fac, m, r->K, tc->factors, tc->factor_ridge);
    r->st = backend_is_host(r->be) ? NULL : stage_new(r->be);
    r->bias.st = r->rec.st = r->fac.st = r->st;
    r->rule.K = r->K;
    r->rule.lam = tc->recency > 0 ? pow(2.0, -1.0 / tc->recency) : 0;
    for (int k = 0; k < r->K; k++)
        r->rule.scale[k] = 1;
    t->ops = &ranking_ops;
    t->conf = tc;
    t->priv = r;
    if (tc->calibrate) {
        r->calib = model_param(m, "head.calib");
        if (!r->calib)
            fatal("task_ranking: the model has no head.calib (task_ranking_params before "
                  "model_init)");
        double ab[2 * RANK_MAX_TASKS];
        for (int k = 0; k < r->K; k++) {
            ab[k] = 1;
            ab[r->K + k] = 0;
        }
        task_ranking_set_calibration(t, ab);
    }
}

int task_ranking_calibration(const struct task *t, double *ab)
{
    const struct rank_priv *r = t->priv;
    if (!r->calib)
        return 0;
    float s[2 * RANK_MAX_TASKS];
    r->be->to_host(s, r->calib->w, (size_t)(2 * r->K) * sizeof *s);
    for (int i = 0; i < 2 * r->K; i++)
        ab[i] = s[i];
    return 1;
}

void task_ranking_set_calibration(struct task *t, const double *ab)
{
    struct rank_priv *r = t->priv;
    if (!r->calib)
        fatal("task_ranking_set_calibration: model.calibrate is off");
    float s[2 * RANK_MAX_TASKS];
    for (int i = 0; i < 2 * r->K; i++)
        s[i] = (float)ab[i];
    r->be->to_device(r->calib->w, s, (size_t)(2 * r->K) * sizeof *s);
}

void task_ranking_set_stats(struct task *t, const double *sums)
{
    struct rank_priv *r = t->priv;
    const struct task_conf *tc = t->conf;
    float s[2 * RANK_MAX_TASKS];
    for (int k = 0; k < r->K; k++) {
        const double n = sums[3 * k], mean = n > 0 ? sums[3 * k + 1] / n : 0;
        const double var = n > 0 ? sums[3 * k + 2] / n - mean * mean : 1;
        const int reg = tc->t[k].kind == TASK_REGRESSION;
        s[k] = reg ? (float)mean : 0.0f;
        s[r->K + k] = reg && var > 1e-12 ? (float)sqrt(var) : 1.0f;
        /* the history terms' units: a binary label, a regression label standardised;
         * centred at the training labels' mean where no item centre is set */
        r->rule.shift[k] = s[k];
        r->rule.scale[k] = s[r->K + k];
        r->rule.centre0[k] = reg ? 0.0 : mean;
    }
    r->m->be->to_device(r->stats->w, s, (size_t)(2 * r->K) * sizeof *s);
    read_stats(r, r->m->be);
}

void task_ranking_predict(struct task *t, int64_t n, const float *x, const int64_t *items,
                          const int64_t *users, const float *rterms, const float *fterms,
                          double *pred)
{
    struct rank_priv *r = t->priv;
    const struct task_conf *tc = t->conf;
    const struct backend_ops *be = r->be;
    read_stats(r, be);
    if (n <= 0) { /* the bias rows held outside: every rank asks together */
        rank_bias_fwd(&r->bias, 0, items, users, 0, NULL, NULL, 0, r->h[r->L]);
        return;
    }
    const size_t xb = (size_t)(n > 0 ? n : 1) * (size_t)r->width[0] * sizeof(float);
    const float *dx = mirror_bind(&r->xin, be, &backend_cpu, x, xb);
    mirror_up(&r->xin, 0, (size_t)n * (size_t)r->width[0] * sizeof(float));
    /* one block; with exact sums a row at a time (a row's floats alone) */
    const int per_row = model_exact(r->m);
    int64_t whole[2] = {0, n}, *off = per_row ? xmalloc((size_t)(n + 1) * sizeof *off) : whole;
    for (int64_t i = 0; per_row && i <= n; i++)
        off[i] = i;
    const struct batch rows = {.B = per_row ? n : 1, .T = n, .offsets = off};
    head_fwd(be, r, &rows, dx);
    if (per_row)
        free(off);
    rank_bias_fwd(&r->bias, n, items, users, 0, NULL, NULL, 0, r->h[r->L]);
    if (r->rec.A && !rterms)
        fatal("task_ranking: model.recency and a prediction without the history terms");
    if (r->rec.A)
        rank_recency_fwd(&r->rec, n, rterms, r->h[r->L]);
    if (r->fac.fac && !fterms)
        fatal("task_ranking: model.factors and a prediction without the factor terms");
    rank_factor_apply(&r->fac, n, fterms, r->h[r->L]);
    void *own;
    const float *z = backend_download(be, r->h[r->L], (size_t)(n * r->K) * sizeof(float), &own);
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < r->K; k++)
            pred[i * r->K + k] = tc->t[k].kind == TASK_BINARY
                                     ? (double)z[i * r->K + k]
                                     : (double)r->mean[k] + (double)r->std[k] * z[i * r->K + k];
    free(own);
}
