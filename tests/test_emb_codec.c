/* test_emb_codec: the wire codecs of the embedding exchanges (emb_codec.h)
 * against their definitions: every bf16, fp16 and e4m3 value converts back
 * to itself, random floats round to the nearest value of each format (ties
 * to even), and whole rows meet the error bounds of the issue on random and
 * adversarial rows (zeros, constant rows, huge and tiny magnitudes, mixed
 * magnitudes, dim 1); NaN and infinity are refused naming the table and the
 * id; fp32 is the identity; the bytes per row. (CUDA against these: in
 * test_backend_ops, when there are device codecs.) */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/rng.h"
#include "backend/emb_codec.h"
#include "expect.h"


/* Every finite value of each format back to its own bits. */
static void test_scalars_exact(void)
{
    for (uint32_t b = 0; b < 65536; b++) {
        float x = emb_bf16_to_f32((uint16_t)b);
        if (isfinite(x))
            EXPECT(emb_f32_to_bf16(x) == b, "bf16 %04x -> %g -> %04x", b, x, emb_f32_to_bf16(x));
        if (((b >> 10) & 31) != 31) {
            float h = emb_f16_to_f32((uint16_t)b);
            EXPECT(emb_f32_to_f16(h) == b || (h == 0 && (b & 0x7fff) == 0), "f16 %04x -> %g", b, h);
        }
    }
    for (uint32_t b = 0; b < 256; b++) {
        if ((b & 0x7f) == 0x7f)
            continue; /* NaN */
        float x = emb_e4m3_to_f32((uint8_t)b);
        EXPECT(emb_f32_to_e4m3(x) == b, "e4m3 %02x -> %g -> %02x", b, x, emb_f32_to_e4m3(x));
    }
    EXPECT(emb_e4m3_to_f32(0x7e) == 448.0f, "e4m3 max %g", emb_e4m3_to_f32(0x7e));
    EXPECT(emb_f32_to_e4m3(1000.0f) == 0x7e, "e4m3 saturates");
    EXPECT(emb_f32_to_bf16(FLT_MAX) == 0x7f7f, "bf16 saturates at FLT_MAX");
}

/* x rounds to the nearest value of the format (dec: decode; sbit: the sign
 * bit; maxmag: the largest finite magnitude code): the neighbour codes on
 * the same side of zero are no nearer, and a tie went to the even code. */
static int nearest(float x, uint32_t code, float (*dec)(uint32_t), uint32_t sbit, uint32_t maxmag)
{
    const uint32_t sign = code & sbit, mag = code & (sbit - 1);
    const double e = fabs((double)x - dec(code));
    for (int s = -1; s <= 1; s += 2) {
        if ((s < 0 && mag == 0) || (s > 0 && mag == maxmag))
            continue;
        double e2 = fabs((double)x - dec(sign | (uint32_t)((int)mag + s)));
        if (e2 < e || (e2 == e && (mag & 1)))
            return 0;
    }
    return 1;
}
static float dec_bf16(uint32_t b) { return emb_bf16_to_f32((uint16_t)b); }
static float dec_f16(uint32_t b) { return emb_f16_to_f32((uint16_t)b); }
static float dec_e4m3(uint32_t b) { return emb_e4m3_to_f32((uint8_t)b); }

static void test_scalars_nearest(void)
{
    struct rng r;
    rng_init(&r, 7);
    for (int i = 0; i < 200000; i++) {
        float u = (float)(2 * rng_uniform(&r) - 1);
        float xb = u * ldexpf(1.0f, (int)(rng_uniform(&r) * 200) - 100);
        uint16_t b = emb_f32_to_bf16(xb);
        EXPECT(nearest(xb, b, dec_bf16, 0x8000, 0x7f7f), "bf16 of %.9g: %04x", xb, b);
        float xh = u * ldexpf(1.0f, (int)(rng_uniform(&r) * 42) - 26); /* below 2^16 */
        if (fabsf(xh) < 65504.0f) {
            uint16_t h = emb_f32_to_f16(xh);
            EXPECT(nearest(xh, h, dec_f16, 0x8000, 0x7bff), "f16 of %.9g: %04x", xh, h);
        }
        float x8 = u * ldexpf(1.0f, (int)(rng_uniform(&r) * 20) - 11);
        if (fabsf(x8) <= 448.0f) {
            uint8_t q = emb_f32_to_e4m3(x8);
            EXPECT(nearest(x8, q, dec_e4m3, 0x80, 0x7e), "e4m3 of %.9g: %02x", x8, q);
        }
    }
}

