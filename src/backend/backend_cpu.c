/* backend_cpu: the CPU backend, the readable reference of every operation
 * (see backend.h). BLAS does the matrix work; the rest are plain loops. The
 * attention operations live in backend_cpu_hstu.c and backend_cpu_sasrec.c. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/adamw_elem.h"
#include "backend/backend.h"
#include "backend/backend_cpu.h"
#include "backend/cpu_exp512.h"
#include "backend/cpu_math.h"
#include "base/check.h"
#include "base/simd.h"
#include "base/rng.h"
#include "backend/emb_codec.h"
#include "backend/loss_sample.h"

/* Backend buffers are zero-filled. They come from the heap, which a
 * training process keeps in transparent huge pages where the system allows
 * (main.c: huge_heap_env). */
static void *cpu_alloc(size_t bytes) { return xcalloc(bytes ? bytes : 1, 1); }
static void cpu_free(void *p) { free(p); }
static void cpu_copy(void *dst, const void *src, size_t bytes) { memmove(dst, src, bytes); }
static void cpu_zero(void *p, size_t bytes) { memset(p, 0, bytes); }
static void cpu_synchronize(void) {}

static void cpu_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *A,
                     int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    if (m == 0 || n == 0)
        return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}

FS_SIMD
static void cpu_axpy(int64_t n, float a, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

FS_SIMD
static void cpu_scale(int64_t n, float a, float *x)
{
    for (int64_t i = 0; i < n; i++)
        x[i] *= a;
}

FS_SIMD
static void cpu_mul(int64_t n, const float *a, const float *b, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = a[i] * b[i];
}

#if CPU_EXP512
/* The SiLU ops where the CPU has AVX-512 (VL): cpu_expf of 8 values at a
 * time through cpu_exp512.h (its table in registers), then the loops' own
 * operations in the same order; -x by the sign bit, as the loops' negation.
 * Bit for bit the loops below (tests/test_cpu_math.c: check_silu). */
/* bwd 0: y = silu(x), 1: y = dy silu'(x) (a constant: each caller its own
 * loop); whole vectors of 8 (masked loads and stores are slow on AMD's
 * cores): the values up to n rounded down to 8, returned; the callers'
 * loops do the rest */
AVX512VL static inline __attribute__((always_inline)) int64_t
silu_avx512(int64_t n, const float *x, const float *dy, float *y, const int bwd)
{
    __m512i tab[4];
    exp_table(tab);
    const __m256 one = _mm256_set1_ps(1.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 den = _mm256_add_ps(one, exp8s(neg8(v), tab));
        if (!bwd) {
            _mm256_storeu_ps(y + i, _mm256_div_ps(v, den));
            continue;
        }
        const __m256 s = _mm256_div_ps(one, den);
        const __m256 g = _mm256_mul_ps(_mm256_loadu_ps(dy + i), s);
        const __m256 f = _mm256_add_ps(one, _mm256_mul_ps(v, _mm256_sub_ps(one, s)));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(g, f));
    }
    return i;
}

AVX512VL static int64_t silu_fwd_avx512(int64_t n, const float *x, float *y)
{
    return silu_avx512(n, x, NULL, y, 0);
}

AVX512VL static int64_t silu_bwd_avx512(int64_t n, const float *x, const float *dy, float *dx)
{
    return silu_avx512(n, x, dy, dx, 1);
}
#endif

FS_SIMD
static void cpu_silu_fwd(int64_t n, const float *x, float *y)
{
    int64_t i = 0;
#if CPU_EXP512
    if (have_avx512vl())
        i = silu_fwd_avx512(n, x, y);
#endif
    for (; i < n; i++)
        y[i] = x[i] / (1.0f + cpu_expf(-x[i]));
}

FS_SIMD
static void cpu_silu_bwd(int64_t n, const float *x, const float *dy, float *dx)
{
    int64_t i = 0;
#if CPU_EXP512
    if (have_avx512vl())
        i = silu_bwd_avx512(n, x, dy, dx);
#endif
    for (; i < n; i++) {
        float s = 1.0f / (1.0f + cpu_expf(-x[i]));
        dx[i] = dy[i] * s * (1.0f + x[i] * (1.0f - s));
    }
}

FS_SIMD
static void cpu_relu_fwd(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] > 0 ? x[i] : 0;
}

