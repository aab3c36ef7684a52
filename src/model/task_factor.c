/* task_factor: the ranking logits' factor terms; see task_factor.h. */
#include "model/task_factor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"

void rank_factor_init(struct rank_factor *rf, struct model *m, int K, int F, double ridge)
{
    memset(rf, 0, sizeof *rf);
    rf->be = m->be;
    rf->K = K;
    rf->F = F;
    rf->ridge = ridge;
    if (F <= 0)
        return;
    rf->fac = model_param(m, "bias.factor");
    rf->mix = model_param(m, "bias.fmix");
    if (!rf->fac || !rf->mix)
        fatal("task_ranking: model.factors and the model has no bias.factor or bias.fmix "
              "(task_ranking_params before model_init)");
}

void rank_factor_set_values(struct rank_factor *rf, const int32_t *value, int64_t nitems)
{
    if (!rf->fac)
        fatal("task_ranking: the items' values of model.factor_feature without model.factors");
    rf->value = xrealloc(rf->value, (size_t)(nitems + 1) * sizeof *rf->value);
    rf->nvalue = nitems + 1;
    rf->value[0] = 0;
    rf->tv = xrealloc(rf->tv, (size_t)(rf->cap > 0 ? rf->cap : 1) * sizeof *rf->tv);
    for (int64_t i = 0; i < nitems; i++) {
        if (value[i] < 0 || value[i] >= rf->fac->rows)
            fatal("task_ranking: item %lld's value %d of model.factor_feature is not among "
                  "the %d rows of bias.factor", (long long)(i + 1), (int)value[i], rf->fac->rows);
        rf->value[i + 1] = value[i];
    }
}

static void reserve(struct rank_factor *rf, int64_t n)
{
    if (n <= rf->cap)
        return;
    rf->cap = n + n / 2;
    const int K = rf->K, F = rf->F;
    const struct backend_ops *be = rf->be;
    float **dev[] = {&rf->rows, &rf->dh, &rf->wz, &rf->ww, &rf->wvb, &rf->wh, &rf->wdf};
    const int64_t per[] = {F, K, (int64_t)K * F, K, K, K, F};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) {
        be->free(*dev[i]);
        *dev[i] = be->alloc((size_t)(rf->cap * per[i]) * sizeof(float));
    }
    rf->z = xrealloc(rf->z, (size_t)(rf->cap * K * F) * sizeof *rf->z);
    rf->w = xrealloc(rf->w, (size_t)(rf->cap * K) * sizeof *rf->w);
    rf->hh = xrealloc(rf->hh, (size_t)(rf->cap * K) * sizeof *rf->hh);
    rf->vb = xrealloc(rf->vb, (size_t)(rf->cap * K) * sizeof *rf->vb);
    if (rf->value)
        rf->tv = xrealloc(rf->tv, (size_t)rf->cap * sizeof *rf->tv);
    rf->hv = xrealloc(rf->hv, (size_t)(rf->cap * K) * sizeof *rf->hv);
    if (rf->ridge > 0) {
        const size_t ai = (size_t)(rf->cap * K * F * F) * sizeof(float);
        be->free(rf->wai);
        rf->wai = be->alloc(ai);
        rf->ai = xrealloc(rf->ai, ai);
    }
}

/* The factor rows of items [n] gathered into rf->rows on the backend (the
 * indexes uploaded without a host wait, kept for the backward's
 * scatter); with model.factor_feature the rows of their values. */
