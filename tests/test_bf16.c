/* test_bf16: the CPU backend's bf16 GEMM emulation (device.precision = bf16;
 * src/backend/backend_cpu_bf16.c), written out for the PyTorch oracle
 * (tests/torch_bf16.py, run by tests/grad_bf16.sh), with checks of its own:
 *   - the rounding (cpu_round_bf16) of awkward values: ties to even either
 *     way, the largest finite values (rounding up to infinity), infinities,
 *     NaNs, subnormals, signed zeros, and random values;
 *   - gemm_bf16 on seeded random shapes, both transposes, leading
 *     dimensions above the minimum, alpha/beta: here it must equal sgemm of
 *     the operands rounded by cpu_round_bf16 bit for bit (the emulation is
 *     exactly that) and differ from the fp32 gemm (so the rounding happens);
 *     the fake device must give its bits (tolerance 0);
 *   - the bf16 view (precision.h) of the CPU and of the fake device:
 *     backend_gemm_dense is gemm_bf16's product, gemm stays the fp32 one
 *     (bf16 in the dense layers only: the full softmax, the bias GEMMs and
 *     evaluation scoring call gemm);
 *   - the ranking head's K x K maps under the bf16 view of the CPU
 *     (model.recency's A, model.factors' M: task_recency.c, task_factor.c):
 *     their products and gradients are the fp32 gemm's bit for bit, not
 *     gemm_bf16's (the rule above: sums over positions stay fp32).
 * File format (little-endian): records of 9 int64 (kind, ta, tb, m, n, k,
 * lda, ldb, ldc) then float32 arrays: kind 1 (rounding): n = count, x[n],
 * y[n]; kind 2 (gemm): alpha, beta, A[ra lda], B[rb ldb], C0[m ldc] (the C
 * before), Cb[m ldc] (gemm_bf16), Cf[m ldc] (fp32 gemm).
 *   test_bf16 FILE   exit 0 pass, 1 fail */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/backend_cpu.h"
#include "backend/precision.h"
#include "base/check.h"
#include "base/rng.h"
#include "model/task_factor.h"
#include "model/task_recency.h"

static int failures;
static struct rng G;
static FILE *out;

#define FAIL(...) (printf("FAIL: " __VA_ARGS__), printf("\n"), failures++)

static void put_hdr(int64_t kind, int64_t ta, int64_t tb, int64_t m, int64_t n, int64_t k,
                    int64_t lda, int64_t ldb, int64_t ldc)
{
    const int64_t h[9] = {kind, ta, tb, m, n, k, lda, ldb, ldc};
    if (fwrite(h, sizeof h, 1, out) != 1)
        fatal("test_bf16: write failed");
}

static void put_f32(const float *x, int64_t n)
{
    if (n > 0 && fwrite(x, sizeof *x, (size_t)n, out) != (size_t)n)
        fatal("test_bf16: write failed");
}

static float from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static void rounding(void)
{
    const uint32_t special[] = {
        0x3f808000u, /* 1 + 2^-8: a tie, rounds down to even 1 */
        0x3f818000u, /* 1 + 3 2^-8: a tie, rounds up to even */
        0x3f808001u, /* just above the tie: up */
        0x3f807fffu, /* just below: down */
        0xbf818000u, /* negative tie */
        0x7f7fffffu, /* FLT_MAX: rounds up to infinity */
        0x7f7f7fffu, /* below bf16's largest finite + half: stays finite */
        0x7f7f8000u, /* a tie at the top: to even = infinity */
        0xff7fffffu, /* -FLT_MAX */
        0x7f800000u, /* +inf */
        0xff800000u, /* -inf */
        0x7fc00000u, /* quiet NaN */
        0x7f800001u, /* signalling NaN: must stay NaN */
        0xffc12345u, /* negative NaN with payload */
        0x00000001u, /* smallest subnormal: to 0 */
        0x00008000u, /* a subnormal tie: to even 0 */
        0x00018000u, /* a subnormal tie: up to even */
        0x007fffffu, /* largest subnormal: up to the smallest normal */
        0x00000000u, 0x80000000u, /* signed zeros */
    };
    const int ns = (int)(sizeof special / sizeof special[0]), n = ns + 4096;
    float *x = xmalloc((size_t)n * sizeof *x), *y = xmalloc((size_t)n * sizeof *y);
    for (int i = 0; i < ns; i++)
        x[i] = from_bits(special[i]);
    for (int i = ns; i < n; i++) /* any sign and magnitude, and random bit patterns */
        x[i] = i % 2 ? (float)((2.0 * rng_uniform(&G) - 1.0) * pow(2.0, 40.0 * rng_uniform(&G) - 20))
                     : from_bits((uint32_t)rng_u64(&G));
    cpu_round_bf16(1, n, x, n, y);
    for (int i = 0; i < n; i++) {
        const uint32_t u = bits(y[i]);
        if (u & 0xffffu)
            FAIL("round: 0x%08x -> 0x%08x has low bits", bits(x[i]), u);
        if (isnan(x[i]) != isnan(y[i]))
            FAIL("round: 0x%08x -> 0x%08x: NaN lost or made", bits(x[i]), u);
    }
    put_hdr(1, 0, 0, 0, n, 0, 0, 0, 0);
    put_f32(x, n);
    put_f32(y, n);
    free(x);
    free(y);
}

