/* loss: sampled softmax and BCE against the tied item table, the keyed
 * negative sampler (see loss.h).
 *
 * The per-position work is the backend's (softmax_loss, bce_loss; the CPU
 * reference is backend_cpu_loss.c). Here the unique rows are normalised once
 * (be->l2norm_fwd) when the loss asks for it, and the gradient w.r.t. the
 * normalised rows goes through be->l2norm_bwd once and is added to drows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/exact.h"
#include "base/log.h"
#include "model/loss.h"
#include "backend/loss_sample.h"
#include "base/rng.h"

void loss_sample_negatives(uint64_t seed, uint64_t epoch, const uint64_t *pos_keys, int64_t T,
                           int R, int64_t num_items, int64_t *neg_ids)
{
    if (num_items < 1)
        fatal("loss_sample_negatives: no items to sample from (num_items = %lld)",
              (long long)num_items);
    for (int64_t i = 0; i < T; i++)
        loss_negatives_row(seed, epoch, pos_keys[i], R, num_items, neg_ids + i * R);
}

/* The sum and count of a loss computed into a temporary acc (backend
 * memory), back on the host. */
static double acc_read(const struct backend_ops *be, double *acc, int64_t *count)
{
    double h[2];
    be->to_host(h, acc, sizeof h);
    be->free(acc);
    if (count)
        *count = (int64_t)h[1];
    return h[0];
}

double loss_sampled_softmax(const struct backend_ops *be, int64_t T, int d, int R, float tau,
                            int normalize_items, const float *u, int64_t nu, const float *rows,
                            const int64_t *pos, const int64_t *neg, float scale, float *du,
                            float *drows, int64_t *count)
{
    struct loss_ws ws = {0};
    double *acc = be->alloc(2 * sizeof(double));
    loss_sampled_softmax_acc(be, &ws, 0, T, d, R, tau, normalize_items, u, nu, rows, NULL, pos,
                             neg, scale, du, drows, acc);
    loss_ws_free(&ws);
    return acc_read(be, acc, count);
}

void loss_ws_free(struct loss_ws *ws)
{
    if (ws->be) {
        ws->be->free(ws->en);
        ws->be->free(ws->norms);
        ws->be->free(ws->de);
        ws->be->free(ws->dx);
    }
    *ws = (struct loss_ws){0};
}

/* ws holds nu rows of d */
static void ws_reserve(struct loss_ws *ws, const struct backend_ops *be, int64_t nu, int d)
{
    if (ws->be == be && nu <= ws->cap && d == ws->d)
        return;
    loss_ws_free(ws);
    ws->be = be;
    ws->d = d;
    ws->cap = nu + nu / 4 + 1;
    const size_t rows = (size_t)ws->cap * (size_t)d * sizeof(float);
    ws->en = be->alloc(rows);
    ws->norms = be->alloc((size_t)ws->cap * sizeof(float));
    ws->de = be->alloc(rows);
    ws->dx = be->alloc(rows);
}

/* the backend's kernel of the sampled softmax (loss_sampled_softmax_acc's shared) */
static void softmax_kernel(const struct backend_ops *be, int shared, int64_t T, int d, int R,
                           float inv_tau, const float *u, int64_t nu, const float *e,
                           const float *logq, const int64_t *pos, const int64_t *neg,
                           float scale, float *du, float *de, double *acc)
{
    if (shared && be->softmax_loss_shared)
        be->softmax_loss_shared(T, d, R, inv_tau, u, nu, e, logq, pos, neg, scale, du, de, acc);
    else if (logq)
        be->softmax_loss_q(T, d, R, inv_tau, u, nu, e, logq, pos, neg, scale, du, de, acc);
    else
        be->softmax_loss(T, d, R, inv_tau, u, nu, e, pos, neg, scale, du, de, acc);
}

void loss_sampled_softmax_acc(const struct backend_ops *be, struct loss_ws *ws, int shared,
                              int64_t T, int d, int R, float tau, int normalize_items,
                              const float *u, int64_t nu, const float *rows, const float *logq,
                              const int64_t *pos, const int64_t *neg, float scale, float *du,
                              float *drows, double *acc)
{
    if (d < 1 || R < 0 || !(tau > 0))
        fatal("loss_sampled_softmax: bad arguments d = %d, R = %d, tau = %g", d, R, (double)tau);
    /* e: the rows the scores use; de: gradient of scale * sum loss w.r.t. e */
    const float *e = rows;
    float *de = drows;
    if (normalize_items) {
        ws_reserve(ws, be, nu, d);
        be->l2norm_fwd(nu, d, ITEM_NORM_EPS, rows, ws->en, ws->norms);
        e = ws->en;
        de = ws->de;
        be->zero(de, (size_t)(nu ? nu : 1) * (size_t)d * sizeof(float));
    }
    softmax_kernel(be, shared, T, d, R, 1.0f / tau, u, nu, e, logq, pos, neg, scale, du, de, acc);
    if (normalize_items) {
        be->l2norm_bwd(nu, d, ws->en, ws->norms, de, ws->dx);
        be->axpy(nu * d, 1.0f, ws->dx, drows);
    }
}

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

void loss_batch_targets_sort(int64_t *targets, int64_t n)
{
    qsort(targets, (size_t)n, sizeof *targets, cmp_i64);
}

#define LOSS_IN_BATCH_SITE 0x696e2d6261746368ull /* "in-batch" */

