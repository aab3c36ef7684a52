/* test_blas: the BLAS kernel set chosen at start-up (src/backend/blas.c) is the one
 * loaded, and its sgemm agrees with a double-precision reference on every
 * transposition and on awkward shapes. */
#include <cblas.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "backend/blas.h"
#include "base/rng.h"

static void test_chosen_kernels_loaded(void **state)
{
    (void)state;
    const char *forced = getenv("FREESCALE_BLAS_CORETYPE");
    const char *want = forced && strcasecmp(forced, "keep") ? forced : blas_preferred_coretype();
    char desc[256];
    blas_describe(desc, sizeof desc);
    printf("# %s\n", desc);
    if (forced && !strcasecmp(forced, "keep"))
        skip();
    if (want && strcasecmp(blas_corename(), want))
        fail_msg("wanted %s kernels, OpenBLAS runs %s", want, blas_corename());
}

/* C = alpha op(A) op(B) + beta C, row-major, against a double reference. */
static void check_sgemm(int m, int n, int k, int ta, int tb, float alpha, float beta)
{
    struct rng r;
    rng_init(&r, rng_key(7, (uint64_t)(m * 1000003 + n * 1009 + k), (uint64_t)(ta * 2 + tb)));
    float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
    float *c = malloc(sizeof(float) * (size_t)(m * n));
    for (int i = 0; i < m * k; i++) a[i] = (float)(rng_uniform(&r) * 2 - 1);
    for (int i = 0; i < k * n; i++) b[i] = (float)(rng_uniform(&r) * 2 - 1);
    for (int i = 0; i < m * n; i++) c[i] = (float)(rng_uniform(&r) * 2 - 1);
    /* op(A)[i][p] and op(B)[p][j] in row-major storage */
    int lda = ta ? m : k, ldb = tb ? k : n;
    double worst = 0;
    float *c0 = malloc(sizeof(float) * (size_t)(m * n));
    memcpy(c0, c, sizeof(float) * (size_t)(m * n));
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m,
                n, k, alpha, a, lda, b, ldb, beta, c, n);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0, mag = 0;
            for (int p = 0; p < k; p++) {
                double x = ta ? a[p * lda + i] : a[i * lda + p];
                double y = tb ? b[j * ldb + p] : b[p * ldb + j];
                s += x * y;
                mag += fabs(x * y);
            }
            double ref = alpha * s + beta * c0[i * n + j];
            double tol = 1e-6 + 2.4e-7 * (k + 2) * (fabs(alpha) * mag + fabs(beta * c0[i * n + j]));
            double e = fabs(c[i * n + j] - ref) / tol;
            if (e > worst)
                worst = e;
        }
    free(a); free(b); free(c); free(c0);
    if (worst > 1.0)
        fail_msg("sgemm %dx%dx%d ta=%d tb=%d: error %.2f x tolerance", m, n, k, ta, tb, worst);
}

static void test_sgemm_matches_reference(void **state)
{
    (void)state;
    static const int shapes[][3] = {{1, 1, 1}, {17, 33, 65}, {64, 64, 64}, {128, 96, 200},
                                    {513, 257, 129}, {3, 700, 50}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                check_sgemm(shapes[s][0], shapes[s][1], shapes[s][2], ta, tb, 1.0f, 0.0f);
                check_sgemm(shapes[s][0], shapes[s][1], shapes[s][2], ta, tb, -0.5f, 1.0f);
            }
}

int main(int argc, char **argv)
{
    (void)argc;
    blas_select(argv); /* as the program does: may re-execute this test */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chosen_kernels_loaded),
        cmocka_unit_test(test_sgemm_matches_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
