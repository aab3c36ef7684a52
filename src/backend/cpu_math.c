/* cpu_math: the tables of cpu_math.h's functions. */
#include "backend/cpu_math.h"

#include <pthread.h>

#include "base/check.h"

/* bits of 2^(i/32) less i 2^52 / 32 (tests/test_cpu_math.c recomputes them) */
const uint64_t cpu_exp_table[32] = {
    0x3ff0000000000000ull, 0x3fefd9b0d3158574ull, 0x3fefb5586cf9890full,
    0x3fef9301d0125b51ull, 0x3fef72b83c7d517bull, 0x3fef54873168b9aaull,
    0x3fef387a6e756238ull, 0x3fef1e9df51fdee1ull, 0x3fef06fe0a31b715ull,
    0x3feef1a7373aa9cbull, 0x3feedea64c123422ull, 0x3feece086061892dull,
    0x3feebfdad5362a27ull, 0x3feeb42b569d4f82ull, 0x3feeab07dd485429ull,
    0x3feea47eb03a5585ull, 0x3feea09e667f3bcdull, 0x3fee9f75e8ec5f74ull,
    0x3feea11473eb0187ull, 0x3feea589994cce13ull, 0x3feeace5422aa0dbull,
    0x3feeb737b0cdc5e5ull, 0x3feec49182a3f090ull, 0x3feed503b23e255dull,
    0x3feee89f995ad3adull, 0x3feeff76f2fb5e47ull, 0x3fef199bdd85529cull,
    0x3fef3720dcef9069ull, 0x3fef5818dcfba487ull, 0x3fef7c97337b9b5full,
    0x3fefa4afa2a490daull, 0x3fefd0765b6e4540ull
};

struct cpu_time_buckets cpu_time_bucket_table;
static pthread_once_t time_buckets_once = PTHREAD_ONCE_INIT;

static void time_buckets_fill(void)
{
    struct cpu_time_buckets *tb = &cpu_time_bucket_table;
    for (int k = 1; k <= HSTU_TIME_BUCKETS; k++) { /* bisection over [0, 2^63] */
        uint64_t lo = 0, hi = (uint64_t)1 << 63;
        while (lo < hi) {
            const uint64_t mid = lo + (hi - lo) / 2;
            if (cpu_time_bucket_abs_ref(mid) >= k)
                hi = mid;
            else
                lo = mid + 1;
        }
        tb->thr[k] = lo;
    }
    tb->thr[0] = 0;
    for (int k = HSTU_TIME_BUCKETS + 1; k <= HSTU_TIME_BUCKETS + CPU_TIME_STEPS; k++)
        tb->thr[k] = UINT64_MAX;
    for (int e = 0; e < 64; e++) {
        tb->first[e] = cpu_time_bucket_abs_ref((uint64_t)1 << e);
        const uint64_t top = e == 63 ? UINT64_MAX : ((uint64_t)1 << (e + 1)) - 1;
        if (cpu_time_bucket_abs_ref(top) - tb->first[e] > CPU_TIME_STEPS)
            fatal("time buckets: more than %d thresholds in [2^%d, 2^%d)", CPU_TIME_STEPS, e,
                  e + 1);
    }
}

void cpu_time_buckets_init(void)
{
    if (pthread_once(&time_buckets_once, time_buckets_fill))
        fatal("pthread_once failed (time buckets)");
}
