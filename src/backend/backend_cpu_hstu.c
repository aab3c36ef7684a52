/* backend_cpu_hstu: HSTU pointwise attention on the CPU, the reference of
 * hstu_attn_fwd / hstu_attn_bwd (equations in backend.h).
 *
 * Work is per sequence (tokens s0 .. s0 + L - 1, positions i, j local to the
 * sequence), in tiles of up to HSTU_TILE query rows [i0, i1). A tile sees the
 * keys j < i1 only (causal), so no [L, L] matrix and no padding exist:
 *   1. rab(i, j) for the tile, shared by all heads (time buckets from the
 *      thresholds of their log formula, cpu_math.h; a plain call keeps them
 *      for the step's next calls, bucket_use_begin);
 *   2. per head: S = Q_tile K^T (BLAS), A = SiLU(S + rab) / N where j <= i,
 *      0 elsewhere, out_tile = A V (BLAS).
 * The backward recomputes S and A per tile and head:
 *   dA = dO V^T, dV += A^T dO, dS = dA SiLU'(S + rab) / N (masked),
 *   dQ_tile = dS K, dK += dS^T Q_tile, bias gradients += dS by index.
 * Bias gradients are summed in double and added to the outputs at the end.
 *
 * The context form (hstu_attn_ctx_*, parallel.split_long) is the same loop
 * with query positions offset by pos0[b], the keys read from a separate
 * buffer that also holds the earlier positions, and a window of keys per
 * call: the segment's own positions (causal) or the earlier ones (all
 * unmasked), so that a rank can compute the first while the second is
 * still arriving. The plain ops are the loop with pos0 = 0, every causal
 * key, and the keys being the queries' own rows. The rows form
 * (hstu_attn_rows_*, model.last_layer = targets) is the loop over some
 * query rows alone, each at its own position (qpos), against every causal
 * key of its sequence: a tile's keys reach its last row's position. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/backend_cpu.h"
#include "backend/cpu_exp512.h"
#include "backend/cpu_math.h"
#include "base/check.h"
#include "base/simd.h"

/* C[m, n] = op(A) op(B) + beta C, row-major (BLAS) */
static void mm(int ta, int tb, int64_t m, int64_t n, int64_t k, const float *A, int64_t lda,
               const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    if (m == 0 || n == 0)
        return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, 1.0f, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

/* Scratch of one call: every matrix is [HSTU_TILE, Lmax], row stride cols.
 * The matrices are carved from one block kept across calls (per thread):
 * allocating megabytes per call costs page faults that grow with Lmax. */
struct attn_work {
    float *rab;      /* bias rab(i, j) of the tile */
    int32_t *bucket; /* time bucket of (i, j), when time_bias */
    float *s, *a, *da;
    float *ex; /* e^-s of the scores, kept for the backward's SiLU' */
    double *dpos, *dtime; /* [2N - 1], [HSTU_TIME_BUCKETS + 1] (backward) */
};

static _Thread_local struct {
    float *p;
    size_t n; /* floats */
} g_scratch;

static void work_init(struct attn_work *w, int64_t Lmax, int N, int backward)
{
    size_t n = (size_t)HSTU_TILE * (size_t)(Lmax > 0 ? Lmax : 1);
    memset(w, 0, sizeof *w);
    if (6 * n > g_scratch.n) { /* rab, bucket, s, a, da, ex (int32 and float are 4 bytes) */
        free(g_scratch.p);
        g_scratch.n = 6 * n;
        g_scratch.p = xmalloc(g_scratch.n * sizeof(float));
    }
    w->rab = g_scratch.p;
    w->bucket = (int32_t *)(g_scratch.p + n);
    w->s = g_scratch.p + 2 * n;
    w->a = g_scratch.p + 3 * n;
    w->ex = g_scratch.p + 5 * n;
    if (backward) {
        w->da = g_scratch.p + 4 * n;
        w->dpos = xcalloc((size_t)(2 * N - 1), sizeof(double));
        w->dtime = xcalloc(HSTU_TIME_BUCKETS + 1, sizeof(double));
    }
}

static void work_free(struct attn_work *w)
{
    free(w->dpos);
    free(w->dtime);
}

/* bucket[jj] = cpu_time_bucket(ti - tk[jj]), jj < n: a function of its own
 * with restrict pointers so that it vectorises (the stores cannot touch the
 * thresholds' table). */
FS_SIMD __attribute__((noinline))
static void time_buckets_row(const int64_t *restrict tk, int64_t ti, int64_t n,
                             int32_t *restrict bucket)
{
    for (int64_t jj = 0; jj < n; jj++)
        bucket[jj] = cpu_time_bucket(ti - tk[jj]);
}

/* One row of tile_bias: rab[jj] = 0 + pb[jj] + tb[bucket[jj]] for jj <= last (pb,
 * tb: NULL = none), the buckets of the gaps ti - tk[jj] (computed into
 * bucket first when fill, else already there); rab = 0 beyond.
 * restrict: no store can touch the tables, so that the loops (the
 * buckets' gathers included) vectorise. */
static inline void bias_row(float *restrict rab, int32_t *restrict bucket, int fill, int64_t n,
                            int64_t last, const float *restrict pb, const float *restrict tb,
                            const int64_t *restrict tk, int64_t ti)
{
    for (int64_t jj = 0; jj < n; jj++)
        rab[jj] = 0;
    if (pb) /* pos_bias[N - 1 + j - i]: consecutive in j */
        for (int64_t jj = 0; jj <= last; jj++)
            rab[jj] += pb[jj];
    if (tb) {
        if (fill)
            time_buckets_row(tk, ti, last + 1, bucket);
        for (int64_t jj = 0; jj <= last; jj++)
            rab[jj] += tb[bucket[jj]];
    }
}

/* rab[r, jj] for query rows i = i0 + r (qp: qp[r]; r < rows) and the keys j = c0 + jj,
 * jj < n, of the sequence whose position 0 is row s0 of ts; 0 where j > i
 * (masked, unused). The time buckets: w->bucket, computed there when fill,
 * else read (the call's cache, bucket_cache). */
FS_SIMD
static void tile_bias(struct attn_work *w, int fill, int64_t s0, int64_t i0, const int64_t *qp,
                      int64_t rows, int64_t c0, int64_t n, int N, const float *pos_bias,
                      const float *time_bias, const int64_t *ts)
{
    for (int64_t r = 0; r < rows; r++) {
        const int64_t i = qp ? qp[r] : i0 + r, last = i - c0 < n - 1 ? i - c0 : n - 1; /* j <= i */
        bias_row(w->rab + r * n, w->bucket + r * n, fill, n, last,
                 pos_bias ? pos_bias + N - 1 + c0 - i : NULL, time_bias, ts ? ts + s0 + c0 : NULL,
                 time_bias ? ts[s0 + i] : 0);
    }
}

#if CPU_EXP512
/* tile_scores' loop over the unmasked keys of a row where the CPU has
 * AVX-512 (VL): cpu_expf of 8 scores at a time (cpu_exp512.h), the same
 * operations in the same order, whole vectors only (masked loads and stores
 * are slow on AMD's cores); returns how many it did (m rounded down to 8). */
AVX512VL static int64_t scores_row_avx512(int64_t m, float *s, const float *rab, float *ex,
                                          float *a, float inv_n)
{
    __m512i tab[4];
    exp_table(tab);
    const __m256 one = _mm256_set1_ps(1.0f), in = _mm256_set1_ps(inv_n);
    int64_t jj = 0;
    for (; jj + 8 <= m; jj += 8) {
        const __m256 v = _mm256_add_ps(_mm256_loadu_ps(s + jj), _mm256_loadu_ps(rab + jj));
        const __m256 e = exp8s(neg8(v), tab);
        _mm256_storeu_ps(s + jj, v);
        _mm256_storeu_ps(ex + jj, e);
        _mm256_storeu_ps(a + jj, _mm256_mul_ps(_mm256_div_ps(v, _mm256_add_ps(one, e)), in));
    }
    return jj;
}
#endif

/* w->s: [rows, n] = q_i . k_j + rab(i, j) of one head (pre-activation) for
 * the keys j = c0 + jj, w->a = SiLU(s) / N with the causal mask (0 where
 * j > i), w->ex = e^-s where j <= i (the backward's sigmoid reads it rather
 * than a second exponential: the same value, bit for bit). */
FS_SIMD
static void tile_scores(struct attn_work *w, int64_t i0, const int64_t *qp, int64_t rows,
                        int64_t c0, int64_t n, int N, int dqk, int64_t ldq, const float *qh,
                        const float *kh)
{
    mm(0, 1, rows, n, dqk, qh, ldq, kh, ldq, 0.0f, w->s, n);
    float inv_n = 1.0f / (float)N;
    for (int64_t r = 0; r < rows; r++) {
        const int64_t i = qp ? qp[r] : i0 + r;
        const int64_t last = i - c0 < n - 1 ? i - c0 : n - 1; /* unmasked: <= last */
        float *s = w->s + r * n, *a = w->a + r * n, *ex = w->ex + r * n;
        int64_t jj = 0;
#if CPU_EXP512
        if (have_avx512vl())
            jj = scores_row_avx512(last + 1, s, w->rab + r * n, ex, a, inv_n);
#endif
        for (; jj <= last; jj++) {
            s[jj] += w->rab[r * n + jj];
            ex[jj] = cpu_expf(-s[jj]);
            a[jj] = s[jj] / (1.0f + ex[jj]) * inv_n;
        }
        for (int64_t jj = last + 1 > 0 ? last + 1 : 0; jj < n; jj++)
            a[jj] = 0.0f;
    }
}

/* What a call computes: segment b's queries (rows offsets[b] .. of q, at
 * positions p0 = pos0[b] + r) against the keys of positions [c0, c1) of its
 * key rows key_off[b] .. (k0 = key_off[b]): ALL the causal keys [0, i]
 * (the plain op), OWN [p0, i], PREFIX [0, p0) (all unmasked). */
enum attn_part { PART_ALL, PART_OWN, PART_PREFIX };

struct attn_call {
    int64_t B;
    const int64_t *offsets, *pos0, *key_off; /* pos0, key_off NULL: 0, offsets */
    enum attn_part part;
    float beta;              /* out and dq: 0 written, 1 accumulated */
    const int64_t *qpos;     /* PART_ALL: each query row's position (NULL: p0 + r) */
};

/* The key columns [c0, c0 + n) of tile [i0, i0 + rows) of segment b (qp:
 * the tile's query positions, ascending, or NULL). */
static void tile_keys(const struct attn_call *ac, int64_t p0, int64_t i0, const int64_t *qp,
                      int64_t rows, int64_t *c0, int64_t *n)
{
    *c0 = ac->part == PART_OWN ? p0 : 0;
    *n = ac->part == PART_PREFIX ? p0 : qp ? qp[rows - 1] + 1 : i0 + rows - *c0;
}

/* The key rows a call touches, [first, first + n) of each segment. */
static void part_rows(const struct attn_call *ac, int64_t b, int64_t *first, int64_t *n)
{
    const int64_t *ko = ac->key_off ? ac->key_off : ac->offsets;
    const int64_t p0 = ac->pos0 ? ac->pos0[b] : 0, K = ko[b + 1] - ko[b];
    *first = ko[b] + (ac->part == PART_OWN ? p0 : 0);
    *n = ac->part == PART_PREFIX ? p0 : ac->part == PART_OWN ? K - p0 : K;
}

/* The widest key window of a call (its work buffers' width). */
static int64_t max_keys(const struct attn_call *ac)
{
    int64_t m = 0;
    for (int64_t b = 0; b < ac->B; b++) {
        int64_t first, n;
        part_rows(ac, b, &first, &n);
        m = n > m ? n : m;
    }
    return m;
}

/* The time buckets of a plain call's tiles (PART_ALL, no pos0, key_off,
 * qpos), kept across calls: they depend on the offsets and the timestamps
 * alone, and a step's calls (every layer's forward and backward) share
 * both, so the first computes them and the others read them. The key is a
 * copy of the offsets and the timestamps (compared in full: O(T) against
 * the buckets' O(pairs)); the buckets of tile t are rows x n, in the
 * calls' order of tiles. Per thread, as the scratch; at most
 * BUCKETS_KEPT_MAX of them (64 MiB: ~16M pairs, 30x an ML-1M step's). */
#define BUCKETS_KEPT_MAX ((size_t)16 << 20)
static _Thread_local struct {
    int64_t B, T; /* the key: B, then offsets[0 .. B] and ts of those rows */
    int64_t *key;
    size_t key_cap; /* int64 */
    int32_t *b;
    size_t b_cap; /* int32 */
    int valid;
} g_buckets;

struct bucket_use {
    int32_t *next; /* the next tile's buckets (NULL: not cached, in w->bucket) */
    int fill;      /* computed by this call (else read) */
};

static void bucket_use_begin(struct bucket_use *bu, const struct attn_call *ac,
                             const int64_t *ts)
{
    memset(bu, 0, sizeof *bu);
    bu->fill = 1;
    if (!ts || ac->part != PART_ALL || ac->pos0 || ac->key_off || ac->qpos || ac->B <= 0)
        return;
    const int64_t B = ac->B, *off = ac->offsets, T = off[B] - off[0];
    const size_t nk = (size_t)(B + 1 + T);
    if (g_buckets.valid && g_buckets.B == B && g_buckets.T == T &&
        !memcmp(g_buckets.key, off, (size_t)(B + 1) * sizeof *off) &&
        !memcmp(g_buckets.key + B + 1, ts + off[0], (size_t)T * sizeof *ts)) {
        bu->next = g_buckets.b;
        bu->fill = 0;
        return;
    }
    g_buckets.valid = 0;
    size_t total = 0; /* the tiles' rows x n (c0 = 0, n = i0 + rows) */
    for (int64_t b = 0; b < B; b++)
        for (int64_t r0 = 0, L = off[b + 1] - off[b]; r0 < L; r0 += HSTU_TILE) {
            const int64_t rows = L - r0 < HSTU_TILE ? L - r0 : HSTU_TILE;
            total += (size_t)(rows * (r0 + rows));
        }
    if (total > BUCKETS_KEPT_MAX)
        return; /* long sequences: computed per tile, as the other forms */
    if (nk > g_buckets.key_cap) {
        free(g_buckets.key);
        g_buckets.key = xmalloc(nk * sizeof(int64_t));
        g_buckets.key_cap = nk;
    }
    if (total > g_buckets.b_cap) {
        free(g_buckets.b);
        g_buckets.b = xmalloc((total ? total : 1) * sizeof(int32_t));
        g_buckets.b_cap = total;
    }
    g_buckets.B = B, g_buckets.T = T;
    memcpy(g_buckets.key, off, (size_t)(B + 1) * sizeof *off);
    memcpy(g_buckets.key + B + 1, ts + off[0], (size_t)T * sizeof *ts);
    bu->next = g_buckets.b;
}

/* Point w->bucket at the tile's buckets (rows x n) when cached; returns
 * whether tile_bias computes them. */
static int bucket_use_tile(struct bucket_use *bu, struct attn_work *w, int64_t rows, int64_t n)
{
    if (bu->next) {
        w->bucket = bu->next;
        bu->next += rows * n;
    }
    return bu->fill;
}

static void bucket_use_end(const struct bucket_use *bu)
{
    if (bu->next && bu->fill)
        g_buckets.valid = 1;
}

/* q: [T, H * dqk], out: [T, H * dv]; kb: [keys, H * dqk], vb: [keys, H * dv]
 * (see backend.h). */
static void attn_fwd(const struct attn_call *ac, int H, int dqk, int dv, int N, const float *q,
                     const float *kb, const float *vb, const float *pos_bias,
                     const float *time_bias, const int64_t *ts, float *out)
{
    struct attn_work w;
    int64_t ldq = (int64_t)H * dqk, ldv = (int64_t)H * dv;
    if (!ts)
        time_bias = NULL;
    if (time_bias)
        cpu_time_buckets_init();
    work_init(&w, max_keys(ac), N, 0);
    struct bucket_use bu;
    bucket_use_begin(&bu, ac, time_bias ? ts : NULL);
    for (int64_t b = 0; b < ac->B; b++) {
        int64_t s0 = ac->offsets[b], L = ac->offsets[b + 1] - s0;
        int64_t p0 = ac->pos0 ? ac->pos0[b] : 0, k0 = ac->key_off ? ac->key_off[b] : s0;
        for (int64_t r0 = 0; r0 < L; r0 += HSTU_TILE) {
            int64_t rows = L - r0 < HSTU_TILE ? L - r0 : HSTU_TILE, i0 = p0 + r0, c0, n;
            const int64_t *qp = ac->qpos ? ac->qpos + s0 + r0 : NULL;
            tile_keys(ac, p0, i0, qp, rows, &c0, &n);
            if (n == 0)
                continue;
            const int fill = bucket_use_tile(&bu, &w, rows, n);
            tile_bias(&w, fill, k0, i0, qp, rows, c0, n, N, pos_bias, time_bias, ts);
            for (int h = 0; h < H; h++) {
                const float *qh = q + (s0 + r0) * ldq + (int64_t)h * dqk;
                const float *kh = kb + (k0 + c0) * ldq + (int64_t)h * dqk;
                const float *vh = vb + (k0 + c0) * ldv + (int64_t)h * dv;
                tile_scores(&w, i0, qp, rows, c0, n, N, dqk, ldq, qh, kh);
                mm(0, 0, rows, dv, n, w.a, n, vh, ldv, ac->beta,
                   out + (s0 + r0) * ldv + (int64_t)h * dv, ldv);
            }
        }
    }
    bucket_use_end(&bu);
    work_free(&w);
}

/* dout: [T, H * dv]; dq: [T, H * dqk] (written or accumulated: beta);
 * dkb: [keys, H * dqk], dvb: [keys, H * dv] written on the call's key rows;
 * dpos_bias: [2N - 1], dtime_bias: [HSTU_TIME_BUCKETS + 1] accumulated. */
FS_SIMD
static void attn_bwd(const struct attn_call *ac, int H, int dqk, int dv, int N, const float *q,
                     const float *kb, const float *vb, const float *pos_bias,
                     const float *time_bias, const int64_t *ts, const float *dout, float *dq,
                     float *dkb, float *dvb, float *dpos_bias, float *dtime_bias)
{
    struct attn_work w;
    int64_t ldq = (int64_t)H * dqk, ldv = (int64_t)H * dv;
    if (!ts)
        time_bias = NULL;
    if (time_bias)
        cpu_time_buckets_init();
    work_init(&w, max_keys(ac), N, 1);
    struct bucket_use bu;
    bucket_use_begin(&bu, ac, time_bias ? ts : NULL);
    for (int64_t b = 0; b < ac->B; b++) {
        int64_t first, n;
        part_rows(ac, b, &first, &n);
        memset(dkb + first * ldq, 0, (size_t)(n * ldq) * sizeof(float));
        memset(dvb + first * ldv, 0, (size_t)(n * ldv) * sizeof(float));
    }
    float inv_n = 1.0f / (float)N;
    for (int64_t b = 0; b < ac->B; b++) {
        int64_t s0 = ac->offsets[b], L = ac->offsets[b + 1] - s0;
        int64_t p0 = ac->pos0 ? ac->pos0[b] : 0, k0 = ac->key_off ? ac->key_off[b] : s0;
        for (int64_t r0 = 0; r0 < L; r0 += HSTU_TILE) {
            int64_t rows = L - r0 < HSTU_TILE ? L - r0 : HSTU_TILE, i0 = p0 + r0, c0, n;
            const int64_t *qp = ac->qpos ? ac->qpos + s0 + r0 : NULL;
            tile_keys(ac, p0, i0, qp, rows, &c0, &n);
            if (n == 0) { /* no keys: dq gets nothing */
                if (ac->beta == 0.0f)
                    for (int64_t r = 0; r < rows; r++)
                        memset(dq + (s0 + r0 + r) * ldq, 0, (size_t)ldq * sizeof(float));
                continue;
            }
            const int fill = bucket_use_tile(&bu, &w, rows, n);
            tile_bias(&w, fill, k0, i0, qp, rows, c0, n, N, pos_bias, time_bias, ts);
            for (int h = 0; h < H; h++) {
                const float *qh = q + (s0 + r0) * ldq + (int64_t)h * dqk;
                const float *kh = kb + (k0 + c0) * ldq + (int64_t)h * dqk;
                const float *vh = vb + (k0 + c0) * ldv + (int64_t)h * dv;
                const float *doh = dout + (s0 + r0) * ldv + (int64_t)h * dv;
                tile_scores(&w, i0, qp, rows, c0, n, N, dqk, ldq, qh, kh);
                mm(0, 1, rows, n, dv, doh, ldv, vh, ldv, 0.0f, w.da, n);
                mm(1, 0, n, dv, rows, w.a, n, doh, ldv, 1.0f,
                   dvb + (k0 + c0) * ldv + (int64_t)h * dv, ldv);
                /* dS = dA SiLU'(s) / N, with SiLU'(s) = sig(s) (1 + s (1 - sig(s))) */
                for (int64_t r = 0; r < rows; r++) {
                    const int64_t i = qp ? qp[r] : i0 + r, last = i - c0 < n - 1 ? i - c0 : n - 1;
                    float *ds = w.da + r * n;
                    const float *sv = w.s + r * n, *ex = w.ex + r * n;
                    for (int64_t jj = 0; jj <= last; jj++) {
                        float sg = 1.0f / (1.0f + ex[jj]);
                        ds[jj] *= sg * (1.0f + sv[jj] * (1.0f - sg)) * inv_n;
                    }
                    for (int64_t jj = last + 1 > 0 ? last + 1 : 0; jj < n; jj++)
                        ds[jj] = 0.0f;
                    /* the bias gradients, each in key order (loops of their own,
                     * so that the ones above vectorise) */
                    if (pos_bias)
                        for (int64_t jj = 0; jj <= last; jj++)
                            w.dpos[N - 1 + c0 + jj - i] += ds[jj];
                    if (time_bias)
                        for (int64_t jj = 0; jj <= last; jj++)
                            w.dtime[w.bucket[r * n + jj]] += ds[jj];
                }
                mm(0, 0, rows, dqk, n, w.da, n, kh, ldq, ac->beta,
                   dq + (s0 + r0) * ldq + (int64_t)h * dqk, ldq);
                mm(1, 0, n, dqk, rows, w.da, n, qh, ldq, 1.0f,
                   dkb + (k0 + c0) * ldq + (int64_t)h * dqk, ldq);
            }
        }
    }
    if (pos_bias && dpos_bias)
        for (int i = 0; i < 2 * N - 1; i++)
            dpos_bias[i] += (float)w.dpos[i];
    if (time_bias && dtime_bias)
        for (int i = 0; i <= HSTU_TIME_BUCKETS; i++)
            dtime_bias[i] += (float)w.dtime[i];
    bucket_use_end(&bu);
    work_free(&w);
}

void cpu_hstu_attn_fwd(int64_t B, const int64_t *offsets, int H, int dqk, int dv, int N,
                       const float *q, const float *k, const float *v, const float *pos_bias,
                       const float *time_bias, const int64_t *ts, float *out)
{
    const struct attn_call ac = {.B = B, .offsets = offsets, .part = PART_ALL, .beta = 0.0f};
    attn_fwd(&ac, H, dqk, dv, N, q, k, v, pos_bias, time_bias, ts, out);
}

void cpu_hstu_attn_bwd(int64_t B, const int64_t *offsets, int H, int dqk, int dv, int N,
                       const float *q, const float *k, const float *v, const float *pos_bias,
                       const float *time_bias, const int64_t *ts, const float *dout, float *dq,
                       float *dk, float *dvv, float *dpos_bias, float *dtime_bias)
{
    const struct attn_call ac = {.B = B, .offsets = offsets, .part = PART_ALL, .beta = 0.0f};
    attn_bwd(&ac, H, dqk, dv, N, q, k, v, pos_bias, time_bias, ts, dout, dq, dk, dvv, dpos_bias,
             dtime_bias);
}

void cpu_hstu_attn_ctx_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                           const int64_t *key_off, int keys, int H, int dqk, int dv, int N,
                           const float *q, const float *kb, const float *vb,
                           const float *pos_bias, const float *time_bias,
                           const int64_t *key_ts, float *out)
{
    const struct attn_call ac = {.B = B, .offsets = offsets, .pos0 = pos0, .key_off = key_off,
                                 .part = keys == HSTU_KEYS_PREFIX ? PART_PREFIX : PART_OWN,
                                 .beta = 1.0f};
    attn_fwd(&ac, H, dqk, dv, N, q, kb, vb, pos_bias, time_bias, key_ts, out);
}