FS_SIMD
static void cpu_relu_bwd(int64_t n, const float *x, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++)
        dx[i] = x[i] > 0 ? dy[i] : 0;
}

/* LayerNorm's row sums are in double and in j order (a chain of d
 * dependent adds per row): the forward takes LN_ROWS rows at a time, their
 * chains side by side, each row's sums the same operations in the same
 * order as for the rows left over (one at a time), so the results are bit
 * for bit the same whatever the blocking (tests/test_cpu_math.c). */
#define LN_ROWS 4

/* y = (x - mean) rstd gamma + beta of row r, from its statistics */
static inline void ln_row_out(int d, const float *xr, float mu, float rs, const float *gamma,
                              const float *beta, float *yr)
{
    /* the affine test outside the loop: a vectorised select would load
     * through a NULL gamma (masked, but at a cost) */
    if (gamma)
        for (int j = 0; j < d; j++)
            yr[j] = (xr[j] - mu) * rs * gamma[j] + beta[j];
    else
        for (int j = 0; j < d; j++)
            yr[j] = (xr[j] - mu) * rs;
}

FS_SIMD
static void cpu_layernorm_fwd(int64_t rows, int d, float eps, const float *x, const float *gamma,
                              const float *beta, float *y, float *mean, float *rstd)
{
    int64_t r = 0;
    for (; r + LN_ROWS <= rows; r += LN_ROWS) {
        const float *xr = x + r * d;
        double mu[LN_ROWS] = {0}, var[LN_ROWS] = {0};
        for (int j = 0; j < d; j++)
            for (int q = 0; q < LN_ROWS; q++)
                mu[q] += xr[q * d + j];
        for (int q = 0; q < LN_ROWS; q++)
            mu[q] /= d;
        for (int j = 0; j < d; j++)
            for (int q = 0; q < LN_ROWS; q++)
                var[q] += (xr[q * d + j] - mu[q]) * (xr[q * d + j] - mu[q]);
        for (int q = 0; q < LN_ROWS; q++) {
            var[q] /= d;
            mean[r + q] = (float)mu[q];
            rstd[r + q] = (float)(1.0 / sqrt(var[q] + eps));
            ln_row_out(d, xr + q * d, (float)mu[q], rstd[r + q], gamma, beta, y + (r + q) * d);
        }
    }
    for (; r < rows; r++) {
        const float *xr = x + r * d;
        double mu = 0, var = 0;
        for (int j = 0; j < d; j++)
            mu += xr[j];
        mu /= d;
        for (int j = 0; j < d; j++)
            var += (xr[j] - mu) * (xr[j] - mu);
        var /= d;
        float rs = (float)(1.0 / sqrt(var + eps));
        mean[r] = (float)mu;
        rstd[r] = rs;
        ln_row_out(d, xr, (float)mu, rs, gamma, beta, y + r * d);
    }
}

/* The backward's and l2norm's row sums, in double and in j order like the
 * forward's: RS_ROWS rows at a time, their chains in the lanes of a vector
 * (lane q: row q's sums, the same operations in the same order as one row
 * alone), so that a row's d dependent adds overlap with the other rows'
 * rather than wait on each other. Bit for bit (tests/test_cpu_math.c). */
#define RS_ROWS 8
typedef float rs_f32 __attribute__((vector_size(4 * RS_ROWS)));
typedef double rs_f64 __attribute__((vector_size(8 * RS_ROWS)));

/* column j of rows [0, RS_ROWS) of a [., d] block (an initializer: a loop
 * of lane stores would go through memory) */
#define RS_COL(x, d, j)                                                                   \
    {(x)[j],         (x)[(d) + (j)],     (x)[2 * (d) + (j)], (x)[3 * (d) + (j)],          \
     (x)[4 * (d) + (j)], (x)[5 * (d) + (j)], (x)[6 * (d) + (j)], (x)[7 * (d) + (j)]}

/* layernorm_bwd's sums of RS_ROWS rows: sg = sum g, sgh = sum g h, g = dy
 * (gamma) and h = (x - mean) rstd, each in float, summed in double */
