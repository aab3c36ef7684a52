/* backend_cpu_loss_shared: backend.h's softmax_loss_shared on the CPU, the
 * sampled softmax (loss.h) when runs of consecutive positions share their
 * negatives (train.shared_negatives, doc/training.md). A run of m
 * positions with the same neg row (at most LOSS_RUN_MAX: a longer one is
 * cut) has its R candidate rows gathered once, E [R, d], and
 *   S = U E^T          [m, R], one GEMM (U: the run's rows of u, as they lie)
 *   du = g0 e_pos + G E  (G: the gradients of the scores, [m, R])
 *   dE = G^T U, added into de's rows once a run,
 * the positive's score and gradients per position (loss_vec.h), the masking
 * per position as the reference's (a negative < 0, or equal to the
 * position's positive: its G entry is 0). The losses are the reference's
 * (cpu_softmax_loss_ref) up to the order of the sums. */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_cpu.h"
#include "backend/cpu_math.h"
#include "backend/loss_vec.h"
#include "base/check.h"
#include "base/simd.h"

#define LOSS_RUN_MAX 256 /* positions in one GEMM at most */

/* the end of the run of positions from i0 with neg row i0's (at most LOSS_RUN_MAX) */
static int64_t run_end(int64_t T, int R, const int64_t *neg, int64_t i0)
{
    const int64_t *ni = neg + i0 * R;
    int64_t i1 = i0 + 1;
    while (i1 < T && i1 - i0 < LOSS_RUN_MAX &&
           !memcmp(neg + i1 * R, ni, (size_t)R * sizeof *ni))
        i1++;
    return i1;
}

/* Position i's softmax over its positive and the run's scores st [R] (u_i . e_k
 * on entry, its gradients G_i on return, 0 where masked); du_i = g0 e_pos
 * (the rest is the run's GEMM), de_pos += g0 u_i. Returns its loss. */
FS_SIMD
static double position_softmax(int d, int R, float inv_tau, float gscale, const float *ui,
                               const float *e, const float *logq, int64_t p, const int64_t *ni,
                               float *st, float *dui, float *de)
{
    const float *ep = e + p * d;
    const float s0 = loss_dot(d, ui, ep) * inv_tau - (logq ? logq[p] : 0.0f);
    float m = s0;
    for (int r = 0; r < R; r++) {
        const int64_t k = ni[r];
        if (k < 0 || k == p) {
            st[r] = -INFINITY; /* masked: exp gives 0 */
            continue;
        }
        st[r] = st[r] * inv_tau - (logq ? logq[k] : 0.0f);
        m = st[r] > m || m != m ? st[r] : m;
    }
    const float x0 = cpu_expf(s0 - m);
    for (int r = 0; r < R; r++)
        st[r] = cpu_expf(st[r] - m);
    double sum = x0;
    for (int r = 0; r < R; r++)
        sum += st[r];
    const float inv_sum = (float)(1.0 / sum), gs = inv_sum * gscale;
    const float g0 = (x0 * inv_sum - 1.0f) * gscale;
    for (int r = 0; r < R; r++)
        st[r] *= gs;
    for (int j = 0; j < d; j++)
        dui[j] = g0 * ep[j];
    loss_axpy(d, g0, ui, de + p * d);
    return log(sum) + (double)m - (double)s0; /* logsumexp - s_0 */
}

void cpu_softmax_loss_shared(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                             const float *e, const float *logq, const int64_t *pos,
                             const int64_t *neg, float scale, float *du, float *de, double *acc)
{
    static const char *what = "softmax_loss";
    if (T < 1)
        return;
    if (R < 1) { /* no negatives: the reference (no GEMM to make) */
        int64_t n = 0;
        acc[0] += cpu_softmax_loss_ref(T, d, R, inv_tau, u, nu, e, logq, pos, neg, scale, du,
                                       de, &n);
        acc[1] += (double)n;
        return;
    }
    const int64_t mmax = T < LOSS_RUN_MAX ? T : LOSS_RUN_MAX;
    float *E = xmalloc((size_t)R * (size_t)d * sizeof *E);
    float *dE = xmalloc((size_t)R * (size_t)d * sizeof *dE);
    float *S = xmalloc((size_t)mmax * (size_t)R * sizeof *S);
    const float gscale = scale * inv_tau;
    double total = 0;
    int64_t n = 0;
    for (int64_t i0 = 0, i1; i0 < T; i0 = i1) {
        i1 = run_end(T, R, neg, i0);
        const int m = (int)(i1 - i0);
        const int64_t *ni = neg + i0 * R;
        for (int r = 0; r < R; r++) { /* the run's candidates; < 0: a zero row */
            if (ni[r] < 0) {
                memset(E + (size_t)r * d, 0, (size_t)d * sizeof *E);
                continue;
            }
            loss_check_index(what, i0, ni[r], nu);
            memcpy(E + (size_t)r * d, e + ni[r] * d, (size_t)d * sizeof *E);
        }
        const float *U = u + i0 * d;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, R, d, 1.0f, U, d, E, d, 0.0f, S,
                    R);
        for (int t = 0; t < m; t++) {
            const int64_t i = i0 + t, p = pos[i];
            float *st = S + (size_t)t * R;
            if (p < 0) { /* unsupervised: no loss, no gradient */
                memset(st, 0, (size_t)R * sizeof *st);
                memset(du + i * d, 0, (size_t)d * sizeof *du);
                continue;
            }
            loss_check_index(what, i, p, nu);
            total += position_softmax(d, R, inv_tau, gscale, u + i * d, e, logq, p, ni, st,
                                      du + i * d, de);
            n++;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, d, R, 1.0f, S, R, E, d, 1.0f,
                    du + i0 * d, d);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, R, d, m, 1.0f, S, R, U, d, 0.0f, dE,
                    d);
        for (int r = 0; r < R; r++)
            if (ni[r] >= 0)
                loss_axpy(d, 1.0f, dE + (size_t)r * d, de + ni[r] * d);
    }
    free(S);
    free(dE);
    free(E);
    acc[0] += total;
    acc[1] += (double)n;
}