/* Row x[d] through codec c meets its bound. */
static void check_row(enum emb_codec c, int d, const float *x, const char *cas)
{
    uint8_t *w = xmalloc((size_t)emb_codec_row_bytes(c, d));
    float *y = xmalloc((size_t)d * sizeof *y);
    int64_t bad = -1;
    EXPECT(emb_codec_encode(c, 1, d, x, w, &bad) == 0, "%s %s: refused", emb_codec_name(c), cas);
    emb_codec_decode(c, 1, d, w, y);
    double amax = 0, lo = INFINITY, hi = -INFINITY;
    for (int j = 0; j < d; j++) {
        amax = fmax(amax, fabs(x[j]));
        lo = fmin(lo, x[j]);
        hi = fmax(hi, x[j]);
    }
    const double slack = 1 + 0x1p-20;
    for (int j = 0; j < d; j++) {
        double e = fabs((double)x[j] - y[j]), ax = fabs(x[j]), bound = 0;
        switch (c) {
        case EMB_CODEC_FP32: bound = 0; break;
        case EMB_CODEC_BF16: bound = 0x1p-8 * ax; break;
        case EMB_CODEC_FP16: bound = (0x1p-11 * ax + 0x1p-39 * amax) * slack; break;
        case EMB_CODEC_FP8:
            EXPECT(e <= 0x1p-4 * amax * slack, "fp8 %s [%d]: %.9g -> %.9g: over 2^-4 of the "
                   "row's scale %g", cas, j, x[j], y[j], amax);
            bound = (0x1p-4 * ax + 0x1p-10 * amax / 448) * slack;
            break;
        case EMB_CODEC_INT8:
            bound = (hi - lo) / 510 * slack + 0x1p-24 * fmax(fabs(lo), fabs(hi));
            break;
        }
        EXPECT(e <= bound, "%s %s [%d]: %.9g -> %.9g (error %g > %g)", emb_codec_name(c), cas, j,
               x[j], y[j], e, bound);
        if (lo == hi) /* int8: a constant row comes back exactly */
            EXPECT(y[j] == x[j] || c != EMB_CODEC_INT8, "%s %s [%d]: %.9g -> %.9g",
                   emb_codec_name(c), cas, j, x[j], y[j]);
        if (x[j] == 0) /* the others: zeros */
            EXPECT(y[j] == 0 || c == EMB_CODEC_INT8, "%s %s: zero -> %g", emb_codec_name(c), cas,
                   y[j]);
    }
    free(w);
    free(y);
}

static void test_rows(void)
{
    enum { D = 64 };
    float x[D];
    struct rng r;
    rng_init(&r, 11);
    const int dims[] = {1, 2, 7, 50, 64};
    for (int c = 0; c < EMB_NCODECS; c++) {
        for (int t = 0; t < 300; t++) { /* random rows of random scales and dims */
            int d = dims[t % 5];
            double scale = ldexp(1.0, (int)(rng_uniform(&r) * 160) - 80);
            for (int j = 0; j < d; j++)
                x[j] = (float)(rng_normal(&r) * scale);
            check_row((enum emb_codec)c, d, x, "random");
        }
        memset(x, 0, sizeof x);
        check_row((enum emb_codec)c, D, x, "zeros");
        for (int j = 0; j < D; j++)
            x[j] = 0.75f;
        check_row((enum emb_codec)c, D, x, "constant");
        for (int j = 0; j < D; j++)
            x[j] = -3.25e-7f;
        check_row((enum emb_codec)c, D, x, "negative constant");
        for (int j = 0; j < D; j++)
            x[j] = (j % 2 ? -1 : 1) * (j % 3 ? 3e38f : FLT_MAX);
        check_row((enum emb_codec)c, D, x, "huge");
        for (int j = 0; j < D; j++)
            x[j] = (float)((j % 2 ? -1 : 1) * 1e-30 * (1 + j));
        check_row((enum emb_codec)c, D, x, "tiny");
        for (int j = 0; j < D; j++)
            x[j] = (float)(rng_normal(&r) * (j % 2 ? 1e20 : 1e-20));
        check_row((enum emb_codec)c, D, x, "mixed magnitudes");
        for (int j = 0; j < D; j++)
            x[j] = j == 5 ? 1.0f : 0.0f;
        check_row((enum emb_codec)c, D, x, "one-hot");
    }
}

