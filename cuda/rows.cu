/* rows: gather and scatter-add of table rows (backend.h).
 *
 *   gather:  out[i, :] = table[idx[i], :]        out: [n, d], idx: [n]
 *   scatter: table[idx[i], :] += src[i, :]       src: [n, d]
 *
 * One thread per element (i, j) of the [n, d] side, grid-stride with 64-bit
 * indexes; consecutive threads walk a row, so both sides are coalesced.
 * Several i may name the same row: the scatter adds with atomicAdd (the
 * order of the additions, hence the last bits, may vary from run to run). */
#include <stdint.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"

#define ROWS_THREADS 256
#define ROWS_MAX_BLOCKS 65536

static unsigned rows_blocks(int64_t n)
{
    int64_t b = (n + ROWS_THREADS - 1) / ROWS_THREADS;
    return (unsigned)(b < ROWS_MAX_BLOCKS ? b : ROWS_MAX_BLOCKS);
}

static __global__ void rows_gather(int64_t n, int d, const float *table, const int64_t *idx,
                                   float *out)
{
    const int64_t total = n * d;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e / d, j = e - i * d;
        out[e] = table[idx[i] * d + j];
    }
}

static __global__ void rows_scatter_add(int64_t n, int d, const float *src, const int64_t *idx,
                                        float *table)
{
    const int64_t total = n * d;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e / d, j = e - i * d;
        atomicAdd(&table[idx[i] * d + j], src[e]);
    }
}

void cuda_gather_rows(cudaStream_t s, int64_t n, int d, const float *table, const int64_t *idx,
                      float *out)
{
    if (n <= 0 || d <= 0)
        return;
    rows_gather<<<rows_blocks(n * d), ROWS_THREADS, 0, s>>>(n, d, table, idx, out);
    CUDA_CHECK_LAUNCH("rows_gather");
}

void cuda_scatter_add_rows(cudaStream_t s, int64_t n, int d, const float *src,
                           const int64_t *idx, float *table)
{
    if (n <= 0 || d <= 0)
        return;
    rows_scatter_add<<<rows_blocks(n * d), ROWS_THREADS, 0, s>>>(n, d, src, idx, table);
    CUDA_CHECK_LAUNCH("rows_scatter_add");
}
