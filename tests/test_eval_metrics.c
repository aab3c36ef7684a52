/* test_eval_metrics: the ranking metrics of src/eval/eval_retrieval.c (HR@K, NDCG@K,
 * MRR) against values worked out by hand, the cutoffs' edges (rank K - 1 is
 * a hit, rank K a miss), an empty set, and the formatter. The reduction over
 * ranks is checked by the MPI test test_eval_retrieval. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "eval/eval_retrieval.h"

/* Ranks 0, 3, 9, 10, 49, 199, 250 (7 queries):
 *   HR@1 1/7, HR@10 3/7, HR@50 5/7, HR@200 6/7;
 *   NDCG@10  = (1/log2 2 + 1/log2 5 + 1/log2 11) / 7
 *            = (1 + 0.4306766 + 0.2890648) / 7 = 0.2456773;
 *   NDCG@50  = NDCG@10 + (1/log2 12 + 1/log2 51) / 7
 *            = 0.2456773 + (0.2789429 + 0.1762914) / 7 = 0.3107108;
 *   NDCG@200 = NDCG@50 + (1/log2 201) / 7 = 0.3107108 + 0.1306990 / 7 = 0.3293824;
 *   MRR = (1 + 1/4 + 1/10 + 1/11 + 1/50 + 1/200 + 1/251) / 7 = 0.2099847. */
static void test_hand_values(void **state)
{
    (void)state;
    static const int64_t ranks[] = {0, 3, 9, 10, 49, 199, 250};
    struct eval_metrics m;
    eval_metrics_init(&m);
    for (int i = 0; i < 7; i++)
        eval_metrics_add(&m, ranks[i]);
    assert_int_equal(m.count, 7);
    assert_float_equal(m.hr[0], 1.0, 1e-12); /* sums before finishing */
    assert_float_equal(m.hr[3], 6.0, 1e-12);
    eval_metrics_finish(&m);
    assert_true(m.finished);
    assert_float_equal(m.hr[0], 1.0 / 7, 1e-12);
    assert_float_equal(m.hr[1], 3.0 / 7, 1e-12);
    assert_float_equal(m.hr[2], 5.0 / 7, 1e-12);
    assert_float_equal(m.hr[3], 6.0 / 7, 1e-12);
    assert_float_equal(m.ndcg[0], 0.2456773, 1e-7);
    assert_float_equal(m.ndcg[1], 0.3107108, 1e-7);
    assert_float_equal(m.ndcg[2], 0.3293824, 1e-7);
    assert_float_equal(m.mrr, 0.2099847, 1e-7);
    /* finishing twice changes nothing */
    eval_metrics_finish(&m);
    assert_float_equal(m.hr[1], 3.0 / 7, 1e-12);
}

/* rank K - 1 counts at cutoff K, rank K does not */
static void test_cutoff_edges(void **state)
{
    (void)state;
    for (int i = 0; i < EVAL_NHR; i++) {
        struct eval_metrics a, b;
        eval_metrics_init(&a);
        eval_metrics_init(&b);
        eval_metrics_add(&a, eval_hr_k[i] - 1);
        eval_metrics_add(&b, eval_hr_k[i]);
        assert_float_equal(a.hr[i], 1.0, 0);
        assert_float_equal(b.hr[i], 0.0, 0);
    }
    for (int i = 0; i < EVAL_NNDCG; i++) {
        struct eval_metrics a, b;
        eval_metrics_init(&a);
        eval_metrics_init(&b);
        int K = eval_ndcg_k[i];
        eval_metrics_add(&a, K - 1);
        eval_metrics_add(&b, K);
        assert_float_equal(a.ndcg[i], 1.0 / log2((double)K + 1), 1e-15);
        assert_float_equal(b.ndcg[i], 0.0, 0);
    }
}

static void test_empty_and_format(void **state)
{
    (void)state;
    struct eval_metrics m;
    eval_metrics_init(&m);
    eval_metrics_finish(&m);
    assert_int_equal(m.count, 0);
    assert_float_equal(m.mrr, 0.0, 0); /* no NaN from 0 / 0 */
    char buf[256];
    eval_metrics_init(&m);
    eval_metrics_add(&m, 0);
    eval_metrics_add(&m, 1);
    eval_metrics_finish(&m);
    eval_metrics_format(&m, buf, sizeof buf);
    assert_string_equal(buf, "HR@1 0.5000 HR@10 1.0000 HR@50 1.0000 HR@200 1.0000 "
                             "NDCG@10 0.8155 NDCG@50 0.8155 NDCG@200 0.8155 "
                             "MRR 0.7500 (2 queries)");
    char small[20]; /* truncated, still terminated */
    eval_metrics_format(&m, small, sizeof small);
    assert_int_equal(strlen(small), sizeof small - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_values),
        cmocka_unit_test(test_cutoff_edges),
        cmocka_unit_test(test_empty_and_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