static float *rand_f32(int64_t n)
{
    float *x = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(2.0 * rng_uniform(&G) - 1.0);
    return x;
}

static float *dup_f32(const float *x, int64_t n)
{
    float *y = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *y);
    memcpy(y, x, (size_t)(n > 0 ? n : 0) * sizeof *y);
    return y;
}

/* the fake device's gemm_bf16 on copies of the operands: its C */
static float *on_fake(int ta, int tb, int64_t m, int64_t n, int64_t k, float al, const float *A,
                      int64_t na, int64_t lda, const float *B, int64_t nb, int64_t ldb, float be,
                      const float *C0, int64_t ldc)
{
    const struct backend_ops *f = &backend_fake;
    const size_t sa = (size_t)(na ? na : 1) * 4, sb = (size_t)(nb ? nb : 1) * 4,
                 sc = (size_t)(m * ldc > 0 ? m * ldc : 1) * 4;
    float *a = f->alloc(sa), *b = f->alloc(sb), *c = f->alloc(sc), *h = xmalloc(sc);
    f->to_device(a, A, (size_t)na * 4);
    f->to_device(b, B, (size_t)nb * 4);
    f->to_device(c, C0, (size_t)(m * ldc) * 4);
    f->gemm_bf16(ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc);
    f->to_host(h, c, (size_t)(m * ldc) * 4);
    f->free(a);
    f->free(b);
    f->free(c);
    return h;
}

