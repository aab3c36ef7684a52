/* test_emb_optim: each sparse optimizer against its formula written out in
 * double precision, over several steps with weight decay. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "backend/emb_optim.h"

#define DIM 4
static const float G0[DIM] = {0.5f, -1.0f, 0.25f, 2.0f};
static const float W0[DIM] = {0.1f, 0.2f, -0.3f, 0.4f};

static void expect_close(const float *got, const double *want)
{
    for (int j = 0; j < DIM; j++)
        if (fabs(got[j] - want[j]) > 1e-6 * fmax(1.0, fabs(want[j])))
            fail_msg("element %d: got %.9g, want %.9g", j, got[j], want[j]);
}

static void test_sgd(void **state)
{
    (void)state;
    struct emb_optim_conf o = {.kind = EMB_OPT_SGD, .lr = 0.1f, .weight_decay = 0.01f};
    float w[DIM];
    double ref[DIM];
    memcpy(w, W0, sizeof w);
    for (int j = 0; j < DIM; j++)
        ref[j] = W0[j];
    for (int step = 0; step < 3; step++) {
        emb_optim_row(&o, DIM, w, NULL, NULL, G0);
        for (int j = 0; j < DIM; j++)
            ref[j] -= 0.1 * (G0[j] + 0.01 * ref[j]);
    }
    expect_close(w, ref);
}

static void test_rowwise_adagrad(void **state)
{
    (void)state;
    struct emb_optim_conf o = {.kind = EMB_OPT_ADAGRAD, .lr = 0.1f, .weight_decay = 0.01f,
                               .eps = 1e-8f};
    float w[DIM], s = 0;
    double ref[DIM], rs = 0;
    memcpy(w, W0, sizeof w);
    for (int j = 0; j < DIM; j++)
        ref[j] = W0[j];
    for (int step = 0; step < 3; step++) {
        emb_optim_row(&o, DIM, w, &s, NULL, G0);
        double g[DIM], sq = 0;
        for (int j = 0; j < DIM; j++) {
            g[j] = G0[j] + 0.01 * ref[j];
            sq += g[j] * g[j];
        }
        rs += sq / DIM; /* one accumulator per row: the mean square */
        for (int j = 0; j < DIM; j++)
            ref[j] -= 0.1 * g[j] / (sqrt(rs) + 1e-8);
    }
    expect_close(w, ref);
    assert_true(fabs(s - rs) <= 1e-6 * rs);
}

static void test_lazy_adam(void **state)
{
    (void)state;
    struct emb_optim_conf o = {.kind = EMB_OPT_ADAM, .lr = 0.01f, .weight_decay = 0.1f,
                               .eps = 1e-8f, .beta1 = 0.9f, .beta2 = 0.999f};
    assert_int_equal(emb_optim_state_floats(EMB_OPT_ADAM, DIM), 2 * DIM);
    float w[DIM], st[2 * DIM] = {0};
    int64_t step = 0;
    double ref[DIM], m[DIM] = {0}, v[DIM] = {0};
    memcpy(w, W0, sizeof w);
    for (int j = 0; j < DIM; j++)
        ref[j] = W0[j];
    for (int t = 1; t <= 3; t++) {
        float g[DIM];
        for (int j = 0; j < DIM; j++)
            g[j] = G0[j] * (float)t;
        emb_optim_row(&o, DIM, w, st, &step, g);
        for (int j = 0; j < DIM; j++) {
            m[j] = 0.9 * m[j] + 0.1 * g[j];
            v[j] = 0.999 * v[j] + 0.001 * (double)g[j] * g[j];
            double mh = m[j] / (1 - pow(0.9, t)), vh = v[j] / (1 - pow(0.999, t));
            ref[j] -= 0.01 * (mh / (sqrt(vh) + 1e-8) + 0.1 * ref[j]);
        }
    }
    assert_int_equal(step, 3); /* the row's own step count */
    expect_close(w, ref);
}

static void test_names(void **state)
{
    (void)state;
    assert_int_equal(emb_optim_parse("sgd"), EMB_OPT_SGD);
    assert_int_equal(emb_optim_parse("adagrad"), EMB_OPT_ADAGRAD);
    assert_int_equal(emb_optim_parse("adam"), EMB_OPT_ADAM);
    assert_int_equal(emb_optim_parse("adamw"), -1);
    assert_string_equal(emb_optim_name(EMB_OPT_ADAGRAD), "adagrad");
    assert_int_equal(emb_optim_state_floats(EMB_OPT_SGD, DIM), 0);
    assert_int_equal(emb_optim_state_floats(EMB_OPT_ADAGRAD, DIM), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgd), cmocka_unit_test(test_rowwise_adagrad),
        cmocka_unit_test(test_lazy_adam), cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
