/* test_exact: the order-independent sums of src/base/exact.h against an
 * independent oracle (the same values as 128-bit integers of 2^-83, summed
 * exactly), in every order and cut into parts as ranks would be: the same
 * bits every time; cancellation exact; the range's edges. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/exact.h"
#include "base/rng.h"

#define N 20000

/* floats of both signs with exponents in [-60, 20] */
static void values(float *v, int n, uint64_t key)
{
    struct rng g;
    rng_init(&g, rng_key(key, 1, 2));
    for (int i = 0; i < n; i++) {
        double m = 1.0 + (double)rng_below(&g, 1u << 23) / 8388608.0;
        int e = -60 + (int)rng_below(&g, 81);
        v[i] = (float)ldexp(rng_below(&g, 2) ? -m : m, e);
    }
}

/* the oracle: sum of v as an integer multiple of 2^-83 */
static __int128 oracle(const float *v, int n)
{
    __int128 s = 0;
    for (int i = 0; i < n; i++) {
        int e;
        double f = frexp((double)v[i], &e); /* v = f 2^e, |f| in [0.5, 1) */
        int64_t m = (int64_t)ldexp(f, 24);  /* exact: 24 bits */
        s += (__int128)m * ((__int128)1 << (e - 24 + 83)); /* m may be negative: no shift */
    }
    return s;
}

static double i128_to_double(__int128 s)
{
    int neg = s < 0;
    unsigned __int128 a = neg ? (unsigned __int128)(-s) : (unsigned __int128)s;
    long double x = (long double)(uint64_t)(a >> 64) * 18446744073709551616.0L +
                    (long double)(uint64_t)a;
    x = ldexpl(x, -83);
    return (double)(neg ? -x : x);
}

static double sum_exact(const float *v, const int *order, int n, int parts)
{
    /* cut into `parts` accumulators (ranks), each in the given order, merged */
    int64_t *acc = calloc((size_t)parts * EXACT_LIMBS, sizeof *acc), bad = 0;
    for (int i = 0; i < n; i++)
        exact_add(acc + (order[i] % parts) * EXACT_LIMBS, v[order[i]], &bad);
    for (int p = 1; p < parts; p++)
        exact_merge(acc, acc + p * EXACT_LIMBS, 1);
    double r = exact_to_double(acc, bad);
    free(acc);
    return r;
}

static void test_orders_and_oracle(void **state)
{
    (void)state;
    float *v = malloc(N * sizeof *v);
    int *order = malloc(N * sizeof *order);
    values(v, N, 7);
    for (int i = 0; i < N; i++)
        order[i] = i;
    const double ref = sum_exact(v, order, N, 1), want = i128_to_double(oracle(v, N));
    assert_true(fabs(ref - want) <= fabs(want) * 0x1p-52);
    struct rng g;
    rng_init(&g, rng_key(9, 9, 9));
    for (int trial = 0; trial < 8; trial++) {
        for (int i = N - 1; i > 0; i--) { /* shuffle */
            int j = (int)rng_below(&g, (uint64_t)i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int parts = 1; parts <= 4; parts++) {
            double r = sum_exact(v, order, N, parts);
            assert_memory_equal(&r, &ref, sizeof r); /* the same bits */
        }
    }
    /* a float sum in two orders differs here (the test's premise) */
    float f1 = 0, f2 = 0;
    for (int i = 0; i < N; i++) {
        f1 += v[i];
        f2 += v[N - 1 - i];
    }
    assert_true(f1 != f2);
    free(v);
    free(order);
}

static void test_cancellation_and_edges(void **state)
{
    (void)state;
    int64_t acc[EXACT_LIMBS] = {0}, bad = 0;
    exact_add(acc, 1e8f, &bad);
    exact_add(acc, 1.0f, &bad);
    exact_add(acc, -1e8f, &bad);
    assert_true(exact_to_double(acc, bad) == 1.0);
    exact_add(acc, -1.0f, &bad);
    assert_true(exact_to_double(acc, bad) == 0.0);
    exact_add(acc, -0x1p-90f, &bad); /* a small negative value after cancellation */
    assert_true(exact_to_double(acc, bad) == -0x1p-90);
    exact_add(acc, 0x1p-90f, &bad);
    exact_add(acc, 0x1p-120f, &bad); /* below 2^-100: dropped */
    exact_add(acc, 1e-45f, &bad);    /* subnormal: dropped */
    assert_true(exact_to_double(acc, bad) == 0.0);
    assert_int_equal(bad, 0);
    exact_add(acc, 0x1.fffffep27f, &bad); /* the largest magnitude taken */
    exact_add(acc, -0x1.fffffep27f, &bad);
    assert_int_equal(bad, 0);
    exact_add(acc, 0x1p28f, &bad); /* out of range */
    exact_add(acc, INFINITY, &bad);
    exact_add(acc, NAN, &bad);
    assert_int_equal(bad, 3);
    assert_true(isnan(exact_to_double(acc, bad)));
    /* a double's leading bits: 1 + 2^-40 survives (a float would drop it) */
    int64_t b2[EXACT_LIMBS] = {0}, bad2 = 0;
    exact_add_double(b2, 1.0 + 0x1p-40, &bad2);
    assert_true(exact_to_double(b2, bad2) == 1.0 + 0x1p-40);
    float out[1];
    exact_to_float(b2, 1, bad2, out);
    assert_true(out[0] == 1.0f);
}

/* many contributions to one value: the limbs' headroom */
static void test_many(void **state)
{
    (void)state;
    int64_t acc[EXACT_LIMBS] = {0}, bad = 0;
    for (int i = 0; i < 1000000; i++)
        exact_add(acc, 0x1.fffffep26f, &bad);
    assert_true(exact_to_double(acc, bad) == 1e6 * (double)0x1.fffffep26f);
}

/* the wire form: packed and added back, the same values; packs of two
 * ranks' accumulators added as the owner does give their sum's bits */
static void test_pack(void **state)
{
    (void)state;
    enum { M = 64 };
    float v[M * 40];
    values(v, M * 40, 11);
    int64_t a[2][M * EXACT_LIMBS], both[M * EXACT_LIMBS], back[M * EXACT_LIMBS], bad = 0;
    memset(a, 0, sizeof a);
    memset(both, 0, sizeof both);
    memset(back, 0, sizeof back);
    for (int i = 0; i < M * 40; i++) { /* two "ranks", 20 contributions each per value */
        exact_add(a[i % 2] + (i / 40) * EXACT_LIMBS, v[i], &bad);
        exact_add(both + (i / 40) * EXACT_LIMBS, v[i], &bad);
    }
    uint32_t w[M * EXACT_LIMBS];
    for (int r = 0; r < 2; r++) {
        exact_pack(a[r], M, w);
        exact_unpack_add(back, w, M);
    }
    for (int i = 0; i < M; i++) {
        double x = exact_to_double(back + i * EXACT_LIMBS, 0),
               y = exact_to_double(both + i * EXACT_LIMBS, 0);
        assert_memory_equal(&x, &y, sizeof x);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_orders_and_oracle),
        cmocka_unit_test(test_cancellation_and_edges),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_pack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
