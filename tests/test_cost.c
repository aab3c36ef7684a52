/* test_cost: the sequence cost model (cost.c).
 *
 * - parallel.cost_model parsing: good triples, and refusals that name the
 *   parameter (too few or many numbers, negatives, all zero, not numbers,
 *   inf/nan, trailing text);
 * - the FLOP-count default against the formula worked by hand for the
 *   ml-1m HSTU configuration, and its structure (SASRec's dense work above
 *   HSTU's, b proportional to layers, BCE below sampled softmax);
 * - its dense term against the real models: the GEMM FLOPs of one forward
 *   and backward of HSTU and SASRec, counted by wrapping the CPU backend's
 *   gemm, are 3 layers W d^2 per token (W = 10 resp. 12) within the bias
 *   rows, and do not depend on how the tokens are split into sequences (the
 *   quadratic attention work is outside the GEMMs). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "balance/cost.h"
#include "model/model.h"
#include "base/params.h"
#include "base/rng.h"

static void test_parse(void **state)
{
    (void)state;
    struct cost_model m;
    char err[256];
    assert_int_equal(cost_model_parse("1,2,3", &m, err, sizeof err), 0);
    assert_true(m.c0 == 1 && m.a == 2 && m.b == 3);
    assert_int_equal(cost_model_parse("38.6891, 7.94139,0.0388951", &m, err, sizeof err), 0);
    assert_true(fabs(m.b - 0.0388951) < 1e-12);
    assert_int_equal(cost_model_parse("0,0,1e-3", &m, err, sizeof err), 0);
    const char *bad[] = {"", "1,2", "1,2,3,4", "a,b,c", "-1,2,3", "1,-2,3", "0,0,0",
                         "nan,1,1", "1,inf,1", "1,2,3x", "1;2;3", "auto"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = 0;
        assert_int_equal(cost_model_parse(bad[i], &m, err, sizeof err), -1);
        assert_non_null(strstr(err, "parallel.cost_model"));
    }
}

static void test_auto_by_hand(void **state)
{
    (void)state;
    /* HSTU d 50, 2 layers, 1 head, 128 negatives:
     * f_tok = 3 (2 (10 2500 + 40 50) + 10 50 + 2 50 129 + 6 129) = 204522,
     * f_pair = 4 2 (4 50 + 8) = 1664 -> b = 832, a = f_tok + 832 */
    struct model_conf c = {.type = MODEL_HSTU, .d = 50, .layers = 2, .heads = 1, .max_len = 200};
    struct cost_model m;
    cost_model_auto(&c, 128, 0, &m);
    assert_true(m.c0 == 204522 && m.a == 205354 && m.b == 832);

    struct cost_model s, bce, deep;
    c.type = MODEL_SASREC;
    cost_model_auto(&c, 128, 0, &s);
    assert_true(s.a > m.a && s.b == m.b);
    cost_model_auto(&c, 128, 1, &bce);
    assert_true(bce.a < s.a && bce.b == s.b);
    c.layers = 4;
    cost_model_auto(&c, 128, 0, &deep);
    assert_true(deep.b == 2 * s.b);

    /* from parameters: auto, and an explicit model */
    static struct params p;
    char err[PARAM_ERR_MAX];
    params_defaults(&p);
    assert_int_equal(params_set(&p, "model", "dim", "50", "test", err, sizeof err), 0);
    int is_auto = 0;
    struct cost_model q;
    assert_int_equal(cost_model_from_params(&p, &q, &is_auto, err, sizeof err), 0);
    assert_true(is_auto && q.c0 == 204522 && q.a == 205354 && q.b == 832);
    assert_int_equal(params_set(&p, "parallel", "cost_model", "4,5,6", "test", err, sizeof err),
                     0);
    assert_int_equal(cost_model_from_params(&p, &q, &is_auto, err, sizeof err), 0);
    assert_true(!is_auto && q.c0 == 4 && q.a == 5 && q.b == 6);
    assert_int_equal(params_set(&p, "parallel", "cost_model", "4,5", "test", err, sizeof err), 0);
    assert_int_equal(cost_model_from_params(&p, &q, &is_auto, err, sizeof err), -1);
    assert_non_null(strstr(err, "parallel.cost_model"));
}

/* --- GEMM FLOPs of the real models ------------------------------------------- */

static double g_flops;
static struct backend_ops g_counting;

static void count_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                       float *C, int64_t ldc)
{
    g_flops += 2.0 * (double)m * (double)n * (double)k;
    backend_cpu.gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* GEMM FLOPs of one forward and backward on nseq sequences of len tokens. */
static double gemm_flops(enum model_type type, int d, int layers, int nseq, int len)
{
    g_counting = backend_cpu;
    g_counting.gemm = count_gemm;
    struct model_conf c = {.type = type, .d = d, .layers = layers, .heads = 2, .max_len = 64};
    struct model m;
    char err[256];
    assert_int_equal(model_init(&m, &c, &g_counting, 7, err, sizeof err), 0);
    const int64_t T = (int64_t)nseq * len;
    int64_t *off = malloc((size_t)(nseq + 1) * sizeof *off);
    uint64_t *keys = malloc((size_t)T * sizeof *keys);
    float *x = malloc((size_t)T * (size_t)d * sizeof *x);
    float *y = malloc((size_t)T * (size_t)d * sizeof *y);
    float *dx = malloc((size_t)T * (size_t)d * sizeof *dx);
    assert_true(off && keys && x && y && dx);
    for (int i = 0; i <= nseq; i++)
        off[i] = (int64_t)i * len;
    struct rng r;
    rng_init(&r, 11);
    for (int64_t i = 0; i < T; i++)
        keys[i] = rng_u64(&r);
    for (int64_t i = 0; i < T * d; i++)
        x[i] = (float)(rng_uniform(&r) - 0.5);
    struct batch b = {.B = nseq, .T = T, .offsets = off, .row_keys = keys, .train = 0};
    g_flops = 0;
    m.vt->forward(&m, &b, x, y);
    m.vt->backward(&m, &b, y, dx);
    model_free(&m);
    free(off);
    free(keys);
    free(x);
    free(y);
    free(dx);
    return g_flops;
}

static void test_dense_flops(void **state)
{
    (void)state;
    const int d = 32, layers = 2;
    const enum model_type types[2] = {MODEL_HSTU, MODEL_SASREC};
    for (int t = 0; t < 2; t++) {
        struct model_conf c = {.type = types[t], .d = d, .layers = layers, .heads = 2};
        struct cost_model m;
        double W = types[t] == MODEL_HSTU ? 10 : 12;
        double want = 3.0 * layers * W * d * d; /* per token */
        double one = gemm_flops(types[t], d, layers, 1, 64) / 64.0;
        double four = gemm_flops(types[t], d, layers, 4, 16) / 64.0;
        print_message("%s: GEMM FLOPs per token %.0f (1 x 64), %.0f (4 x 16); model %.0f\n",
                      t ? "sasrec" : "hstu", one, four, want);
        assert_true(fabs(one - four) <= 1e-9 * one);       /* no L^2 term in the GEMMs */
        assert_true(one >= want && one <= want * 1.1);     /* + bias rows, O(d) per token */
        /* the auto model's per-token term holds the dense part */
        cost_model_auto(&c, 1, 1, &m);
        assert_true(m.c0 >= want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_auto_by_hand),
        cmocka_unit_test(test_dense_flops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
