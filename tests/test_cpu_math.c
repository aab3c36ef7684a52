/* test_cpu_math: the CPU backend's fast scalar functions (cpu_math.h)
 * against their references, bit for bit:
 *   cpu_expf        against libm's expf: special values, the edges of the
 *                   finite range, and every float bit pattern at a stride
 *                   (all of them with FS_TEST_EXHAUSTIVE=1: ~2^32 calls);
 *                   its table against exp2; and the vectorised loops that
 *                   inline it (the silu ops, whatever instruction set the
 *                   CPU gives them) against the same loops written with expf;
 *   dropout_fwd     (rows in vector lanes) against cpu_dropout_fwd_ref;
 *   softmax_block_lse, softmax_block_grad (rows in groups, lanes, clones)
 *                   against their references, lse, gradients and target
 *                   sums, with NaN, infinities and signed zeros among the
 *                   logits, blocks of every row count modulo the group;
 *   softmax_loss, softmax_loss_q (four scores at once, du_i in registers,
 *                   prefetches) against cpu_softmax_loss_ref: the loss, the
 *                   count, du and de, for widths on both sides of each
 *                   16-lane block and of the fast form's range (d 1 .. 65),
 *                   R not a multiple of 4, masked and repeated candidates,
 *                   ignored positions, logits that underflow and NaN;
 *   layernorm_fwd   (rows in blocks of 4) against the same rows one call
 *                   each (the rows left over from the blocks);
 *   layernorm_bwd, l2norm_fwd, l2norm_bwd (rows' sums in lanes of 8) the
 *                   same, with gamma or not, a clamped l2norm row;
 *   hstu_attn_fwd, hstu_attn_bwd (time buckets kept from call to call)
 *                   against the rows form (which computes them each call)
 *                   on the same inputs: again, after the timestamps change in
 *                   place, after the offsets change (the same T), and a
 *                   sequence too long for its buckets to be kept;
 *   cpu_time_bucket against the log formula of backend.h at every bucket
 *                   threshold and its neighbours, powers of two, random
 *                   gaps of either sign and the int64 extremes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/backend_cpu.h"
#include "backend/cpu_math.h"
#include "base/check.h"
#include "base/rng.h"
#include "expect.h"

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* bitwise equality (any NaN equals any NaN) */
static int same(float a, float b) { return (a != a && b != b) || bits(a) == bits(b); }

static void check_expf(void)
{
    for (int i = 0; i < 32; i++) {
        double v = exp2((double)i / 32);
        uint64_t u;
        memcpy(&u, &v, sizeof u);
        CHECK(cpu_exp_table[i] == u - ((uint64_t)i << 52) / 32, "exp table entry %d", i);
    }
    const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, -NAN,
                             0x1.62e42ep6f, 0x1.62e430p6f, -0x1.9fe368p6f, -0x1.9fe36ap6f,
                             -0x1.9d1d9ep6f, 88.0f, -88.0f, 1e-30f, -1e-30f, 1e30f, -1e30f,
                             0x1p-149f, -0x1p-149f, -87.33654f, 3.4e38f, -3.4e38f};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++)
        CHECK(same(cpu_expf(special[i]), expf(special[i])), "cpu_expf(%a) = %a, expf %a",
               (double)special[i], (double)cpu_expf(special[i]), (double)expf(special[i]));
    const char *ex = getenv("FS_TEST_EXHAUSTIVE");
    const uint64_t stride = ex && *ex == '1' ? 1 : 97;
    uint64_t bad = 0, n = 0;
    for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += stride, n++) {
        float x = from_bits((uint32_t)u);
        if (!same(cpu_expf(x), expf(x)) && bad++ < 5)
            CHECK(0, "cpu_expf(%a) = %a, expf %a", (double)x, (double)cpu_expf(x),
                  (double)expf(x));
    }
    EXPECT(bad == 0, "cpu_expf differs from expf at %llu of %llu floats",
           (unsigned long long)bad, (unsigned long long)n);
    /* the full softmax's exponential (AVX-512 where the CPU has it), in
     * blocks of 4099 floats at the same stride */
    enum { NB = 4099 };
    static float xs[NB], ys[NB];
    int avx512 = 0;
    uint64_t bad2 = 0, n2 = 0;
    for (uint64_t u = 0; u < ((uint64_t)1 << 32);) {
        int k = 0;
        for (; k < NB && u < ((uint64_t)1 << 32); k++, u += stride)
            xs[k] = from_bits((uint32_t)u);
        avx512 = cpu_full_expf_block(k, xs, ys);
        for (int i = 0; i < k; i++, n2++)
            if (!same(ys[i], expf(xs[i])) && bad2++ < 5)
                CHECK(0, "cpu_full_expf_block(%a) = %a, expf %a", (double)xs[i], (double)ys[i],
                      (double)expf(xs[i]));
    }
    for (size_t i = 0; i < sizeof special / sizeof *special; i++)
        xs[i] = special[i];
    cpu_full_expf_block((int64_t)(sizeof special / sizeof *special), xs, ys);
    for (size_t i = 0; i < sizeof special / sizeof *special; i++)
        bad2 += !same(ys[i], expf(special[i]));
    EXPECT(bad2 == 0, "the full softmax's exponential (%s) differs from expf at %llu of %llu floats",
           avx512 ? "AVX-512" : "scalar", (unsigned long long)bad2, (unsigned long long)n2);
    printf("cpu_full_expf_block (%s): bitwise expf at %llu floats\n",
           avx512 ? "AVX-512" : "the loop of cpu_expf", (unsigned long long)n2);
    printf("cpu_expf: bitwise expf at %llu floats (stride %llu)\n", (unsigned long long)n,
           (unsigned long long)stride);
}

