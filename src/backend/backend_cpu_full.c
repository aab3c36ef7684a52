/* backend_cpu_full: the CPU's blocks of the full softmax (backend.h's
 * softmax_block_lse and softmax_block_grad; model/loss_full.c calls them
 * between its GEMMs), each beside its reference, the short loops of the
 * definition (cpu_softmax_block_*_ref; tests/test_cpu_math.c compares them
 * bit for bit).
 *
 * The references' costs were the exponentials and one chain of dependent
 * double additions per row: cpu_expf in a function compiled for the
 * baseline x86-64 calls libm's fma() three times (no FMA instruction there),
 * and one row of m logits is m additions of ~4 cycles each in a row. Here
 *   - the hot loops are compiled for x86-64-v3 and v4 too (FS_SIMD), where
 *     cpu_expf vectorises with its fused multiply-adds inline;
 *   - a row's maximum is taken in 16 lanes (a maximum is the same in any
 *     order: the reference's fmaxf and the lanes' comparison differ only in
 *     the sign of a zero maximum, which neither s - max nor max + log(sum)
 *     can see);
 *   - the log-sum-exp works on FULL_ROWS rows at a time: their exponentials
 *     into a small scratch (vectorised), then their double sums advance
 *     together, each in the reference's order (j = 0, 1, ..., m - 1), so
 *     that FULL_ROWS independent chains fill the adder instead of one;
 *   - on a CPU with AVX-512 the exponentials are cpu_expf's own operations
 *     written with intrinsics on 16 floats (two halves of 8 doubles): the
 *     compiler's vector form of cpu_expf loads its 2^(i/32) table one lane
 *     at a time, these take it from four registers (vpermt2q), ~2x faster.
 * The results are those of the references bit for bit (test_cpu_math: the
 * ops and full_expf_block against them, cpu_expf against libm's expf). */
#include <math.h>
#include <stdlib.h>

#include "backend/backend_cpu.h"
#include "backend/cpu_math.h"
#include "base/check.h"
#include "base/simd.h"

/* rows of a log-sum-exp group; lanes of a row's maximum */
#define FULL_ROWS 8
#define FULL_LANES 16

/* --- the references ------------------------------------------------------------ */

void cpu_softmax_block_lse_ref(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *s,
                               float *lse)
{
    for (int64_t i = 0; i < n; i++) {
        const float *si = s + i * lds;
        float mx = -INFINITY;
        for (int64_t j = 0; j < m; j++)
            mx = fmaxf(mx, si[j] * inv_tau);
        double sum = 0;
        for (int64_t j = 0; j < m; j++)
            sum += cpu_expf(si[j] * inv_tau - mx);
        lse[i] = m > 0 ? mx + (float)log(sum) : -INFINITY;
    }
}

/* acc[0] += the target logits (s[i, tcol[i]] inv_tau) one by one in row
 * order, before the rows are overwritten */
static void block_target(int64_t n, int64_t m, int64_t lds, float inv_tau, const int64_t *tcol,
                         const float *s, double *acc)
{
    double target = acc[0];
    for (int64_t i = 0; i < n; i++)
        if (tcol[i] >= 0) {
            if (tcol[i] >= m)
                fatal("softmax_block_grad: row %lld: target column %lld outside the block of "
                      "%lld", (long long)i, (long long)tcol[i], (long long)m);
            target += (double)(s[i * lds + tcol[i]] * inv_tau);
        }
    acc[0] = target;
}

void cpu_softmax_block_grad_ref(int64_t n, int64_t m, int64_t lds, float inv_tau,
                                const float *lse, const int64_t *tcol, float gscale, float *s,
                                double *acc)
{
    block_target(n, m, lds, inv_tau, tcol, s, acc);
    for (int64_t i = 0; i < n; i++) {
        float *si = s + i * lds;
        const float l = lse[i];
        for (int64_t j = 0; j < m; j++)
            si[j] = gscale * cpu_expf(si[j] * inv_tau - l);
        if (tcol[i] >= 0)
            si[tcol[i]] -= gscale;
    }
}

#include "backend/cpu_exp512.h" /* exp16, exp_table, have_avx512 */
#define FULL_AVX512 CPU_EXP512
#if FULL_AVX512

/* y[j] = scale cpu_expf(s[j] inv_tau - sub), j < m (scale = 1: the
 * exponential itself, a product by 1 being exact) */
AVX512 static void exp_row_avx512(int64_t m, const float *s, float inv_tau, float sub,
                                  float scale, int scaled, float *y)
{
    __m512i tab[4];
    exp_table(tab);
    const __m512 it = _mm512_set1_ps(inv_tau), sb = _mm512_set1_ps(sub);
    const __m512 sc = _mm512_set1_ps(scale);
    for (int64_t j = 0; j < m; j += 16) {
        const __mmask16 k = m - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (m - j)) - 1);
        const __m512 x = _mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, s + j), it), sb);
        __m512 e = exp16(x, tab);
        if (scaled)
            e = _mm512_mul_ps(sc, e);
        _mm512_mask_storeu_ps(y + j, k, e);
    }
}

