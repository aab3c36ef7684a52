/* backend_cpu_hstu: HSTU pointwise attention on the CPU, the reference of
 * hstu_attn_fwd / hstu_attn_bwd (equations in backend.h).
 *
 * Work is per sequence (tokens s0 .. s0 + L - 1, positions i, j local to the
 * sequence), in tiles of up to HSTU_TILE query rows [i0, i1). A tile sees the
 * keys j < i1 only (causal), so no [L, L] matrix and no padding exist:
 *   1. rab(i, j) for the tile, shared by all heads (time buckets need a log);
 *   2. per head: S = Q_tile K^T (BLAS), A = SiLU(S + rab) / N where j <= i,
 *      0 elsewhere, out_tile = A V (BLAS).
 * The backward recomputes S and A per tile and head:
 *   dA = dO V^T, dV += A^T dO, dS = dA SiLU'(S + rab) / N (masked),
 *   dQ_tile = dS K, dK += dS^T Q_tile, bias gradients += dS by index.
 * Bias gradients are summed in double and added to the outputs at the end.
 *
 * The context form (hstu_attn_ctx_*, parallel.split_long) is the same loop
 * with query positions offset by pos0[b] and the keys read from a separate
 * buffer that also holds the earlier positions: a query tile [i0, i0 +
 * rows) in absolute positions sees keys [0, i0 + rows). The plain ops are
 * this with pos0 = 0 and the keys being the queries' own rows. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/backend_cpu.h"
#include "base/check.h"

/* C[m, n] = op(A) op(B) + beta C, row-major (BLAS) */
static void mm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *A, int64_t lda,
               const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    if (m == 0 || n == 0)
        return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, 1.0f, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

/* bucket(dt) = min(floor(ln(max(|dt|, 1)) / 0.301), HSTU_TIME_BUCKETS) */
static int32_t time_bucket(int64_t dt)
{
    double a = dt < 0 ? -(double)dt : (double)dt;
    double f = floor(log(a > 1 ? a : 1) / 0.301);
    return f >= HSTU_TIME_BUCKETS ? HSTU_TIME_BUCKETS : (int32_t)f;
}

/* Scratch of one call: every matrix is [HSTU_TILE, Lmax], row stride cols. */
struct attn_work {
    float *rab;      /* bias rab(i, j) of the tile */
    int32_t *bucket; /* time bucket of (i, j), when time_bias */
    float *s, *a, *da;
    double *dpos, *dtime; /* [2N - 1], [HSTU_TIME_BUCKETS + 1] (backward) */
};

/* The longest key range of a call (its work buffers' width). */
static int64_t max_keys(int64_t B, const int64_t *offsets, const int64_t *key_off)
{
    const int64_t *o = key_off ? key_off : offsets;
    int64_t m = 0;
    for (int64_t b = 0; b < B; b++)
        if (o[b + 1] - o[b] > m)
            m = o[b + 1] - o[b];
    return m;
}

static void work_init(struct attn_work *w, int64_t Lmax, int N, int backward)
{
    size_t n = (size_t)HSTU_TILE * (size_t)(Lmax > 0 ? Lmax : 1);
    memset(w, 0, sizeof *w);
    w->rab = xmalloc(n * sizeof(float));
    w->bucket = xmalloc(n * sizeof(int32_t));
    w->s = xmalloc(n * sizeof(float));
    w->a = xmalloc(n * sizeof(float));
    if (backward) {
        w->da = xmalloc(n * sizeof(float));
        w->dpos = xcalloc((size_t)(2 * N - 1), sizeof(double));
        w->dtime = xcalloc(HSTU_TIME_BUCKETS + 1, sizeof(double));
    }
}

static void work_free(struct attn_work *w)
{
    free(w->rab);
    free(w->bucket);
    free(w->s);
    free(w->a);
    free(w->da);
    free(w->dpos);
    free(w->dtime);
}

/* rab[r, j] for query rows i = i0 + r (r < rows) and keys j < cols = i0 + rows
 * of the sequence whose position 0 is row s0 of ts; 0 above the diagonal
 * (unused). */
static void tile_bias(struct attn_work *w, int64_t s0, int64_t i0, int64_t rows, int N,
                      const float *pos_bias, const float *time_bias, const int64_t *ts)
{
    int64_t cols = i0 + rows;
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = i0 + r;
        for (int64_t j = 0; j < cols; j++) {
            float v = 0;
            if (j <= i) {
                if (pos_bias)
                    v += pos_bias[N - 1 + j - i];
                if (time_bias) {
                    int32_t bk = time_bucket(ts[s0 + i] - ts[s0 + j]);
                    w->bucket[r * cols + j] = bk;
                    v += time_bias[bk];
                }
            }
            w->rab[r * cols + j] = v;
        }
    }
}