/* The silu ops (vectorised clones of loops inlining cpu_expf) against the
 * same formulas with libm's expf, over finite values of every magnitude. */
static void check_silu(struct rng *r)
{
    const int64_t n = 100003;
    float *x = xmalloc((size_t)n * sizeof *x), *dy = xmalloc((size_t)n * sizeof *dy);
    float *y = xmalloc((size_t)n * sizeof *y), *dx = xmalloc((size_t)n * sizeof *dx);
    for (int64_t i = 0; i < n; i++) {
        float v = (float)((rng_uniform(r) * 2 - 1) * pow(10.0, rng_uniform(r) * 4 - 2));
        x[i] = i % 1000 == 7 ? (float)(rng_uniform(r) * 400 - 200) : v;
        dy[i] = (float)(rng_uniform(r) - 0.5);
    }
    /* the special values and the edges of cpu_expf's range, in the vector
     * loops (the AVX-512 form: whole vectors of 8) and the tail */
    const float sp[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 88.72283f, -88.72283f,
                        88.72284f, -88.72284f, 103.97208f, -103.97208f, 103.9721f, -103.9721f,
                        1e-30f, -1e-30f, 3e38f, -3e38f};
    for (size_t i = 0; i < sizeof sp / sizeof *sp; i++)
        x[40 + i] = x[n - 1 - i % 3] = sp[i];
    backend_cpu.silu_fwd(n, x, y);
    backend_cpu.silu_bwd(n, x, dy, dx);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        float want = x[i] / (1.0f + expf(-x[i]));
        float s = 1.0f / (1.0f + expf(-x[i]));
        float dwant = dy[i] * s * (1.0f + x[i] * (1.0f - s));
        bad += !same(y[i], want) || !same(dx[i], dwant);
    }
    EXPECT(bad == 0, "silu_fwd/bwd differ from the expf formulas at %lld of %lld values",
           (long long)bad, (long long)n);
    free(x);
    free(dy);
    free(y);
    free(dx);
}

/* dropout_fwd (lanes of rows, an integer comparison) against its reference
 * (a stream per row), bitwise, masks and values, in place too. */