static inline __attribute__((always_inline)) void ln_bwd_sums(int d, const float *x, const float *mean, const float *rstd,
                               const float *gamma, const float *dy, double *sg, double *sgh)
{
    rs_f32 mu, rs;
    for (int q = 0; q < RS_ROWS; q++)
        mu[q] = mean[q], rs[q] = rstd[q];
    rs_f64 a = {0}, b = {0};
    for (int j = 0; j < d; j++) {
        const rs_f32 xv = RS_COL(x, d, j);
        rs_f32 g = RS_COL(dy, d, j);
        const rs_f32 h = (xv - mu) * rs;
        if (gamma)
            g = g * gamma[j];
        a += __builtin_convertvector(g, rs_f64);
        b += __builtin_convertvector(g * h, rs_f64);
    }
    for (int q = 0; q < RS_ROWS; q++)
        sg[q] = a[q], sgh[q] = b[q];
}

/* dx of row r of layernorm_bwd from its sums (and gamma's gradients) */
static inline __attribute__((always_inline)) void ln_bwd_row(int64_t r, int d, const float *x, const float *mean,
                              const float *rstd, const float *gamma, const float *dy, float *dx,
                              float *dgamma, float *dbeta, double sum_g, double sum_gh)
{
    const float *xr = x + r * d, *dyr = dy + r * d;
    if (gamma) /* a loop of its own: it vectorises (the sums are in order) */
        for (int j = 0; j < d; j++) {
            float h = (xr[j] - mean[r]) * rstd[r];
            dgamma[j] += dyr[j] * h;
            dbeta[j] += dyr[j];
        }
    const float mg = (float)(sum_g / d), mgh = (float)(sum_gh / d);
    if (gamma) /* the test outside the loop (see layernorm_fwd) */
        for (int j = 0; j < d; j++) {
            float h = (xr[j] - mean[r]) * rstd[r];
            dx[r * d + j] = rstd[r] * (dyr[j] * gamma[j] - mg - h * mgh);
        }
    else
        for (int j = 0; j < d; j++) {
            float h = (xr[j] - mean[r]) * rstd[r];
            dx[r * d + j] = rstd[r] * (dyr[j] - mg - h * mgh);
        }
}

FS_SIMD
static void cpu_layernorm_bwd(int64_t rows, int d, const float *x, const float *mean,
                              const float *rstd, const float *gamma, const float *dy, float *dx,
                              float *dgamma, float *dbeta)
{
    int64_t r = 0;
    for (; r + RS_ROWS <= rows; r += RS_ROWS) {
        double sg[RS_ROWS], sgh[RS_ROWS];
        ln_bwd_sums(d, x + r * d, mean + r, rstd + r, gamma, dy + r * d, sg, sgh);
        for (int q = 0; q < RS_ROWS; q++)
            ln_bwd_row(r + q, d, x, mean, rstd, gamma, dy, dx, dgamma, dbeta, sg[q], sgh[q]);
    }
    for (; r < rows; r++) {
        const float *xr = x + r * d, *dyr = dy + r * d;
        double sum_g = 0, sum_gh = 0;
        for (int j = 0; j < d; j++) {
            float h = (xr[j] - mean[r]) * rstd[r];
            float g = gamma ? dyr[j] * gamma[j] : dyr[j];
            sum_g += g;
            sum_gh += g * h;
        }
        ln_bwd_row(r, d, x, mean, rstd, gamma, dy, dx, dgamma, dbeta, sum_g, sum_gh);
    }
}

/* l2norm_fwd of row r from its sum of squares s */
static inline __attribute__((always_inline)) void l2_fwd_row(int64_t r, int d, float eps,
                                                             const float *x, float *y,
                                                             float *norm, double s)
{
    float n = fmaxf((float)sqrt(s), eps);
    norm[r] = n;
    for (int j = 0; j < d; j++)
        y[r * d + j] = x[r * d + j] / n;
}

FS_SIMD
static void cpu_l2norm_fwd(int64_t rows, int d, float eps, const float *x, float *y, float *norm)
{
    int64_t r = 0;
    for (; r + RS_ROWS <= rows; r += RS_ROWS) { /* the sums' chains in lanes (RS_ROWS) */
        rs_f64 s = {0};
        for (int j = 0; j < d; j++) {
            const rs_f64 v = __builtin_convertvector((rs_f32)RS_COL(x + r * d, d, j), rs_f64);
            s += v * v;
        }
        for (int q = 0; q < RS_ROWS; q++)
            l2_fwd_row(r + q, d, eps, x, y, norm, s[q]);
    }
    for (; r < rows; r++) {
        double s = 0;
        for (int j = 0; j < d; j++)
            s += (double)x[r * d + j] * x[r * d + j];
        l2_fwd_row(r, d, eps, x, y, norm, s);
    }
}

