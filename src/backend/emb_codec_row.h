/* emb_codec_row: one row through a wire format (emb_codec.h), the CPU
 * reference (emb_codec.c) and the device kernels (cuda/exchange.cu) alike:
 * these very functions compile for both, so a row's wire form and its
 * decoding are the same bits on every backend. Only exact steps (integer
 * rounding of float bits, ldexp, ilogb, one rounding per operation: the
 * device side spells its multiply-adds out so that no FMA contracts them). */
#ifndef FS_EMB_CODEC_ROW_H
#define FS_EMB_CODEC_ROW_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define ECR_HD __host__ __device__
#else
#define ECR_HD
#endif

/* a + b c in double, rounded twice (never fused) */
static inline ECR_HD double ecr_add_mul(double a, double b, double c)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(a, __dmul_rn(b, c));
#else
    double p = b * c; /* the default build has no FMA; GCC 12 could fuse only with -mfma */
    return a + p;
#endif
}

static inline ECR_HD uint32_t ecr_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline ECR_HD float ecr_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* fp32 bits u rounded to bf16's, nearest even (a NaN's or an overflow's
 * result is the callers' to fix) */
static inline ECR_HD uint16_t ecr_bf16_round(uint32_t u)
{
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* The wire's: finite x rounded, saturating at bf16's largest finite value
 * (the codec refuses rows that are not finite). */
static inline ECR_HD uint16_t ecr_f32_to_bf16(float x)
{
    uint32_t u = ecr_bits(x);
    uint16_t b = ecr_bf16_round(u);
    if ((b & 0x7F80u) == 0x7F80u) /* a finite value rounded up to infinity: saturate */
        b = (uint16_t)(((u >> 16) & 0x8000u) | 0x7F7Fu);
    return b;
}

/* x rounded to bf16 as IEEE arithmetic does: a finite value beyond bf16's
 * range becomes an infinity, infinities stay, a NaN becomes the quiet NaN
 * 0x7FC0 (as torch.bfloat16). The GEMM operands of device.precision = bf16
 * (backend_cpu_bf16.c, cuda/gemm_bf16.cu). */
static inline ECR_HD uint16_t ecr_f32_to_bf16_rn(float x)
{
    const uint32_t u = ecr_bits(x);
    return (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)0x7FC0u : ecr_bf16_round(u);
}

static inline ECR_HD float ecr_bf16_to_f32(uint16_t b) { return ecr_float((uint32_t)b << 16); }

/* |x| (bits a, finite) rounded to nearest even in a binary format of
 * `mant` fraction bits, exponent bias `bias` and smallest normal exponent
 * 1 - bias; returns the format's bits without sign (the caller keeps |x|
 * below the format's largest value). Normal results: fp32's bits rebiased
 * and rounded by integer addition; subnormal ones: adding 2^(mant - bias +
 * 1 + 23 - mant) as a float leaves rint(|x| / quantum) in the low bits (F.
 * Giesen's float-to-half conversion, for any small format). */
static inline ECR_HD uint32_t ecr_round_mini(uint32_t a, int mant, int bias)
{
    const int shift = 23 - mant;
    if (a < (uint32_t)(127 - bias + 1) << 23) { /* below the smallest normal */
        const uint32_t magic = (uint32_t)(127 - bias + shift + 1) << 23;
        return ecr_bits(ecr_float(a) + ecr_float(magic)) - magic;
    }
    const uint32_t odd = (a >> shift) & 1u;
    a += ((uint32_t)(bias - 127) << 23) + (1u << (shift - 1)) - 1u + odd;
    return a >> shift;
}

static inline ECR_HD uint16_t ecr_f32_to_f16(float x)
{
    const uint32_t u = ecr_bits(x);
    return (uint16_t)(((u >> 16) & 0x8000u) | ecr_round_mini(u & 0x7fffffffu, 10, 15));
}

static inline ECR_HD float ecr_f16_to_f32(uint16_t h)
{
    const uint32_t E = (h >> 10) & 31, M = h & 1023u, sign = (uint32_t)(h & 0x8000u) << 16;
    if (E == 0) /* subnormal: M 2^-24, exact */
        return ecr_float(sign | ecr_bits((float)M * 0x1p-24f));
    return ecr_float(sign | (E + 112) << 23 | M << 13);
}

static inline ECR_HD uint8_t ecr_f32_to_e4m3(float x)
{
    const uint32_t u = ecr_bits(x);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x43e00000u) /* 448 */
        a = 0x43e00000u;
    return (uint8_t)(((u >> 24) & 0x80u) | ecr_round_mini(a, 3, 7));
}

