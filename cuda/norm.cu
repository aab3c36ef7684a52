/* norm: layer normalisation and per-row L2 normalisation (backend.h), the
 * same maths as the CPU reference in backend_cpu.c: row statistics summed
 * in double (two passes for the variance), the per-element formulas in
 * float with the same casts.
 *
 * One warp per row (x: [rows, d], any d; lanes stride the row), the row sums
 * reduced with an xor butterfly so that every lane holds the same total.
 * All reads of a row's reduction passes finish before its writes (the
 * shuffles are warp-wide), and the element writes read only the lane's own
 * elements, so y == x and dx == dy in place are safe.
 *
 * dgamma/dbeta of the layer norm are column sums over all rows, reduced
 * deterministically: per chunk of rows into a static device scratch array
 * (norm_part; only the backend's one compute stream uses it, in order),
 * then the chunks summed in a fixed order (no float atomics, no
 * allocation). */
#include <math.h>
#include <stdint.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
extern "C" {
#include "base/log.h"
}

#define NORM_THREADS 256 /* 8 warps, one row each */
#define NORM_ROWS_PER_BLOCK (NORM_THREADS / 32)
#define NORM_COL_CHUNKS 256 /* at most this many row chunks for dgamma/dbeta */
#define NORM_PART_FLOATS (2 * 256 * 1024) /* scratch: [2, chunks, d] */

static __device__ float norm_part[NORM_PART_FLOATS];

/* sum over the warp; every lane gets the same value (the butterfly adds the
 * same two operands on both partners) */
