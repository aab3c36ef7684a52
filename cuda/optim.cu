/* optim: the dense AdamW step and the sum of squares used by gradient
 * clipping (backend.h; CPU reference in backend_cpu.c).
 *
 * adamw: one thread per value, grid-stride; the bias corrections
 * c1 = 1 - beta1^t, c2 = 1 - beta2^t are computed on the host exactly as
 * the CPU does (pow in double, rounded to float) and passed in.
 *
 * sum_squares: deterministic two-pass reduction in double. The number of
 * partial sums G depends on n only (not on the device), each block writes
 * one partial (part[0 .. G-1] in the workspace), one block then adds them
 * in a fixed order into part[G], which is copied to the host
 * (cuda_sum_squares) or added to a device accumulator (cuda_sumsq_acc).
 * Same n and x, same bits. */
#include <math.h>
#include <stdint.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

#define OPT_THREADS 256
#define SS_PER_BLOCK 4096     /* values per partial sum, at least */
#define SS_MAX_PARTIALS 1024

/* w, m, v, g: [n] */
static __global__ void opt_adamw(int64_t n, float *w, float *m, float *v, const float *g,
                                 float lr, float b1, float b2, float eps, float wd, float c1,
                                 float c2)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float gi = g[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        w[i] -= lr * ((mi / c1) / (sqrtf(vi / c2) + eps) + wd * w[i]);
    }
}

/* sum of v over the block (blockDim.x == OPT_THREADS); the result is valid
 * in thread 0. Fixed order: warps by butterfly, then the warp sums in turn. */
static __device__ double opt_block_sum(double v)
{
    __shared__ double warp_sums[OPT_THREADS / 32];
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0)
        warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    double total = 0;
    if (threadIdx.x == 0)
        for (int w = 0; w < OPT_THREADS / 32; w++)
            total += warp_sums[w];
    return total;
}

/* part[blockIdx.x] = sum of x[i]^2 over this block's grid-stride share */
static __global__ void opt_sumsq_partial(int64_t n, const float *x, double *part)
{
    double s = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        s += (double)x[i] * x[i];
    s = opt_block_sum(s);
    if (threadIdx.x == 0)
        part[blockIdx.x] = s;
}

/* part[G] = sum of part[0 .. G-1]; one block; acc: also added there */
static __global__ void opt_sumsq_final(int G, double *part, double *acc)
{
    double s = 0;
    for (int i = threadIdx.x; i < G; i += blockDim.x)
        s += part[i];
    s = opt_block_sum(s);
    if (threadIdx.x == 0) {
        part[G] = s;
        if (acc)
            acc[0] += s;
    }
}

static int opt_partials(int64_t n)
{
    int64_t g = (n + SS_PER_BLOCK - 1) / SS_PER_BLOCK;
    return (int)(g < 1 ? 1 : g < SS_MAX_PARTIALS ? g : SS_MAX_PARTIALS);
}

void cuda_adamw_step(cudaStream_t s, int64_t n, float *w, float *m, float *v, const float *g,
                     float lr, float beta1, float beta2, float eps, float weight_decay,
                     int64_t t)
{
    if (n <= 0)
        return;
    const float c1 = 1.0f - (float)pow(beta1, (double)t);
    const float c2 = 1.0f - (float)pow(beta2, (double)t);
    const unsigned blocks = launch_blocks(n, OPT_THREADS);
    opt_adamw<<<blocks, OPT_THREADS, 0, s>>>(n, w, m, v, g, lr, beta1, beta2, eps, weight_decay,
                                             c1, c2);
    CUDA_CHECK_LAUNCH("opt_adamw");
}

size_t cuda_sum_squares_ws_bytes(int64_t n)
{
    return cuda_ws_round((size_t)(opt_partials(n) + 1) * sizeof(double));
}

/* the sum into part[G] of the workspace; returns part */
static double *opt_sumsq(cudaStream_t s, int64_t n, const float *x, struct cuda_ws *ws,
                         double *acc)
{
    const int G = opt_partials(n);
    double *part = (double *)cuda_ws_take(ws, (size_t)(G + 1) * sizeof(double));
    opt_sumsq_partial<<<G, OPT_THREADS, 0, s>>>(n, x, part);
    CUDA_CHECK_LAUNCH("opt_sumsq_partial");
    opt_sumsq_final<<<1, OPT_THREADS, 0, s>>>(G, part, acc);
    CUDA_CHECK_LAUNCH("opt_sumsq_final");
    return part + G;
}

void cuda_sum_squares(cudaStream_t s, int64_t n, const float *x, struct cuda_ws *ws,
                      double *out)
{
    *out = 0;
    if (n <= 0)
        return;
    double *sum = opt_sumsq(s, n, x, ws, NULL);
    CUDA_CHECK(cudaMemcpyAsync(out, sum, sizeof(double), cudaMemcpyDeviceToHost, s));
    cuda_host_wait(s);
}

void cuda_sumsq_acc(cudaStream_t s, int64_t n, const float *x, struct cuda_ws *ws, double *acc)
{
    if (n > 0)
        opt_sumsq(s, n, x, ws, acc);
}
