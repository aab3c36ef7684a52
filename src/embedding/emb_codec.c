/* emb_codec: the CPU reference of the wire formats; see emb_codec.h. The
 * scalar conversions use only exact steps (frexp, ldexp, rint in the
 * default round-to-nearest-even mode) so that a device version can repeat
 * them bit for bit. */
#include "embedding/emb_codec.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"

static const char *const codec_names[EMB_NCODECS] = {"fp32", "bf16", "fp16", "fp8", "int8"};

int emb_codec_parse(const char *name)
{
    for (int c = 0; c < EMB_NCODECS; c++)
        if (!strcmp(name, codec_names[c]))
            return c;
    return -1;
}

const char *emb_codec_name(enum emb_codec c)
{
    return (unsigned)c < EMB_NCODECS ? codec_names[c] : "?";
}

int64_t emb_codec_row_bytes(enum emb_codec c, int dim)
{
    switch (c) {
    case EMB_CODEC_FP32: return 4 * (int64_t)dim;
    case EMB_CODEC_BF16: return 2 * (int64_t)dim;
    case EMB_CODEC_FP16: return 4 + 2 * (int64_t)dim;
    case EMB_CODEC_FP8: return 4 + (int64_t)dim;
    case EMB_CODEC_INT8: return 8 + (int64_t)dim;
    }
    return 0;
}

/* --- scalars ---------------------------------------------------------------- */

uint16_t emb_f32_to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint16_t b = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16); /* nearest even */
    if ((b & 0x7F80u) == 0x7F80u) /* a finite value rounded up to infinity: saturate */
        b = (uint16_t)(((u >> 16) & 0x8000u) | 0x7F7Fu);
    return b;
}

float emb_bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* |x| (bits a, finite) rounded to nearest even in a binary format of
 * `mant` fraction bits, exponent bias `bias` and smallest normal exponent
 * 1 - bias; returns the format's bits without sign (the caller keeps |x|
 * below the format's largest value). Normal results: fp32's bits rebiased
 * and rounded by integer addition; subnormal ones: adding 2^(mant - bias +
 * 1 + 23 - mant) as a float leaves rint(|x| / quantum) in the low bits (F.
 * Giesen's float-to-half conversion, for any small format). */
static uint32_t round_mini(uint32_t a, int mant, int bias)
{
    const int shift = 23 - mant;
    if (a < (uint32_t)(127 - bias + 1) << 23) { /* below the smallest normal */
        const uint32_t magic = (uint32_t)(127 - bias + shift + 1) << 23;
        return f32_bits(bits_f32(a) + bits_f32(magic)) - magic;
    }
    const uint32_t odd = (a >> shift) & 1u;
    a += ((uint32_t)(bias - 127) << 23) + (1u << (shift - 1)) - 1u + odd;
    return a >> shift;
}

uint16_t emb_f32_to_f16(float x)
{
    const uint32_t u = f32_bits(x);
    return (uint16_t)(((u >> 16) & 0x8000u) | round_mini(u & 0x7fffffffu, 10, 15));
}

float emb_f16_to_f32(uint16_t h)
{
    const uint32_t E = (h >> 10) & 31, M = h & 1023u, sign = (uint32_t)(h & 0x8000u) << 16;
    if (E == 0) /* subnormal: M 2^-24, exact */
        return bits_f32(sign | f32_bits((float)M * 0x1p-24f));
    return bits_f32(sign | (E + 112) << 23 | M << 13);
}

uint8_t emb_f32_to_e4m3(float x)
{
    const uint32_t u = f32_bits(x);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x43e00000u) /* 448 */
        a = 0x43e00000u;
    return (uint8_t)(((u >> 24) & 0x80u) | round_mini(a, 3, 7));
}

float emb_e4m3_to_f32(uint8_t b)
{
    const uint32_t E = (b >> 3) & 15, M = b & 7u, sign = (uint32_t)(b & 0x80u) << 24;
    if (E == 0) /* subnormal: M 2^-9 */
        return bits_f32(sign | f32_bits((float)M * 0x1p-9f));
    return bits_f32(sign | (E + 120) << 23 | M << 20);
}

/* --- rows ------------------------------------------------------------------- */

static float clamp_finite(double v)
{
    return (float)(v > FLT_MAX ? FLT_MAX : v < -FLT_MAX ? -FLT_MAX : v);
}

/* rint(v) for 0 <= v < 2^51, without a library call (round to nearest
 * even by the addition's own rounding) */
static double rint_small(double v)
{
    double r = v + 0x1.8p52; /* kept: the build does not reassociate floats */
    return r - 0x1.8p52;
}

