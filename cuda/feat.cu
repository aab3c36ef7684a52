/* feat: the features' and the ranking head's operations (backend.h:
 * index_rows, col_sums, rank_loss; the CPU reference is
 * src/backend/backend_cpu_feat.c).
 *
 *   index_rows  one thread per element, grid-stride (the targets of an
 *               add are distinct: no two threads write one element)
 *   col_sums    one thread per column, its rows in order in double: the
 *               CPU's sums bit for bit
 *   rank_loss   one block: dz elementwise, the loss of each task summed
 *               in double by a fixed tree (the order differs from the
 *               CPU's sequential sum: equal within rounding), the tasks
 *               added in order to acc by thread 0. No atomics: runs
 *               repeat bit for bit.
 *   rows_match  one thread per row, grid-stride: its words against the
 *               row's as 32-bit integers (bits, not float equality) */
#include <math.h>
#include <stdint.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

#define FEAT_THREADS 256

static __global__ void feat_index_rows(int64_t n, int d, const float *src, const int64_t *sidx,
                                       float *dst, const int64_t *didx, int add)
{
    const int64_t total = n * d;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = e / d, j = e - i * d;
        const int64_t s = sidx ? sidx[i] : i, t = didx ? didx[i] : i;
        if (s < 0 || t < 0)
            continue;
        if (add)
            dst[t * d + j] = __fadd_rn(dst[t * d + j], src[s * d + j]);
        else
            dst[t * d + j] = src[s * d + j];
    }
}

void cuda_index_rows(cudaStream_t s, int64_t n, int d, const float *src, const int64_t *sidx,
                     float *dst, const int64_t *didx, int add)
{
    if (n <= 0 || d <= 0)
        return;
    feat_index_rows<<<launch_blocks(n * d, FEAT_THREADS), FEAT_THREADS, 0, s>>>(n, d, src, sidx,
                                                                                dst, didx, add);
    CUDA_CHECK_LAUNCH("feat_index_rows");
}

static __global__ void feat_rows_match(int64_t n, int d, const uint32_t *rows,
                                       const uint32_t *row, uint8_t *out)
{
    GRID_LOOP(i, n) {
        const uint32_t *r = rows + i * d;
        int same = 1;
        for (int j = 0; j < d && same; j++)
            same = r[j] == row[j];
        out[i] = (uint8_t)same;
    }
}

void cuda_rows_match(cudaStream_t s, int64_t n, int d, const float *rows, const float *row,
                     uint8_t *out)
{
    if (n <= 0)
        return;
    feat_rows_match<<<launch_blocks(n, FEAT_THREADS), FEAT_THREADS, 0, s>>>(
        n, d, (const uint32_t *)rows, (const uint32_t *)row, out);
    CUDA_CHECK_LAUNCH("feat_rows_match");
}

static __global__ void feat_col_sums(int64_t n, int m, const float *x, float *acc)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= m)
        return;
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s = __dadd_rn(s, (double)x[i * m + j]);
    acc[j] = __fadd_rn(acc[j], (float)s);
}

void cuda_col_sums(cudaStream_t s, int64_t n, int m, const float *x, float *acc)
{
    if (m <= 0)
        return;
    feat_col_sums<<<(m + FEAT_THREADS - 1) / FEAT_THREADS, FEAT_THREADS, 0, s>>>(n, m, x, acc);
    CUDA_CHECK_LAUNCH("feat_col_sums");
}

/* softplus(z) - y z, stably */
static __device__ double feat_bce(double z, double y)
{
    return (z > 0 ? z : 0) - y * z + log1p(exp(-fabs(z)));
}

static __global__ void feat_rank_loss(int64_t T, int K, const float *z, const float *labels,
                                      const double *coef, float *dz, double *acc)
{
    __shared__ double red[FEAT_THREADS];
    double sum = 0; /* thread 0's */
    for (int k = 0; k < K; k++) {
        const int bin = coef[4 * k] != 0;
        const double wn = coef[4 * k + 1];
        const float mean = (float)coef[4 * k + 2], sd = (float)coef[4 * k + 3];
        double part = 0;
        for (int64_t i = threadIdx.x; i < T; i += blockDim.x) {
            const float y = labels[i * K + k], zi = z[i * K + k];
            float g = 0;
            if (!isnan(y) && bin) {
                part += feat_bce(zi, y);
                g = (float)(1.0 / (1.0 + exp(-(double)zi)) - y);
            } else if (!isnan(y)) {
                const double u = __fdiv_rn(__fsub_rn(y, mean), sd), e = zi - u;
                part += e * e;
                g = (float)(2 * e);
            }
            dz[i * K + k] = (float)(wn * g);
        }
        red[threadIdx.x] = part;
        __syncthreads();
        for (int h = blockDim.x / 2; h > 0; h /= 2) {
            if ((int)threadIdx.x < h)
                red[threadIdx.x] += red[threadIdx.x + h];
            __syncthreads();
        }
        if (threadIdx.x == 0)
            sum += wn * red[0];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        acc[0] += sum;
        acc[1] += (double)T;
    }
}

void cuda_rank_loss(cudaStream_t s, int64_t T, int K, const float *z, const float *labels,
                    const double *coef, float *dz, double *acc)
{
    if (K <= 0)
        return;
    feat_rank_loss<<<1, FEAT_THREADS, 0, s>>>(T, K, z, labels, coef, dz, acc);
    CUDA_CHECK_LAUNCH("feat_rank_loss");
}