static void check_dropout(struct rng *r)
{
    const int64_t rows_list[] = {0, 1, 7, 8, 9, 23, 64};
    const int d_list[] = {1, 5, 50, 64};
    const float p_list[] = {0.0f, 0.1f, 0.5f, 0.95f};
    for (size_t a = 0; a < sizeof rows_list / sizeof *rows_list; a++)
        for (size_t b = 0; b < sizeof d_list / sizeof *d_list; b++)
            for (size_t c = 0; c < sizeof p_list / sizeof *p_list; c++) {
                const int64_t rows = rows_list[a], n = rows * d_list[b] + 1;
                const int d = d_list[b];
                const float p = p_list[c];
                float *x = xmalloc((size_t)n * 4), *y = xmalloc((size_t)n * 4);
                float *want = xmalloc((size_t)n * 4), *inplace = xmalloc((size_t)n * 4);
                uint8_t *m = xmalloc((size_t)n), *wm = xmalloc((size_t)n);
                uint64_t *keys = xmalloc((size_t)(rows + 1) * 8);
                for (int64_t i = 0; i < n; i++)
                    x[i] = inplace[i] = (float)(rng_uniform(r) - 0.5);
                for (int64_t i = 0; i < rows; i++)
                    keys[i] = rng_u64(r);
                backend_cpu.dropout_fwd(rows, d, p, keys, 3, x, y, m);
                backend_cpu.dropout_fwd(rows, d, p, keys, 3, inplace, inplace, m);
                cpu_dropout_fwd_ref(rows, d, p, keys, 3, x, want, wm);
                CHECK(!memcmp(y, want, (size_t)(rows * d) * 4) &&
                          !memcmp(inplace, want, (size_t)(rows * d) * 4) &&
                          !memcmp(m, wm, (size_t)(rows * d)),
                      "dropout_fwd rows %lld d %d p %g differs from its reference",
                      (long long)rows, d, (double)p);
                free(x), free(y), free(want), free(inplace), free(m), free(wm), free(keys);
            }
}

/* the full softmax's blocks against their references, bitwise: odd row
 * counts and widths, a row stride beyond the width, m = 0, rows holding a
 * NaN, -inf, only zeros of both signs, and values of every magnitude */
static void check_full_blocks(struct rng *r)
{
    static const struct {
        int64_t n, m, lds;
        float inv_tau;
    } cases[] = {{0, 5, 5, 20.0f},     {1, 1, 1, 20.0f},       {3, 0, 1, 20.0f},
                 {9, 17, 17, 1.0f},    {13, 300, 310, 20.0f},  {64, 1709, 1709, 20.0f},
                 {37, 4097, 4100, 1.0f}, {250, 1000, 1003, 20.0f}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const int64_t n = cases[c].n, m = cases[c].m, lds = cases[c].lds, sz = n * lds + 1;
        const float it = cases[c].inv_tau;
        float *s = xmalloc((size_t)sz * 4), *s2 = xmalloc((size_t)sz * 4);
        float *lse = xmalloc((size_t)(n + 1) * 4), *want = xmalloc((size_t)(n + 1) * 4);
        int64_t *tcol = xmalloc((size_t)(n + 1) * 8);
        for (int64_t i = 0; i < sz; i++)
            s[i] = (float)((rng_uniform(r) * 2 - 1) * pow(10.0, rng_uniform(r) * 2 - 1));
        for (int64_t i = 0; i < n && m > 0; i++) {
            float *si = s + i * lds;
            if (i % 11 == 3)
                si[rng_below(r, (uint64_t)m)] = NAN;
            if (i % 7 == 2)
                si[rng_below(r, (uint64_t)m)] = -INFINITY;
            if (i % 13 == 5)
                for (int64_t j = 0; j < m; j++)
                    si[j] = j % 2 ? 0.0f : -0.0f;
            if (i % 17 == 8)
                for (int64_t j = 0; j < m; j++)
                    si[j] = -INFINITY;
            tcol[i] = i % 5 == 4 ? -1 : (int64_t)rng_below(r, (uint64_t)m);
        }
        if (m == 0)
            for (int64_t i = 0; i < n; i++)
                tcol[i] = -1;
        memcpy(s2, s, (size_t)sz * 4);
        backend_cpu.softmax_block_lse(n, m, lds, it, s, lse);
        cpu_softmax_block_lse_ref(n, m, lds, it, s, want);
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++)
            bad += !same(lse[i], want[i]);
        CHECK(bad == 0, "softmax_block_lse n %lld m %lld: %lld rows differ from the reference",
              (long long)n, (long long)m, (long long)bad);
        if (m > 0) {
            double t = 0.25, t2 = 0.25; /* added to */
            backend_cpu.softmax_block_grad(n, m, lds, it, want, tcol, 0.01f, s, &t);
            cpu_softmax_block_grad_ref(n, m, lds, it, want, tcol, 0.01f, s2, &t2);
            bad = 0;
            for (int64_t i = 0; i < sz; i++)
                bad += !same(s[i], s2[i]);
            CHECK(bad == 0 && (t == t2 || (t != t && t2 != t2)),
                  "softmax_block_grad n %lld m %lld: %lld values differ, target %a vs %a",
                  (long long)n, (long long)m, (long long)bad, t, t2);
        }
        free(s), free(s2), free(lse), free(want), free(tcol);
    }
}