/* l2norm_bwd of row r from y . dy and y . y */
static inline __attribute__((always_inline)) void l2_bwd_row(int64_t r, int d, const float *y,
                                                             const float *norm, const float *dy,
                                                             float *dx, double dot, double yy)
{
    /* |x| < eps gave y = x / eps with |y| < 1 (linear there); an
     * unclamped row has |y| = 1 up to rounding, which grows with d */
    int clamped = yy < 0.5;
    for (int j = 0; j < d; j++)
        dx[r * d + j] = clamped ? dy[r * d + j] / norm[r]
                                : (dy[r * d + j] - y[r * d + j] * (float)dot) / norm[r];
}

FS_SIMD
static void cpu_l2norm_bwd(int64_t rows, int d, const float *y, const float *norm,
                           const float *dy, float *dx)
{
    int64_t r = 0;
    for (; r + RS_ROWS <= rows; r += RS_ROWS) { /* the sums' chains in lanes (RS_ROWS) */
        rs_f64 dot = {0}, yy = {0};
        for (int j = 0; j < d; j++) {
            const rs_f64 yv = __builtin_convertvector((rs_f32)RS_COL(y + r * d, d, j), rs_f64);
            const rs_f64 gv = __builtin_convertvector((rs_f32)RS_COL(dy + r * d, d, j), rs_f64);
            dot += yv * gv;
            yy += yv * yv;
        }
        for (int q = 0; q < RS_ROWS; q++)
            l2_bwd_row(r + q, d, y, norm, dy, dx, dot[q], yy[q]);
    }
    for (; r < rows; r++) {
        double dot = 0;
        for (int j = 0; j < d; j++)
            dot += (double)y[r * d + j] * dy[r * d + j];
        double yy = 0;
        for (int j = 0; j < d; j++)
            yy += (double)y[r * d + j] * y[r * d + j];
        l2_bwd_row(r, d, y, norm, dy, dx, dot, yy);
    }
}

/* The reference: row r draws from its own xoshiro256** stream keyed by
 * (row_keys[r], site), element j with the j-th draw. */
void cpu_dropout_fwd_ref(int64_t rows, int d, float p, const uint64_t *row_keys, uint64_t site,
                         const float *x, float *y, uint8_t *mask)
{
    float keep = 1.0f - p;
    for (int64_t r = 0; r < rows; r++) {
        struct rng g;
        rng_init(&g, rng_key(row_keys[r], site, 0x64726f70ull));
        for (int j = 0; j < d; j++) {
            uint8_t m = p <= 0 || rng_uniform(&g) >= p;
            mask[r * d + j] = m;
            y[r * d + j] = m ? x[r * d + j] / keep : 0.0f;
        }
    }
}

/* The same streams, DROP_LANES rows at a time in the lanes of a vector
 * (xoshiro256** is shifts, rotations, xors and multiplications by 5 and 9),
 * the draw compared as an integer: uniform = (u >> 11) 2^-53 >= p exactly
 * when (u >> 11) >= ceil(p 2^53) (both sides exact in double). Then the
 * rows are scaled from the masks. Bitwise the reference. */
