/* loss: sampled softmax and BCE against the tied item table, the keyed
 * negative sampler (see loss.h).
 *
 * CPU reference. Per supervised position the R + 1 scores are dot products
 * of u_i with rows of the unique-row table (normalised once per unique row
 * through be->l2norm_fwd), the softmax is max-subtracted, and the gradients
 * are scatter-added per position into de: [nu, d] (gradient w.r.t. the
 * normalised rows), which goes through be->l2norm_bwd once and is then added
 * to drows. Nothing of size [T, R, d] is built. The short vector kernels are
 * blocked by 8 so that the compiler's SLP vectoriser turns them into SIMD
 * at -O2 (d = 50: one dot is ~7 vector FMAs). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "log.h"
#include "loss.h"
#include "rng.h"

#define LOSS_NEG_SITE 0x6e65676174697665ull /* "negative": the sampler's stream */

/* Host pointers only (see loss.h). */
static void loss_check_backend(const struct backend_ops *be, const char *what)
{
    if (!be || strcmp(be->name, "cpu") != 0)
        fatal("%s: not implemented for backend %s (host memory only)", what,
              be ? be->name : "(null)");
}

static void loss_check_index(const char *what, int64_t i, int64_t k, int64_t nu)
{
    if (k >= nu)
        fatal("%s: position %lld: row index %lld out of range (nu = %lld)", what, (long long)i,
              (long long)k, (long long)nu);
}

/* a . b over d values, float accumulators in 8 lanes (a: [d], b: [d]). */
static inline float loss_dot(int d, const float *restrict a, const float *restrict b)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int j = 0;
    for (; j + 8 <= d; j += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += a[j + k] * b[j + k];
    float tail = 0;
    for (; j < d; j++)
        tail += a[j] * b[j];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) +
           tail;
}

/* y += alpha x over d values (x, y: [d], not overlapping). */
static inline void loss_axpy(int d, float alpha, const float *restrict x, float *restrict y)
{
    int j = 0;
    for (; j + 8 <= d; j += 8)
        for (int k = 0; k < 8; k++)
            y[j + k] += alpha * x[j + k];
    for (; j < d; j++)
        y[j] += alpha * x[j];
}

void loss_sample_negatives(uint64_t seed, uint64_t epoch, const uint64_t *pos_keys, int64_t T,
                           int R, int64_t num_items, int64_t *neg_ids)
{
    if (num_items < 1)
        fatal("loss_sample_negatives: no items to sample from (num_items = %lld)",
              (long long)num_items);
    for (int64_t i = 0; i < T; i++) {
        struct rng g;
        rng_init(&g, rng_key(rng_key(seed, epoch, pos_keys[i]), LOSS_NEG_SITE, 0));
        for (int r = 0; r < R; r++)
            neg_ids[i * R + r] = 1 + (int64_t)rng_below(&g, (uint64_t)num_items);
    }
}