/* backend_cpu's softmax_loss(_q) against cpu_softmax_loss_ref, bit for bit */
static void check_sampled_loss(struct rng *r)
{
    const int ds[] = {1, 7, 8, 9, 16, 17, 31, 33, 48, 50, 63, 64, 65};
    const int Rs[] = {1, 5, 128};
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
        for (size_t ri = 0; ri < sizeof Rs / sizeof *Rs; ri++) {
            const int d = ds[di], R = Rs[ri], q = (int)(di + ri) % 2; /* q: logq */
            const int64_t T = 37, nu = 23;
            float *u = xmalloc((size_t)(T * d) * 4), *e = xmalloc((size_t)(nu * d) * 4);
            float *logq = xmalloc((size_t)nu * 4), *du[2], *de[2];
            int64_t *pos = xmalloc((size_t)T * 8), *neg = xmalloc((size_t)(T * R) * 8);
            for (int64_t i = 0; i < T * d; i++) /* rows 5 and 6 large: scores that underflow */
                u[i] = (float)((rng_uniform(r) * 2 - 1) * (i / d == 5 || i / d == 6 ? 400 : 1));
            if (d > 2 && R == 5) /* a NaN score (the loss NaN: only here) */
                u[9 * d + 2] = NAN;
            for (int64_t i = 0; i < nu * d; i++)
                e[i] = (float)(rng_uniform(r) * 2 - 1);
            for (int64_t i = 0; i < nu; i++)
                logq[i] = (float)(rng_uniform(r) * 3);
            for (int64_t i = 0; i < T; i++)
                pos[i] = i % 9 == 4 ? -1 : (int64_t)rng_below(r, (uint64_t)nu);
            for (int64_t i = 0; i < T * R; i++) /* masked (-1, the target) and repeated */
                neg[i] = i % 13 == 7 ? -1 : i % 17 == 3 ? pos[i / R] : (int64_t)rng_below(r, 8);
            for (int k = 0; k < 2; k++) {
                du[k] = xmalloc((size_t)(T * d) * 4);
                de[k] = xmalloc((size_t)(nu * d) * 4);
                for (int64_t i = 0; i < nu * d; i++)
                    de[k][i] = (float)(i % 7) * 0.125f; /* added to */
            }
            double acc[2] = {0.5, 0};
            int64_t n = 0;
            if (q)
                backend_cpu.softmax_loss_q(T, d, R, 20.0f, u, nu, e, logq, pos, neg, 0.01f, du[0],
                                           de[0], acc);
            else
                backend_cpu.softmax_loss(T, d, R, 20.0f, u, nu, e, pos, neg, 0.01f, du[0], de[0],
                                         acc);
            double want = 0.5 + cpu_softmax_loss_ref(T, d, R, 20.0f, u, nu, e, q ? logq : NULL,
                                                     pos, neg, 0.01f, du[1], de[1], &n);
            int64_t bad = 0;
            for (int64_t i = 0; i < T * d; i++)
                bad += !same(du[0][i], du[1][i]);
            for (int64_t i = 0; i < nu * d; i++)
                bad += !same(de[0][i], de[1][i]);
            CHECK(bad == 0 && (acc[0] == want || (acc[0] != acc[0] && want != want)) &&
                      acc[1] == (double)n,
                  "softmax_loss%s d %d R %d: %lld values differ, loss %a vs %a, count %g vs %lld",
                  q ? "_q" : "", d, R, (long long)bad, acc[0], want, acc[1], (long long)n);
            for (int k = 0; k < 2; k++)
                free(du[k]), free(de[k]);
            free(u), free(e), free(logq), free(pos), free(neg);
        }
}