static inline ECR_HD float ecr_e4m3_to_f32(uint8_t b)
{
    const uint32_t E = (b >> 3) & 15, M = b & 7u, sign = (uint32_t)(b & 0x80u) << 24;
    if (E == 0) /* subnormal: M 2^-9 */
        return ecr_float(sign | ecr_bits((float)M * 0x1p-9f));
    return ecr_float(sign | (E + 120) << 23 | M << 20);
}

static inline ECR_HD float ecr_clamp_finite(double v)
{
    return (float)(v > FLT_MAX ? FLT_MAX : v < -FLT_MAX ? -FLT_MAX : v);
}

/* rint(v) for 0 <= v < 2^51 without a library call (round to nearest even
 * by the addition's own rounding; the build does not reassociate) */
static inline ECR_HD double ecr_rint_small(double v)
{
    double r = v + 0x1.8p52;
    return r - 0x1.8p52;
}

/* One row x[dim] into w (codec: enum emb_codec, not fp32); -1 if it holds
 * a non-finite value (w is then unspecified). */
static inline ECR_HD int ecr_encode_row(int codec, int dim, const float *x, uint8_t *w)
{
    float amax = 0, lo = INFINITY, hi = -INFINITY;
    uint32_t nonfinite = 0;
    for (int j = 0; j < dim; j++) { /* comparisons, not fmaxf calls; NaN is refused anyway */
        const float v = x[j], a = fabsf(v);
        nonfinite |= (ecr_bits(v) & 0x7f800000u) == 0x7f800000u;
        amax = a > amax ? a : amax;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    if (nonfinite)
        return -1;
    if (codec == 1) { /* bf16 */
        for (int j = 0; j < dim; j++) {
            uint16_t b = ecr_f32_to_bf16(x[j]);
            memcpy(w + 2 * j, &b, 2);
        }
    } else if (codec == 2) { /* fp16 */
        int32_t e = amax > 0 ? ilogbf(amax) - 14 : 0; /* largest scaled value in [2^14, 2^15) */
        memcpy(w, &e, 4);
        const int pow_ok = -e >= -126 && -e <= 127;
        const float p = pow_ok ? ldexpf(1.0f, -e) : 0;
        for (int j = 0; j < dim; j++) {
            uint16_t h = ecr_f32_to_f16(pow_ok ? x[j] * p : ldexpf(x[j], -e));
            memcpy(w + 4 + 2 * j, &h, 2);
        }
    } else if (codec == 3) { /* fp8 */
        float s = amax / 448.0f;
        memcpy(w, &s, 4);
        for (int j = 0; j < dim; j++)
            w[4 + j] = s > 0 ? ecr_f32_to_e4m3(x[j] / s) : 0;
    } else { /* int8 */
        float scale = (float)(((double)hi - (double)lo) / 255.0), off = lo;
        memcpy(w, &scale, 4);
        memcpy(w + 4, &off, 4);
        for (int j = 0; j < dim; j++) {
            double v = scale > 0 ? ((double)x[j] - off) / scale : 0;
            double q = ecr_rint_small(v > 0 ? v : 0);
            w[8 + j] = (uint8_t)(q < 255 ? q : 255);
        }
    }
    return 0;
}

static inline ECR_HD void ecr_decode_row(int codec, int dim, const uint8_t *w, float *x)
{
    if (codec == 1) {
        for (int j = 0; j < dim; j++) {
            uint16_t b;
            memcpy(&b, w + 2 * j, 2);
            x[j] = ecr_bf16_to_f32(b);
        }
    } else if (codec == 2) {
        int32_t e;
        memcpy(&e, w, 4);
        const double p = ldexp(1.0, e); /* exact: e within double's range */
        for (int j = 0; j < dim; j++) {
            uint16_t h;
            memcpy(&h, w + 4 + 2 * j, 2);
            x[j] = ecr_clamp_finite((double)ecr_f16_to_f32(h) * p);
        }
    } else if (codec == 3) {
        float s;
        memcpy(&s, w, 4);
        for (int j = 0; j < dim; j++)
            x[j] = ecr_clamp_finite((double)ecr_e4m3_to_f32(w[4 + j]) * s);
    } else {
        float scale, off;
        memcpy(&scale, w, 4);
        memcpy(&off, w + 4, 4);
        for (int j = 0; j < dim; j++)
            x[j] = ecr_clamp_finite(ecr_add_mul((double)off, (double)w[8 + j], (double)scale));
    }
}

#endif
