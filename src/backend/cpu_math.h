/* cpu_math: the scalar functions of the CPU backend's hot loops, each a
 * fast form beside its reference (tests/test_cpu_math.c compares them).
 *
 *   cpu_expf(x)          e^x, bitwise libm's expf (its algorithm, below), as an
 *                        inline expression that vectorises in a loop (libm's
 *                        expf is a call per element).
 *   cpu_time_bucket(dt)  HSTU's time bucket (backend.h) read from the
 *                        thresholds of the reference formula instead of a
 *                        log per pair: bitwise the reference's result. */
#ifndef FS_CPU_MATH_H
#define FS_CPU_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backend/backend.h"

/* e^x: the algorithm of glibc's expf (Arm's optimized-routines, e_expf.c,
 * whose published constants these are), with the fused multiply-adds the
 * x86-64 build of glibc forms, written as a branch-free expression so that
 * a loop of it vectorises: bitwise libm's expf on this platform (checked
 * against it over every float in tests/test_cpu_math.c). In double:
 * x N / ln2 = k + r (N = 32, k the nearest integer, |r| <= 1/2),
 * e^x = 2^(k/N) 2^(r/N), the first from a table (cpu_exp_table: tab[i] =
 * bits of 2^(i/N) less i 2^52 / N, so that adding k 2^52 / N puts in the
 * exponent), the second a cubic. Outside the range where it is finite and
 * not zero it is +inf or 0; NaN stays NaN. Without FMA hardware fma() is
 * a library call: the same results, slower. */
extern const uint64_t cpu_exp_table[32];

static inline float cpu_expf(float x)
{
    const double inv_ln2_n = 0x1.71547652b82fep+0 * 32, shift = 0x1.8p52;
    const double c0 = 0x1.c6af84b912394p-5 / 32 / 32 / 32, c1 = 0x1.ebfce50fac4f3p-3 / 32 / 32;
    const double c2 = 0x1.62e42ff0c52d6p-1 / 32;
    const float big = 0x1.62e42ep6f, small = -0x1.9fe368p6f; /* ln 2^128, ln 2^-150 */
    float xc = x > big ? big : x < small ? small : x;
    xc = xc == xc ? xc : 0.0f; /* NaN: any finite value, the result is x below */
    double xd = (double)xc;
    double kd = fma(inv_ln2_n, xd, shift); /* rounds to the nearest integer + shift */
    uint64_t ki;
    memcpy(&ki, &kd, sizeof ki);
    kd -= shift;
    double r = fma(inv_ln2_n, xd, -kd);
    uint64_t t = cpu_exp_table[ki % 32] + (ki << (52 - 5));
    double s;
    memcpy(&s, &t, sizeof s);
    double z = fma(c0, r, c1), r2 = r * r, y = fma(c2, r, 1.0);
    y = fma(z, r2, y) * s;
    float f = (float)y;
    f = x > big ? INFINITY : x < small ? 0.0f : f;
    return x == x ? f : x;
}

/* The reference: min(floor(ln(max(|dt|, 1)) / 0.301), HSTU_TIME_BUCKETS),
 * as a function of a = |dt| (-(double)dt for dt < 0 is (double)a: rounding
 * is symmetric). */
static inline int32_t cpu_time_bucket_abs_ref(uint64_t a)
{
    double x = (double)a;
    double f = floor(log(x > 1 ? x : 1) / 0.301);
    return f >= HSTU_TIME_BUCKETS ? HSTU_TIME_BUCKETS : (int32_t)f;
}

/* thr[k] = the smallest |dt| whose reference bucket is >= k (k = 1 ..
 * HSTU_TIME_BUCKETS; the reference is non-decreasing in |dt|); thr[0] = 0
 * and thr[k] = UINT64_MAX above, so that bucket k holds exactly [thr[k],
 * thr[k + 1]); first[e] = the reference bucket of 2^e. Set once by
 * cpu_time_buckets_init(), which checks that no octave [2^e, 2^(e+1)) holds
 * more than CPU_TIME_STEPS thresholds (the buckets are ln(2) / 0.301 = 2.3
 * to an octave). */
#define CPU_TIME_STEPS 3
struct cpu_time_buckets {
    uint64_t thr[HSTU_TIME_BUCKETS + 1 + CPU_TIME_STEPS];
    int32_t first[64];
};
extern struct cpu_time_buckets cpu_time_bucket_table;
void cpu_time_buckets_init(void); /* thread-safe, once per process */

/* The bucket of a = |dt|: 2^e's, then up one for each threshold of the
 * octave that a reaches. No branch: a loop of it vectorises. */
static inline int32_t cpu_time_bucket_abs(uint64_t a)
{
    const struct cpu_time_buckets *tb = &cpu_time_bucket_table;
    const int64_t k = tb->first[63 - __builtin_clzll(a | 1)]; /* 64 bits: the lookups vectorise */
    return (int32_t)(k + (a >= tb->thr[k + 1]) + (a >= tb->thr[k + 2]) + (a >= tb->thr[k + 3]));
}

static inline int32_t cpu_time_bucket(int64_t dt)
{
    return cpu_time_bucket_abs(dt < 0 ? -(uint64_t)dt : (uint64_t)dt);
}

#endif
