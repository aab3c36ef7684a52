/* test_balance: the balancers against hand-worked instances and invariants
 * (every sequence assigned once, equal counts kept, kk and lpt never worse
 * than contiguous shares on heavy-tailed costs, slower ranks get less), a
 * 4096-rank batch in bounded time and memory, and balance_adapt's rule on
 * made-up intervals (balance/adapt.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "balance/adapt.h"
#include "balance/balance.h"
#include "base/clock.h"
#include "base/rng.h"

static double spread2(const double *cost, int n, const int *owner)
{
    double l[2] = {0, 0};
    for (int i = 0; i < n; i++)
        l[owner[i]] += cost[i];
    return fabs(l[0] - l[1]);
}

static void test_hand_worked(void **state)
{
    (void)state;
    double cost[5] = {8, 7, 6, 5, 4};
    int owner[5];
    balance_assign(BALANCE_KK, 0, cost, 5, 2, NULL, owner);
    assert_true(spread2(cost, 5, owner) == 2); /* 8-7=1, 6-5=1, 4-1=3, 3-1=2 */
    balance_assign(BALANCE_LPT, 0, cost, 5, 2, NULL, owner);
    assert_true(spread2(cost, 5, owner) == 4); /* 8|7, 6->13, 5->13, 4->17 */
    balance_assign(BALANCE_NONE, 0, cost, 5, 2, NULL, owner);
    int want[5] = {0, 0, 1, 1, 1};
    for (int i = 0; i < 5; i++)
        assert_int_equal(owner[i], want[i]);
}

static double *heavy_tailed(int64_t n, uint64_t seed)
{
    double *c = malloc((size_t)n * sizeof *c);
    struct rng r;
    rng_init(&r, seed);
    for (int64_t i = 0; i < n; i++) {
        double L = fmin(1000, exp(4.0 + 1.2 * rng_normal(&r)));
        c[i] = 100 + 50 * L + L * L;
    }
    return c;
}

static void test_invariants(void **state)
{
    (void)state;
    const int Ps[] = {1, 2, 3, 8, 64};
    for (size_t pi = 0; pi < sizeof Ps / sizeof *Ps; pi++) {
        int P = Ps[pi];
        int64_t n = 32 * P + 5;
        double *cost = heavy_tailed(n, (uint64_t)P);
        int *owner = malloc((size_t)n * sizeof *owner);
        double b_none, b, imb;
        balance_assign(BALANCE_NONE, 0, cost, n, P, NULL, owner);
        balance_bubble(cost, n, P, owner, NULL, &b_none, &imb);
        for (int mode = BALANCE_LPT; mode <= BALANCE_KK; mode++)
            for (int eq = 0; eq < 2; eq++) {
                balance_assign((enum balance_mode)mode, eq, cost, n, P, NULL, owner);
                int64_t *count = calloc((size_t)P, sizeof *count);
                for (int64_t i = 0; i < n; i++) {
                    assert_true(owner[i] >= 0 && owner[i] < P);
                    count[owner[i]]++;
                }
                if (eq) /* n/P each, one more on n mod P ranks */
                    for (int r = 0; r < P; r++)
                        assert_true(count[r] == n / P || count[r] == n / P + 1);
                free(count);
                balance_bubble(cost, n, P, owner, NULL, &b, &imb);
                if (P > 1 && !(b <= b_none))
                    fail_msg("P=%d %s eq=%d: bubble %g worse than none %g", P,
                             balance_name((enum balance_mode)mode), eq, b, b_none);
            }
        free(cost);
        free(owner);
    }
}

static void test_speed_weighting(void **state)
{
    (void)state;
    int64_t n = 200;
    double *cost = heavy_tailed(n, 7), speed[2] = {1.0, 0.5};
    int *owner = malloc((size_t)n * sizeof *owner);
    balance_assign(BALANCE_KK, 0, cost, n, 2, speed, owner);
    double l[2] = {0, 0}, b, imb;
    for (int64_t i = 0; i < n; i++)
        l[owner[i]] += cost[i];
    assert_true(l[1] < 0.6 * l[0]); /* the half-speed rank gets about a third */
    balance_bubble(cost, n, 2, owner, speed, &b, &imb);
    assert_true(b < 0.05);
    free(cost);
    free(owner);
}

/* Under AddressSanitizer (the CI's sanitizer pass) at 512 ranks: the same
 * code paths, without the 70 s its allocator adds to KK's merges at 4096. */
#ifdef __SANITIZE_ADDRESS__
#define MANY_RANKS 512
#else
#define MANY_RANKS 4096
#endif