static void gemms(void)
{
    static const int64_t shapes[][3] = {{1, 1, 1},    {7, 5, 3},     {50, 64, 7}, {64, 50, 256},
                                        {33, 1, 65},  {1, 257, 50},  {130, 70, 129},
                                        {4, 6, 0},    {64, 64, 300}, {200, 96, 96}};
    static const float ab[][2] = {{1.0f, 0.0f}, {1.0f, 1.0f}, {0.5f, -0.75f}};
    int variant = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                const int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                const float al = ab[variant % 3][0], be = ab[variant % 3][1];
                const int64_t pad = (variant++ % 2) ? 3 : 0;
                const int64_t ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
                const int64_t lda = ca + pad > 0 ? ca + pad : 1, ldb = cb + pad > 0 ? cb + pad : 1,
                              ldc = n + pad;
                float *A = rand_f32(ra * lda), *B = rand_f32(rb * ldb), *C0 = rand_f32(m * ldc);
                float *Cb = dup_f32(C0, m * ldc), *Cf = dup_f32(C0, m * ldc),
                      *Cr = dup_f32(C0, m * ldc);
                backend_cpu.gemm_bf16(ta, tb, m, n, k, al, A, lda, B, ldb, be, Cb, ldc);
                backend_cpu.gemm(ta, tb, m, n, k, al, A, lda, B, ldb, be, Cf, ldc);
                /* the emulation is sgemm of the rounded operands, bit for bit */
                float *Ar = xmalloc((size_t)(ra * ca > 0 ? ra * ca : 1) * 4),
                      *Br = xmalloc((size_t)(rb * cb > 0 ? rb * cb : 1) * 4);
                cpu_round_bf16(ra, ca, A, lda, Ar);
                cpu_round_bf16(rb, cb, B, ldb, Br);
                backend_cpu.gemm(ta, tb, m, n, k, al, Ar, ca > 0 ? ca : 1, Br, cb > 0 ? cb : 1,
                                 be, Cr, ldc);
                float *Cg = on_fake(ta, tb, m, n, k, al, A, ra * lda, lda, B, rb * ldb, ldb, be,
                                    C0, ldc);
                double diff = 0;
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < n; j++) {
                        const int64_t at = i * ldc + j;
                        if (bits(Cb[at]) != bits(Cr[at]) || bits(Cb[at]) != bits(Cg[at])) {
                            FAIL("gemm_bf16 m=%lld n=%lld k=%lld ta=%d tb=%d: C[%lld, %lld] = %a, "
                                 "sgemm of the rounded operands %a, fake device %a",
                                 (long long)m, (long long)n, (long long)k, ta, tb, (long long)i,
                                 (long long)j, (double)Cb[at], (double)Cr[at], (double)Cg[at]);
                            i = m;
                            break;
                        }
                        diff += fabs((double)Cb[at] - (double)Cf[at]);
                    }
                if (k >= 7 && !(diff > 0))
                    FAIL("gemm_bf16 m=%lld n=%lld k=%lld: equals the fp32 gemm (no rounding?)",
                         (long long)m, (long long)n, (long long)k);
                put_hdr(2, ta, tb, m, n, k, lda, ldb, ldc);
                const float albe[2] = {al, be};
                put_f32(albe, 2);
                put_f32(A, ra * lda);
                put_f32(B, rb * ldb);
                put_f32(C0, m * ldc);
                put_f32(Cb, m * ldc);
                put_f32(Cf, m * ldc);
                free(A), free(B), free(C0), free(Cb), free(Cf), free(Cr), free(Ar), free(Br);
                free(Cg);
            }
}

/* The bf16 view: backend_gemm_dense = gemm_bf16, gemm = the fp32 gemm, bit
 * for bit, on the CPU and on the fake device (through device memory). */
static void view_rule(void)
{
    const int64_t m = 37, n = 29, k = 50;
    float *A = rand_f32(m * k), *B = rand_f32(k * n);
    float *want_f = dup_f32(A, m * n), *want_b = dup_f32(A, m * n);
    backend_cpu.gemm(0, 1, m, n, k, 1.0f, A, k, B, k, 0.0f, want_f, n);
    backend_cpu.gemm_bf16(0, 1, m, n, k, 1.0f, A, k, B, k, 0.0f, want_b, n);
    const struct backend_ops *bases[] = {&backend_cpu, &backend_fake};
    for (int v = 0; v < 2; v++) {
        char err[256];
        const struct backend_ops *be = backend_at_precision(bases[v], PRECISION_BF16, err,
                                                            sizeof err);
        if (!be) {
            printf("FAIL: bf16 view of %s: %s\n", bases[v]->name, err);
            failures++;
            continue;
        }
        const size_t ab = (size_t)(m * k) * 4, bb = (size_t)(k * n) * 4, cb = (size_t)(m * n) * 4;
        float *dA = be->alloc(ab), *dB = be->alloc(bb), *dC = be->alloc(cb);
        float *got_f = xmalloc(cb), *got_b = xmalloc(cb);
        be->to_device(dA, A, ab);
        be->to_device(dB, B, bb);
        be->gemm(0, 1, m, n, k, 1.0f, dA, k, dB, k, 0.0f, dC, n);
        be->to_host(got_f, dC, cb);
        backend_gemm_dense(be, 0, 1, m, n, k, 1.0f, dA, k, dB, k, 0.0f, dC, n);
        be->to_host(got_b, dC, cb);
        be->synchronize();
        if (memcmp(got_f, want_f, cb) || memcmp(got_b, want_b, cb) || !memcmp(want_f, want_b, cb)) {
            printf("FAIL: the bf16 view of %s: gemm %s the fp32 product, backend_gemm_dense %s "
                   "gemm_bf16's\n", bases[v]->name, memcmp(got_f, want_f, cb) ? "is not" : "is",
                   memcmp(got_b, want_b, cb) ? "is not" : "is");
            failures++;
        }
        be->free(dA);
        be->free(dB);
        be->free(dC);
        free(got_f);
        free(got_b);
    }
    free(A), free(B), free(want_f), free(want_b);
}