/* layernorm_fwd and layernorm_bwd of 11 rows (blocks of 4 or 8 and the
 * rows left over) against each row alone, bit for bit: y, mean, rstd; dx, dgamma,
 * dbeta, with and without the affine; l2norm_fwd and l2norm_bwd alike (y,
 * norm, dx; row 3 large) */
static void check_layernorm_rows(struct rng *r)
{
    const int ds[] = {1, 7, 50, 64};
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++)
        for (int affine = 0; affine < 2; affine++) {
            const int d = ds[di];
            const int64_t rows = 11;
            float *x = xmalloc((size_t)(rows * d) * 4), *y[2], m[2][11], rs[2][11];
            float *gamma = xmalloc((size_t)d * 4), *beta = xmalloc((size_t)d * 4);
            for (int64_t i = 0; i < rows * d; i++)
                x[i] = (float)((rng_uniform(r) * 2 - 1) * (i % 5 + 1)) + (i / d == 3 ? 1e4f : 0);
            for (int j = 0; j < d; j++)
                gamma[j] = (float)rng_uniform(r), beta[j] = (float)(rng_uniform(r) - 0.5);
            const float *g = affine ? gamma : NULL, *b = affine ? beta : NULL;
            for (int k = 0; k < 2; k++)
                y[k] = xmalloc((size_t)(rows * d) * 4);
            backend_cpu.layernorm_fwd(rows, d, 1e-5f, x, g, b, y[0], m[0], rs[0]);
            for (int64_t i = 0; i < rows; i++)
                backend_cpu.layernorm_fwd(1, d, 1e-5f, x + i * d, g, b, y[1] + i * d, m[1] + i,
                                          rs[1] + i);
            int64_t bad = 0;
            for (int64_t i = 0; i < rows * d; i++)
                bad += !same(y[0][i], y[1][i]);
            for (int64_t i = 0; i < rows; i++)
                bad += !same(m[0][i], m[1][i]) || !same(rs[0][i], rs[1][i]);
            CHECK(bad == 0, "layernorm_fwd d %d affine %d: %lld values differ", d, affine,
                  (long long)bad);
            float *dy = xmalloc((size_t)(rows * d) * 4), *dx[2], *dg[2], *db[2];
            for (int64_t i = 0; i < rows * d; i++)
                dy[i] = (float)((rng_uniform(r) * 2 - 1) * (i % 3 + 1));
            for (int k = 0; k < 2; k++) {
                dx[k] = xmalloc((size_t)(rows * d) * 4);
                dg[k] = xcalloc((size_t)d, 4), db[k] = xcalloc((size_t)d, 4);
            }
            backend_cpu.layernorm_bwd(rows, d, x, m[0], rs[0], g, dy, dx[0], affine ? dg[0] : NULL,
                                      affine ? db[0] : NULL);
            for (int64_t i = 0; i < rows; i++)
                backend_cpu.layernorm_bwd(1, d, x + i * d, m[0] + i, rs[0] + i, g, dy + i * d,
                                          dx[1] + i * d, affine ? dg[1] : NULL,
                                          affine ? db[1] : NULL);
            bad = 0;
            for (int64_t i = 0; i < rows * d; i++)
                bad += !same(dx[0][i], dx[1][i]);
            for (int j = 0; j < d; j++)
                bad += !same(dg[0][j], dg[1][j]) || !same(db[0][j], db[1][j]);
            CHECK(bad == 0, "layernorm_bwd d %d affine %d: %lld values differ", d, affine,
                  (long long)bad);
            if (!affine) { /* l2norm_fwd, l2norm_bwd: the same blocks */
                float nrm[2][11];
                backend_cpu.l2norm_fwd(rows, d, 1e-6f, x, y[0], nrm[0]);
                backend_cpu.l2norm_bwd(rows, d, y[0], nrm[0], dy, dx[0]);
                for (int64_t i = 0; i < rows; i++) {
                    backend_cpu.l2norm_fwd(1, d, 1e-6f, x + i * d, y[1] + i * d, nrm[1] + i);
                    backend_cpu.l2norm_bwd(1, d, y[0] + i * d, nrm[0] + i, dy + i * d,
                                           dx[1] + i * d);
                }
                bad = 0;
                for (int64_t i = 0; i < rows * d; i++)
                    bad += !same(y[0][i], y[1][i]) || !same(dx[0][i], dx[1][i]);
                for (int64_t i = 0; i < rows; i++)
                    bad += !same(nrm[0][i], nrm[1][i]);
                CHECK(bad == 0, "l2norm d %d: %lld values differ", d, (long long)bad);
            }
            for (int k = 0; k < 2; k++)
                free(dx[k]), free(dg[k]), free(db[k]);
            free(dy);
            free(x), free(y[0]), free(y[1]), free(gamma), free(beta);
        }
}