static __device__ double norm_warp_sum(double v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* for each row r of this warp: r = global warp index, strided by the grid */
#define NORM_ROW_LOOP(r, rows)                                                           \
    for (int64_t r = (int64_t)blockIdx.x * NORM_ROWS_PER_BLOCK + threadIdx.x / 32;       \
         r < (rows); r += (int64_t)gridDim.x * NORM_ROWS_PER_BLOCK)

/* x, y: [rows, d]; mean, rstd: [rows]; gamma, beta: [d] or NULL */
static __global__ void norm_layernorm_fwd(int64_t rows, int d, float eps, const float *x,
                                          const float *gamma, const float *beta, float *y,
                                          float *mean, float *rstd)
{
    const int lane = threadIdx.x % 32;
    NORM_ROW_LOOP(r, rows)
    {
        const float *xr = x + r * d;
        double mu = 0, var = 0;
        for (int j = lane; j < d; j += 32)
            mu += xr[j];
        mu = norm_warp_sum(mu) / d;
        for (int j = lane; j < d; j += 32)
            var += (xr[j] - mu) * (xr[j] - mu);
        var = norm_warp_sum(var) / d;
        float rs = (float)(1.0 / sqrt(var + eps));
        float muf = (float)mu;
        if (lane == 0) {
            mean[r] = muf;
            rstd[r] = rs;
        }
        for (int j = lane; j < d; j += 32) {
            float h = (xr[j] - muf) * rs;
            y[r * d + j] = gamma ? h * gamma[j] + beta[j] : h;
        }
    }
}

/* dx: [rows, d] = rstd (g - mean(g) - h mean(g h)), g = dy (* gamma) */
static __global__ void norm_layernorm_bwd_dx(int64_t rows, int d, const float *x,
                                             const float *mean, const float *rstd,
                                             const float *gamma, const float *dy, float *dx)
{
    const int lane = threadIdx.x % 32;
    NORM_ROW_LOOP(r, rows)
    {
        const float *xr = x + r * d, *dyr = dy + r * d;
        const float mr = mean[r], rr = rstd[r];
        double sum_g = 0, sum_gh = 0;
        /* products rounded as the CPU rounds them (__fmul_rn: no FMA
         * contraction): g - mg must cancel exactly where it does on the
         * CPU (d = 1), since rstd amplifies any residue */
        for (int j = lane; j < d; j += 32) {
            float h = __fmul_rn(xr[j] - mr, rr);
            float g = gamma ? __fmul_rn(dyr[j], gamma[j]) : dyr[j];
            sum_g += g;
            sum_gh += __fmul_rn(g, h);
        }
        sum_g = norm_warp_sum(sum_g);
        sum_gh = norm_warp_sum(sum_gh);
        const float mg = (float)(sum_g / d), mgh = (float)(sum_gh / d);
        for (int j = lane; j < d; j += 32) {
            float h = __fmul_rn(xr[j] - mr, rr);
            float g = gamma ? __fmul_rn(dyr[j], gamma[j]) : dyr[j];
            dx[r * d + j] = __fmul_rn(rr, (g - mg) - __fmul_rn(h, mgh));
        }
    }
}

/* Column partial sums over one chunk of rows. Block (32, 8): 32 columns
 * j = blockIdx.x * 32 + threadIdx.x, rows blockIdx.y * 8 + threadIdx.y
 * strided by gridDim.y * 8. norm_part: [2, chunks, d] (dgamma, then
 * dbeta) with chunks = gridDim.y. */
static __global__ void norm_layernorm_bwd_cols(int64_t rows, int d, const float *x,
                                               const float *mean, const float *rstd,
                                               const float *dy)
{
    float *part = norm_part;
    __shared__ float sg[8][33], sb[8][33];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int j = blockIdx.x * 32 + tx;
    float ag = 0, ab = 0;
    if (j < d) {
        for (int64_t r = (int64_t)blockIdx.y * 8 + ty; r < rows; r += (int64_t)gridDim.y * 8) {
            float h = (x[r * d + j] - mean[r]) * rstd[r];
            float g = dy[r * d + j];
            ag += g * h;
            ab += g;
        }
    }
    sg[ty][tx] = ag;
    sb[ty][tx] = ab;
    __syncthreads();
    if (ty == 0 && j < d) {
        for (int t = 1; t < 8; t++) {
            ag += sg[t][tx];
            ab += sb[t][tx];
        }
        const int64_t chunks = gridDim.y;
        part[(int64_t)blockIdx.y * d + j] = ag;
        part[(chunks + blockIdx.y) * d + j] = ab;
    }
}

/* dgamma[j] += sum over chunks of norm_part[0, c, j]; dbeta likewise, in
 * chunk order (one thread per column) */
static __global__ void norm_layernorm_bwd_sum(int d, int chunks, float *dgamma, float *dbeta)
{
    const float *part = norm_part;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < d; j += gridDim.x * blockDim.x) {
        float g = 0, b = 0;
        for (int c = 0; c < chunks; c++) {
            g += part[(int64_t)c * d + j];
            b += part[(int64_t)(chunks + c) * d + j];
        }
        dgamma[j] += g;
        dbeta[j] += b;
    }
}

/* y: [rows, d] = x / max(||x||, eps); norm: [rows] */
static __global__ void norm_l2norm_fwd(int64_t rows, int d, float eps, const float *x, float *y,
                                       float *norm)
{
    const int lane = threadIdx.x % 32;
    NORM_ROW_LOOP(r, rows)
    {
        const float *xr = x + r * d;
        double s = 0;
        for (int j = lane; j < d; j += 32)
            s += (double)xr[j] * xr[j];
        s = norm_warp_sum(s);
        float n = fmaxf((float)sqrt(s), eps);
        if (lane == 0)
            norm[r] = n;
        for (int j = lane; j < d; j += 32)
            y[r * d + j] = xr[j] / n;
    }
}

/* dx = (dy - y (y . dy)) / n, or dy / n on rows whose norm was clamped
 * (|y|^2 < 0.5, as in the CPU reference) */
