/* test_rng: the counter-based generator (src/base/rng.h) and the Zipf sampler
 * (src/base/zipf.h): determinism, key sensitivity, ranges, and goodness of fit
 * (chi-square with generous bounds; every stream has a fixed key, so the
 * figures are the same on every run and the tests cannot flake). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/rng.h"
#include "base/zipf.h"

/* Same key, same stream; the stream does not repeat early. */
static void test_deterministic(void **state)
{
    (void)state;
    struct rng a, b;
    rng_init(&a, rng_key(42, 7, 3));
    rng_init(&b, rng_key(42, 7, 3));
    uint64_t first = rng_u64(&a);
    assert_int_equal(first, rng_u64(&b));
    for (int i = 0; i < 1000; i++) {
        uint64_t x = rng_u64(&a);
        assert_int_equal(x, rng_u64(&b));
        assert_int_not_equal(x, first);
    }
}

static int popcount64(uint64_t x) { return __builtin_popcountll(x); }

/* Flipping any bit of any key word changes about half the key's bits, and
 * permuting the words changes the key. */
static void test_key_sensitivity(void **state)
{
    (void)state;
    const uint64_t base[3] = {12345, 678, 9};
    uint64_t k0 = rng_key(base[0], base[1], base[2]);
    double total = 0;
    int flips = 0;
    for (int w = 0; w < 3; w++)
        for (int bit = 0; bit < 64; bit++) {
            uint64_t v[3] = {base[0], base[1], base[2]};
            v[w] ^= 1ull << bit;
            uint64_t k = rng_key(v[0], v[1], v[2]);
            int d = popcount64(k ^ k0);
            assert_true(d >= 8); /* never a near-copy */
            total += d;
            flips++;
        }
    double mean = total / flips;
    printf("# mean changed key bits per flipped input bit: %.2f of 64\n", mean);
    assert_true(mean > 28 && mean < 36);
    assert_int_not_equal(rng_key(1, 2, 3), rng_key(2, 1, 3));
    assert_int_not_equal(rng_key(1, 2, 3), rng_key(1, 3, 2));
    assert_int_not_equal(rng_key(0, 0, 0), rng_key(0, 0, 1));
    /* neighbouring keys (users u, u + 1) give unrelated first draws */
    struct rng a, b;
    rng_init(&a, rng_key(1, 100, 2));
    rng_init(&b, rng_key(1, 101, 2));
    int d = popcount64(rng_u64(&a) ^ rng_u64(&b));
    assert_true(d > 10 && d < 54);
}

/* rng_below(n) stays in [0, n) for awkward n, including 1 and 2^64 - 1. */
static void test_below_range(void **state)
{
    (void)state;
    const uint64_t ns[] = {1, 2, 3, 7, 10, 1000, (1ull << 32) + 1, (1ull << 63) + 5,
                           UINT64_MAX};
    struct rng r;
    rng_init(&r, rng_key(3, 1, 4));
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        uint64_t hi = 0;
        for (int k = 0; k < 20000; k++) {
            uint64_t x = rng_below(&r, ns[i]);
            assert_true(x < ns[i]);
            hi = x > hi ? x : hi;
        }
        if (ns[i] > 1000) /* the top half is reached */
            assert_true(hi > ns[i] / 2);
    }
    for (int k = 0; k < 1000; k++) {
        double u = rng_uniform(&r);
        assert_true(u >= 0.0 && u < 1.0);
    }
}

/* Chi-square of counts[n] against expected[n]. */
static double chi_square(const int64_t *counts, const double *expected, int n)
{
    double c = 0;
    for (int i = 0; i < n; i++) {
        double d = (double)counts[i] - expected[i];
        c += d * d / expected[i];
    }
    return c;
}

/* rng_below is uniform: chi-square with df = n - 1 well under mean + 8 sd. */
static void test_below_uniform(void **state)
{
    (void)state;
    const int ns[] = {2, 10, 97, 1000};
    for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
        int n = ns[t];
        int64_t draws = 200 * (int64_t)n + 100000;
        int64_t *counts = calloc((size_t)n, sizeof *counts);
        double *expected = malloc((size_t)n * sizeof *expected);
        struct rng r;
        rng_init(&r, rng_key(2024, (uint64_t)n, 0));
        for (int64_t k = 0; k < draws; k++)
            counts[rng_below(&r, (uint64_t)n)]++;
        for (int i = 0; i < n; i++)
            expected[i] = (double)draws / n;
        double c = chi_square(counts, expected, n), df = n - 1;
        printf("# rng_below(%d): chi2 %.1f, df %.0f\n", n, c, df);
        assert_true(c < df + 8 * sqrt(2 * df) + 10);
        free(counts);
        free(expected);
    }
}