static void test_4096_ranks(void **state)
{
    (void)state;
    int P = MANY_RANKS;
    int64_t n = 32 * (int64_t)P;
    double *cost = heavy_tailed(n, 11);
    int *owner = malloc((size_t)n * sizeof *owner);
    double t0 = clock_seconds(), b_none, b_kk, imb;
    balance_assign(BALANCE_NONE, 0, cost, n, P, NULL, owner);
    balance_bubble(cost, n, P, owner, NULL, &b_none, &imb);
    balance_assign(BALANCE_KK, 0, cost, n, P, NULL, owner);
    balance_bubble(cost, n, P, owner, NULL, &b_kk, &imb);
    printf("# P=%d, n=%lld: bubble none %.3f, kk %.4f (%.2f s)\n", P, (long long)n, b_none, b_kk,
           clock_seconds() - t0);
    assert_true(b_kk < 0.1 * b_none);
    free(cost);
    free(owner);
}

/* n intervals of 2 ranks, equal costs, with wall and CPU busy seconds per
 * unit of cost (wall[1], cpu[1]: rank 1's; rank 0's are 1) over `steps`
 * seconds of wall time, bubble b; cpu1 < 0: CPU not measured (a device).
 * Returns the verdict of the last, *updated the first interval that
 * adopted speeds (0-based, -1: none), *wire the count of ADAPT_WIRE. */
static enum adapt_verdict intervals(struct adapt *a, int n, double wall1, double cpu1,
                                    double steps, double b, int *updated, int *wire)
{
    const double tau[2] = {1e-9, wall1 * 1e-9}, cpu[2] = {0.5e-9, cpu1 * 0.5e-9};
    const double cost[2] = {1e6, 1e6};
    const struct adapt_obs o = {
        .tau = tau, .tau_cpu = cpu1 < 0 ? NULL : cpu, .cost = cost, .steps = steps, .bubble = b};
    enum adapt_verdict v = ADAPT_KEEP;
    for (int i = 0; i < n; i++) {
        double gain;
        v = adapt_learn(a, 2, &o, &gain);
        if (v == ADAPT_UPDATED && *updated < 0)
            *updated = i;
        *wire += v == ADAPT_WIRE;
    }
    return v;
}

static void test_adapt_rule(void **state)
{
    (void)state;
    struct adapt a = {0};
    int up = -1, wire = 0;
    /* rank 1 computes twice as slowly by both clocks, over a step of 3 ms
     * (rank 1 busy 2 ms): the warm-up, then two intervals in a row */
    intervals(&a, 5, 2, 2, 3e-3, 0.2, &up, &wire);
    assert_int_equal(up, 2);
    assert_int_equal(wire, 0);
    assert_true(fabs(a.speed[0] - 4.0 / 3) < 1e-12 && fabs(a.speed[1] - 2.0 / 3) < 1e-12);
    adapt_free(&a);
    /* rank 1 descheduled: 4x the wall time, the same CPU time; in a
     * communication-bound step (bubble 0.9): kept, and said once */
    up = -1, wire = 0;
    intervals(&a, 8, 4, 1, 5e-3, 0.9, &up, &wire);
    assert_int_equal(up, -1);
    assert_int_equal(wire, 1);
    assert_null(a.speed);
    adapt_free(&a);
    /* ... where the CPU time is not the compute's (a device): wall time decides */
    up = -1, wire = 0;
    intervals(&a, 4, 4, -1, 5e-3, 0.2, &up, &wire);
    assert_int_equal(up, 2);
    adapt_free(&a);
    /* slower by both, but the step is mostly waiting (2 ms of 100): under 5% */
    up = -1, wire = 0;
    intervals(&a, 8, 2, 2, 0.1, 0.95, &up, &wire);
    assert_int_equal(up, -1);
    assert_int_equal(wire, 1);
    adapt_free(&a);
    /* one interval's spike between even ones is not a slower rank */
    up = -1, wire = 0;
    intervals(&a, 2, 1, 1, 3e-3, 0.1, &up, &wire); /* the warm-up and an even one */
    intervals(&a, 1, 3, 3, 3e-3, 0.1, &up, &wire);
    intervals(&a, 1, 1, 1, 3e-3, 0.1, &up, &wire);
    intervals(&a, 1, 3, 3, 3e-3, 0.1, &up, &wire);
    assert_int_equal(up, -1);
    assert_int_equal(a.over, 1);
    adapt_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_worked), cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_speed_weighting), cmocka_unit_test(test_4096_ranks),
        cmocka_unit_test(test_adapt_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
