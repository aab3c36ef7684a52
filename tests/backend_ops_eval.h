/* backend_ops_eval: test_backend_ops's check of the evaluation's operation
 * over device tables (backend.h: rows_match), included by
 * test_backend_ops.c after its helpers.
 *
 * rows_match must be bit-identical to the CPU's memcmp: rows equal to the
 * row, rows one bit off (-0 against +0: equal as floats, not as bits), a
 * NaN row against a NaN row of the same bits, and random rows. */

static void test_rows_match(void)
{
    static const int64_t counts[] = {0, 1, 7, 300, 5000};
    static const int dims[] = {1, 7, 64};
    char cas[256];
    for (size_t a = 0; a < sizeof counts / sizeof counts[0]; a++)
        for (size_t b = 0; b < sizeof dims / sizeof dims[0]; b++)
            for (int nan = 0; nan < 2; nan++) {
                const int64_t n = counts[a];
                const int d = dims[b];
                snprintf(cas, sizeof cas, "n=%lld d=%d%s", (long long)n, d,
                         nan ? " row holds NaN and -0" : "");
                float *row = rand_f32(d, 1);
                if (nan) {
                    row[0] = NAN;
                    row[d - 1] = -0.0f;
                }
                float *rows = rand_f32(n * d, 1);
                for (int64_t i = 0; i < n; i++) {
                    const double u = rng_uniform(&G);
                    if (u < 0.6) /* the row itself, or one bit from it */
                        memcpy(rows + i * d, row, (size_t)d * sizeof *row);
                    if (u < 0.2 && nan) /* +0 for -0: equal floats, other bits */
                        rows[i * d + d - 1] = 0.0f;
                    else if (u < 0.2)
                        rows[i * d + (int64_t)rng_below(&G, (uint64_t)d)] += 1.0f;
                }
                struct pair pr = pair_f32(rows, n * d), p1 = pair_f32(row, d);
                struct pair out = pair_new(NULL, (size_t)(n > 0 ? n : 1));
                cpu->zero(out.c, out.bytes);
                dev->zero(out.g, out.bytes);
                cpu->rows_match(n, d, pr.c, p1.c, out.c);
                dev->rows_match(n, d, pr.g, p1.g, out.g);
                expect_bytes("rows_match", cas, "out", &out);
                int64_t hits = 0;
                for (int64_t i = 0; i < n; i++)
                    hits += ((const uint8_t *)out.c)[i];
                if (n >= 300 && (hits == 0 || hits == n)) { /* the reference tells them apart */
                    printf("FAIL rows_match [%s]: %lld of %lld rows match: the case tests "
                           "nothing\n", cas, (long long)hits, (long long)n);
                    failures++;
                }
                free(row);
                free(rows);
                pair_free(&pr);
                pair_free(&p1);
                pair_free(&out);
            }
}
