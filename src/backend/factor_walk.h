/* factor_walk: the walks of the ranking head's factor terms
 * (model/task_factor.h) along a sequence, written once for the host and
 * the device: the CPU backend's factor_fwd / factor_bwd
 * (backend_cpu_factor.c) and the CUDA kernels (cuda/factor.cu) call these
 * very functions, one per (sequence, task) forward and one per (sequence,
 * factor column) backward. The decomposition is exact: a task's sums in
 * the forward and a column's in the backward depend on nothing else, and
 * each runs in the host loop's order.
 *
 * Layout: tokens t0 .. t1 - 1 of one sequence; f [T, F] their factor
 * rows; v [T, K] the residual value of task k's label (task_recency.h's
 * recency_value), NaN where the token has none (no label, or a candidate:
 * its label never joins the sums); z [T, K, F], w, vb, h [T, K] as
 * task_factor.h writes them; dh [T, K] the terms' gradient; df [T, F]. */
#ifndef FS_FACTOR_WALK_H
#define FS_FACTOR_WALK_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define FW_HD __host__ __device__
#else
#define FW_HD
#endif

#define FACTOR_MAX_F 64     /* model.factors' bound (params_table.h) */
#define FACTOR_MAX_TASKS 16 /* RANK_MAX_TASKS (data/batch_ranking.h) */
#define FACTOR_RIDGE_MAX_F 16 /* model.factor_ridge's bound on model.factors (its F x F solves) */

/* Token t of task k: its w, vb, h, then its label's residual (if it has
 * one: returns 1) into the sums s, sf, sv, n of the later tokens. */
FW_HD static inline int factor_walk_take(int64_t t, int k, int K, int F, const float *ft,
                                         const double *v, double wt, double vbt, float gain,
                                         double hh, float *w, float *vb, float *h, double *s,
                                         double *sf, double *sv, double *n)
{
    w[t * K + k] = (float)wt;
    vb[t * K + k] = (float)vbt;
    h[t * K + k] = gain * (float)hh;
    const double vv = v[t * K + k];
    if (isnan(vv))
        return 0;
    for (int e = 0; e < F; e++) {
        s[e] += vv * ft[e];
        sf[e] += ft[e];
    }
    *sv += vv;
    *n += 1;
    return 1;
}

/* Task k along tokens [t0, t1): z, w, vb, h of each token from the sums
 * of the labelled tokens before it (prior pseudo-events at 0, gain). */
FW_HD static inline void factor_walk_fwd_task(int64_t t0, int64_t t1, int k, int K, int F,
                                              const float *f, const double *v, double prior,
                                              float gain, float *z, float *w, float *vb,
                                              float *h)
{
    double s[FACTOR_MAX_F], sf[FACTOR_MAX_F], sv = 0, n = 0;
    for (int e = 0; e < F; e++)
        s[e] = sf[e] = 0;
    for (int64_t t = t0; t < t1; t++) {
        const float *ft = f + t * F;
        const double wt = 1.0 / (n + prior), vbt = sv * wt;
        float *zt = z + (t * K + k) * F;
        double hh = 0;
        for (int e = 0; e < F; e++) {
            zt[e] = (float)((s[e] - vbt * sf[e]) * wt);
            hh += (double)ft[e] * zt[e];
        }
        factor_walk_take(t, k, K, F, ft, v, wt, vbt, gain, hh, w, vb, h, s, sf, &sv, &n);
    }
}

/* Column e of the factor rows' gradient df along tokens [t0, t1), walked
 * backwards: token t's own row gets gain dh z; an earlier labelled token s
 * gets v_k(s) g1_k - g2_k, g1_k the sum over the later tokens of gain
 * dh_k w_k f, g2_k the same weighted by vb_k (tasks in order). */
FW_HD static inline void factor_walk_bwd_col(int64_t t0, int64_t t1, int e, int K, int F,
                                             const float *f, const double *v, float gain,
                                             const float *z, const float *w, const float *vb,
                                             const float *dh, float *df)
{
    double g1[FACTOR_MAX_TASKS], g2[FACTOR_MAX_TASKS];
    for (int k = 0; k < K; k++)
        g1[k] = g2[k] = 0;
    for (int64_t t = t1 - 1; t >= t0; t--) {
        const float fte = f[t * F + e];
        double acc = 0;
        for (int k = 0; k < K; k++) {
            const double vv = v[t * K + k];
            if (!isnan(vv))
                acc += vv * g1[k] - g2[k];
            const double gh = (double)gain * dh[t * K + k];
            const double gw = gh * w[t * K + k], gv = gw * vb[t * K + k];
            acc += gh * z[(t * K + k) * F + e];
            g1[k] += gw * fte;
            g2[k] += gv * fte;
        }
        df[t * F + e] = (float)acc;
    }
}

/* model.factor_ridge = lambda > 0: the user's factor is the ridge fit
 *   z = A^-1 b, A = lambda I + sum_s f_s f_s^T, b = sum_s (v(s) - vb) f_s
 * of the same residuals on the same rows (s the labelled tokens before t),
 * in place of the shrunk mean (b / (n + R0)); vb and w as in the mean.
 * The forward also writes each token's A^-1, ai [T, K, F, F], for the
 * backward. F <= FACTOR_RIDGE_MAX_F. */

/* inv [F, F] = a^-1 of the symmetric positive definite a (both double,
 * row-major; a is overwritten by its Cholesky factor L, a = L L^T). */
