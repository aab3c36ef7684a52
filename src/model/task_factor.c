/* task_factor: the ranking logits' factor terms; see task_factor.h. */
#include "model/task_factor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"

void rank_factor_init(struct rank_factor *rf, struct model *m, int K, int F)
{
    memset(rf, 0, sizeof *rf);
    rf->be = m->be;
    rf->K = K;
    rf->F = F;
    if (F <= 0)
        return;
    rf->fac = model_param(m, "bias.factor");
    rf->mix = model_param(m, "bias.fmix");
    if (!rf->fac || !rf->mix)
        fatal("task_ranking: model.factors and the model has no bias.factor or bias.fmix "
              "(task_ranking_params before model_init)");
}

static void reserve(struct rank_factor *rf, int64_t n)
{
    if (n <= rf->cap)
        return;
    rf->cap = n + n / 2;
    const int K = rf->K, F = rf->F;
    rf->be->free(rf->rows);
    rf->rows = rf->be->alloc((size_t)(rf->cap * F) * sizeof(float));
    rf->be->free(rf->dh);
    rf->dh = rf->be->alloc((size_t)(rf->cap * K) * sizeof(float));
    rf->z = xrealloc(rf->z, (size_t)(rf->cap * K * F) * sizeof *rf->z);
    rf->w = xrealloc(rf->w, (size_t)(rf->cap * K) * sizeof *rf->w);
    rf->hh = xrealloc(rf->hh, (size_t)(rf->cap * K) * sizeof *rf->hh);
    rf->vb = xrealloc(rf->vb, (size_t)(rf->cap * K) * sizeof *rf->vb);
    rf->df = xrealloc(rf->df, (size_t)(rf->cap * F) * sizeof *rf->df);
}

/* The factor rows of items [n] on the host: gathered on the backend
 * (the indexes uploaded, kept for the backward's scatter), downloaded. */
