/* emb_codec: wire formats of the embedding exchanges
 * (doc/compression.md). A codec turns rows of floats into the
 * bytes that travel (the owner encodes the rows it serves, the requester
 * the gradients it sends) and back. Every row is encoded alone, so a row's
 * wire form depends only on its values: the same on any number of ranks.
 *
 *   codec  bytes per row   format of one row of d values x[0..d)
 *   fp32   4 d             the floats as they are (no rounding, no check)
 *   bf16   2 d             round to nearest even, saturating at +-max bf16
 *   fp16   4 + 2 d         int32 e, then x_j 2^-e as IEEE half (nearest
 *                          even); e = ilogb(max_j |x_j|) - 14 puts the row's
 *                          largest value in [2^14, 2^15): no overflow, and
 *                          values down to 2^-28 of the largest stay normal
 *                          halves (this per-row power-of-two scale is what
 *                          keeps small gradients from underflowing; it is
 *                          exact, so only the half rounding errs)
 *   fp8    4 + d           float s = max_j |x_j| / 448, then x_j / s as
 *                          e4m3 (OCP FP8 E4M3FN: 4 exponent bits, 3 mantissa
 *                          bits, max 448, nearest even)
 *   int8   8 + d           float scale = (max - min) / 255, float offset =
 *                          min, then q_j = rint((x_j - min) / scale) as a
 *                          uint8 (TorchRec's row-wise int8 layout)
 *
 * Error bounds (tests/test_emb_codec.c): bf16 |x - x'| <= 2^-8 |x|; fp16
 * <= 2^-11 |x| + 2^-39 max|x|; fp8 <= 2^-4 |x| and
 * <= 2^-4 max|x|; int8 <= (max - min) / 510. The lossy codecs refuse a row
 * holding NaN or infinity: the exchange ends the job naming the table, the
 * id and whether it was a row or a gradient. */
#ifndef FS_EMB_CODEC_H
#define FS_EMB_CODEC_H

#include <stddef.h>
#include <stdint.h>

enum emb_codec { EMB_CODEC_FP32, EMB_CODEC_BF16, EMB_CODEC_FP16, EMB_CODEC_FP8, EMB_CODEC_INT8 };
#define EMB_NCODECS 5

/* Parse "fp32", "bf16", "fp16", "fp8" or "int8"; -1 if unknown. */
int emb_codec_parse(const char *name);
const char *emb_codec_name(enum emb_codec c);
/* Bytes one row of dim values occupies on the wire. */
int64_t emb_codec_row_bytes(enum emb_codec c, int dim);

/* Encode rows [n, dim] into wire [n, emb_codec_row_bytes]. Returns -1 if
 * a lossy codec meets a non-finite value (then *bad = the row), else 0. */
int emb_codec_encode(enum emb_codec c, int64_t n, int dim, const float *rows, uint8_t *wire,
                     int64_t *bad);
/* Decode wire [n, emb_codec_row_bytes] into rows [n, dim]. */
void emb_codec_decode(enum emb_codec c, int64_t n, int dim, const uint8_t *wire, float *rows);

/* emb_codec_encode, with the error of a refused row written to err:
 * "embedding table 'T': the WHAT of id I holds NaN ...", ids[n] being the
 * rows' ids. Returns -1 on a refused row, else 0. */
int emb_codec_encode_ids(enum emb_codec c, int64_t n, int dim, const float *rows, uint8_t *wire,
                         const int64_t *ids, const char *table, const char *what, char *err,
                         size_t errlen);

/* One value through each format (the scalar parts, for tests): bf16 and
 * IEEE half bits from a float (finite; half: |x| < 65520), e4m3 bits from
 * a float with |x| <= 448, and back. */
uint16_t emb_f32_to_bf16(float x);
float emb_bf16_to_f32(uint16_t b);
uint16_t emb_f32_to_f16(float x);
float emb_f16_to_f32(uint16_t h);
uint8_t emb_f32_to_e4m3(float x);
float emb_e4m3_to_f32(uint8_t b);

#endif