FW_HD static inline void factor_spd_inverse(int F, double *a, double *inv)
{
    for (int j = 0; j < F; j++) {
        double d = a[j * F + j];
        for (int q = 0; q < j; q++)
            d -= a[j * F + q] * a[j * F + q];
        d = sqrt(d > 0 ? d : 1e-300);
        a[j * F + j] = d;
        for (int i = j + 1; i < F; i++) {
            double x = a[i * F + j];
            for (int q = 0; q < j; q++)
                x -= a[i * F + q] * a[j * F + q];
            a[i * F + j] = x / d;
        }
    }
    /* inv's upper triangle holds L^-1 transposed: column c of L^-1 by forward substitution */
    for (int c = 0; c < F; c++)
        for (int i = 0; i < F; i++) {
            if (i < c) {
                inv[c * F + i] = 0;
                continue;
            }
            double x = i == c ? 1.0 : 0.0;
            for (int q = c; q < i; q++)
                x -= a[i * F + q] * inv[c * F + q];
            inv[c * F + i] = x / a[i * F + i];
        }
    /* a^-1 = L^-T L^-1: entry (i, j) = sum_q L^-1[q, i] L^-1[q, j], q >= max(i, j) */
    for (int i = 0; i < F; i++)
        for (int j = 0; j <= i; j++) {
            double x = 0;
            for (int q = i; q < F; q++)
                x += inv[i * F + q] * inv[j * F + q];
            a[i * F + j] = a[j * F + i] = x;
        }
    for (int i = 0; i < F * F; i++)
        inv[i] = a[i];
}

/* factor_walk_fwd_task with the ridge fit (lambda = ridge > 0). */
FW_HD static inline void factor_walk_fwd_ridge(int64_t t0, int64_t t1, int k, int K, int F,
                                               const float *f, const double *v, double prior,
                                               double ridge, float gain, float *z, float *w,
                                               float *vb, float *h, float *ai)
{
    double A[FACTOR_RIDGE_MAX_F * FACTOR_RIDGE_MAX_F], L[FACTOR_RIDGE_MAX_F * FACTOR_RIDGE_MAX_F];
    double s[FACTOR_RIDGE_MAX_F], sf[FACTOR_RIDGE_MAX_F], sv = 0, n = 0;
    for (int e = 0; e < F; e++) {
        s[e] = sf[e] = 0;
        for (int q = 0; q < F; q++)
            A[e * F + q] = e == q ? ridge : 0;
    }
    for (int64_t t = t0; t < t1; t++) {
        const float *ft = f + t * F;
        const double wt = 1.0 / (n + prior), vbt = sv * wt;
        float *zt = z + (t * K + k) * F, *at = ai + (t * K + k) * F * F;
        for (int i = 0; i < F * F; i++)
            L[i] = A[i];
        double inv[FACTOR_RIDGE_MAX_F * FACTOR_RIDGE_MAX_F];
        factor_spd_inverse(F, L, inv);
        double hh = 0;
        for (int e = 0; e < F; e++) {
            double x = 0;
            for (int q = 0; q < F; q++)
                x += inv[e * F + q] * (s[q] - vbt * sf[q]);
            zt[e] = (float)x;
            hh += (double)ft[e] * zt[e];
        }
        for (int i = 0; i < F * F; i++)
            at[i] = (float)inv[i];
        if (factor_walk_take(t, k, K, F, ft, v, wt, vbt, gain, hh, w, vb, h, s, sf, &sv, &n))
            for (int e = 0; e < F; e++)
                for (int q = 0; q < F; q++)
                    A[e * F + q] += (double)ft[e] * ft[q];
    }
}

/* factor_walk_bwd_col with the ridge fit. Token t's u = A_t^-1 (gain dh f_t)
 * is the gradient of b_t; an earlier labelled token s gets, summed over
 * the later t, (v(s) - vb_t) u_t from b_t and -(u_t z_t^T + z_t u_t^T) f_s
 * from A_t (A symmetric): column e keeps g1 = sum u[e], g2 = sum vb u[e] and
 * r[q] = sum (u[e] z[q] + z[e] u[q]) per task. */
FW_HD static inline void factor_walk_bwd_ridge(int64_t t0, int64_t t1, int e, int K, int F,
                                               const float *f, const double *v, float gain,
                                               const float *z, const float *vb, const float *dh,
                                               const float *ai, float *df)
{
    double g1[FACTOR_MAX_TASKS], g2[FACTOR_MAX_TASKS];
    double r[FACTOR_MAX_TASKS * FACTOR_RIDGE_MAX_F], u[FACTOR_RIDGE_MAX_F];
    for (int k = 0; k < K; k++) {
        g1[k] = g2[k] = 0;
        for (int q = 0; q < F; q++)
            r[k * F + q] = 0;
    }
    for (int64_t t = t1 - 1; t >= t0; t--) {
        const float *ft = f + t * F;
        double acc = 0;
        for (int k = 0; k < K; k++) {
            const double vv = v[t * K + k];
            const float *zt = z + (t * K + k) * F, *at = ai + (t * K + k) * F * F;
            if (!isnan(vv)) {
                acc += vv * g1[k] - g2[k];
                for (int q = 0; q < F; q++)
                    acc -= r[k * F + q] * ft[q];
            }
            const double gh = (double)gain * dh[t * K + k];
            acc += gh * zt[e];
            for (int q = 0; q < F; q++) {
                double x = 0;
                for (int i = 0; i < F; i++)
                    x += (double)at[q * F + i] * ft[i];
                u[q] = gh * x;
            }
            g1[k] += u[e];
            g2[k] += vb[t * K + k] * u[e];
            for (int q = 0; q < F; q++)
                r[k * F + q] += u[e] * zt[q] + zt[e] * u[q];
        }
        df[t * F + e] = (float)acc;
    }
}

#endif
