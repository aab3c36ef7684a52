/* exchange: the embedding exchanges' device operations (backend.h:
 * emb_encode, emb_decode, sample_negatives, count_range). The codecs run
 * the CPU reference's own row functions (src/backend/emb_codec_row.h:
 * host and device code alike, products and sums rounded one by one), the
 * sampler the keyed generator of src/backend/loss_sample.h: the same bits as
 * the CPU backend. One thread per row (codecs) or position (negatives). */
#include <stdint.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "backend/emb_codec_row.h"
#include "backend/loss_sample.h"

#define EX_THREADS 256

/* bytes of one encoded row (emb_codec.h: emb_codec_row_bytes) */
static __device__ int64_t ex_row_bytes(int codec, int dim)
{
    return codec == 1 ? 2 * (int64_t)dim : codec == 2 ? 4 + 2 * (int64_t)dim
                   : codec == 3 ? 4 + (int64_t)dim : 8 + (int64_t)dim;
}

static __global__ void ex_encode(int codec, int64_t n, int dim, const float *rows, uint8_t *wire,
                                 unsigned long long *bad)
{
    const int64_t rb = ex_row_bytes(codec, dim);
    GRID_LOOP(i, n)
    if (ecr_encode_row(codec, dim, rows + i * dim, wire + i * rb))
        atomicMax(bad, ~0ull - (unsigned long long)i); /* integers: exact in any order */
}

static __global__ void ex_decode(int codec, int64_t n, int dim, const uint8_t *wire, float *rows)
{
    const int64_t rb = ex_row_bytes(codec, dim);
    GRID_LOOP(i, n) ecr_decode_row(codec, dim, wire + i * rb, rows + i * dim);
}

void cuda_emb_encode(cudaStream_t s, int codec, int64_t n, int dim, const float *rows,
                     uint8_t *wire, uint64_t *bad)
{
    if (n <= 0)
        return;
    if (codec == 0) { /* fp32: the floats as they are */
        CUDA_CHECK(cudaMemcpyAsync(wire, rows, (size_t)n * dim * 4, cudaMemcpyDeviceToDevice, s));
        return;
    }
    ex_encode<<<launch_blocks(n, EX_THREADS), EX_THREADS, 0, s>>>(codec, n, dim, rows, wire,
                                                                  (unsigned long long *)bad);
    CUDA_CHECK_LAUNCH("ex_encode");
}

void cuda_emb_decode(cudaStream_t s, int codec, int64_t n, int dim, const uint8_t *wire,
                     float *rows)
{
    if (n <= 0)
        return;
    if (codec == 0) {
        CUDA_CHECK(cudaMemcpyAsync(rows, wire, (size_t)n * dim * 4, cudaMemcpyDeviceToDevice, s));
        return;
    }
    ex_decode<<<launch_blocks(n, EX_THREADS), EX_THREADS, 0, s>>>(codec, n, dim, wire, rows);
    CUDA_CHECK_LAUNCH("ex_decode");
}

static __global__ void ex_negatives(uint64_t seed, uint64_t epoch, const uint64_t *keys,
                                    int64_t T, int R, int64_t num_items, int64_t *out)
{
    GRID_LOOP(i, T) loss_negatives_row(seed, epoch, keys[i], R, num_items, out + i * R);
}

void cuda_sample_negatives(cudaStream_t s, uint64_t seed, uint64_t epoch, const uint64_t *keys,
                           int64_t T, int R, int64_t num_items, int64_t *out)
{
    if (T <= 0 || R <= 0)
        return;
    ex_negatives<<<launch_blocks(T, EX_THREADS), EX_THREADS, 0, s>>>(seed, epoch, keys, T, R,
                                                                     num_items, out);
    CUDA_CHECK_LAUNCH("ex_negatives");
}

static __global__ void ex_count(int64_t n, const int64_t *x, int64_t lo, int64_t hi,
                                unsigned long long *acc)
{
    unsigned long long k = 0;
    GRID_LOOP(i, n) k += x[i] >= lo && x[i] < hi;
    if (k)
        atomicAdd(acc, k); /* integers: exact in any order */
}

void cuda_count_range(cudaStream_t s, int64_t n, const int64_t *x, int64_t lo, int64_t hi,
                      int64_t *acc)
{
    if (n <= 0)
        return;
    ex_count<<<launch_blocks(n, EX_THREADS), EX_THREADS, 0, s>>>(n, x, lo, hi,
                                                                 (unsigned long long *)acc);
    CUDA_CHECK_LAUNCH("ex_count");
}

/* issue 51 G: the loss's target rows with the positions without a target unset */
static __global__ void ex_index_mask(int64_t n, const int64_t *src, const uint8_t *mask,
                                     int64_t *dst)
{
    GRID_LOOP(i, n) dst[i] = mask[i] ? -1 : src[i];
}

void cuda_index_mask(cudaStream_t s, int64_t n, const int64_t *src, const uint8_t *mask,
                     int64_t *dst)
{
    if (n <= 0)
        return;
    ex_index_mask<<<launch_blocks(n, EX_THREADS), EX_THREADS, 0, s>>>(n, src, mask, dst);
    CUDA_CHECK_LAUNCH("ex_index_mask");
}