/* y[i] = cpu_expf(x[i]) (test_cpu_math compares it with expf) */
AVX512 static void expf_block_avx512(int64_t n, const float *x, float *y)
{
    __m512i tab[4];
    exp_table(tab);
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 k = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1);
        _mm512_mask_storeu_ps(y + j, k, exp16(_mm512_maskz_loadu_ps(k, x + j), tab));
    }
}

#endif

int cpu_full_expf_block(int64_t n, const float *x, float *y)
{
#if FULL_AVX512
    if (have_avx512()) {
        expf_block_avx512(n, x, y);
        return 1;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        y[i] = cpu_expf(x[i]);
    return 0;
}

/* --- the operations ------------------------------------------------------------ */

/* max_j s[j] inv_tau over m values, in FULL_LANES lanes; -inf when m = 0 */
static inline float row_max(int64_t m, float inv_tau, const float *restrict s)
{
    float lane[FULL_LANES];
    for (int l = 0; l < FULL_LANES; l++)
        lane[l] = -INFINITY;
    int64_t j = 0;
    for (; j + FULL_LANES <= m; j += FULL_LANES)
        for (int l = 0; l < FULL_LANES; l++) {
            const float v = s[j + l] * inv_tau;
            lane[l] = v > lane[l] ? v : lane[l]; /* NaN ignored, as fmaxf does */
        }
    float mx = -INFINITY;
    for (int l = 0; l < FULL_LANES; l++)
        mx = lane[l] > mx ? lane[l] : mx;
    for (; j < m; j++) {
        const float v = s[j] * inv_tau;
        mx = v > mx ? v : mx;
    }
    return mx;
}

/* rows [0, nr) (nr <= FULL_ROWS) of s: lse[r]; t: scratch [FULL_ROWS, m];
 * avx512: the exponentials by exp_row_avx512 */
FS_SIMD
static void lse_group(int nr, int64_t m, int64_t lds, float inv_tau, const float *s,
                      float *restrict t, float *lse, int avx512)
{
    float mx[FULL_ROWS];
    (void)avx512;
    for (int r = 0; r < FULL_ROWS; r++) {
        float *restrict tr = t + r * m;
        if (r >= nr) { /* rows past the block's end: zeros, their sums unused */
            for (int64_t j = 0; j < m; j++)
                tr[j] = 0.0f;
            continue;
        }
        const float *restrict sr = s + r * lds;
        const float x = row_max(m, inv_tau, sr);
        mx[r] = x;
#if FULL_AVX512
        if (avx512) {
            exp_row_avx512(m, sr, inv_tau, x, 1.0f, 0, tr);
            continue;
        }
#endif
        for (int64_t j = 0; j < m; j++)
            tr[j] = cpu_expf(sr[j] * inv_tau - x);
    }
    double sum[FULL_ROWS] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t j = 0; j < m; j++)
        for (int r = 0; r < FULL_ROWS; r++)
            sum[r] += (double)t[r * m + j];
    for (int r = 0; r < nr; r++)
        lse[r] = m > 0 ? mx[r] + (float)log(sum[r]) : -INFINITY;
}

void cpu_softmax_block_lse(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *s,
                           float *lse)
{
    const int64_t groups = (n + FULL_ROWS - 1) / FULL_ROWS;
    int avx512 = 0;
#if FULL_AVX512
    avx512 = have_avx512();
#endif
#pragma omp parallel if (n * m >= (1 << 16))
    {
        float *t = xmalloc((size_t)FULL_ROWS * (size_t)(m > 0 ? m : 1) * sizeof *t);
#pragma omp for schedule(static)
        for (int64_t g = 0; g < groups; g++) {
            const int64_t i0 = g * FULL_ROWS;
            const int nr = (int)(n - i0 < FULL_ROWS ? n - i0 : FULL_ROWS);
            lse_group(nr, m, lds, inv_tau, s + i0 * lds, t, lse + i0, avx512);
        }
        free(t);
    }
}

/* one row: s[j] = gscale exp(s[j] inv_tau - l) */
FS_SIMD
static void grad_row(int64_t m, float inv_tau, float l, float gscale, float *restrict s)
{
    for (int64_t j = 0; j < m; j++)
        s[j] = gscale * cpu_expf(s[j] * inv_tau - l);
}

void cpu_softmax_block_grad(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *lse,
                            const int64_t *tcol, float gscale, float *s, double *acc)
{
    block_target(n, m, lds, inv_tau, tcol, s, acc);
    int avx512 = 0;
#if FULL_AVX512
    avx512 = have_avx512();
#endif
    (void)avx512;
#pragma omp parallel for schedule(static) if (n * m >= (1 << 16))
    for (int64_t i = 0; i < n; i++) {
#if FULL_AVX512
        if (avx512)
            exp_row_avx512(m, s + i * lds, inv_tau, lse[i], gscale, 1, s + i * lds);
        else
#endif
            grad_row(m, inv_tau, lse[i], gscale, s + i * lds);
        if (tcol[i] >= 0)
            s[i * lds + tcol[i]] -= gscale;
    }
}
