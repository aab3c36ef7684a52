/* backend_cpu_loss: the CPU reference of backend.h's softmax_loss and
 * bce_loss (the maths: loss.h). Per supervised position the R + 1 scores are
 * dot products of u_i with rows of e, the softmax is max-subtracted, and the
 * gradients are scatter-added per position into de. Nothing of size
 * [T, R, d] is built. The short vector kernels are blocked by 8 so that the
 * compiler's SLP vectoriser turns them into SIMD at -O2 (d = 50: one dot is
 * ~7 vector FMAs). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_cpu.h"
#include "backend/cpu_math.h"
#include "base/check.h"
#include "base/simd.h"
#include "base/log.h"

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

/* softmax_loss, and softmax_loss_q with logq [nu] subtracted from every
 * candidate's logit (NULL: none, the arithmetic of softmax_loss). */
FS_SIMD
static double softmax_loss_impl(int64_t T, int d, int R, float inv_tau, const float *u,
                                int64_t nu, const float *e, const float *logq,
                                const int64_t *pos, const int64_t *neg, float scale, float *du,
                                float *de, int64_t *count)
{
    static const char *what = "softmax_loss";
    float *s = xmalloc((size_t)(R + 1) * sizeof(float)); /* logits, then exp(s - max) */
    const float gscale = scale * inv_tau;
    double total = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < T; i++) {
        const float *ui = u + i * d;
        float *dui = du + i * d;
        int64_t p = pos[i];
        if (p < 0) {
            memset(dui, 0, (size_t)d * sizeof(float));
            continue;
        }
        loss_check_index(what, i, p, nu);
        const int64_t *ni = neg + i * R;
        const float *ep = e + p * d;

        const float s0 = loss_dot(d, ui, ep) * inv_tau - (logq ? logq[p] : 0.0f);
        float m = s0;
        s[0] = s0;
        for (int r = 0; r < R; r++) {
            int64_t k = ni[r];
            if (k < 0 || k == p) {
                s[r + 1] = -INFINITY; /* masked: exp gives 0 */
                continue;
            }
            loss_check_index(what, i, k, nu);
            s[r + 1] = loss_dot(d, ui, e + k * d) * inv_tau - (logq ? logq[k] : 0.0f);
            m = fmaxf(m, s[r + 1]);
        }
        for (int r = 0; r <= R; r++)
            s[r] = cpu_expf(s[r] - m);
        double sum = 0;
        for (int r = 0; r <= R; r++)
            sum += s[r];
        total += log(sum) + (double)m - (double)s0; /* logsumexp - s_0 */
        n++;

        /* d loss / d s_0 = pi_0 - 1, d loss / d s_r = pi_r; ds/de = u / tau */
        float inv_sum = (float)(1.0 / sum);
        float g0 = (s[0] * inv_sum - 1.0f) * gscale;
        for (int j = 0; j < d; j++) /* dui = 0 + g0 ep: zeroed, then the first axpy */
            dui[j] = 0.0f + g0 * ep[j];
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

    free(s);
    if (count)
        *count = n;
    return total;
}

void cpu_softmax_loss(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                      const float *e, const int64_t *pos, const int64_t *neg, float scale,
                      float *du, float *de, double *acc)
{
    int64_t n = 0;
    acc[0] += softmax_loss_impl(T, d, R, inv_tau, u, nu, e, NULL, pos, neg, scale, du, de, &n);
    acc[1] += (double)n;
}

void cpu_softmax_loss_q(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                        const float *e, const float *logq, const int64_t *pos,
                        const int64_t *neg, float scale, float *du, float *de, double *acc)
{
    int64_t n = 0;
    acc[0] += softmax_loss_impl(T, d, R, inv_tau, u, nu, e, logq, pos, neg, scale, du, de, &n);
    acc[1] += (double)n;
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

FS_SIMD
void cpu_bce_loss(int64_t T, int d, const float *u, int64_t nu, const float *rows,
                  const int64_t *pos, const int64_t *neg, float scale, float *du, float *drows,
                  double *acc)
{
    static const char *what = "bce_loss";
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
    acc[0] += total;
    acc[1] += (double)n;
}