double loss_sampled_softmax(const struct backend_ops *be, int64_t T, int d, int R, float tau,
                            int normalize_items, const float *u, int64_t nu, const float *rows,
                            const int64_t *pos, const int64_t *neg, float scale, float *du,
                            float *drows, int64_t *count)
{
    static const char *what = "loss_sampled_softmax";
    loss_check_backend(be, what);
    if (d < 1 || R < 0 || !(tau > 0))
        fatal("%s: bad arguments d = %d, R = %d, tau = %g", what, d, R, (double)tau);

    /* e: the rows the scores use; de: gradient of scale * sum loss w.r.t. e */
    size_t table_bytes = (size_t)nu * (size_t)d * sizeof(float);
    float *en = NULL, *norms = NULL;
    const float *e = rows;
    if (normalize_items) {
        en = be->alloc(table_bytes);
        norms = be->alloc((size_t)nu * sizeof(float));
        be->l2norm_fwd(nu, d, ITEM_NORM_EPS, rows, en, norms);
        e = en;
    }
    float *de = be->alloc(table_bytes);
    float *s = xmalloc((size_t)(R + 1) * sizeof(float)); /* logits, then exp(s - max) */

    const float inv_tau = 1.0f / tau, gscale = scale / tau;
    double total = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < T; i++) {
        const float *ui = u + i * d;
        float *dui = du + i * d;
        memset(dui, 0, (size_t)d * sizeof(float));
        int64_t p = pos[i];
        if (p < 0)
            continue;
        loss_check_index(what, i, p, nu);
        const int64_t *ni = neg + i * R;
        const float *ep = e + p * d;

        const float s0 = loss_dot(d, ui, ep) * inv_tau;
        float m = s0;
        s[0] = s0;
        for (int r = 0; r < R; r++) {
            int64_t k = ni[r];
            if (k < 0 || k == p) {
                s[r + 1] = -INFINITY; /* masked: exp gives 0 */
                continue;
            }
            loss_check_index(what, i, k, nu);
            s[r + 1] = loss_dot(d, ui, e + k * d) * inv_tau;
            m = fmaxf(m, s[r + 1]);
        }
        double sum = 0;
        for (int r = 0; r <= R; r++) {
            s[r] = expf(s[r] - m);
            sum += s[r];
        }
        total += log(sum) + (double)m - (double)s0; /* logsumexp - s_0 */
        n++;

        /* d loss / d s_0 = pi_0 - 1, d loss / d s_r = pi_r; ds/de = u / tau */
        float inv_sum = (float)(1.0 / sum);
        float g0 = (s[0] * inv_sum - 1.0f) * gscale;
        loss_axpy(d, g0, ep, dui);
        loss_axpy(d, g0, ui, de + p * d);
        for (int r = 0; r < R; r++) {
            if (s[r + 1] == 0.0f)
                continue; /* masked (or underflowed): no gradient */
            int64_t k = ni[r];
            float g = s[r + 1] * inv_sum * gscale;
            loss_axpy(d, g, e + k * d, dui);
            loss_axpy(d, g, ui, de + k * d);
        }
    }

    if (normalize_items) {
        float *dx = be->alloc(table_bytes);
        be->l2norm_bwd(nu, d, en, norms, de, dx);
        be->axpy(nu * d, 1.0f, dx, drows);
        be->free(dx);
        be->free(en);
        be->free(norms);
    } else {
        be->axpy(nu * d, 1.0f, de, drows);
    }
    be->free(de);
    free(s);
    if (count)
        *count = n;
    return total;
}

/* log(1 + exp(x)) without overflow */
static double loss_softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

static float loss_sigmoid(float x)
{
    if (x >= 0)
        return 1.0f / (1.0f + expf(-x));
    float t = expf(x);
    return t / (1.0f + t);
}

double loss_bce(const struct backend_ops *be, int64_t T, int d, const float *u, int64_t nu,
                const float *rows, const int64_t *pos, const int64_t *neg, float scale, float *du,
                float *drows, int64_t *count)
{
    static const char *what = "loss_bce";
    loss_check_backend(be, what);
    if (d < 1)
        fatal("%s: bad dimension d = %d", what, d);
    double total = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < T; i++) {
        const float *ui = u + i * d;
        float *dui = du + i * d;
        memset(dui, 0, (size_t)d * sizeof(float));
        int64_t p = pos[i], k = neg[i];
        if (p < 0)
            continue;
        loss_check_index(what, i, p, nu);
        /* -log sigma(s) = softplus(-s), d/ds = sigma(s) - 1 */
        float sp = loss_dot(d, ui, rows + p * d);
        total += loss_softplus(-(double)sp);
        float gp = (loss_sigmoid(sp) - 1.0f) * scale;
        loss_axpy(d, gp, rows + p * d, dui);
        loss_axpy(d, gp, ui, drows + p * d);
        n++;
        if (k < 0 || k == p)
            continue;
        loss_check_index(what, i, k, nu);
        /* -log(1 - sigma(s)) = softplus(s), d/ds = sigma(s) */
        float sn = loss_dot(d, ui, rows + k * d);
        total += loss_softplus((double)sn);
        float gn = loss_sigmoid(sn) * scale;
        loss_axpy(d, gn, rows + k * d, dui);
        loss_axpy(d, gn, ui, drows + k * d);
    }
    if (count)
        *count = n;
    return total;
}