void cpu_hstu_attn_ctx_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                           const int64_t *key_off, int keys, int H, int dqk, int dv, int N,
                           const float *q, const float *kb, const float *vb,
                           const float *pos_bias, const float *time_bias,
                           const int64_t *key_ts, const float *dout, float *dq, float *dkb,
                           float *dvb, float *dpos_bias, float *dtime_bias)
{
    const struct attn_call ac = {.B = B, .offsets = offsets, .pos0 = pos0, .key_off = key_off,
                                 .part = keys == HSTU_KEYS_PREFIX ? PART_PREFIX : PART_OWN,
                                 .beta = 1.0f};
    attn_bwd(&ac, H, dqk, dv, N, q, kb, vb, pos_bias, time_bias, key_ts, dout, dq, dkb, dvb,
             dpos_bias, dtime_bias);
}

void cpu_hstu_attn_rows_fwd(int64_t B, const int64_t *qoff, const int64_t *qpos,
                            const int64_t *key_off, int H, int dqk, int dv, int N,
                            const float *q, const float *kb, const float *vb,
                            const float *pos_bias, const float *time_bias,
                            const int64_t *key_ts, float *out)
{
    const struct attn_call ac = {.B = B, .offsets = qoff, .key_off = key_off, .part = PART_ALL,
                                 .beta = 0.0f, .qpos = qpos};
    attn_fwd(&ac, H, dqk, dv, N, q, kb, vb, pos_bias, time_bias, key_ts, out);
}

void cpu_hstu_attn_rows_bwd(int64_t B, const int64_t *qoff, const int64_t *qpos,
                            const int64_t *key_off, int H, int dqk, int dv, int N,
                            const float *q, const float *kb, const float *vb,
                            const float *pos_bias, const float *time_bias,
                            const int64_t *key_ts, const float *dout, float *dq, float *dkb,
                            float *dvb, float *dpos_bias, float *dtime_bias)
{
    const struct attn_call ac = {.B = B, .offsets = qoff, .key_off = key_off, .part = PART_ALL,
                                 .beta = 0.0f, .qpos = qpos};
    attn_bwd(&ac, H, dqk, dv, N, q, kb, vb, pos_bias, time_bias, key_ts, dout, dq, dkb, dvb,
             dpos_bias, dtime_bias);
}