#define DROP_LANES 8
typedef uint64_t drop_u64x8 __attribute__((vector_size(8 * DROP_LANES)));
FS_SIMD
static void cpu_dropout_fwd(int64_t rows, int d, float p, const uint64_t *row_keys, uint64_t site,
                            const float *x, float *y, uint8_t *mask)
{
    const float keep = 1.0f - p;
    const uint64_t thr = p <= 0 ? 0 : (uint64_t)ceil((double)p * 0x1p53);
    int64_t r0 = 0;
    for (; p > 0 && r0 + DROP_LANES <= rows; r0 += DROP_LANES) {
        drop_u64x8 s0, s1, s2, s3; /* lane l: row r0 + l's stream (rng_init) */
        for (int l = 0; l < DROP_LANES; l++) {
            struct rng g;
            rng_init(&g, rng_key(row_keys[r0 + l], site, 0x64726f70ull));
            s0[l] = g.s[0], s1[l] = g.s[1], s2[l] = g.s[2], s3[l] = g.s[3];
        }
        for (int j = 0; j < d; j++) { /* rng_u64 in every lane */
            const drop_u64x8 v = s1 * 5, out = ((v << 7) | (v >> 57)) * 9, t = s1 << 17;
            s2 ^= s0;
            s3 ^= s1;
            s1 ^= s2;
            s0 ^= s3;
            s2 ^= t;
            s3 = (s3 << 45) | (s3 >> 19);
            const drop_u64x8 m = (out >> 11) >= thr; /* all ones where kept */
            for (int l = 0; l < DROP_LANES; l++)
                mask[(r0 + l) * d + j] = (uint8_t)(m[l] & 1);
        }
        /* the block's rows are contiguous: one loop over them, in whole
         * vectors but for the last DROP_LANES d modulo the width */
        const float *xb = x + r0 * d;
        const uint8_t *mb = mask + r0 * d;
        float *yb = y + r0 * d;
        for (int64_t i = 0; i < (int64_t)DROP_LANES * d; i++)
            yb[i] = mb[i] ? xb[i] / keep : 0.0f;
    }
    if (r0 < rows) /* the rows left over (all rows when p <= 0: no draws) */
        cpu_dropout_fwd_ref(rows - r0, d, p, row_keys + r0, site, x + r0 * d, y + r0 * d,
                            mask + r0 * d);
}

FS_SIMD
static void cpu_dropout_bwd(int64_t rows, int d, float p, const uint8_t *mask, const float *dy,
                            float *dx)
{
    float keep = 1.0f - p;
    for (int64_t i = 0; i < rows * d; i++)
        dx[i] = mask[i] ? dy[i] / keep : 0.0f;
}

FS_SIMD
static void cpu_gather_rows(int64_t n, int d, const float *table, const int64_t *idx, float *out)
{
    for (int64_t i = 0; i < n; i++) /* rows of d floats: a loop, not a call each */
        for (int j = 0; j < d; j++)
            out[i * d + j] = table[idx[i] * d + j];
}

FS_SIMD
static void cpu_scatter_add_rows(int64_t n, int d, const float *src, const int64_t *idx,
                                 float *table)
{
    for (int64_t i = 0; i < n; i++)
        for (int j = 0; j < d; j++)
            table[idx[i] * d + j] += src[i * d + j];
}

FS_SIMD
static void cpu_adamw_step(int64_t n, float *w, float *m, float *v, const float *g, float lr,
                           float b1, float b2, float eps, float wd, int64_t t)
{
    float c1, c2;
    adamw_corrections(b1, b2, t, &c1, &c2);
    for (int64_t i = 0; i < n; i++)
        adamw_elem(w + i, m + i, v + i, g[i], lr, b1, b2, eps, wd, c1, c2);
}

static double cpu_sum_squares(int64_t n, const float *x)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return s;
}

static void cpu_sumsq_acc(int64_t n, const float *x, double *acc) { acc[0] += cpu_sum_squares(n, x); }

static void cpu_count_range(int64_t n, const int64_t *x, int64_t lo, int64_t hi, int64_t *acc)
{
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        k += x[i] >= lo && x[i] < hi;
    acc[0] += k;
}

/* issue 51 G */
static void cpu_index_mask(int64_t n, const int64_t *src, const uint8_t *mask, int64_t *dst)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = mask[i] ? -1 : src[i];
}

static void cpu_sample_negatives(uint64_t seed, uint64_t epoch, const uint64_t *keys, int64_t T,
                                 int R, int64_t num_items, int64_t *out)
{
    /* a run of equal keys (train.shared_negatives) draws its row once: the
     * same row, copied */
#pragma omp parallel for schedule(static) if (T * R >= (1 << 16))
    for (int64_t i = 0; i < T; i++)
        if (i == 0 || keys[i] != keys[i - 1])
            loss_negatives_row(seed, epoch, keys[i], R, num_items, out + i * R);
    for (int64_t i = 1; i < T; i++)
        if (keys[i] == keys[i - 1])
            memcpy(out + i * R, out + (i - 1) * R, (size_t)R * sizeof *out);
}

static void cpu_emb_encode(int codec, int64_t n, int dim, const float *rows, uint8_t *wire,
                           uint64_t *bad)
{
    int64_t first = -1;
    if (emb_codec_encode((enum emb_codec)codec, n, dim, rows, wire, &first) && first >= 0 &&
        UINT64_MAX - (uint64_t)first > *bad)
        *bad = UINT64_MAX - (uint64_t)first;
}