/* layernorm_bwd, l2norm_fwd and l2norm_bwd of 19 rows (two blocks of 8 and
 * three left over) against each row alone, bit for bit; row 5's l2norm is
 * clamped (|x| < eps) */
static void check_rowsum_rows(struct rng *r)
{
    const int ds[] = {1, 7, 50, 64};
    const int64_t rows = 19;
    for (size_t di = 0; di < sizeof ds / sizeof *ds; di++) {
        const int d = ds[di];
        const size_t n = (size_t)(rows * d);
        float *x = xmalloc(n * 4), *dy = xmalloc(n * 4), *gamma = xmalloc((size_t)d * 4);
        float mean[19], rstd[19], norm[2][19], *out[2], *dg[2], *db[2];
        for (size_t i = 0; i < n; i++) {
            x[i] = (float)((rng_uniform(r) * 2 - 1) * (double)(i % 5 + 1));
            x[i] = i / (size_t)d == 5 ? x[i] * 1e-9f : x[i] + (i / (size_t)d == 3 ? 1e4f : 0);
            dy[i] = (float)(rng_uniform(r) * 2 - 1);
        }
        for (int j = 0; j < d; j++)
            gamma[j] = (float)rng_uniform(r);
        for (int k = 0; k < 2; k++) {
            out[k] = xmalloc(n * 4);
            dg[k] = xcalloc((size_t)d, 4);
            db[k] = xcalloc((size_t)d, 4);
        }
        int64_t bad = 0;
        backend_cpu.layernorm_fwd(rows, d, 1e-5f, x, NULL, NULL, out[0], mean, rstd);
        for (int affine = 0; affine < 2; affine++) { /* layernorm_bwd */
            const float *g = affine ? gamma : NULL;
            backend_cpu.layernorm_bwd(rows, d, x, mean, rstd, g, dy, out[0], dg[0], db[0]);
            for (int64_t i = 0; i < rows; i++)
                backend_cpu.layernorm_bwd(1, d, x + i * d, mean + i, rstd + i, g, dy + i * d,
                                          out[1] + i * d, dg[1], db[1]);
            for (size_t i = 0; i < n; i++)
                bad += !same(out[0][i], out[1][i]);
            for (int j = 0; affine && j < d; j++)
                bad += !same(dg[0][j], dg[1][j]) || !same(db[0][j], db[1][j]);
        }
        CHECK(bad == 0, "layernorm_bwd d %d: %lld values differ", d, (long long)bad);
        backend_cpu.l2norm_fwd(rows, d, 1e-6f, x, out[0], norm[0]);
        for (int64_t i = 0; i < rows; i++)
            backend_cpu.l2norm_fwd(1, d, 1e-6f, x + i * d, out[1] + i * d, norm[1] + i);
        bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += !same(out[0][i], out[1][i]);
        for (int64_t i = 0; i < rows; i++)
            bad += !same(norm[0][i], norm[1][i]);
        CHECK(bad == 0, "l2norm_fwd d %d: %lld values differ", d, (long long)bad);
        float *y = out[1];
        out[1] = xmalloc(n * 4);
        backend_cpu.l2norm_bwd(rows, d, y, norm[0], dy, out[0]);
        for (int64_t i = 0; i < rows; i++)
            backend_cpu.l2norm_bwd(1, d, y + i * d, norm[0] + i, dy + i * d, out[1] + i * d);
        bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += !same(out[0][i], out[1][i]);
        CHECK(bad == 0, "l2norm_bwd d %d: %lld values differ", d, (long long)bad);
        free(y);
        for (int k = 0; k < 2; k++)
            free(out[k]), free(dg[k]), free(db[k]);
        free(x), free(dy), free(gamma);
    }
}

