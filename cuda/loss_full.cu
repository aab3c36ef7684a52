/* loss_full: the blocks of the full softmax (backend.h softmax_block_lse /
 * softmax_block_grad; model/loss_full.c drives them over the vocabulary
 * shard, on a device in blocks of positions sized from its free memory),
 * the maths of the CPU reference in src/backend/backend_cpu_full.c
 * (cpu_softmax_block_*_ref). One block per row i of the logits
 * s [n, m] (row stride lds):
 *   lse:  mx = max_j s_ij inv_tau, sum = sum_j exp(s_ij inv_tau - mx) in
 *         double, lse_i = mx + log(sum) (-inf when m = 0);
 *   grad: the target logit s_i,tcol[i] inv_tau kept (before the
 *         overwrite), then s_ij = gscale exp(s_ij inv_tau - lse_i), minus
 *         gscale at the target's column; the kept logits are summed in
 *         row order by one thread (a fixed order) onto acc[0] in device
 *         memory: no host wait (loss_full.c reads the step's sums once).
 * Reductions combine the warps in a fixed order: runs repeat bit for bit.
 * Target columns are trusted (the caller built them in range). */
#include <math.h>
#include <stdint.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

#define LF_THREADS 256

/* block max / sum (LF_THREADS threads); every thread gets the result */
static __device__ float lf_block_max(float v, float *sc)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x % 32 == 0)
        sc[threadIdx.x / 32] = v;
    __syncthreads();
    float r = sc[0];
    for (int w = 1; w < LF_THREADS / 32; w++)
        r = fmaxf(r, sc[w]);
    __syncthreads();
    return r;
}

static __device__ double lf_block_sum(double v, double *sc)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0)
        sc[threadIdx.x / 32] = v;
    __syncthreads();
    double r = sc[0];
    for (int w = 1; w < LF_THREADS / 32; w++)
        r += sc[w];
    __syncthreads();
    return r;
}

static __global__ void lf_lse(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *s,
                              float *lse)
{
    __shared__ float scf[32];
    __shared__ double scd[32];
    for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
        const float *si = s + i * lds;
        float mx = -INFINITY;
        for (int64_t j = threadIdx.x; j < m; j += LF_THREADS)
            mx = fmaxf(mx, si[j] * inv_tau);
        mx = lf_block_max(mx, scf);
        double part = 0;
        for (int64_t j = threadIdx.x; j < m; j += LF_THREADS)
            part += (double)expf(si[j] * inv_tau - mx);
        const double sum = lf_block_sum(part, scd);
        if (threadIdx.x == 0)
            lse[i] = m > 0 ? mx + (float)log(sum) : -INFINITY;
    }
}

static __global__ void lf_grad(int64_t n, int64_t m, int64_t lds, float inv_tau,
                               const float *lse, const int64_t *tcol, float gscale, float *s,
                               double *tl)
{
    for (int64_t i = blockIdx.x; i < n; i += gridDim.x) {
        float *si = s + i * lds;
        const int64_t tc = tcol[i];
        if (threadIdx.x == 0)
            tl[i] = tc >= 0 && tc < m ? (double)(si[tc] * inv_tau) : 0.0;
        __syncthreads(); /* read before the overwrite */
        const float l = lse[i];
        for (int64_t j = threadIdx.x; j < m; j += LF_THREADS) {
            float g = gscale * expf(si[j] * inv_tau - l);
            if (j == tc)
                g -= gscale;
            si[j] = g;
        }
        __syncthreads();
    }
}

/* acc[0] += tl[i] for tcol[i] >= 0, one by one in row order (the CPU's
 * order) */
static __global__ void lf_target_sum(int64_t n, const int64_t *tcol, const double *tl,
                                     double *acc)
{
    double t = acc[0];
    for (int64_t i = 0; i < n; i++)
        if (tcol[i] >= 0)
            t += tl[i];
    acc[0] = t;
}

void cuda_softmax_block_lse(cudaStream_t s, int64_t n, int64_t m, int64_t lds, float inv_tau,
                            const float *S, float *lse)
{
    if (n <= 0)
        return;
    lf_lse<<<launch_blocks(n, 1), LF_THREADS, 0, s>>>(n, m, lds, inv_tau, S, lse);
    CUDA_CHECK_LAUNCH("lf_lse");
}

size_t cuda_softmax_block_grad_ws_bytes(int64_t n)
{
    return cuda_ws_round((size_t)(n > 0 ? n : 1) * sizeof(double));
}

void cuda_softmax_block_grad(cudaStream_t s, int64_t n, int64_t m, int64_t lds, float inv_tau,
                             const float *lse, const int64_t *tcol, float gscale, float *S,
                             double *acc, struct cuda_ws *ws)
{
    if (n <= 0)
        return;
    double *tl = (double *)cuda_ws_take(ws, (size_t)n * sizeof(double));
    lf_grad<<<launch_blocks(n, 1), LF_THREADS, 0, s>>>(n, m, lds, inv_tau, lse, tcol, gscale, S,
                                                       tl);
    CUDA_CHECK_LAUNCH("lf_grad");
    lf_target_sum<<<1, 1, 0, s>>>(n, tcol, tl, acc);
    CUDA_CHECK_LAUNCH("lf_target_sum");
}