/* NaN and infinity: refused by the lossy codecs, naming table and id; fp32
 * carries them as they are. Several rows at once, the bad one third. */
static void test_refused(void)
{
    enum { N = 5, D = 8 };
    float x[N * D];
    int64_t ids[N] = {3, 9, 42, 7, 1};
    char err[512];
    for (int c = 0; c < EMB_NCODECS; c++)
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < N * D; i++)
                x[i] = 0.1f * (float)i;
            x[2 * D + 5] = k ? INFINITY : NAN;
            uint8_t *w = xmalloc((size_t)(N * emb_codec_row_bytes((enum emb_codec)c, D)));
            int rc = emb_codec_encode_ids((enum emb_codec)c, N, D, x, w, ids, "items", "gradient",
                                          err, sizeof err);
            if (c == EMB_CODEC_FP32) {
                float y[N * D];
                emb_codec_decode(EMB_CODEC_FP32, N, D, w, y);
                EXPECT(rc == 0 && !memcmp(x, y, sizeof x), "fp32 is not the identity");
            } else {
                EXPECT(rc == -1, "%s: %s accepted", emb_codec_name((enum emb_codec)c),
                       k ? "inf" : "NaN");
                EXPECT(strstr(err, "'items'") && strstr(err, "id 42") &&
                           strstr(err, k ? "infinity" : "NaN") && strstr(err, "gradient") &&
                           strstr(err, emb_codec_name((enum emb_codec)c)),
                       "message: %s", err);
                int64_t bad = -1;
                EXPECT(emb_codec_encode((enum emb_codec)c, N, D, x, w, &bad) == -1 && bad == 2,
                       "bad row %lld", (long long)bad);
            }
            free(w);
        }
    printf("refused: %s\n", err);
}

static void test_sizes(void)
{
    const int64_t want[EMB_NCODECS] = {256, 128, 132, 68, 72}; /* d = 64 */
    for (int c = 0; c < EMB_NCODECS; c++) {
        EXPECT(emb_codec_row_bytes((enum emb_codec)c, 64) == want[c], "%s: %lld bytes per row",
               emb_codec_name((enum emb_codec)c),
               (long long)emb_codec_row_bytes((enum emb_codec)c, 64));
        EXPECT(emb_codec_parse(emb_codec_name((enum emb_codec)c)) == c, "parse");
    }
    EXPECT(emb_codec_parse("fp4") == -1, "fp4 parsed");
}

/* Many rows at once (the parallel loop) equal one row at a time. */
static void test_batch(void)
{
    enum { N = 3000, D = 16 };
    float *x = xmalloc(N * D * sizeof *x), *y = xmalloc(N * D * sizeof *y), z[D];
    struct rng r;
    rng_init(&r, 5);
    for (int i = 0; i < N * D; i++)
        x[i] = (float)rng_normal(&r);
    for (int c = 1; c < EMB_NCODECS; c++) {
        const int64_t rb = emb_codec_row_bytes((enum emb_codec)c, D);
        uint8_t *w = xmalloc((size_t)(N * rb)), *w1 = xmalloc((size_t)rb);
        int64_t bad;
        EXPECT(!emb_codec_encode((enum emb_codec)c, N, D, x, w, &bad), "refused");
        emb_codec_decode((enum emb_codec)c, N, D, w, y);
        for (int i = 0; i < N; i += 97) {
            EXPECT(!emb_codec_encode((enum emb_codec)c, 1, D, x + i * D, w1, &bad), "refused");
            EXPECT(!memcmp(w1, w + i * rb, (size_t)rb), "%s row %d", emb_codec_name(c), i);
            emb_codec_decode((enum emb_codec)c, 1, D, w1, z);
            EXPECT(!memcmp(z, y + i * D, sizeof z), "%s row %d decoded", emb_codec_name(c), i);
        }
        free(w);
        free(w1);
    }
    free(x);
    free(y);
}

int main(void)
{
    test_scalars_exact();
    test_scalars_nearest();
    test_rows();
    test_refused();
    test_sizes();
    test_batch();
    if (failures) {
        printf("%d failure(s)\n", failures);
        return 1;
    }
    printf("ok: emb_codec round trips\n");
    return 0;
}
