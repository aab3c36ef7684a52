/* elementwise: the pointwise operations on n values (axpy, scale, mul,
 * SiLU, ReLU and their backwards); see backend.h and the CPU reference in
 * backend_cpu.c, whose formulas are repeated here term for term.
 *
 * One grid-stride loop per op, 64-bit indexes (n may exceed 2^31), the grid
 * capped so that any n launches. Every element is read and written by the
 * same thread, so the ops may run in place (y == x, dx == dy); no pointer is
 * declared __restrict__ for that reason. */
#include <stdint.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

#define EW_THREADS 256

/* y: [n] += alpha x: [n] */
static __global__ void ew_axpy(int64_t n, float alpha, const float *x, float *y)
{
    GRID_LOOP(i, n) y[i] += alpha * x[i];
}

/* x: [n] *= alpha */
static __global__ void ew_scale(int64_t n, float alpha, float *x)
{
    GRID_LOOP(i, n) x[i] *= alpha;
}

/* y = a * b, all [n] */
static __global__ void ew_mul(int64_t n, const float *a, const float *b, float *y)
{
    GRID_LOOP(i, n) y[i] = a[i] * b[i];
}

/* y = x sigma(x) = x / (1 + exp(-x)) */
static __global__ void ew_silu_fwd(int64_t n, const float *x, float *y)
{
    GRID_LOOP(i, n)
    {
        float xi = x[i];
        y[i] = xi / (1.0f + expf(-xi));
    }
}

/* dx = dy silu'(x), silu'(x) = s (1 + x (1 - s)), s = sigma(x) */
static __global__ void ew_silu_bwd(int64_t n, const float *x, const float *dy, float *dx)
{
    GRID_LOOP(i, n)
    {
        float xi = x[i];
        float s = 1.0f / (1.0f + expf(-xi));
        dx[i] = dy[i] * s * (1.0f + xi * (1.0f - s));
    }
}

static __global__ void ew_relu_fwd(int64_t n, const float *x, float *y)
{
    GRID_LOOP(i, n)
    {
        float xi = x[i];
        y[i] = xi > 0 ? xi : 0.0f;
    }
}

/* dx = dy where x > 0, else 0 */
static __global__ void ew_relu_bwd(int64_t n, const float *x, const float *dy, float *dx)
{
    GRID_LOOP(i, n) dx[i] = x[i] > 0 ? dy[i] : 0.0f;
}

void cuda_axpy(cudaStream_t s, int64_t n, float alpha, const float *x, float *y)
{
    if (n <= 0)
        return;
    ew_axpy<<<launch_blocks(n, EW_THREADS), EW_THREADS, 0, s>>>(n, alpha, x, y);
    CUDA_CHECK_LAUNCH("ew_axpy");
}

void cuda_scale(cudaStream_t s, int64_t n, float alpha, float *x)
{
    if (n <= 0)
        return;
    ew_scale<<<launch_blocks(n, EW_THREADS), EW_THREADS, 0, s>>>(n, alpha, x);
    CUDA_CHECK_LAUNCH("ew_scale");
}

void cuda_mul(cudaStream_t s, int64_t n, const float *a, const float *b, float *y)
{
    if (n <= 0)
        return;
    ew_mul<<<launch_blocks(n, EW_THREADS), EW_THREADS, 0, s>>>(n, a, b, y);
    CUDA_CHECK_LAUNCH("ew_mul");
}

void cuda_silu_fwd(cudaStream_t s, int64_t n, const float *x, float *y)
{
    if (n <= 0)
        return;
    ew_silu_fwd<<<launch_blocks(n, EW_THREADS), EW_THREADS, 0, s>>>(n, x, y);
    CUDA_CHECK_LAUNCH("ew_silu_fwd");
}

void cuda_silu_bwd(cudaStream_t s, int64_t n, const float *x, const float *dy, float *dx)
{
    if (n <= 0)
        return;
    ew_silu_bwd<<<launch_blocks(n, EW_THREADS), EW_THREADS, 0, s>>>(n, x, dy, dx);
    CUDA_CHECK_LAUNCH("ew_silu_bwd");
}

void cuda_relu_fwd(cudaStream_t s, int64_t n, const float *x, float *y)
{
    if (n <= 0)
        return;
    ew_relu_fwd<<<launch_blocks(n, EW_THREADS), EW_THREADS, 0, s>>>(n, x, y);
    CUDA_CHECK_LAUNCH("ew_relu_fwd");
}

void cuda_relu_bwd(cudaStream_t s, int64_t n, const float *x, const float *dy, float *dx)
{
    if (n <= 0)
        return;
    ew_relu_bwd<<<launch_blocks(n, EW_THREADS), EW_THREADS, 0, s>>>(n, x, dy, dx);
    CUDA_CHECK_LAUNCH("ew_relu_bwd");
}
