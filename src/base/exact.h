/* exact: order-independent sums of floats (train.exact_sums, doc/training.md
 * "The same bits on any number of ranks").
 *
 * A float sum depends on the order of its additions; the sums of a step
 * (a dense gradient over the tokens of a rank, then over the ranks; a row's
 * gradient over the tokens that use it) are ordered by how the batch is cut
 * into ranks. Here a value is EXACT_LIMBS signed 64-bit limbs, limb k the
 * coefficient of 2^(32 k + EXACT_LSB): a float is placed into two limbs as
 * an integer, so adding contributions is integer addition (exact,
 * associative), and MPI_SUM over int64 adds accumulators of several ranks
 * to the same bits in any order. Each limb takes 32 bits a contribution and
 * has 31 more for carries: 2^31 contributions to one value before any
 * overflow. Range: bits 2^EXACT_LSB (= 2^-100; smaller parts of a value
 * are dropped, by magnitude, the same way in any order) up to magnitudes
 * below 2^28; a contribution outside (inf, nan, >= 2^28) is counted as bad,
 * and the result of an accumulator with a bad count is NaN (the divergence
 * guard's business). Converting back rounds once, the same way for the
 * same limbs. */
#ifndef FS_EXACT_H
#define FS_EXACT_H

#include <stdint.h>
#include <string.h>

#define EXACT_LIMBS 5
#define EXACT_LSB (-100)
#define EXACT_MAX_EXP 28 /* |v| < 2^28 */

/* acc[EXACT_LIMBS] += v; a value out of range adds 1 to *bad. Branch-free
 * on the common path (a normal float within range). */
static inline void exact_add(int64_t *acc, float v, int64_t *bad)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    const uint32_t be = (u >> 23) & 0xffu;
    uint64_t m = (u & 0x7fffffu) | ((uint64_t)(be != 0) << 23);
    int o = (int)be + (be == 0) - 150 - EXACT_LSB; /* v = +-m 2^(o + EXACT_LSB) */
    if (__builtin_expect(o < 0 || o > 32 * (EXACT_LIMBS - 1) - 24, 0)) {
        if (o > 0) { /* inf, nan, or too large */
            (*bad)++;
            return;
        }
        m = o <= -24 ? 0 : m >> -o; /* below the last bit: dropped by magnitude */
        o = 0;
    }
    const int64_t neg = -(int64_t)(u >> 31); /* 0 or -1: x -> (x ^ neg) - neg negates */
    const uint64_t x = m << (o & 31);         /* < 2^55 */
    const int k = o >> 5;
    acc[k] += ((int64_t)(x & 0xffffffffu) ^ neg) - neg;
    acc[k + 1] += ((int64_t)(x >> 32) ^ neg) - neg;
}

/* acc[n][EXACT_LIMBS] += v[n] */
void exact_add_vec(int64_t *acc, const float *v, int64_t n, int64_t *bad);
/* acc[n][EXACT_LIMBS] += a[n][EXACT_LIMBS] */
void exact_merge(int64_t *acc, const int64_t *a, int64_t n);
/* The wire form of n accumulators: EXACT_LIMBS 32-bit digits each (the
 * carries propagated: the low digits unsigned, the top one signed), half
 * the bytes of the limbs; exact_unpack_add adds them back as limbs. */
void exact_pack(const int64_t *acc, int64_t n, uint32_t *w);
void exact_unpack_add(int64_t *acc, const uint32_t *w, int64_t n);
/* A double into acc as two floats (its leading 48 bits): the loss's sum. */
void exact_add_double(int64_t *acc, double v, int64_t *bad);
/* The value of acc[EXACT_LIMBS] as a double (rounded once; NaN when bad). */
double exact_to_double(const int64_t *acc, int64_t bad);
/* out[n] = acc[n][EXACT_LIMBS] rounded to floats (all NaN when bad > 0). */
void exact_to_float(const int64_t *acc, int64_t n, int64_t bad, float *out);

#endif
