/* backend_ops_factor: test_backend_ops's checks of the ranking head's
 * factor walks (backend.h: factor_fwd, factor_bwd; issue 51 B), included
 * by test_backend_ops.c after its helpers. Sequences of random lengths
 * (empty ones too), random factor rows and residual values with a quarter
 * NaN (no label), up to 16 tasks and 64 factors, the last case long enough
 * for the CPU's threads; each with ridge 0 (the shrunk mean) and, up to
 * 16 factors, the ridge fit (model.factor_ridge). The device runs the host's own walk functions
 * (backend/factor_walk.h): the fake device gives the CPU's bits; CUDA may
 * fuse products and sums (TOL). */

#include "backend/factor_walk.h" /* FACTOR_RIDGE_MAX_F */

static void test_factor(void)
{
    static const struct {
        int64_t B;
        int L, K, F; /* sequence lengths 0 .. L */
    } cases[] = {{1, 1, 1, 1}, {3, 7, 2, 4}, {20, 40, 3, 16}, {9, 30, 16, 64}, {120, 90, 2, 8}};
    char cas[256];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int64_t B = cases[c].B;
        const int K = cases[c].K, F = cases[c].F;
        int64_t *ho = xmalloc((size_t)(B + 1) * sizeof *ho);
        ho[0] = 0;
        for (int64_t b = 0; b < B; b++)
            ho[b + 1] = ho[b] + (int64_t)rng_below(&G, (uint64_t)cases[c].L + 1);
        const int64_t T = ho[B];
        double *hv = xmalloc((size_t)(T * K + 1) * sizeof *hv);
        for (int64_t i = 0; i < T * K; i++)
            hv[i] = rng_uniform(&G) < 0.25 ? NAN : 2.0 * rng_uniform(&G) - 1.0;
        struct pair off = pair_i64(ho, B + 1), v = pair_new(hv, (size_t)(T * K) * sizeof *hv);
        /* the shrunk mean (ridge 0), then the ridge fit where F allows */
        for (int rg = 0; rg < (F <= FACTOR_RIDGE_MAX_F ? 2 : 1); rg++) {
            const double ridge = rg ? 0.7 : 0;
            snprintf(cas, sizeof cas, "B=%lld T=%lld K=%d F=%d ridge=%g", (long long)B,
                     (long long)T, K, F, ridge);
            struct pair f = pair_rand(T * F, 0.5), z = pair_rand(T * K * F, 1);
            struct pair w = pair_rand(T * K, 1), vb = pair_rand(T * K, 1), h = pair_rand(T * K, 1);
            struct pair dh = pair_rand(T * K, 1), df = pair_rand(T * F, 1);
            struct pair ai = pair_rand(rg ? T * K * F * F : 1, 1);
            cpu->factor_fwd(B, off.c, K, F, f.c, v.c, 3.0, 10.0f, z.c, w.c, vb.c, h.c, ridge, ai.c);
            dev->factor_fwd(B, off.g, K, F, f.g, v.g, 3.0, 10.0f, z.g, w.g, vb.g, h.g, ridge, ai.g);
            expect_f32("factor_fwd", cas, "z", &z, NULL, T * K, F, TOL);
            expect_f32("factor_fwd", cas, "w", &w, NULL, T, K, TOL_EXACT);
            expect_f32("factor_fwd", cas, "vb", &vb, NULL, T, K, TOL);
            expect_f32("factor_fwd", cas, "h", &h, NULL, T, K, TOL);
            if (rg)
                expect_f32("factor_fwd", cas, "ai", &ai, NULL, T * K, F * F, TOL);
            /* the backward from the CPU's forward on both (the device's may differ in its
             * last bits) */
            struct pair z2 = pair_clone(&z), w2 = pair_clone(&w), vb2 = pair_clone(&vb);
            struct pair ai2 = pair_clone(&ai);
            cpu->factor_bwd(B, off.c, K, F, f.c, v.c, 10.0f, z.c, w.c, vb.c, dh.c, df.c, ridge,
                            ai.c);
            dev->factor_bwd(B, off.g, K, F, f.g, v.g, 10.0f, z2.g, w2.g, vb2.g, dh.g, df.g, ridge,
                            ai2.g);
            expect_f32("factor_bwd", cas, "df", &df, NULL, T, F, TOL);
            struct pair *all[] = {&f, &z, &w, &vb, &h, &dh, &df, &ai, &z2, &w2, &vb2, &ai2};
            for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
                pair_free(all[i]);
        }
        free(ho);
        free(hv);
        pair_free(&off);
        pair_free(&v);
    }
}
