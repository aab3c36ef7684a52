/* test_eval_metrics: the ranking metrics of src/eval/eval_retrieval.c (HR@K, NDCG@K,
 * MRR) against values worked out by hand, the cutoffs' edges (rank K - 1 is
 * a hit, rank K a miss), an empty set, and the formatter. Ties: the
 * expectations over a target's equally likely positions among its ties
 * against enumerating the positions (the cutoffs inside, at the edges of
 * and outside the tied range; MRR's closed form past 4096 ties too), and
 * a tie-free query's figures bit for bit the plain rank's. The reduction over
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
        eval_metrics_add(&m, ranks[i], 0);
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
        eval_metrics_add(&a, eval_hr_k[i] - 1, 0);
        eval_metrics_add(&b, eval_hr_k[i], 0);
        assert_float_equal(a.hr[i], 1.0, 0);
        assert_float_equal(b.hr[i], 0.0, 0);
    }
    for (int i = 0; i < EVAL_NNDCG; i++) {
        struct eval_metrics a, b;
        eval_metrics_init(&a);
        eval_metrics_init(&b);
        int K = eval_ndcg_k[i];
        eval_metrics_add(&a, K - 1, 0);
        eval_metrics_add(&b, K, 0);
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
    eval_metrics_add(&m, 0, 0);
    eval_metrics_add(&m, 1, 0);
    eval_metrics_finish(&m);
    eval_metrics_format(&m, buf, sizeof buf);
    assert_string_equal(buf, "HR@1 0.5000 HR@10 1.0000 HR@50 1.0000 HR@200 1.0000 "
                             "NDCG@10 0.8155 NDCG@50 0.8155 NDCG@200 0.8155 "
                             "MRR 0.7500 (2 queries)");
    char small[20]; /* truncated, still terminated */
    eval_metrics_format(&m, small, sizeof small);
    assert_int_equal(strlen(small), sizeof small - 1);
}

/* The mean of f over the positions above .. above + ties, one by one. */
static double enumerate(int64_t above, int64_t ties, int K, int what)
{
    double s = 0;
    for (int64_t r = above; r <= above + ties; r++)
        s += what == 0 ? (r < K) : what == 1 ? (r < K ? 1.0 / log2((double)r + 2.0) : 0.0)
                                             : 1.0 / ((double)r + 1.0);
    return s / (double)(ties + 1);
}

static void test_ties_enumerated(void **state)
{
    (void)state;
    static const int64_t aboves[] = {0, 1, 5, 9, 10, 11, 49, 50, 190, 199, 200, 250, 5000};
    static const int64_t tiess[] = {0, 1, 2, 3, 9, 10, 40, 199, 200, 201, 1000, 4096, 4097,
                                    20000};
    int checked = 0;
    for (size_t a = 0; a < sizeof aboves / sizeof *aboves; a++)
        for (size_t t = 0; t < sizeof tiess / sizeof *tiess; t++) {
            const int64_t ab = aboves[a], ti = tiess[t];
            for (int i = 0; i < EVAL_NHR; i++)
                assert_float_equal(eval_tie_hr(ab, ti, eval_hr_k[i]),
                                   enumerate(ab, ti, eval_hr_k[i], 0), 1e-14);
            for (int i = 0; i < EVAL_NNDCG; i++)
                assert_float_equal(eval_tie_ndcg(ab, ti, eval_ndcg_k[i]),
                                   enumerate(ab, ti, eval_ndcg_k[i], 1), 1e-14);
            const double want = enumerate(ab, ti, 0, 2);
            assert_float_equal(eval_tie_mrr(ab, ti), want, 1e-12 * want);
            checked++;
        }
    /* MRR's closed form: above past the summed range too */
    assert_float_equal(eval_tie_mrr(100000, 5000), enumerate(100000, 5000, 0, 2), 1e-17);
    assert_float_equal(eval_tie_mrr(3, 1000000), enumerate(3, 1000000, 0, 2), 1e-17);
    /* every item tied, n candidates and the target: HR@K = K / (n + 1) */
    assert_float_equal(eval_tie_hr(0, 199, 10), 10.0 / 200.0, 1e-15);
    assert_float_equal(eval_tie_hr(0, 199, 200), 1.0, 0);
    /* no ties: the plain rank's figures, bit for bit */
    for (int64_t r = 0; r < 300; r++) {
        assert_true(eval_tie_mrr(r, 0) == 1.0 / ((double)r + 1.0));
        assert_true(eval_tie_ndcg(r, 0, 200) == (r < 200 ? 1.0 / log2((double)r + 2.0) : 0.0));
        assert_true(eval_tie_hr(r, 0, 50) == (r < 50 ? 1.0 : 0.0));
    }
    /* eval_metrics_add sums them */
    struct eval_metrics m;
    eval_metrics_init(&m);
    eval_metrics_add(&m, 3, 20);
    eval_metrics_add(&m, 0, 0);
    eval_metrics_finish(&m);
    assert_float_equal(m.hr[1], (7.0 / 21.0 + 1.0) / 2.0, 1e-15);
    assert_float_equal(m.mrr, (enumerate(3, 20, 0, 2) + 1.0) / 2.0, 1e-15);
    assert_int_equal(checked, 13 * 14);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ties_enumerated),
        cmocka_unit_test(test_hand_values),
        cmocka_unit_test(test_cutoff_edges),
        cmocka_unit_test(test_empty_and_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