static const float *rows_host(struct rank_factor *rf, int64_t n, const int64_t *items,
                              void **own)
{
    const int64_t *di = mirror_bind(&rf->items, rf->be, &backend_cpu, items,
                                    (size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    mirror_up(&rf->items, 0, (size_t)n * sizeof(int64_t));
    rf->be->gather_rows(n, rf->F, rf->fac->w, di, rf->rows);
    return backend_download(rf->be, rf->rows, (size_t)(n * rf->F) * sizeof(float), own);
}

/* The sums z, weights w, mean residuals vb and terms h of the tokens of
 * sequence [t0, t1), the last nc candidates taking the sums of the tokens
 * before them. */
static void walk(struct rank_factor *rf, const struct recency_rule *rule, const float *f,
                 const int64_t *items, const float *labels, int64_t t0, int64_t t1, int64_t nc)
{
    const int K = rf->K, F = rf->F;
    double s[RANK_MAX_TASKS][64], sf[RANK_MAX_TASKS][64], sv[RANK_MAX_TASKS] = {0},
        n[RANK_MAX_TASKS] = {0};
    memset(s, 0, sizeof s);
    memset(sf, 0, sizeof sf);
    for (int64_t t = t0; t < t1; t++) {
        const float *ft = f + t * F;
        for (int k = 0; k < K; k++) {
            const double w = 1.0 / (n[k] + RECENCY_PRIOR), vb = sv[k] * w;
            float *z = rf->z + (t * K + k) * F;
            double h = 0;
            for (int e = 0; e < F; e++) {
                z[e] = (float)((s[k][e] - vb * sf[k][e]) * w);
                h += (double)ft[e] * z[e];
            }
            rf->w[t * K + k] = (float)w;
            rf->vb[t * K + k] = (float)vb;
            rf->hh[t * K + k] = FACTOR_GAIN * (float)h;
        }
        if (t >= t1 - nc) /* a candidate: its label never joins */
            continue;
        for (int k = 0; k < K; k++) {
            const float y = labels[t * K + k];
            if (isnan(y))
                continue;
            const double v = recency_value(rule, items[t], k, y);
            for (int e = 0; e < F; e++) {
                s[k][e] += v * ft[e];
                sf[k][e] += ft[e];
            }
            sv[k] += v;
            n[k] += 1;
        }
    }
}

static void terms(struct rank_factor *rf, const struct recency_rule *rule, int64_t B,
                  const int64_t *offsets, const int64_t *ncand, const int64_t *items,
                  const float *labels, const float *f)
{
    for (int64_t b = 0; b < B; b++)
        walk(rf, rule, f, items, labels, offsets[b], offsets[b + 1], ncand ? ncand[b] : 0);
}

void rank_factor_terms(struct rank_factor *rf, const struct recency_rule *rule, int64_t B,
                       const int64_t *offsets, const int64_t *ncand, const int64_t *items,
                       const float *labels, float *out)
{
    const int64_t T = offsets[B];
    if (!rf->fac || T <= 0)
        return;
    reserve(rf, T);
    void *own;
    const float *f = rows_host(rf, T, items, &own);
    terms(rf, rule, B, offsets, ncand, items, labels, f);
    memcpy(out, rf->hh, (size_t)(T * rf->K) * sizeof *out);
    free(own);
}

void rank_factor_apply(struct rank_factor *rf, int64_t n, const float *h, float *z)
{
    if (!rf->fac || n <= 0)
        return;
    const int K = rf->K;
    const float *dh = mirror_bind(&rf->h, rf->be, &backend_cpu, h, (size_t)(n * K) * sizeof *h);
    mirror_up(&rf->h, 0, (size_t)(n * K) * sizeof *h);
    rf->be->gemm(0, 1, n, K, K, 1.0f, dh, K, rf->mix->w, K, 1.0f, z, K); /* fp32 (backend.h) */
}

void rank_factor_fwd(struct rank_factor *rf, const struct recency_rule *rule, int64_t B,
                     const int64_t *offsets, const int64_t *items, const float *labels,
                     float *z)
{
    if (!rf->fac)
        return;
    const int64_t T = offsets[B];
    rf->n = T;
    rf->B = B;
    rf->offsets = offsets;
    rf->tok_items = items;
    rf->labels = labels;
    if (T <= 0)
        return;
    reserve(rf, T);
    void *own;
    const float *f = rows_host(rf, T, items, &own);
    terms(rf, rule, B, offsets, NULL, items, labels, f);
    free(own);
    rank_factor_apply(rf, T, rf->hh, z);
}

void rank_factor_bwd(struct rank_factor *rf, const struct recency_rule *rule, int64_t n,
                     const float *dz)
{
    if (!rf->fac || n <= 0)
        return;
    if (n != rf->n)
        fatal("task_ranking: the factor terms' backward of %lld rows after a forward of %lld",
              (long long)n, (long long)rf->n);
    const int K = rf->K, F = rf->F;
    const struct backend_ops *be = rf->be;
    /* M's gradient += dz^T h; dh = dz M (fp32 under every precision: backend.h) */
    be->gemm(1, 0, K, K, n, 1.0f, dz, K, mirror_at(&rf->h), K, 1.0f, rf->mix->g, K);
    be->gemm(0, 0, n, K, K, 1.0f, dz, K, rf->mix->w, K, 0.0f, rf->dh, K);
    void *own_dh, *own_f;
    const float *dh = backend_download(be, rf->dh, (size_t)(n * K) * sizeof(float), &own_dh);
    const float *f = backend_download(be, rf->rows, (size_t)(n * F) * sizeof(float), &own_f);
    /* h_j(t) = G f_t . z_j(t), z_j(t) = w_j(t) sum_{s < t} (v_j(s) - vb_j(t)) f_s:
     * token t's own row gets G dh z; an earlier event s gets v_j(s) g1_j - g2_j,
     * g1_j the sum over the later tokens t of G dh_j(t) w_j(t) f_t and g2_j
     * the same weighted by vb_j(t) (both walked backwards) */
    for (int64_t b = 0; b < rf->B; b++) {
        double g1[RANK_MAX_TASKS][64], g2[RANK_MAX_TASKS][64];
        memset(g1, 0, sizeof g1);
        memset(g2, 0, sizeof g2);
        for (int64_t t = rf->offsets[b + 1] - 1; t >= rf->offsets[b]; t--) {
            float *d = rf->df + t * F;
            const float *ft = f + t * F;
            double acc[64] = {0};
            for (int k = 0; k < K; k++) {
                const float y = rf->labels[t * K + k];
                if (!isnan(y)) {
                    const double v = recency_value(rule, rf->tok_items[t], k, y);
                    for (int e = 0; e < F; e++)
                        acc[e] += v * g1[k][e] - g2[k][e];
                }
                const double gh = (double)FACTOR_GAIN * dh[t * K + k];
                const double gw = gh * rf->w[t * K + k], gv = gw * rf->vb[t * K + k];
                const float *z = rf->z + (t * K + k) * F;
                for (int e = 0; e < F; e++) {
                    acc[e] += gh * z[e];
                    g1[k][e] += gw * ft[e];
                    g2[k][e] += gv * ft[e];
                }
            }
            for (int e = 0; e < F; e++)
                d[e] = (float)acc[e];
        }
    }
    free(own_dh);
    free(own_f);
    const float *ddf = mirror_bind(&rf->dfac, be, &backend_cpu, rf->df,
                                   (size_t)(n * F) * sizeof(float));
    mirror_up(&rf->dfac, 0, (size_t)(n * F) * sizeof(float));
    be->scatter_add_rows(n, F, ddf, mirror_at(&rf->items), rf->fac->g);
}

void rank_factor_free(struct rank_factor *rf)
{
    if (rf->be) {
        rf->be->free(rf->rows);
        rf->be->free(rf->dh);
    }
    mirror_free(&rf->items);
    mirror_free(&rf->h);
    mirror_free(&rf->dfac);
    free(rf->z);
    free(rf->w);
    free(rf->hh);
    free(rf->vb);
    free(rf->df);
    memset(rf, 0, sizeof *rf);
}