/* the plain HSTU ops against the rows form (every row a query at its own
 * position: the same arithmetic, no kept buckets); returns the values
 * that differ */
static int64_t hstu_plain_vs_rows(int64_t B, const int64_t *off, const int64_t *ts, int H,
                                  int dh, int N, const float *q, const float *k, const float *v,
                                  const float *pb, const float *tb, const float *dy)
{
    const int64_t T = off[B], n = T * H * dh, nb = 2 * N - 1 + HSTU_TIME_BUCKETS + 1;
    int64_t *qpos = xmalloc((size_t)T * 8), bad = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = off[b]; i < off[b + 1]; i++)
            qpos[i] = i - off[b];
    float *o[2], *g[2][3], *db[2];
    for (int c = 0; c < 2; c++) {
        o[c] = xmalloc((size_t)n * 4);
        for (int t = 0; t < 3; t++)
            g[c][t] = xmalloc((size_t)n * 4);
        db[c] = xcalloc((size_t)nb, 4);
    }
    backend_cpu.hstu_attn_fwd(B, off, H, dh, dh, N, q, k, v, pb, tb, ts, o[0]);
    backend_cpu.hstu_attn_rows_fwd(B, off, qpos, off, H, dh, dh, N, q, k, v, pb, tb, ts, o[1]);
    backend_cpu.hstu_attn_bwd(B, off, H, dh, dh, N, q, k, v, pb, tb, ts, dy, g[0][0], g[0][1],
                              g[0][2], db[0], db[0] + 2 * N - 1);
    backend_cpu.hstu_attn_rows_bwd(B, off, qpos, off, H, dh, dh, N, q, k, v, pb, tb, ts, dy,
                                   g[1][0], g[1][1], g[1][2], db[1], db[1] + 2 * N - 1);
    for (int64_t i = 0; i < n; i++) {
        bad += !same(o[0][i], o[1][i]);
        for (int t = 0; t < 3; t++)
            bad += !same(g[0][t][i], g[1][t][i]);
    }
    for (int64_t i = 0; i < nb; i++)
        bad += !same(db[0][i], db[1][i]);
    for (int c = 0; c < 2; c++) {
        free(o[c]), free(db[c]);
        for (int t = 0; t < 3; t++)
            free(g[c][t]);
    }
    free(qpos);
    return bad;
}

/* hstu_attn_*: the time buckets the backend keeps for the next call with
 * the same offsets and timestamps, against the rows form: the first call,
 * the next (kept), the timestamps changed in place (the same pointers),
 * the offsets changed with the same T */