/* Moments of rng_uniform and rng_normal. */
static void test_moments(void **state)
{
    (void)state;
    struct rng r;
    rng_init(&r, rng_key(5, 5, 5));
    const int n = 200000;
    double su = 0, sn = 0, sn2 = 0;
    for (int i = 0; i < n; i++) {
        su += rng_uniform(&r);
        double z = rng_normal(&r);
        sn += z;
        sn2 += z * z;
    }
    assert_true(fabs(su / n - 0.5) < 0.005);
    assert_true(fabs(sn / n) < 0.015);
    assert_true(fabs(sn2 / n - 1.0) < 0.02);
}

/* Zipf ranks stay in 1..n and follow k^-s / H(n, s). */
static void test_zipf_fit(void **state)
{
    (void)state;
    const double ss[] = {0.0, 0.3, 1.0, 1.2, 2.0, 4.0};
    const int n = 30;
    const int64_t draws = 300000;
    for (size_t t = 0; t < sizeof ss / sizeof *ss; t++) {
        struct zipf z;
        zipf_init(&z, n, ss[t]);
        struct rng r;
        rng_init(&r, rng_key(77, (uint64_t)t, 0));
        int64_t counts[30] = {0};
        double h = 0;
        for (int k = 1; k <= n; k++)
            h += pow(k, -ss[t]);
        for (int64_t i = 0; i < draws; i++) {
            int64_t k = zipf_sample(&z, &r);
            assert_true(k >= 1 && k <= n);
            counts[k - 1]++;
        }
        /* pool the sparse tail (expected < 5) into one cell */
        int cells = 0;
        int64_t pc[30];
        double pe[30], tail_e = 0;
        int64_t tail_c = 0;
        for (int k = 1; k <= n; k++) {
            double e = (double)draws * pow(k, -ss[t]) / h;
            if (e >= 5) {
                pc[cells] = counts[k - 1];
                pe[cells++] = e;
            } else {
                tail_c += counts[k - 1];
                tail_e += e;
            }
        }
        if (tail_e > 0) {
            pc[cells] = tail_c;
            pe[cells++] = tail_e;
        }
        double c = chi_square(pc, pe, cells), df = cells - 1;
        printf("# zipf s=%.1f n=%d: P(1) %.4f (theory %.4f), chi2 %.1f, df %.0f\n", ss[t], n,
               (double)counts[0] / (double)draws, 1.0 / h, c, df);
        assert_true(c < df + 8 * sqrt(2 * df) + 10);
    }
}

/* Degenerate and huge n: one item; 2^50 items stay in range with P(1) right. */
static void test_zipf_edges(void **state)
{
    (void)state;
    struct zipf z;
    struct rng r;
    rng_init(&r, rng_key(9, 9, 9));
    zipf_init(&z, 1, 1.5);
    for (int i = 0; i < 100; i++)
        assert_int_equal(zipf_sample(&z, &r), 1);
    zipf_init(&z, 2, 1.0); /* P(1) = 2/3 */
    int64_t ones = 0;
    for (int i = 0; i < 90000; i++)
        ones += zipf_sample(&z, &r) == 1;
    assert_true(fabs((double)ones / 90000 - 2.0 / 3.0) < 0.01);
    const int64_t big = (int64_t)1 << 50;
    zipf_init(&z, big, 2.0); /* P(1) = 1 / zeta(2) = 6 / pi^2, to 1e-15 */
    ones = 0;
    for (int i = 0; i < 100000; i++) {
        int64_t k = zipf_sample(&z, &r);
        assert_true(k >= 1 && k <= big);
        ones += k == 1;
    }
    assert_true(fabs((double)ones / 100000 - 6.0 / (M_PI * M_PI)) < 0.01);
    zipf_init(&z, big, 0.0); /* uniform: the top half is reached */
    int64_t hi = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t k = zipf_sample(&z, &r);
        hi = k > hi ? k : hi;
    }
    assert_true(hi > big / 2 && hi <= big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_key_sensitivity),
        cmocka_unit_test(test_below_range),
        cmocka_unit_test(test_below_uniform),
        cmocka_unit_test(test_moments),
        cmocka_unit_test(test_zipf_fit),
        cmocka_unit_test(test_zipf_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
