/* backend_cpu_sasrec: SASRec's causal softmax attention on the CPU, the
 * reference of backend.h's sasrec_attn_fwd / sasrec_attn_bwd.
 *
 * Per sequence b (rows offsets[b] .. offsets[b+1] - 1, length L) and head h
 * (columns h dh .. (h+1) dh - 1 of q, k, v, out: [T, H dh]), with i, j local
 * positions and only j <= i (causal):
 *   S[i, j] = q_i . k_j / sqrt(dh),   lse_i = log sum_j exp S[i, j]
 *   P[i, j] = exp(S[i, j] - lse_i),   out_i = sum_j P[i, j] v_j
 * Backward (P recomputed from the saved lse):
 *   dP[i, j] = dout_i . v_j,  D_i = dout_i . out_i,  dS = P (dP - D_i)
 *   dq_i = sum_j dS[i, j] k_j / sqrt(dh),  dk_j = sum_i dS[i, j] q_i / sqrt(dh),
 *   dv_j = sum_i P[i, j] dout_i
 *
 * Queries are taken in blocks of ATTN_BLOCK rows: block [r0, r1) needs keys
 * 0 .. r1 - 1 only, so BLAS works on a trapezoid rather than the whole L x L
 * square (no padding across the batch either), and the scratch is
 * ATTN_BLOCK x max L floats, allocated once per call.
 *
 * The context form (sasrec_attn_ctx_*, parallel.split_long) runs these
 * blocks on one window of keys per call (the plain op: the own window of
 * segments at position 0 whose keys are their own rows): the segment's own positions
 * (causal) or the earlier ones (unmasked). The second forward call merges
 * its softmax into the first's: with l1, o1 and l2, o2 the log-sum-exp and
 * output over the two windows, lse = log(e^l1 + e^l2) and out = o1 e^(l1 -
 * lse) + o2 e^(l2 - lse). The backward of each window is the plain one with
 * the merged lse and out (P = exp(S - lse) restricted to the window). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/backend_cpu.h"
#include "backend/cpu_math.h"
#include "base/check.h"
#include "base/simd.h"

#define ATTN_BLOCK 64

/* C[m, n] = alpha op(A) op(B) + beta C, row-major */
static void gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *A,
                 int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

/* --- the context form ---------------------------------------------------------- */

/* The key window of segment b: columns [c0, c0 + n) of its key rows (n of
 * them for the whole segment); OWN: its own positions, PREFIX: the earlier. */
static void ctx_window(int keys, int64_t p0, int64_t L, int64_t *c0, int64_t *n)
{
    *c0 = keys == HSTU_KEYS_PREFIX ? 0 : p0;
    *n = keys == HSTU_KEYS_PREFIX ? p0 : L;
}

static int64_t ctx_widest(int64_t B, const int64_t *offsets, const int64_t *pos0, int keys)
{
    int64_t m = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t c0, n;
        ctx_window(keys, pos0 ? pos0[b] : 0, offsets[b + 1] - offsets[b], &c0, &n);
        m = n > m ? n : m;
    }
    return m;
}

/* Row i of the block [r0, r0 + nr) sees cnt(i) keys of the window of n:
 * OWN r0 + i + 1 (causal), PREFIX all. */
static int64_t ctx_count(int keys, int64_t r0, int64_t i, int64_t n)
{
    return keys == HSTU_KEYS_PREFIX ? n : r0 + i + 1;
}

/* The maximum of row[0 .. cnt), cnt >= 1, as the loop
 *   mx = row[0]; for j: mx = row[j] > mx ? row[j] : mx
 * finds it (a NaN after row[0] skipped, one at row[0] kept), in 16 lanes
 * each started at row[0] so that it vectorises: the same value, but for
 * which of +0 and -0 is returned when the maximum is zero, which changes
 * neither exp(x - mx) nor mx + log(sum) below. */
static inline float row_max(const float *row, int64_t cnt)
{
    float m[16], mx = row[0];
    int64_t j = 1;
    for (int l = 0; l < 16; l++)
        m[l] = mx;
    for (; j + 16 <= cnt; j += 16)
        for (int l = 0; l < 16; l++)
            m[l] = row[j + l] > m[l] ? row[j + l] : m[l];
    for (int l = 0; l < 16; l++)
        mx = m[l] > mx ? m[l] : mx;
    for (; j < cnt; j++)
        mx = row[j] > mx ? row[j] : mx;
    return mx;
}