static void check_hstu_kept_buckets(struct rng *r)
{
    enum { B = 3, H = 2, DH = 8, N = 200 };
    int64_t off[B + 1] = {0, 70, 75, 205};
    const int64_t T = off[B], n = T * H * DH;
    int64_t *ts = xmalloc((size_t)T * 8);
    for (int64_t i = 0, t = 1000; i < T; i++)
        ts[i] = t += (int64_t)rng_below(r, 100000);
    float *x[4], pb[2 * N - 1], tb[HSTU_TIME_BUCKETS + 1];
    for (int c = 0; c < 4; c++) {
        x[c] = xmalloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++)
            x[c][i] = (float)(rng_uniform(r) * 2 - 1);
    }
    for (int i = 0; i < 2 * N - 1; i++)
        pb[i] = (float)(rng_uniform(r) * 0.2 - 0.1);
    for (int i = 0; i <= HSTU_TIME_BUCKETS; i++)
        tb[i] = (float)(rng_uniform(r) * 2 - 1);
    const char *what[] = {"first call", "the next call", "timestamps changed in place",
                          "offsets changed"};
    for (int c = 0; c < 4; c++) {
        if (c == 2)
            for (int64_t i = 0; i < T; i++)
                ts[i] += (int64_t)rng_below(r, 1000) * (i % 7);
        if (c == 3)
            off[1] = 100, off[2] = 101;
        const int64_t bad =
            hstu_plain_vs_rows(B, off, ts, H, DH, N, x[0], x[1], x[2], pb, tb, x[3]);
        CHECK(bad == 0, "hstu_attn, kept time buckets, %s: %lld values differ", what[c],
              (long long)bad);
    }
    for (int c = 0; c < 4; c++)
        free(x[c]);
    free(ts);
    /* one sequence of 6000: 18M pairs' buckets, beyond what is kept */
    const int64_t L = 6000, off1[2] = {0, L};
    int64_t *ts1 = xmalloc((size_t)L * 8);
    float *pb1 = xmalloc((size_t)(2 * L - 1) * 4), *y[4];
    for (int64_t i = 0, t = 1000; i < L; i++)
        ts1[i] = t += (int64_t)rng_below(r, 100000);
    for (int64_t i = 0; i < 2 * L - 1; i++)
        pb1[i] = (float)(rng_uniform(r) * 0.2 - 0.1);
    for (int c = 0; c < 4; c++) {
        y[c] = xmalloc((size_t)L * 4);
        for (int64_t i = 0; i < L; i++)
            y[c][i] = (float)(rng_uniform(r) * 2 - 1);
    }
    const int64_t bad = hstu_plain_vs_rows(1, off1, ts1, 1, 1, (int)L, y[0], y[1], y[2], pb1, tb,
                                           y[3]);
    CHECK(bad == 0, "hstu_attn, a sequence of %lld (buckets not kept): %lld values differ",
          (long long)L, (long long)bad);
    for (int c = 0; c < 4; c++)
        free(y[c]);
    free(ts1), free(pb1);
}

static void check_bucket(int64_t dt)
{
    uint64_t a = dt < 0 ? -(uint64_t)dt : (uint64_t)dt;
    int32_t want = cpu_time_bucket_abs_ref(a), got = cpu_time_bucket(dt);
    EXPECT(got == want, "time bucket of %lld: %d, the formula %d", (long long)dt, got, want);
}

static void check_time_buckets(struct rng *r)
{
    cpu_time_buckets_init();
    const int64_t fixed[] = {0, 1, -1, 2, -2, 3, INT64_MAX, INT64_MIN, INT64_MIN + 1,
                             (int64_t)1 << 62, 86400, -86400, 31536000};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        check_bucket(fixed[i]);
    for (int k = 1; k <= HSTU_TIME_BUCKETS; k++) {
        const uint64_t t = cpu_time_bucket_table.thr[k];
        for (int64_t o = -3; o <= 3; o++) {
            if ((int64_t)t + o < 0 || t + (uint64_t)o > (uint64_t)INT64_MAX)
                continue;
            check_bucket((int64_t)t + o);
            check_bucket(-((int64_t)t + o));
        }
    }
    for (int e = 0; e < 63; e++)
        for (int64_t o = -1; o <= 1; o++) {
            check_bucket(((int64_t)1 << e) + o);
            check_bucket(-(((int64_t)1 << e) + o));
        }
    for (int i = 0; i < 200000; i++) {
        int64_t v = (int64_t)(rng_u64(r) >> (rng_u64(r) % 63));
        check_bucket(i % 2 ? v : -v);
    }
}

int main(void)
{
    struct rng r;
    rng_init(&r, rng_key(11, 12, 13));
    check_expf();
    check_silu(&r);
    check_dropout(&r);
    check_full_blocks(&r);
    check_sampled_loss(&r);
    check_layernorm_rows(&r);
    check_rowsum_rows(&r);
    check_hstu_kept_buckets(&r);
    check_time_buckets(&r);
    if (failures) {
        printf("%d check(s) failed\n", failures);
        return 1;
    }
    printf("cpu_math: cpu_expf and the silu loops are libm's expf bit for bit, the full "
           "softmax's blocks and the sampled softmax their references', layernorm's and "
           "l2norm's blocks their rows', hstu_attn's kept time buckets the rows form's; the time buckets are the formula's\n");
    return 0;
}
