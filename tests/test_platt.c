/* test_platt: model.calibrate = platt's fit (eval/platt.c) against
 * its closed form: on scores of two values z0 < z1 with positive rates r0,
 * r1, the logistic regression on z fits both groups exactly, a = (logit r1
 * - logit r0) / (z1 - z0), b = logit r0 - a z0; read with a stride, NaN
 * labels skipped. Reversed rates (a < 0) and one class are refused with
 * a = 1, b = 0; scores already calibrated stay within float rounding of
 * (1, 0); on noisy scores the fit's gradient is 0 (to float rounding) and
 * its loss never above the scores' own. Temperature (b = 0): on z = -1,
 * 1 at rates 0.2, 0.8, a = logit 0.8; shifted scores: the gradient in a
 * is 0 and a, b fit at least as well. calib_apply maps binary tasks
 * alone. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "eval/platt.h"

static double logit(double p) { return log(p / (1 - p)); }

/* n0 records at z0 (p0 positives), n1 at z1 (p1), in column 0 of [n, 2]
 * rows whose column 1 is noise; every 7th label of column 0 missing (NaN,
 * not counted in n0, n1). Returns the rows. */
static int64_t two_groups(double z0, int n0, int p0, double z1, int n1, int p1, double *z, float *y)
{
    int64_t i = 0;
    for (int g = 0; g < 2; g++)
        for (int j = 0, seen = 0; seen < (g ? n1 : n0); j++, i++) {
            z[2 * i + 1] = 1e3 * (double)(i % 5);
            y[2 * i + 1] = (float)(i % 2);
            z[2 * i] = g ? z1 : z0;
            if (i % 7 == 3) {
                y[2 * i] = NAN;
                continue;
            }
            y[2 * i] = seen < (g ? p1 : p0) ? 1.0f : 0.0f;
            seen++;
        }
    return i;
}

static void closed_form(void **state)
{
    (void)state;
    double z[400], ab[2], l0, l1;
    float y[400];
    const int64_t n = two_groups(-1.0, 40, 10, 2.0, 50, 40, z, y);
    assert_int_equal(platt_fit(n, 2, z, y, 1, ab, &l0, &l1), PLATT_OK);
    const double a = (logit(0.8) - logit(0.25)) / 3.0, b = logit(0.25) + a;
    assert_true(fabs(ab[0] - a) <= 1e-6 * fabs(a));
    assert_true(fabs(ab[1] - b) <= 1e-6 * (1 + fabs(b)));
    volatile float fa = (float)ab[0], fb = (float)ab[1]; /* floats (platt.c: not a pair of casts) */
    assert_true(ab[0] == (double)fa && ab[1] == (double)fb);
    /* the loss at the fit: each group's entropy at its own rate */
    const double h = -(10 * log(0.25) + 30 * log(0.75) + 40 * log(0.8) + 10 * log(0.2)) / 90;
    assert_true(fabs(l1 - h) < 1e-9);
    assert_true(l1 < l0);
}

/* temperature (offset 0): z = -1 at rate 0.2, z = 1 at 0.8: a = logit 0.8, b = 0 */
static void temperature(void **state)
{
    (void)state;
    double z[400], ab[2], l0, l1;
    float y[400];
    const int64_t n = two_groups(-1.0, 50, 10, 1.0, 50, 40, z, y);
    assert_int_equal(platt_fit(n, 2, z, y, 0, ab, &l0, &l1), PLATT_OK);
    assert_true(fabs(ab[0] - logit(0.8)) <= 1e-6 * logit(0.8) && ab[1] == 0 && l1 < l0);
    double q[400];
    for (int64_t i = 0; i < n; i++) /* shifted: a alone can no longer fit both groups */
        q[i] = z[i] + 0.5;
    assert_int_equal(platt_fit(n, 2, q, y, 0, ab, &l0, &l1), PLATT_OK);
    double g = 0, ab2[2], m0, m1;
    for (int64_t i = 0; i < n; i++)
        if (!isnan(y[2 * i]))
            g += (1 / (1 + exp(-ab[0] * q[2 * i])) - y[2 * i]) * q[2 * i];
    assert_true(ab[1] == 0 && fabs(g) < 1e-4);
    assert_int_equal(platt_fit(n, 2, q, y, 1, ab2, &m0, &m1), PLATT_OK);
    assert_true(m1 <= l1 && m0 == l0); /* a and b fit at least as well */
}

