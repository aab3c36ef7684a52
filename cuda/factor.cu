/* factor: the walks of the ranking head's factor terms (backend.h:
 * factor_fwd, factor_bwd; the CPU reference is
 * src/backend/backend_cpu_factor.c). Both run backend/factor_walk.h's
 * bodies, the host's own functions:
 *
 *   factor_fwd  one thread per (sequence, task), walking its tokens in
 *               order (its sums in double, in the host's order)
 *   factor_bwd  one thread per (sequence, factor column), backwards
 *
 * the ridge fit's walks (ridge > 0, model.factor_ridge) with the same
 * threads, in kernel instances of their own (RIDGE).
 *
 * nvcc may fuse a product and a sum where GCC is told not to
 * (-ffp-contract=off): the results agree with the CPU's within rounding.
 * No atomics: runs repeat bit for bit. */
#include <stdint.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "backend/factor_walk.h"

#define FACTOR_THREADS 128

/* RIDGE: the ridge fit's walk (model.factor_ridge), an instance of its own
 * so that the mean's keeps its registers and no local arrays */
template <bool RIDGE>
static __global__ void factor_fwd_kernel(int64_t B, const int64_t *offsets, int K, int F,
                                         const float *f, const double *v, double prior,
                                         float gain, float *z, float *w, float *vb, float *h,
                                         double ridge, float *ai)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * K)
        return;
    const int64_t b = i / K;
    if (RIDGE)
        factor_walk_fwd_ridge(offsets[b], offsets[b + 1], (int)(i % K), K, F, f, v, prior, ridge,
                              gain, z, w, vb, h, ai);
    else
        factor_walk_fwd_task(offsets[b], offsets[b + 1], (int)(i % K), K, F, f, v, prior, gain,
                             z, w, vb, h);
}

template <bool RIDGE>
static __global__ void factor_bwd_kernel(int64_t B, const int64_t *offsets, int K, int F,
                                         const float *f, const double *v, float gain,
                                         const float *z, const float *w, const float *vb,
                                         const float *dh, float *df, double ridge,
                                         const float *ai)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * F)
        return;
    const int64_t b = i / F;
    if (RIDGE)
        factor_walk_bwd_ridge(offsets[b], offsets[b + 1], (int)(i % F), K, F, f, v, gain, z, vb,
                              dh, ai, df);
    else
        factor_walk_bwd_col(offsets[b], offsets[b + 1], (int)(i % F), K, F, f, v, gain, z, w,
                            vb, dh, df);
}

void cuda_factor_fwd(cudaStream_t s, int64_t B, const int64_t *offsets, int K, int F,
                     const float *f, const double *v, double prior, float gain, float *z,
                     float *w, float *vb, float *h, double ridge, float *ai)
{
    if (B <= 0 || K <= 0)
        return;
    void (*kernel)(int64_t, const int64_t *, int, int, const float *, const double *, double,
                   float, float *, float *, float *, float *, double, float *) =
        ridge > 0 ? factor_fwd_kernel<true> : factor_fwd_kernel<false>;
    kernel<<<launch_blocks_all(B * K, FACTOR_THREADS), FACTOR_THREADS, 0, s>>>(
        B, offsets, K, F, f, v, prior, gain, z, w, vb, h, ridge, ai);
    CUDA_CHECK_LAUNCH("factor_fwd_kernel");
}

void cuda_factor_bwd(cudaStream_t s, int64_t B, const int64_t *offsets, int K, int F,
                     const float *f, const double *v, float gain, const float *z, const float *w,
                     const float *vb, const float *dh, float *df, double ridge,
                     const float *ai)
{
    if (B <= 0 || F <= 0)
        return;
    void (*kernel)(int64_t, const int64_t *, int, int, const float *, const double *, float,
                   const float *, const float *, const float *, const float *, float *, double,
                   const float *) = ridge > 0 ? factor_bwd_kernel<true> : factor_bwd_kernel<false>;
    kernel<<<launch_blocks_all(B * F, FACTOR_THREADS), FACTOR_THREADS, 0, s>>>(
        B, offsets, K, F, f, v, gain, z, w, vb, dh, df, ridge, ai);
    CUDA_CHECK_LAUNCH("factor_bwd_kernel");
}
