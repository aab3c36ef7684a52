/* test_neg_list: negatives drawn from an item list (src/train/neg_list.h),
 * the sampler of raw-id datasets: only ids of the list, deterministic,
 * keyed by the position alone (the same whichever positions share a call,
 * so the same on any rank count), the dense sampler's draws mapped through
 * the list (a list 1 .. N gives them exactly), and uniform over the list
 * (chi-square with a generous bound on a fixed key: cannot flake). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/loss.h"
#include "train/neg_list.h"

#define N 97
#define T 40
#define R 16
#define K 1099511627791LL /* odd, about 2^40 */

static int64_t list[N];
static uint64_t keys[T];

static int setup(void **state)
{
    (void)state;
    for (int64_t j = 0; j < N; j++) /* sorted raw ids, not contiguous */
        list[j] = (3 * j + 1) * K;
    for (int i = 0; i < T; i++)
        keys[i] = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) ^ (uint64_t)i << 40;
    return 0;
}

static int64_t find(int64_t id)
{
    for (int64_t j = 0; j < N; j++)
        if (list[j] == id)
            return j;
    return -1;
}

static void test_ids_from_list_and_dense_mapped(void **state)
{
    (void)state;
    int64_t neg[T * R], dense[T * R], again[T * R], one[T * R];
    neg_list_sample(7, 3, keys, T, R, list, N, neg);
    neg_list_sample(7, 3, keys, T, R, list, N, again);
    assert_memory_equal(neg, again, sizeof neg);
    loss_sample_negatives(7, 3, keys, T, R, N, dense);
    int64_t seq[N];
    for (int64_t j = 0; j < N; j++)
        seq[j] = j + 1;
    neg_list_sample(7, 3, keys, T, R, seq, N, one);
    assert_memory_equal(one, dense, sizeof one); /* list 1 .. N: the dense draws */
    for (int k = 0; k < T * R; k++) {
        assert_true(find(neg[k]) >= 0);
        assert_int_equal(neg[k], list[dense[k] - 1]);
    }
    /* another seed or epoch: other draws */
    neg_list_sample(8, 3, keys, T, R, list, N, again);
    assert_true(memcmp(neg, again, sizeof neg) != 0);
    neg_list_sample(7, 4, keys, T, R, list, N, again);
    assert_true(memcmp(neg, again, sizeof neg) != 0);
}

/* Positions split over 1, 2, 3 or 4 calls (ranks) in any grouping give
 * every position the same draws. */
static void test_any_split(void **state)
{
    (void)state;
    int64_t whole[T * R], part[T * R];
    neg_list_sample(11, 0, keys, T, R, list, N, whole);
    for (int P = 2; P <= 4; P++) {
        memset(part, 0, sizeof part);
        for (int r = 0; r < P; r++) { /* rank r: positions r, r + P, ... (one call) */
            uint64_t k[T];
            int64_t out[T * R];
            int m = 0;
            for (int i = r; i < T; i += P)
                k[m++] = keys[i];
            neg_list_sample(11, 0, k, m, R, list, N, out);
            m = 0;
            for (int i = r; i < T; i += P, m++)
                memcpy(part + i * R, out + m * R, R * sizeof *out);
        }
        assert_memory_equal(part, whole, sizeof part);
    }
}

/* Uniform over the list: 97 x 2000 draws, chi-square (96 degrees of
 * freedom, mean 96, sd ~14) well under 200. */
static void test_uniform(void **state)
{
    (void)state;
    enum { M = 12125 };
    static uint64_t k[M];
    static int64_t out[M * R];
    for (int i = 0; i < M; i++)
        k[i] = (uint64_t)i * 2654435761u + 17;
    neg_list_sample(5, 1, k, M, R, list, N, out);
    int64_t count[N] = {0};
    for (int64_t i = 0; i < (int64_t)M * R; i++) {
        const int64_t j = find(out[i]);
        assert_true(j >= 0);
        count[j]++;
    }
    const double e = (double)M * R / N;
    double chi = 0;
    for (int j = 0; j < N; j++)
        chi += (count[j] - e) * (count[j] - e) / e;
    assert_true(chi < 200.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_from_list_and_dense_mapped),
        cmocka_unit_test(test_any_split),
        cmocka_unit_test(test_uniform),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
