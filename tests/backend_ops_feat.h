/* backend_ops_feat: test_backend_ops's checks of the features' and the
 * ranking head's operations (backend.h: index_rows, col_sums, rank_loss),
 * included by test_backend_ops.c after its helpers.
 *
 * Tolerances: index_rows (copies and one float add per element) and
 * col_sums (each column summed in row order in double, as the CPU) must be
 * bit-identical; rank_loss's dz within TOL_EXACT (exp, log1p of another
 * libm), its loss sum within TOL (a tree instead of the CPU's sequential
 * sum) and its count equal, and a second device run repeats the bits. */

static void test_feat(void)
{
    static const int64_t counts[] = {0, 1, 7, 300, 5000};
    static const int dims[] = {1, 7, 64, 1030};
    char cas[256];
    for (size_t a = 0; a < sizeof counts / sizeof counts[0]; a++)
        for (size_t b = 0; b < sizeof dims / sizeof dims[0]; b++)
            for (int mode = 0; mode < 4; mode++) { /* bit 0: add; bit 1: NULL indexes */
                const int64_t n = counts[a], rows = n + 3;
                const int d = dims[b], add = mode & 1, plain = mode & 2;
                if (n > 300 && d > 64)
                    continue;
                snprintf(cas, sizeof cas, "n=%lld d=%d add=%d %s", (long long)n, d, add,
                         plain ? "sidx random, didx NULL" : "both indexed, some < 0");
                int64_t *hs = xmalloc((size_t)(n + 1) * sizeof *hs);
                int64_t *ht = xmalloc((size_t)(rows + 1) * sizeof *ht);
                for (int64_t i = 0; i < rows; i++) /* distinct targets: a shuffle */
                    ht[i] = i;
                for (int64_t i = rows - 1; i > 0; i--) {
                    const int64_t j = (int64_t)rng_below(&G, (uint64_t)(i + 1)), t = ht[i];
                    ht[i] = ht[j];
                    ht[j] = t;
                }
                for (int64_t i = 0; i < n; i++) {
                    hs[i] = (int64_t)rng_below(&G, (uint64_t)rows);
                    if (!plain && rng_uniform(&G) < 0.1)
                        hs[i] = -1;
                    if (!plain && rng_uniform(&G) < 0.1)
                        ht[i] = -1;
                }
                struct pair sidx = pair_i64(hs, n), didx = pair_i64(ht, n);
                struct pair src = pair_rand(rows * d, 1), dst = pair_rand(rows * d, 1);
                cpu->index_rows(n, d, src.c, sidx.c, dst.c, plain ? NULL : didx.c, add);
                dev->index_rows(n, d, src.g, sidx.g, dst.g, plain ? NULL : didx.g, add);
                expect_bytes("index_rows", cas, "dst", &dst);
                free(hs);
                free(ht);
                struct pair *all[] = {&sidx, &didx, &src, &dst};
                for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
                    pair_free(all[i]);
            }
    static const int widths[] = {1, 7, 50, 256};
    for (size_t a = 0; a < sizeof counts / sizeof counts[0]; a++)
        for (size_t b = 0; b < sizeof widths / sizeof widths[0]; b++) {
            const int64_t n = counts[a];
            const int m = widths[b];
            snprintf(cas, sizeof cas, "n=%lld m=%d", (long long)n, m);
            struct pair x = pair_rand(n * m, 3), acc = pair_rand(m, 1);
            cpu->col_sums(n, m, x.c, acc.c);
            dev->col_sums(n, m, x.g, acc.g);
            expect_bytes("col_sums", cas, "acc (the CPU's order)", &acc);
            pair_free(&x);
            pair_free(&acc);
        }
    static const struct {
        int64_t T;
        int K;
        double a; /* logit spread: saturated sigmoids at 30 */
    } cases[] = {{0, 2, 1}, {1, 1, 1}, {7, 3, 2}, {300, 2, 1}, {5000, 4, 3}, {300, 2, 30}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int64_t T = cases[c].T;
        const int K = cases[c].K;
        snprintf(cas, sizeof cas, "T=%lld K=%d logit spread %g", (long long)T, K, cases[c].a);
        double hc[4 * 4];
        for (int k = 0; k < K; k++) { /* even tasks binary, odd regression */
            hc[4 * k] = k % 2 == 0;
            hc[4 * k + 1] = 0.5 + rng_uniform(&G);
            hc[4 * k + 2] = k % 2 ? 3.25 : 0;
            hc[4 * k + 3] = k % 2 ? 1.5 : 1;
        }
        float *hy = xmalloc(fbytes(T * K) + sizeof *hy);
        for (int64_t i = 0; i < T * K; i++) {
            const int k = (int)(i % K);
            hy[i] = rng_uniform(&G) < 0.2 ? NAN
                    : k % 2 == 0         ? (float)(rng_uniform(&G) < 0.4)
                                         : (float)(0.5 + 4.5 * rng_uniform(&G));
        }
        struct pair z = pair_rand(T * K, cases[c].a), lab = pair_f32(hy, T * K);
        struct pair coef = pair_new(hc, sizeof hc), dz = pair_rand(T * K, 9);
        struct pair acc = acc_pair(), acc2 = acc_pair(), dz2 = pair_rand(T * K, 9);
        cpu->rank_loss(T, K, z.c, lab.c, coef.c, dz.c, acc.c);
        dev->rank_loss(T, K, z.g, lab.g, coef.g, dz.g, acc.g);
        expect_acc("rank_loss", cas, &acc);
        expect_f32("rank_loss", cas, "dz", &dz, NULL, 1, T * K, TOL_EXACT);
        dev->rank_loss(T, K, z.g, lab.g, coef.g, dz2.g, acc2.g);
        expect_repeat("rank_loss", cas, "dz, sum", &dz, &dz2, &acc, &acc2);
        free(hy);
        struct pair *all[] = {&z, &lab, &coef, &dz, &acc, &acc2, &dz2};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            pair_free(all[i]);
    }
}