static void gather(struct rank_factor *rf, int64_t n, const int64_t *items)
{
    const int64_t *idx = items;
    if (rf->value) {
        for (int64_t t = 0; t < n; t++) {
            if (items[t] < 0 || items[t] >= rf->nvalue)
                fatal("task_ranking: item %lld has no value of model.factor_feature (%lld "
                      "items)", (long long)items[t], (long long)(rf->nvalue - 1));
            rf->tv[t] = rf->value[items[t]];
        }
        idx = rf->tv;
    }
    const int64_t *di = mirror_bind(&rf->items, rf->be, &backend_cpu, idx,
                                    (size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    mirror_up_async(&rf->items, rf->st, 0, (size_t)n * sizeof(int64_t));
    rf->be->gather_rows(n, rf->F, rf->fac->w, di, rf->rows);
}

/* rf->hv [T, K]: each token's residual value of each task (the rule's,
 * task_recency.h), NaN where it has no label or is one of the last ncand[b]
 * candidates of its sequence (ncand NULL: none), whose labels never join. */
static void values(struct rank_factor *rf, const struct recency_rule *rule, int64_t B,
                   const int64_t *offsets, const int64_t *ncand, const int64_t *items,
                   const float *labels)
{
    const int K = rf->K;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = offsets[b]; t < offsets[b + 1]; t++) {
            const int cand = ncand && t >= offsets[b + 1] - ncand[b];
            for (int k = 0; k < K; k++) {
                const float y = labels[t * K + k];
                rf->hv[t * K + k] = cand || isnan(y) ? NAN : recency_value(rule, items[t], k, y);
            }
        }
}

void rank_factor_terms(struct rank_factor *rf, const struct recency_rule *rule, int64_t B,
                       const int64_t *offsets, const int64_t *ncand, const int64_t *items,
                       const float *labels, float *out)
{
    const int64_t T = offsets[B];
    if (!rf->fac || T <= 0)
        return;
    reserve(rf, T);
    gather(rf, T, items);
    void *own;
    const float *f = backend_download(rf->be, rf->rows, (size_t)(T * rf->F) * sizeof(float),
                                      &own);
    values(rf, rule, B, offsets, ncand, items, labels);
    backend_cpu.factor_fwd(B, offsets, rf->K, rf->F, f, rf->hv, RECENCY_PRIOR, FACTOR_GAIN,
                           rf->z, rf->w, rf->vb, rf->hh, rf->ridge, rf->ai);
    memcpy(out, rf->hh, (size_t)(T * rf->K) * sizeof *out);
    free(own);
}

void rank_factor_apply(struct rank_factor *rf, int64_t n, const float *h, float *z)
{
    if (!rf->fac || n <= 0)
        return;
    const int K = rf->K;
    const float *dh = mirror_bind(&rf->h, rf->be, &backend_cpu, h, (size_t)(n * K) * sizeof *h);
    mirror_up_async(&rf->h, rf->st, 0, (size_t)(n * K) * sizeof *h);
    rf->be->gemm(0, 1, n, K, K, 1.0f, dh, K, rf->mix->w, K, 1.0f, z, K); /* fp32 (backend.h) */
}

void rank_factor_fwd(struct rank_factor *rf, const struct recency_rule *rule, int64_t B,
                     const int64_t *offsets, const int64_t *items, const float *labels,
                     float *z)
{
    if (!rf->fac)
        return;
    const int64_t T = offsets[B];
    const int K = rf->K;
    rf->n = T;
    rf->B = B;
    if (T <= 0)
        return;
    reserve(rf, T);
    gather(rf, T, items); /* kept for the backward */
    values(rf, rule, B, offsets, NULL, items, labels);
    const struct backend_ops *be = rf->be;
    const double *dv = mirror_bind(&rf->v, be, &backend_cpu, rf->hv,
                                   (size_t)(T * K) * sizeof(double));
    mirror_up_async(&rf->v, rf->st, 0, (size_t)(T * K) * sizeof(double));
    const int64_t *doff = mirror_bind(&rf->off, be, &backend_cpu, offsets,
                                      (size_t)(B + 1) * sizeof(int64_t));
    mirror_up_async(&rf->off, rf->st, 0, (size_t)(B + 1) * sizeof(int64_t));
    be->factor_fwd(B, doff, K, rf->F, rf->rows, dv, RECENCY_PRIOR, FACTOR_GAIN, rf->wz, rf->ww,
                   rf->wvb, rf->wh, rf->ridge, rf->wai);
    be->gemm(0, 1, T, K, K, 1.0f, rf->wh, K, rf->mix->w, K, 1.0f, z, K); /* fp32 (backend.h) */
}

void rank_factor_bwd(struct rank_factor *rf, const struct recency_rule *rule, int64_t n,
                     const float *dz)
{
    (void)rule; /* the values of the forward */
    if (!rf->fac || n <= 0)
        return;
    if (n != rf->n)
        fatal("task_ranking: the factor terms' backward of %lld rows after a forward of %lld",
              (long long)n, (long long)rf->n);
    const int K = rf->K, F = rf->F;
    const struct backend_ops *be = rf->be;
    /* M's gradient += dz^T h; dh = dz M (fp32 under every precision: backend.h) */
    be->gemm(1, 0, K, K, n, 1.0f, dz, K, rf->wh, K, 1.0f, rf->mix->g, K);
    be->gemm(0, 0, n, K, K, 1.0f, dz, K, rf->mix->w, K, 0.0f, rf->dh, K);
    /* the factor rows' gradients walked on the backend from the forward's
     * rows, values and sums (backend/factor_walk.h), scattered onto theirs */
    be->factor_bwd(rf->B, mirror_at(&rf->off), K, F, rf->rows, mirror_at(&rf->v), FACTOR_GAIN,
                   rf->wz, rf->ww, rf->wvb, rf->dh, rf->wdf, rf->ridge, rf->wai);
    be->scatter_add_rows(n, F, rf->wdf, mirror_at(&rf->items), rf->fac->g);
}

void rank_factor_free(struct rank_factor *rf)
{
    if (rf->be) {
        float *dev[] = {rf->rows, rf->dh, rf->wz, rf->ww, rf->wvb, rf->wh, rf->wdf, rf->wai};
        for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
            rf->be->free(dev[i]);
    }
    mirror_free(&rf->items);
    mirror_free(&rf->h);
    mirror_free(&rf->v);
    mirror_free(&rf->off);
    free(rf->value);
    free(rf->tv);
    free(rf->z);
    free(rf->w);
    free(rf->hh);
    free(rf->vb);
    free(rf->hv);
    free(rf->ai);
    memset(rf, 0, sizeof *rf);
}
