/* emb_codec: the CPU reference of the wire formats; see emb_codec.h. The
 * row functions are emb_codec_row.h's, which the device kernels share. */
#include "backend/emb_codec.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "backend/emb_codec_row.h"

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

/* --- scalars and rows: emb_codec_row.h ---------------------------------------- */

uint16_t emb_f32_to_bf16(float x) { return ecr_f32_to_bf16(x); }
float emb_bf16_to_f32(uint16_t b) { return ecr_bf16_to_f32(b); }
uint16_t emb_f32_to_f16(float x) { return ecr_f32_to_f16(x); }
float emb_f16_to_f32(uint16_t h) { return ecr_f16_to_f32(h); }
uint8_t emb_f32_to_e4m3(float x) { return ecr_f32_to_e4m3(x); }
float emb_e4m3_to_f32(uint8_t b) { return ecr_e4m3_to_f32(b); }

static int encode_row(enum emb_codec c, int dim, const float *x, uint8_t *w)
{
    return ecr_encode_row((int)c, dim, x, w);
}

static void decode_row(enum emb_codec c, int dim, const uint8_t *w, float *x)
{
    ecr_decode_row((int)c, dim, w, x);
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