void loss_sample_in_batch(uint64_t seed, uint64_t epoch, const uint64_t *pos_keys, int64_t T,
                          int R, int r0, const int64_t *batch, int64_t n, int64_t *neg_ids)
{
    if (n < 1 && r0 < R && T > 0)
        fatal("loss_sample_in_batch: the global batch has no targets to draw from");
    for (int64_t i = 0; i < T; i++) {
        struct rng g;
        rng_init(&g, rng_key(rng_key(seed, epoch, pos_keys[i]), LOSS_IN_BATCH_SITE, 0));
        for (int r = r0; r < R; r++)
            neg_ids[i * R + r] = batch[rng_below(&g, (uint64_t)n)];
    }
}

/* the first index of sorted a[n] with a[i] > v (n if none) */
static int64_t first_above(const int64_t *a, int64_t n, int64_t v)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

float loss_logq(int64_t id, const int64_t *batch, int64_t n, int R, int Ru, int64_t num_items)
{
    const int64_t c = first_above(batch, n, id) - first_above(batch, n, id - 1);
    double q_rel = (double)Ru / R + (double)(R - Ru) / R * (double)num_items * (double)c /
                                        (double)(n ? n : 1);
    return (float)log(q_rel); /* -inf only for an id the proposal cannot draw */
}

double loss_bce(const struct backend_ops *be, int64_t T, int d, const float *u, int64_t nu,
                const float *rows, const int64_t *pos, const int64_t *neg, float scale, float *du,
                float *drows, int64_t *count)
{
    double *acc = be->alloc(2 * sizeof(double));
    loss_bce_acc(be, T, d, u, nu, rows, pos, neg, scale, du, drows, acc);
    return acc_read(be, acc, count);
}

void loss_bce_acc(const struct backend_ops *be, int64_t T, int d, const float *u, int64_t nu,
                  const float *rows, const int64_t *pos, const int64_t *neg, float scale,
                  float *du, float *drows, double *acc)
{
    if (d < 1)
        fatal("loss_bce: bad dimension d = %d", d);
    be->bce_loss(T, d, u, nu, rows, pos, neg, scale, du, drows, acc);
}

/* A sequence's contributions to the rows it touched (rows [n] distinct,
 * their gradients in de; through the normalisation when norm), added
 * exactly to x[row]; those rows of de zeroed again. */
static void exact_rows_out(const struct backend_ops *be, const struct loss_ws *ws, int norm, int d,
                           const int64_t *rows, int64_t n, float *de, int64_t *x, int64_t *bad)
{
    for (int64_t j = 0; j < n; j++) {
        const int64_t k = rows[j];
        float *dk = de + k * d;
        const float *v = dk;
        if (norm) { /* through the normalisation, one row */
            be->l2norm_bwd(1, d, ws->en + k * d, ws->norms + k, dk, ws->dx);
            v = ws->dx;
        }
        exact_add_vec(x + k * d * EXACT_LIMBS, v, d, bad);
        memset(dk, 0, (size_t)d * sizeof *dk);
    }
}

void loss_exact_acc(const struct backend_ops *be, struct loss_ws *ws, int bce, int shared,
                    int64_t B, const int64_t *offsets, int d, int R, float tau, int normalize_items,
                    const float *u, int64_t nu, const float *rows, const float *logq,
                    const int64_t *pos, const int64_t *neg, float scale, float *du, double *acc,
                    int64_t *xrows, int64_t *xbad, int64_t *xloss)
{
    if (!backend_is_host(be))
        fatal("loss_exact_acc: exact sums need a host backend (%s)", be->name);
    const int Rn = bce ? 1 : R, norm = normalize_items && !bce;
    ws_reserve(ws, be, nu, d); /* de: the sequences' scratch; en, norms, dx: the normalisation */
    const float *e = rows;
    if (norm) {
        be->l2norm_fwd(nu, d, ITEM_NORM_EPS, rows, ws->en, ws->norms);
        e = ws->en;
    }
    memset(ws->de, 0, (size_t)(nu ? nu : 1) * (size_t)d * sizeof(float));
    uint8_t *seen = xcalloc((size_t)(nu ? nu : 1), 1);
    int64_t *touched = NULL, cap = 0;
    for (int64_t b = 0; b < B; b++) { /* the batch's kernel on one sequence at a time */
        const int64_t t0 = offsets[b], L = offsets[b + 1] - t0;
        if (L * (Rn + 1) > cap) {
            cap = L * (Rn + 1);
            touched = xrealloc(touched, (size_t)cap * sizeof *touched);
        }
        int64_t n = 0;
        for (int64_t i = t0; i < t0 + L; i++) { /* the rows it touches, once each */
            if (pos[i] < 0)
                continue;
            const int64_t *ni = neg + i * Rn;
            for (int r = -1; r < Rn; r++) {
                const int64_t k = r < 0 ? pos[i] : ni[r];
                if (k >= 0 && k < nu && !seen[k]) {
                    seen[k] = 1;
                    touched[n++] = k;
                }
            }
        }
        double a[2] = {0, 0};
        const float *ub = u + t0 * d;
        float *dub = du + t0 * d;
        if (bce)
            be->bce_loss(L, d, ub, nu, rows, pos + t0, neg + t0, scale, dub, ws->de, a);
        else
            softmax_kernel(be, shared, L, d, R, 1.0f / tau, ub, nu, e, logq, pos + t0,
                           neg + t0 * R, scale, dub, ws->de, a);
        exact_rows_out(be, ws, norm, d, touched, n, ws->de, xrows, xbad);
        for (int64_t j = 0; j < n; j++)
            seen[touched[j]] = 0;
        acc[0] += a[0];
        acc[1] += a[1];
        exact_add_double(xloss, a[0], xloss + EXACT_LIMBS);
    }
    free(touched);
    free(seen);
}