/* w->s: [rows, cols] = q_i . k_j + rab(i, j) of one head (pre-activation),
 * w->a = SiLU(s) / N with the causal mask (0 where j > i). */
static void tile_scores(struct attn_work *w, int64_t i0, int64_t rows, int N, int dqk, int64_t ldq,
                        const float *qh, const float *kh)
{
    int64_t cols = i0 + rows;
    mm(0, 1, rows, cols, dqk, qh, ldq, kh, ldq, 0.0f, w->s, cols);
    float inv_n = 1.0f / (float)N;
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = i0 + r;
        float *s = w->s + r * cols, *a = w->a + r * cols;
        for (int64_t j = 0; j <= i; j++) {
            s[j] += w->rab[r * cols + j];
            a[j] = s[j] / (1.0f + expf(-s[j])) * inv_n;
        }
        for (int64_t j = i + 1; j < cols; j++)
            a[j] = 0.0f;
    }
}

/* q: [T, H * dqk], out: [T, H * dv]; kb: [keys, H * dqk], vb: [keys, H * dv]
 * (see backend.h). pos0 NULL: every segment starts at position 0;
 * key_off NULL: the keys are rows offsets[] of kb (the queries' own). */
static void attn_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                     const int64_t *key_off, int H, int dqk, int dv, int N, const float *q,
                     const float *kb, const float *vb, const float *pos_bias,
                     const float *time_bias, const int64_t *ts, float *out)
{
    struct attn_work w;
    int64_t ldq = (int64_t)H * dqk, ldv = (int64_t)H * dv;
    if (!ts)
        time_bias = NULL;
    work_init(&w, max_keys(B, offsets, key_off), N, 0);
    for (int64_t b = 0; b < B; b++) {
        int64_t s0 = offsets[b], L = offsets[b + 1] - s0;
        int64_t p0 = pos0 ? pos0[b] : 0, k0 = key_off ? key_off[b] : s0;
        for (int64_t r0 = 0; r0 < L; r0 += HSTU_TILE) {
            int64_t rows = L - r0 < HSTU_TILE ? L - r0 : HSTU_TILE, i0 = p0 + r0,
                    cols = i0 + rows;
            tile_bias(&w, k0, i0, rows, N, pos_bias, time_bias, ts);
            for (int h = 0; h < H; h++) {
                const float *qh = q + (s0 + r0) * ldq + (int64_t)h * dqk;
                const float *kh = kb + k0 * ldq + (int64_t)h * dqk;
                const float *vh = vb + k0 * ldv + (int64_t)h * dv;
                tile_scores(&w, i0, rows, N, dqk, ldq, qh, kh);
                mm(0, 0, rows, dv, cols, w.a, cols, vh, ldv, 0.0f,
                   out + (s0 + r0) * ldv + (int64_t)h * dv, ldv);
            }
        }
    }
    work_free(&w);
}

/* dout: [T, H * dv]; dq: [T, H * dqk], dkb: [keys, H * dqk], dvb: [keys,
 * H * dv] written; dpos_bias: [2N - 1], dtime_bias: [HSTU_TIME_BUCKETS + 1]
 * accumulated. pos0, key_off as for attn_fwd. */