/* The recency and factor maps under the bf16 view of the CPU: z += r A^T,
 * A's gradient dz^T r, z += h M^T, M's gradient, dh = dz M: each the fp32
 * gemm's bits (and not the bf16 product's, which differs for these values). */
static void maps(void)
{
    const int64_t n = 23;
    const int K = 3;
    char err[256];
    const struct backend_ops *be = backend_at_precision(&backend_cpu, PRECISION_BF16, err,
                                                        sizeof err);
    if (!be) {
        FAIL("bf16 view of the CPU: %s", err);
        return;
    }
    float *r = rand_f32(n * K), *dz = rand_f32(n * K), *A = rand_f32(K * K), *z0 = rand_f32(n * K);
    float *z = dup_f32(z0, n * K), *want = dup_f32(z0, n * K), *bf = dup_f32(z0, n * K);
    const size_t zb = (size_t)(n * K) * sizeof(float), ab = (size_t)(K * K) * sizeof(float);
    struct dense_tensor T = {.n = K * K, .rows = K, .cols = K, .w = A, .g = xcalloc(K * K, 4)};
    struct rank_recency rc = {.be = be, .K = K, .A = &T};
    rank_recency_fwd(&rc, n, r, z);
    backend_cpu.gemm(0, 1, n, K, K, 1.0f, r, K, A, K, 1.0f, want, K);
    backend_cpu.gemm_bf16(0, 1, n, K, K, 1.0f, r, K, A, K, 1.0f, bf, K);
    if (memcmp(z, want, zb) || !memcmp(want, bf, zb))
        FAIL("model.recency's map under bf16: z %s the fp32 product (which %s the bf16 one)",
             memcmp(z, want, zb) ? "is not" : "is", memcmp(want, bf, zb) ? "differs from" : "is");
    float *gw = xcalloc(K * K, 4), *gb = xcalloc(K * K, 4);
    rank_recency_bwd(&rc, n, dz);
    backend_cpu.gemm(1, 0, K, K, n, 1.0f, dz, K, r, K, 1.0f, gw, K);
    backend_cpu.gemm_bf16(1, 0, K, K, n, 1.0f, dz, K, r, K, 1.0f, gb, K);
    if (memcmp(T.g, gw, ab) || !memcmp(gw, gb, ab))
        FAIL("model.recency's map gradient under bf16 is not the fp32 product");
    mirror_free(&rc.r);
    /* the factor terms' map M: z += h M^T (rank_factor_apply) */
    struct rank_factor rf = {.be = be, .K = K, .F = 1, .fac = &T, .mix = &T};
    memcpy(z, z0, zb);
    memcpy(want, z0, zb);
    rank_factor_apply(&rf, n, r, z);
    backend_cpu.gemm(0, 1, n, K, K, 1.0f, r, K, A, K, 1.0f, want, K);
    if (memcmp(z, want, zb))
        FAIL("model.factors' map under bf16: z is not the fp32 product");
    mirror_free(&rf.h);
    free(r), free(dz), free(A), free(z0), free(z), free(want), free(bf), free(T.g), free(gw);
    free(gb);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_bf16 FILE\n");
        return 2;
    }
    out = fopen(argv[1], "wb");
    if (!out) {
        perror(argv[1]);
        return 1;
    }
    char err[256];
    if (backend_fake.device_open(0, 0, err, sizeof err)) {
        printf("FAIL: the fake device does not open: %s\n", err);
        return 1;
    }
    rng_init(&G, rng_key(0xbf16ull, 29, 4));
    rounding();
    gemms();
    view_rule();
    maps();
    if (fclose(out))
        fatal("test_bf16: %s: close failed", argv[1]);
    if (failures) {
        printf("%d check(s) failed\n", failures);
        return 1;
    }
    printf("ok: bf16 rounding and gemm_bf16 (the rounded operands' sgemm, bit for bit; the fake "
           "device's bits); the bf16 view: dense GEMMs bf16, gemm fp32; the ranking head's "
           "recency and factor maps fp32 under it\n");
    return 0;
}
