/* exact: order-independent sums of floats; see exact.h. */
#include "base/exact.h"

#include <math.h>

void exact_add_vec(int64_t *acc, const float *v, int64_t n, int64_t *bad)
{
    for (int64_t i = 0; i < n; i++)
        exact_add(acc + i * EXACT_LIMBS, v[i], bad);
}

void exact_merge(int64_t *acc, const int64_t *a, int64_t n)
{
    for (int64_t i = 0; i < n * EXACT_LIMBS; i++)
        acc[i] += a[i];
}

void exact_add_double(int64_t *acc, double v, int64_t *bad)
{
    if (!isfinite(v)) {
        (*bad)++;
        return;
    }
    const float hi = (float)v;
    exact_add(acc, hi, bad);
    exact_add(acc, (float)(v - (double)hi), bad);
}

double exact_to_double(const int64_t *acc, int64_t bad)
{
    if (bad > 0)
        return NAN;
    /* carries out: digits d[k] in [0, 2^32), the rest (a sign) in top */
    uint64_t d[EXACT_LIMBS];
    int64_t top = 0;
    for (int k = 0; k < EXACT_LIMBS; k++) {
        const int64_t t = acc[k] + top;
        d[k] = (uint64_t)t & 0xffffffffu;
        top = (t - (int64_t)d[k]) / ((int64_t)1 << 32); /* exact: a multiple of 2^32 */
    }
    const int neg = top < 0;
    if (neg) { /* magnitude: two's complement over the digits and top */
        uint64_t carry = 1;
        for (int k = 0; k < EXACT_LIMBS; k++) {
            const uint64_t t = (~d[k] & 0xffffffffu) + carry;
            d[k] = t & 0xffffffffu;
            carry = t >> 32;
        }
        top = ~top + (int64_t)carry;
    }
    double x = (double)top; /* high to low: each step rounds the same way for the same limbs */
    for (int k = EXACT_LIMBS - 1; k >= 0; k--)
        x = x * 4294967296.0 + (double)d[k];
    x = ldexp(x, EXACT_LSB);
    return neg ? -x : x;
}

void exact_to_float(const int64_t *acc, int64_t n, int64_t bad, float *out)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = (float)exact_to_double(acc + i * EXACT_LIMBS, bad);
}

void exact_pack(const int64_t *acc, int64_t n, uint32_t *w)
{
    for (int64_t i = 0; i < n; i++, acc += EXACT_LIMBS, w += EXACT_LIMBS) {
        int64_t carry = 0;
        for (int k = 0; k < EXACT_LIMBS - 1; k++) {
            const int64_t t = acc[k] + carry;
            w[k] = (uint32_t)((uint64_t)t & 0xffffffffu);
            carry = (t - (int64_t)w[k]) / ((int64_t)1 << 32); /* exact */
        }
        /* the top: |value| < 2^(32 (EXACT_LIMBS - 1) + 31) for < 2^31 contributions */
        w[EXACT_LIMBS - 1] = (uint32_t)(int32_t)(acc[EXACT_LIMBS - 1] + carry);
    }
}

void exact_unpack_add(int64_t *acc, const uint32_t *w, int64_t n)
{
    for (int64_t i = 0; i < n; i++, acc += EXACT_LIMBS, w += EXACT_LIMBS) {
        for (int k = 0; k < EXACT_LIMBS - 1; k++)
            acc[k] += (int64_t)w[k];
        acc[EXACT_LIMBS - 1] += (int64_t)(int32_t)w[EXACT_LIMBS - 1];
    }
}