static void attn_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                     const int64_t *key_off, int H, int dqk, int dv, int N, const float *q,
                     const float *kb, const float *vb, const float *pos_bias,
                     const float *time_bias, const int64_t *ts, const float *dout, float *dq,
                     float *dkb, float *dvb, float *dpos_bias, float *dtime_bias)
{
    struct attn_work w;
    int64_t ldq = (int64_t)H * dqk, ldv = (int64_t)H * dv;
    const int64_t *ko = key_off ? key_off : offsets;
    int64_t t0 = ko[0], K = ko[B] - ko[0];
    if (!ts)
        time_bias = NULL;
    work_init(&w, max_keys(B, offsets, key_off), N, 1);
    memset(dkb + t0 * ldq, 0, (size_t)(K * ldq) * sizeof(float));
    memset(dvb + t0 * ldv, 0, (size_t)(K * ldv) * sizeof(float));
    float inv_n = 1.0f / (float)N;
    for (int64_t b = 0; b < B; b++) {
        int64_t s0 = offsets[b], L = offsets[b + 1] - s0;
        int64_t p0 = pos0 ? pos0[b] : 0, k0 = ko[b];
        for (int64_t r0 = 0; r0 < L; r0 += HSTU_TILE) {
            int64_t rows = L - r0 < HSTU_TILE ? L - r0 : HSTU_TILE, i0 = p0 + r0,
                    cols = i0 + rows;
            tile_bias(&w, k0, i0, rows, N, pos_bias, time_bias, ts);
            for (int h = 0; h < H; h++) {
                const float *qh = q + (s0 + r0) * ldq + (int64_t)h * dqk;
                const float *kh = kb + k0 * ldq + (int64_t)h * dqk;
                const float *vh = vb + k0 * ldv + (int64_t)h * dv;
                const float *doh = dout + (s0 + r0) * ldv + (int64_t)h * dv;
                tile_scores(&w, i0, rows, N, dqk, ldq, qh, kh);
                mm(0, 1, rows, cols, dv, doh, ldv, vh, ldv, 0.0f, w.da, cols);
                mm(1, 0, cols, dv, rows, w.a, cols, doh, ldv, 1.0f,
                   dvb + k0 * ldv + (int64_t)h * dv, ldv);
                /* dS = dA SiLU'(s) / N, with SiLU'(s) = sig(s) (1 + s (1 - sig(s))) */
                for (int64_t r = 0; r < rows; r++) {
                    int64_t i = i0 + r;
                    float *ds = w.da + r * cols;
                    const float *s = w.s + r * cols;
                    for (int64_t j = 0; j <= i; j++) {
                        float sg = 1.0f / (1.0f + expf(-s[j]));
                        ds[j] *= sg * (1.0f + s[j] * (1.0f - sg)) * inv_n;
                        if (pos_bias)
                            w.dpos[N - 1 + j - i] += ds[j];
                        if (time_bias)
                            w.dtime[w.bucket[r * cols + j]] += ds[j];
                    }
                    for (int64_t j = i + 1; j < cols; j++)
                        ds[j] = 0.0f;
                }
                mm(0, 0, rows, dqk, cols, w.da, cols, kh, ldq, 0.0f,
                   dq + (s0 + r0) * ldq + (int64_t)h * dqk, ldq);
                mm(1, 0, cols, dqk, rows, w.da, cols, qh, ldq, 1.0f,
                   dkb + k0 * ldq + (int64_t)h * dqk, ldq);
            }
        }
    }
    if (pos_bias && dpos_bias)
        for (int i = 0; i < 2 * N - 1; i++)
            dpos_bias[i] += (float)w.dpos[i];
    if (time_bias && dtime_bias)
        for (int i = 0; i <= HSTU_TIME_BUCKETS; i++)
            dtime_bias[i] += (float)w.dtime[i];
    work_free(&w);
}

void cpu_hstu_attn_fwd(int64_t B, const int64_t *offsets, int H, int dqk, int dv, int N,
                       const float *q, const float *k, const float *v, const float *pos_bias,
                       const float *time_bias, const int64_t *ts, float *out)
{
    attn_fwd(B, offsets, NULL, NULL, H, dqk, dv, N, q, k, v, pos_bias, time_bias, ts, out);
}

void cpu_hstu_attn_bwd(int64_t B, const int64_t *offsets, int H, int dqk, int dv, int N,
                       const float *q, const float *k, const float *v, const float *pos_bias,
                       const float *time_bias, const int64_t *ts, const float *dout, float *dq,
                       float *dk, float *dvv, float *dpos_bias, float *dtime_bias)
{
    attn_bwd(B, offsets, NULL, NULL, H, dqk, dv, N, q, k, v, pos_bias, time_bias, ts, dout, dq,
             dk, dvv, dpos_bias, dtime_bias);
}

void cpu_hstu_attn_ctx_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                           const int64_t *key_off, int H, int dqk, int dv, int N,
                           const float *q, const float *kb, const float *vb,
                           const float *pos_bias, const float *time_bias,
                           const int64_t *key_ts, float *out)
{
    attn_fwd(B, offsets, pos0, key_off, H, dqk, dv, N, q, kb, vb, pos_bias, time_bias, key_ts,
             out);
}

void cpu_hstu_attn_ctx_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                           const int64_t *key_off, int H, int dqk, int dv, int N,
                           const float *q, const float *kb, const float *vb,
                           const float *pos_bias, const float *time_bias,
                           const int64_t *key_ts, const float *dout, float *dq, float *dkb,
                           float *dvb, float *dpos_bias, float *dtime_bias)
{
    attn_bwd(B, offsets, pos0, key_off, H, dqk, dv, N, q, kb, vb, pos_bias, time_bias, key_ts,
             dout, dq, dkb, dvb, dpos_bias, dtime_bias);
}