static void cpu_emb_decode(int codec, int64_t n, int dim, const uint8_t *wire, float *rows)
{
    emb_codec_decode((enum emb_codec)codec, n, dim, wire, rows);
}

const struct backend_ops backend_cpu = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .to_device = cpu_copy,
    .to_host = cpu_copy,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .synchronize = cpu_synchronize,
    .gemm = cpu_gemm,
    .gemm_bf16 = cpu_gemm_bf16,
    .axpy = cpu_axpy,
    .scale = cpu_scale,
    .mul = cpu_mul,
    .silu_fwd = cpu_silu_fwd,
    .silu_bwd = cpu_silu_bwd,
    .relu_fwd = cpu_relu_fwd,
    .relu_bwd = cpu_relu_bwd,
    .layernorm_fwd = cpu_layernorm_fwd,
    .layernorm_bwd = cpu_layernorm_bwd,
    .l2norm_fwd = cpu_l2norm_fwd,
    .l2norm_bwd = cpu_l2norm_bwd,
    .dropout_fwd = cpu_dropout_fwd,
    .dropout_bwd = cpu_dropout_bwd,
    .gather_rows = cpu_gather_rows,
    .scatter_add_rows = cpu_scatter_add_rows,
    .adamw_step = cpu_adamw_step,
    .sum_squares = cpu_sum_squares,
    .sumsq_acc = cpu_sumsq_acc,
    .hstu_attn_fwd = cpu_hstu_attn_fwd,
    .hstu_attn_bwd = cpu_hstu_attn_bwd,
    .hstu_attn_ctx_fwd = cpu_hstu_attn_ctx_fwd,
    .hstu_attn_ctx_bwd = cpu_hstu_attn_ctx_bwd,
    .hstu_attn_rows_fwd = cpu_hstu_attn_rows_fwd,
    .hstu_attn_rows_bwd = cpu_hstu_attn_rows_bwd,
    .sasrec_attn_fwd = cpu_sasrec_attn_fwd,
    .sasrec_attn_bwd = cpu_sasrec_attn_bwd,
    .sasrec_attn_ctx_fwd = cpu_sasrec_attn_ctx_fwd,
    .sasrec_attn_ctx_bwd = cpu_sasrec_attn_ctx_bwd,
    .softmax_loss = cpu_softmax_loss,
    .bce_loss = cpu_bce_loss,
    .softmax_loss_q = cpu_softmax_loss_q,
    .softmax_loss_shared = cpu_softmax_loss_shared,
    .softmax_block_lse = cpu_softmax_block_lse,
    .softmax_block_grad = cpu_softmax_block_grad,
    .emb_dedup = cpu_emb_dedup,
    .emb_gather_shard = cpu_emb_gather_shard,
    .emb_sum_by_id = cpu_emb_sum_by_id,
    .emb_sparse_update = cpu_emb_sparse_update,
    .emb_encode = cpu_emb_encode,
    .emb_decode = cpu_emb_decode,
    .count_range = cpu_count_range,
    .sample_negatives = cpu_sample_negatives,
    .index_rows = cpu_index_rows,
    .col_sums = cpu_col_sums,
    .rows_match = cpu_rows_match, /* issue 51 item 3 (H) */
    .rank_loss = cpu_rank_loss,
    .factor_fwd = cpu_factor_fwd, /* issue 51 B */
    .factor_bwd = cpu_factor_bwd,
    /* dynamic tables (backend_cpu_dyn.c) */
    .emb_dyn_dedup = cpu_emb_dyn_dedup,
    .dyn_find = cpu_dyn_find,
    .dyn_stamp = cpu_dyn_stamp,
    .dyn_missing = cpu_dyn_missing,
    .dyn_insert = cpu_dyn_insert,
    .dyn_rehash = cpu_dyn_rehash,
    .dyn_virtual = cpu_dyn_virtual,
    .dyn_expire = cpu_dyn_expire,
    .dyn_admit = cpu_dyn_admit,
    .dyn_evict_full = cpu_dyn_evict_full,
    .index_mask = cpu_index_mask, /* issue 51 G */
    /* no devices, no staging: host memory is the backend's memory */
};