/* pos0 NULL: every segment starts at 0; key_off NULL: the keys are the
 * queries' own rows (the plain op). */
FS_SIMD
static void attn_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                     const int64_t *key_off, int keys, int H, int dh, const float *q,
                     const float *kb, const float *vb, float *out, float *lse)
{
    const int64_t ld = (int64_t)H * dh, wmax = ctx_widest(B, offsets, pos0, keys);
    const float scale = 1.0f / sqrtf((float)dh);
    if (wmax == 0)
        return;
    float *S = xmalloc((size_t)(ATTN_BLOCK * wmax) * sizeof *S);
    float *o2 = xmalloc((size_t)(ATTN_BLOCK * dh) * sizeof *o2);
    float l2[ATTN_BLOCK];
    for (int64_t b = 0; b < B; b++) {
        const int64_t t0 = offsets[b], L = offsets[b + 1] - t0;
        int64_t c0, W;
        ctx_window(keys, pos0 ? pos0[b] : 0, L, &c0, &W);
        if (W == 0)
            continue; /* no earlier keys: the own window's softmax is the whole one */
        for (int h = 0; h < H; h++) {
            const int64_t qc = t0 * ld + (int64_t)h * dh, kc = ((key_off ? key_off : offsets)[b] + c0) * ld + (int64_t)h * dh;
            for (int64_t r0 = 0; r0 < L; r0 += ATTN_BLOCK) {
                const int64_t r1 = r0 + ATTN_BLOCK < L ? r0 + ATTN_BLOCK : L, nr = r1 - r0;
                const int64_t n = keys == HSTU_KEYS_PREFIX ? W : r1;
                gemm(0, 1, nr, n, dh, scale, q + qc + r0 * ld, ld, kb + kc, ld, 0.0f, S, n);
                for (int64_t i = 0; i < nr; i++) {
                    float *row = S + i * n;
                    const int64_t cnt = ctx_count(keys, r0, i, n);
                    const float mx = row_max(row, cnt);
                    for (int64_t j = 0; j < cnt; j++)
                        row[j] = cpu_expf(row[j] - mx);
                    float sum = 0;
                    for (int64_t j = 0; j < cnt; j++)
                        sum += row[j];
                    const float inv = 1.0f / sum;
                    for (int64_t j = 0; j < cnt; j++)
                        row[j] *= inv;
                    for (int64_t j = cnt; j < n; j++)
                        row[j] = 0;
                    l2[i] = mx + logf(sum);
                }
                float *o = out + qc + r0 * ld;
                if (keys != HSTU_KEYS_PREFIX) {
                    gemm(0, 0, nr, dh, n, 1.0f, S, n, vb + kc, ld, 0.0f, o, ld);
                    for (int64_t i = 0; i < nr; i++)
                        lse[(t0 + r0 + i) * H + h] = l2[i];
                    continue;
                }
                gemm(0, 0, nr, dh, n, 1.0f, S, n, vb + kc, ld, 0.0f, o2, dh);
                for (int64_t i = 0; i < nr; i++) { /* merge into the own keys' softmax */
                    float *l1 = &lse[(t0 + r0 + i) * H + h];
                    const float m = *l1 > l2[i] ? *l1 : l2[i];
                    const float l = m + logf(expf(*l1 - m) + expf(l2[i] - m));
                    const float a1 = expf(*l1 - l), a2 = expf(l2[i] - l);
                    for (int e = 0; e < dh; e++)
                        o[i * ld + e] = a1 * o[i * ld + e] + a2 * o2[i * dh + e];
                    *l1 = l;
                }
            }
        }
    }
    free(S);
    free(o2);
}