static __global__ void norm_l2norm_bwd(int64_t rows, int d, const float *y, const float *norm,
                                       const float *dy, float *dx)
{
    const int lane = threadIdx.x % 32;
    NORM_ROW_LOOP(r, rows)
    {
        const float *yr = y + r * d, *dyr = dy + r * d;
        double dot = 0, yy = 0;
        for (int j = lane; j < d; j += 32) {
            dot += (double)yr[j] * dyr[j];
            yy += (double)yr[j] * yr[j];
        }
        dot = norm_warp_sum(dot);
        yy = norm_warp_sum(yy);
        const int clamped = yy < 0.5;
        const float nr = norm[r], dotf = (float)dot;
        for (int j = lane; j < d; j += 32)
            dx[r * d + j] = clamped ? dyr[j] / nr : (dyr[j] - yr[j] * dotf) / nr;
    }
}

void cuda_layernorm_fwd(cudaStream_t s, int64_t rows, int d, float eps, const float *x,
                        const float *gamma, const float *beta, float *y, float *mean,
                        float *rstd)
{
    if (rows <= 0 || d <= 0)
        return;
    norm_layernorm_fwd<<<launch_blocks(rows, NORM_ROWS_PER_BLOCK), NORM_THREADS, 0, s>>>(
        rows, d, eps, x, gamma, beta, y, mean, rstd);
    CUDA_CHECK_LAUNCH("norm_layernorm_fwd");
}

void cuda_layernorm_bwd(cudaStream_t s, int64_t rows, int d, const float *x, const float *mean,
                        const float *rstd, const float *gamma, const float *dy, float *dx,
                        float *dgamma, float *dbeta)
{
    if (rows <= 0 || d <= 0)
        return;
    if (gamma) {
        /* before the dx kernel: dx may be dy (in place) */
        if (d > NORM_PART_FLOATS / 2)
            fatal("cuda_layernorm_bwd: d = %d exceeds the scratch (at most %d)", d,
                  NORM_PART_FLOATS / 2);
        int64_t c = (rows + 63) / 64, fit = NORM_PART_FLOATS / (2 * d);
        c = c < NORM_COL_CHUNKS ? c : NORM_COL_CHUNKS;
        const int chunks = (int)(c < fit ? c : fit);
        dim3 grid((unsigned)((d + 31) / 32), (unsigned)chunks), block(32, 8);
        norm_layernorm_bwd_cols<<<grid, block, 0, s>>>(rows, d, x, mean, rstd, dy);
        CUDA_CHECK_LAUNCH("norm_layernorm_bwd_cols");
        norm_layernorm_bwd_sum<<<(unsigned)((d + 255) / 256), 256, 0, s>>>(d, chunks, dgamma,
                                                                           dbeta);
        CUDA_CHECK_LAUNCH("norm_layernorm_bwd_sum");
    }
    norm_layernorm_bwd_dx<<<launch_blocks(rows, NORM_ROWS_PER_BLOCK), NORM_THREADS, 0, s>>>(
        rows, d, x, mean, rstd, gamma, dy, dx);
    CUDA_CHECK_LAUNCH("norm_layernorm_bwd_dx");
}

void cuda_l2norm_fwd(cudaStream_t s, int64_t rows, int d, float eps, const float *x, float *y,
                     float *norm)
{
    if (rows <= 0 || d <= 0)
        return;
    norm_l2norm_fwd<<<launch_blocks(rows, NORM_ROWS_PER_BLOCK), NORM_THREADS, 0, s>>>(rows, d, eps,
                                                                                      x, y, norm);
    CUDA_CHECK_LAUNCH("norm_l2norm_fwd");
}

void cuda_l2norm_bwd(cudaStream_t s, int64_t rows, int d, const float *y, const float *norm,
                     const float *dy, float *dx)
{
    if (rows <= 0 || d <= 0)
        return;
    norm_l2norm_bwd<<<launch_blocks(rows, NORM_ROWS_PER_BLOCK), NORM_THREADS, 0, s>>>(rows, d, y,
                                                                                      norm, dy, dx);
    CUDA_CHECK_LAUNCH("norm_l2norm_bwd");
}