/* One row x[dim] into w; -1 if it holds a non-finite value. */
static int encode_row(enum emb_codec c, int dim, const float *x, uint8_t *w)
{
    float amax = 0, lo = INFINITY, hi = -INFINITY;
    uint32_t nonfinite = 0;
    for (int j = 0; j < dim; j++) { /* comparisons, not fmaxf calls; NaN is refused anyway */
        const float v = x[j], a = fabsf(v);
        nonfinite |= (f32_bits(v) & 0x7f800000u) == 0x7f800000u;
        amax = a > amax ? a : amax;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    if (nonfinite)
        return -1;
    if (c == EMB_CODEC_BF16) {
        for (int j = 0; j < dim; j++) {
            uint16_t b = emb_f32_to_bf16(x[j]);
            memcpy(w + 2 * j, &b, 2);
        }
    } else if (c == EMB_CODEC_FP16) {
        int32_t e = amax > 0 ? ilogbf(amax) - 14 : 0; /* largest scaled value in [2^14, 2^15) */
        memcpy(w, &e, 4);
        const int pow_ok = -e >= -126 && -e <= 127;
        const float p = pow_ok ? ldexpf(1.0f, -e) : 0;
        for (int j = 0; j < dim; j++) {
            uint16_t h = emb_f32_to_f16(pow_ok ? x[j] * p : ldexpf(x[j], -e));
            memcpy(w + 4 + 2 * j, &h, 2);
        }
    } else if (c == EMB_CODEC_FP8) {
        float s = amax / 448.0f;
        memcpy(w, &s, 4);
        for (int j = 0; j < dim; j++)
            w[4 + j] = s > 0 ? emb_f32_to_e4m3(x[j] / s) : 0;
    } else { /* int8 */
        float scale = (float)(((double)hi - (double)lo) / 255.0), off = lo;
        memcpy(w, &scale, 4);
        memcpy(w + 4, &off, 4);
        for (int j = 0; j < dim; j++) {
            double v = scale > 0 ? ((double)x[j] - off) / scale : 0, q = rint_small(v > 0 ? v : 0);
            w[8 + j] = (uint8_t)(q < 255 ? q : 255);
        }
    }
    return 0;
}

static void decode_row(enum emb_codec c, int dim, const uint8_t *w, float *x)
{
    if (c == EMB_CODEC_BF16) {
        for (int j = 0; j < dim; j++) {
            uint16_t b;
            memcpy(&b, w + 2 * j, 2);
            x[j] = emb_bf16_to_f32(b);
        }
    } else if (c == EMB_CODEC_FP16) {
        int32_t e;
        memcpy(&e, w, 4);
        const double p = ldexp(1.0, e); /* exact: e within double's range */
        for (int j = 0; j < dim; j++) {
            uint16_t h;
            memcpy(&h, w + 4 + 2 * j, 2);
            x[j] = clamp_finite((double)emb_f16_to_f32(h) * p);
        }
    } else if (c == EMB_CODEC_FP8) {
        float s;
        memcpy(&s, w, 4);
        for (int j = 0; j < dim; j++)
            x[j] = clamp_finite((double)emb_e4m3_to_f32(w[4 + j]) * s);
    } else { /* int8 */
        float scale, off;
        memcpy(&scale, w, 4);
        memcpy(&off, w + 4, 4);
        for (int j = 0; j < dim; j++)
            x[j] = clamp_finite((double)off + (double)w[8 + j] * scale);
    }
}

int emb_codec_encode(enum emb_codec c, int64_t n, int dim, const float *rows, uint8_t *wire,
                     int64_t *bad)
{
    if (c == EMB_CODEC_FP32) {
        if (n)
            memcpy(wire, rows, (size_t)n * (size_t)dim * sizeof *rows);
        return 0;
    }
    const int64_t rb = emb_codec_row_bytes(c, dim);
    int64_t first_bad = n;
#pragma omp parallel for schedule(static) reduction(min : first_bad) if (n >= 1024)
    for (int64_t i = 0; i < n; i++)
        if (encode_row(c, dim, rows + i * dim, wire + i * rb) && i < first_bad)
            first_bad = i;
    if (first_bad < n) {
        *bad = first_bad;
        return -1;
    }
    return 0;
}

void emb_codec_decode(enum emb_codec c, int64_t n, int dim, const uint8_t *wire, float *rows)
{
    if (c == EMB_CODEC_FP32) {
        if (n)
            memcpy(rows, wire, (size_t)n * (size_t)dim * sizeof *rows);
        return;
    }
    const int64_t rb = emb_codec_row_bytes(c, dim);
#pragma omp parallel for schedule(static) if (n >= 1024)
    for (int64_t i = 0; i < n; i++)
        decode_row(c, dim, wire + i * rb, rows + i * dim);
}

int emb_codec_encode_ids(enum emb_codec c, int64_t n, int dim, const float *rows, uint8_t *wire,
                         const int64_t *ids, const char *table, const char *what, char *err,
                         size_t errlen)
{
    int64_t bad = 0;
    if (!emb_codec_encode(c, n, dim, rows, wire, &bad))
        return 0;
    const float *x = rows + bad * dim;
    int j = 0;
    while (j < dim && isfinite(x[j]))
        j++;
    return errorf(err, errlen,
                  "embedding table '%s': the %s of id %lld holds %s (value %d of %d), which the "
                  "%s wire format cannot carry (fp32 sends it as it is)",
                  table, what, (long long)ids[bad], j < dim && isnan(x[j]) ? "NaN" : "infinity",
                  j, dim, emb_codec_name(c));
}