static void refused(void **state)
{
    (void)state;
    double z[400], ab[2], l0, l1;
    float y[400];
    int64_t n = two_groups(-1.0, 40, 32, 2.0, 50, 12, z, y); /* backwards: a < 0 */
    assert_int_equal(platt_fit(n, 2, z, y, 1, ab, &l0, &l1), PLATT_NOT_POSITIVE);
    assert_true(ab[0] == 1 && ab[1] == 0 && l1 == l0);
    n = two_groups(-1.0, 40, 40, 2.0, 50, 50, z, y); /* one class */
    assert_int_equal(platt_fit(n, 2, z, y, 1, ab, &l0, &l1), PLATT_ONE_CLASS);
    assert_true(ab[0] == 1 && ab[1] == 0);
    assert_int_equal(platt_fit(0, 2, z, y, 1, ab, &l0, &l1), PLATT_ONE_CLASS); /* none */
}

static void calibrated_already(void **state)
{
    (void)state;
    double z[400], ab[2], l0, l1;
    float y[400];
    const int64_t n = two_groups(logit(0.25), 40, 10, logit(0.8), 50, 40, z, y);
    const enum platt_status st = platt_fit(n, 2, z, y, 1, ab, &l0, &l1);
    assert_true(st == PLATT_OK || st == PLATT_NO_GAIN);
    assert_true(fabs(ab[0] - 1) < 1e-6 && fabs(ab[1]) < 1e-6 && l1 <= l0);
}

static void noisy(void **state)
{
    (void)state;
    enum { N = 3000 };
    double *z = malloc(N * sizeof *z), ab[2], l0, l1;
    float *y = malloc(N * sizeof *y);
    assert_non_null(z);
    assert_non_null(y);
    uint64_t s = 12345;
    for (int i = 0; i < N; i++) { /* labels of 0.5 z - 0.3: overconfident scores */
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        z[i] = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 8;
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        const double u = (double)(s >> 11) / 9007199254740992.0;
        y[i] = u < 1 / (1 + exp(-(0.5 * z[i] - 0.3))) ? 1.0f : 0.0f;
    }
    assert_int_equal(platt_fit(N, 1, z, y, 1, ab, &l0, &l1), PLATT_OK);
    assert_true(l1 < l0);
    double g0 = 0, g1 = 0;
    for (int i = 0; i < N; i++) {
        const double p = 1 / (1 + exp(-(ab[0] * z[i] + ab[1])));
        g0 += (p - y[i]) * z[i];
        g1 += p - y[i];
    }
    assert_true(fabs(g0) / N < 1e-6 && fabs(g1) / N < 1e-6);
    assert_true(fabs(ab[0] - 0.5) < 0.1 && fabs(ab[1] + 0.3) < 0.2);
    free(z);
    free(y);
}

static void apply(void **state)
{
    (void)state;
    const int binary[2] = {1, 0};
    const double ab[4] = {0.5, 1.0, 2.0, 0.0}; /* a's, then b's */
    double s[4] = {1, 3, -2, 5};
    calib_apply(2, binary, ab, 2, s);
    assert_true(s[0] == 0.5 * 1 + 2 && s[1] == 3 && s[2] == 0.5 * -2 + 2 && s[3] == 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(closed_form),   cmocka_unit_test(temperature), cmocka_unit_test(refused),
        cmocka_unit_test(calibrated_already), cmocka_unit_test(noisy),
        cmocka_unit_test(apply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
