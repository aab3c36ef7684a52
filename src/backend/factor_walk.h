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
        w[t * K + k] = (float)wt;
        vb[t * K + k] = (float)vbt;
        h[t * K + k] = gain * (float)hh;
        const double vv = v[t * K + k];
        if (isnan(vv))
            continue;
        for (int e = 0; e < F; e++) {
            s[e] += vv * ft[e];
            sf[e] += ft[e];
        }
        sv += vv;
        n += 1;
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

#endif
