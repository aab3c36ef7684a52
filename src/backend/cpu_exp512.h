/* cpu_exp512: cpu_expf (cpu_math.h) on 8 or 16 floats with AVX-512
 * intrinsics, its operations one for one (fma as vfmadd, two halves of 8
 * doubles): the compiler's vector form of cpu_expf loads its 2^(i/32) table
 * one lane at a time, these take it from four registers (vpermt2q). For
 * the loops that call it where the CPU has AVX-512 (have_avx512(): the full
 * softmax's blocks, exp16; have_avx512vl(): the SiLU ops, exp8s); CPU_EXP512 is 0 where the compiler
 * cannot build it. Bit for bit cpu_expf (tests/test_cpu_math.c). */
#ifndef FS_CPU_EXP512_H
#define FS_CPU_EXP512_H

#include <math.h>

#include "backend/cpu_math.h"

#if !defined(FS_SIMD_OFF) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    defined(__ELF__)
#include <immintrin.h>
#define CPU_EXP512 1
#define AVX512 __attribute__((target("avx512f")))

/* cpu_expf (cpu_math.h) of 8 clamped floats, before the float rounding:
 * its operations one for one (fma as vfmadd, the table by vpermt2q) */
AVX512 static inline __m256 exp8(__m256 xc, const __m512i tab[4])
{
    const __m512d inv_ln2_n = _mm512_set1_pd(0x1.71547652b82fep+0 * 32);
    const __m512d shift = _mm512_set1_pd(0x1.8p52);
    const __m512d c0 = _mm512_set1_pd(0x1.c6af84b912394p-5 / 32 / 32 / 32);
    const __m512d c1 = _mm512_set1_pd(0x1.ebfce50fac4f3p-3 / 32 / 32);
    const __m512d c2 = _mm512_set1_pd(0x1.62e42ff0c52d6p-1 / 32);
    const __m512d xd = _mm512_cvtps_pd(xc);
    __m512d kd = _mm512_fmadd_pd(inv_ln2_n, xd, shift);
    const __m512i ki = _mm512_castpd_si512(kd);
    kd = _mm512_sub_pd(kd, shift);
    const __m512d r = _mm512_fmsub_pd(inv_ln2_n, xd, kd); /* fma(inv_ln2_n, xd, -kd) */
    const __m512i i = _mm512_and_si512(ki, _mm512_set1_epi64(31));
    const __m512i lo = _mm512_permutex2var_epi64(tab[0], i, tab[1]); /* entries 0..15 */
    const __m512i hi = _mm512_permutex2var_epi64(tab[2], i, tab[3]); /* 16..31 */
    const __mmask8 up = _mm512_test_epi64_mask(i, _mm512_set1_epi64(16));
    const __m512i t = _mm512_add_epi64(_mm512_mask_blend_epi64(up, lo, hi),
                                       _mm512_slli_epi64(ki, 52 - 5));
    const __m512d sc = _mm512_castsi512_pd(t);
    const __m512d z = _mm512_fmadd_pd(c0, r, c1), r2 = _mm512_mul_pd(r, r);
    __m512d y = _mm512_fmadd_pd(c2, r, _mm512_set1_pd(1.0));
    y = _mm512_mul_pd(_mm512_fmadd_pd(z, r2, y), sc);
    return _mm512_cvtpd_ps(y);
}

/* cpu_expf of 16 floats, its special cases included */
AVX512 static inline __m512 exp16(__m512 x, const __m512i tab[4])
{
    const __m512 big = _mm512_set1_ps(0x1.62e42ep6f), small = _mm512_set1_ps(-0x1.9fe368p6f);
    const __mmask16 gt = _mm512_cmp_ps_mask(x, big, _CMP_GT_OQ);
    const __mmask16 lt = _mm512_cmp_ps_mask(x, small, _CMP_LT_OQ);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    __m512 xc = _mm512_mask_blend_ps(gt, x, big);
    xc = _mm512_mask_blend_ps(lt, xc, small);
    xc = _mm512_mask_blend_ps(nan, xc, _mm512_setzero_ps());
    const __m256 lo = exp8(_mm512_castps512_ps256(xc), tab);
    const __m256 hi =
        exp8(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(xc), 1)), tab);
    __m512 f = _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
    f = _mm512_mask_blend_ps(gt, f, _mm512_set1_ps(INFINITY));
    f = _mm512_mask_blend_ps(lt, f, _mm512_setzero_ps());
    return _mm512_mask_blend_ps(nan, f, x);
}

/* cpu_expf of 8 floats, its special cases included (8-bit masks on 256-bit
 * vectors: AVX512VL), exp16's steps on one half: in the SiLU loops, 8 values
 * a step run faster than 16 on the AMD EPYC (Zen 5) of doc/benchmarks.md. */
#define AVX512VL __attribute__((target("avx512f,avx512vl")))
AVX512VL static inline __m256 exp8s(__m256 x, const __m512i tab[4])
{
    const __m256 big = _mm256_set1_ps(0x1.62e42ep6f), small = _mm256_set1_ps(-0x1.9fe368p6f);
    const __mmask8 gt = _mm256_cmp_ps_mask(x, big, _CMP_GT_OQ);
    const __mmask8 lt = _mm256_cmp_ps_mask(x, small, _CMP_LT_OQ);
    const __mmask8 nan = _mm256_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    __m256 xc = _mm256_mask_blend_ps(gt, x, big);
    xc = _mm256_mask_blend_ps(lt, xc, small);
    xc = _mm256_mask_blend_ps(nan, xc, _mm256_setzero_ps());
    __m256 f = exp8(xc, tab);
    f = _mm256_mask_blend_ps(gt, f, _mm256_set1_ps(INFINITY));
    f = _mm256_mask_blend_ps(lt, f, _mm256_setzero_ps());
    return _mm256_mask_blend_ps(nan, f, x);
}

/* -x by the sign bit (as C's negation: -0 for 0, NaN's sign flipped) */
AVX512VL static inline __m256 neg8(__m256 x)
{
    return _mm256_xor_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u)));
}

AVX512 static inline void exp_table(__m512i tab[4])
{
    for (int k = 0; k < 4; k++)
        tab[k] = _mm512_loadu_si512((const void *)(cpu_exp_table + 8 * k));
}

/* AVX-512 with the 256-bit forms (exp8s) */
static inline int have_avx512vl(void)
{
    static int have = -1;
    if (have < 0)
        have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") ? 1 : 0;
    return have;
}

static inline int have_avx512(void)
{
    static int have = -1;
    if (have < 0)
        have = __builtin_cpu_supports("avx512f") ? 1 : 0;
    return have;
}
#else
#define CPU_EXP512 0
#endif

#endif