FS_SIMD
static void attn_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                     const int64_t *key_off, int keys, int H, int dh, const float *q,
                     const float *kb, const float *vb, const float *out, const float *lse,
                     const float *dout, float *dq, float *dkb, float *dvb)
{
    const int64_t ld = (int64_t)H * dh, wmax = ctx_widest(B, offsets, pos0, keys);
    const float scale = 1.0f / sqrtf((float)dh);
    for (int64_t b = 0; b < B; b++) { /* the window's key rows are written */
        int64_t c0, W;
        ctx_window(keys, pos0 ? pos0[b] : 0, offsets[b + 1] - offsets[b], &c0, &W);
        memset(dkb + ((key_off ? key_off : offsets)[b] + c0) * ld, 0, (size_t)(W * ld) * sizeof *dkb);
        memset(dvb + ((key_off ? key_off : offsets)[b] + c0) * ld, 0, (size_t)(W * ld) * sizeof *dvb);
    }
    if (wmax == 0)
        return;
    float *P = xmalloc((size_t)(ATTN_BLOCK * wmax) * sizeof *P);
    float *dS = xmalloc((size_t)(ATTN_BLOCK * wmax) * sizeof *dS);
    for (int64_t b = 0; b < B; b++) {
        const int64_t t0 = offsets[b], L = offsets[b + 1] - t0;
        int64_t c0, W;
        ctx_window(keys, pos0 ? pos0[b] : 0, L, &c0, &W);
        if (W == 0)
            continue;
        for (int h = 0; h < H; h++) {
            const int64_t qc = t0 * ld + (int64_t)h * dh, kc = ((key_off ? key_off : offsets)[b] + c0) * ld + (int64_t)h * dh;
            for (int64_t r0 = 0; r0 < L; r0 += ATTN_BLOCK) {
                const int64_t r1 = r0 + ATTN_BLOCK < L ? r0 + ATTN_BLOCK : L, nr = r1 - r0;
                const int64_t n = keys == HSTU_KEYS_PREFIX ? W : r1;
                gemm(0, 1, nr, n, dh, scale, q + qc + r0 * ld, ld, kb + kc, ld, 0.0f, P, n);
                gemm(0, 1, nr, n, dh, 1.0f, dout + qc + r0 * ld, ld, vb + kc, ld, 0.0f, dS, n);
                for (int64_t i = 0; i < nr; i++) {
                    float *p = P + i * n, *ds = dS + i * n;
                    const int64_t cnt = ctx_count(keys, r0, i, n), t = t0 + r0 + i;
                    const float l = lse[t * H + h];
                    const float *o = out + qc + (r0 + i) * ld, *go = dout + qc + (r0 + i) * ld;
                    float D = 0;
                    for (int e = 0; e < dh; e++)
                        D += go[e] * o[e];
                    for (int64_t j = 0; j < cnt; j++) {
                        p[j] = cpu_expf(p[j] - l);
                        ds[j] = p[j] * (ds[j] - D);
                    }
                    for (int64_t j = cnt; j < n; j++)
                        p[j] = ds[j] = 0;
                }
                gemm(0, 0, nr, dh, n, scale, dS, n, kb + kc, ld, 1.0f, dq + qc + r0 * ld, ld);
                gemm(1, 0, n, dh, nr, scale, dS, n, q + qc + r0 * ld, ld, 1.0f, dkb + kc, ld);
                gemm(1, 0, n, dh, nr, 1.0f, P, n, dout + qc + r0 * ld, ld, 1.0f, dvb + kc, ld);
            }
        }
    }
    free(P);
    free(dS);
}

void cpu_sasrec_attn_fwd(int64_t B, const int64_t *offsets, int H, int dh, int N,
                         const float *q, const float *k, const float *v, float *out, float *lse)
{
    (void)N; /* the scratch is sized by the longest sequence of the batch */
    attn_fwd(B, offsets, NULL, NULL, HSTU_KEYS_OWN, H, dh, q, k, v, out, lse);
}

void cpu_sasrec_attn_bwd(int64_t B, const int64_t *offsets, int H, int dh, int N,
                         const float *q, const float *k, const float *v, const float *out,
                         const float *lse, const float *dout, float *dq, float *dk, float *dv)
{
    (void)N;
    const int64_t ld = (int64_t)H * dh;
    memset(dq + offsets[0] * ld, 0, (size_t)((offsets[B] - offsets[0]) * ld) * sizeof *dq);
    attn_bwd(B, offsets, NULL, NULL, HSTU_KEYS_OWN, H, dh, q, k, v, out, lse, dout, dq, dk, dv);
}

void cpu_sasrec_attn_ctx_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                             const int64_t *key_off, int keys, int H, int dh, const float *q,
                             const float *kb, const float *vb, float *out, float *lse)
{
    attn_fwd(B, offsets, pos0, key_off, keys, H, dh, q, kb, vb, out, lse);
}

void cpu_sasrec_attn_ctx_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                             const int64_t *key_off, int keys, int H, int dh, const float *q,
                             const float *kb, const float *vb, const float *out,
                             const float *lse, const float *dout, float *dq, float *dkb,
                             float *dvb)
{
    attn_bwd(B, offsets, pos0, key_off, keys, H, dh, q, kb, vb, out, lse, dout, dq, dkb, dvb);
}
