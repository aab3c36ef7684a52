/* loss: sampled softmax and BCE against the rows e: [nu, d] (backend.h,
 * loss.h), the per-position maths of the CPU reference in
 * src/backend/backend_cpu_loss.c.
 *
 * Softmax (and softmax_loss_q: logq[k] subtracted from the logit of every
 * candidate that is row k): one block per position i (grid-stride over T). The block stages
 * u_i in shared memory with the R + 1 candidate rows (candidate 0 = pos[i],
 * candidate r + 1 = neg[i, r], -1 when masked: < 0 or == pos[i]), computes
 * the scores one warp per candidate (lanes split d), then the max, the
 * exponentials exp(s - max) and their sum in double, and
 *   loss_i = log(sum) + max - s_0                    (double, as the CPU)
 *   g_0 = (pi_0 - 1) scale / tau,  g_r = pi_r scale / tau
 * where pi = exp(s - max) * (float)(1 / sum); a negative whose exponential
 * is 0 (masked or underflowed) gets no gradient, as on the CPU. Then
 *   du_i[j] = sum_c g_c e[k_c, j]       one thread per j, candidates in the
 *                                       CPU's order (0, 1, ..., R)
 * and the coefficient g_c and row k_c of every candidate go to the
 * workspace. BCE: one warp per position, the two dots reduced over the
 * warp, candidates (pos, neg).
 *
 * No float atomics: de[k, j] += g_c u_i[j] is summed per row in the
 * candidates' order (i, c ascending: the CPU's) by the ordered segments of
 * rows.cu; the per-position losses and supervised flags are reduced by one
 * block in a fixed order and added to acc[0], acc[1]. Runs repeat bit for
 * bit; nothing waits. Unsupervised positions (pos < 0) get a zero du row
 * and nothing else. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

#define LOSS_SM_THREADS 128 /* softmax: 4 warps per position */
#define LOSS_BCE_THREADS 256 /* BCE: 8 positions (warps) per block */

static __device__ float loss_warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Block-wide max and sum (blockDim.x a multiple of 32, at most 1024): every
 * thread gets the result; scratch: shared [32]. The warp results are
 * combined in a fixed order, so all threads agree bit for bit. */
static __device__ float loss_block_max(float v, float *scratch)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x % 32 == 0)
        scratch[threadIdx.x / 32] = v;
    __syncthreads();
    float r = scratch[0];
    for (unsigned w = 1; w < blockDim.x / 32; w++)
        r = fmaxf(r, scratch[w]);
    __syncthreads(); /* scratch free again */
    return r;
}

static __device__ double loss_block_sum(double v, double *scratch)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0)
        scratch[threadIdx.x / 32] = v;
    __syncthreads();
    double r = scratch[0];
    for (unsigned w = 1; w < blockDim.x / 32; w++)
        r += scratch[w];
    __syncthreads();
    return r;
}

/* u, du: [T, d]; e, de: [nu, d]; pos: [T]; neg: [T, R]. Dynamic shared
 * memory: ks [R + 1] int64, sc [R + 1] float, us [d] float. */
static __global__ void loss_softmax(int64_t T, int d, int R, float inv_tau, const float *u,
                                    const float *e, const float *logq, const int64_t *pos,
                                    const int64_t *neg, float gscale, float *du, int64_t nu,
                                    double *li, float *coef, int64_t *key)
{
    extern __shared__ double loss_smem[]; /* double: 8-byte alignment for ks */
    __shared__ float red_f[32];
    __shared__ double red_d[32];
    int64_t *ks = (int64_t *)loss_smem; /* row of candidate c, -1: no score/gradient */
    float *sc = (float *)(ks + R + 1);  /* scores, then exp(s - m), then g */
    float *us = sc + R + 1;             /* u_i */
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, nwarps = blockDim.x / 32;

    for (int64_t i = blockIdx.x; i < T; i += gridDim.x) {
        const int64_t p = pos[i];
        float *dui = du + i * d;
        if (p < 0) { /* the same branch for the whole block */
            for (int j = tid; j < d; j += blockDim.x)
                dui[j] = 0.0f;
            for (int c = tid; c <= R; c += blockDim.x)
                key[i * (R + 1) + c] = nu; /* no row */
            if (tid == 0)
                li[2 * i] = li[2 * i + 1] = 0;
            continue;
        }
        for (int j = tid; j < d; j += blockDim.x)
            us[j] = u[i * d + j];
        for (int c = tid; c <= R; c += blockDim.x) {
            int64_t k = c == 0 ? p : neg[i * R + (c - 1)];
            ks[c] = c > 0 && (k < 0 || k == p) ? -1 : k;
        }
        __syncthreads();

        /* scores s_c = u_i . e_k * inv_tau (- logq[k], softmax_loss_q); masked:
         * -inf (exp gives 0) */
        for (int c = warp; c <= R; c += nwarps) {
            const int64_t k = ks[c];
            float dot = 0;
            if (k >= 0)
                for (int j = lane; j < d; j += 32)
                    dot += us[j] * e[k * d + j];
            dot = loss_warp_sum(dot);
            if (lane == 0)
                sc[c] = k >= 0 ? dot * inv_tau - (logq ? logq[k] : 0.0f) : -INFINITY;
        }
        __syncthreads();

        const float s0 = sc[0];
        float m = -INFINITY;
        for (int c = tid; c <= R; c += blockDim.x)
            m = fmaxf(m, sc[c]);
        m = loss_block_max(m, red_f); /* its barrier: everyone has read s0 */
        double part = 0;
        for (int c = tid; c <= R; c += blockDim.x) {
            float x = expf(sc[c] - m);
            sc[c] = x;
            part += x;
        }
        const double sum = loss_block_sum(part, red_d);
        if (tid == 0) {
            li[2 * i] = log(sum) + (double)m - (double)s0;
            li[2 * i + 1] = 1;
        }

        /* d loss / d s_0 = pi_0 - 1, d loss / d s_r = pi_r; ds/de = u / tau */
        const float inv_sum = (float)(1.0 / sum);
        for (int c = tid; c <= R; c += blockDim.x) {
            const float x = sc[c];
            if (c == 0)
                sc[c] = (x * inv_sum - 1.0f) * gscale;
            else if (x == 0.0f)
                ks[c] = -1; /* masked or underflowed: no gradient */
            else
                sc[c] = x * inv_sum * gscale;
        }
        __syncthreads();

        for (int j = tid; j < d; j += blockDim.x) {
            float acc = 0.0f;
            for (int c = 0; c <= R; c++) {
                const int64_t k = ks[c];
                if (k >= 0)
                    acc += sc[c] * e[k * d + j];
            }
            dui[j] = acc;
        }
        for (int c = tid; c <= R; c += blockDim.x) { /* de: summed in order later */
            key[i * (R + 1) + c] = ks[c] >= 0 ? ks[c] : nu;
            coef[i * (R + 1) + c] = sc[c];
        }
        __syncthreads(); /* shared arrays reused by the next position */
    }
}

/* log(1 + exp(x)) without overflow (loss.c loss_softplus) */
static __device__ double loss_softplus(double x)
{
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

/* loss.c loss_sigmoid */
static __device__ float loss_sigmoid(float x)
{
    if (x >= 0)
        return 1.0f / (1.0f + expf(-x));
    float t = expf(x);
    return t / (1.0f + t);
}

/* u, du: [T, d]; e, de: [nu, d]; pos, neg: [T]; one warp per position */
static __global__ void loss_bce(int64_t T, int d, const float *u, const float *e,
                                const int64_t *pos, const int64_t *neg, float scale, float *du,
                                int64_t nu, double *li, float *coef, int64_t *key)
{
    const int lane = threadIdx.x % 32, wpb = blockDim.x / 32;
    for (int64_t i = (int64_t)blockIdx.x * wpb + threadIdx.x / 32; i < T;
         i += (int64_t)gridDim.x * wpb) {
        const int64_t p = pos[i], k = neg[i];
        const float *ui = u + i * d;
        float *dui = du + i * d;
        if (p < 0) {
            for (int j = lane; j < d; j += 32)
                dui[j] = 0.0f;
            if (lane == 0) {
                key[2 * i] = key[2 * i + 1] = nu;
                li[2 * i] = li[2 * i + 1] = 0;
            }
            continue;
        }
        const float *ep = e + p * d;
        /* -log sigma(s) = softplus(-s), d/ds = sigma(s) - 1 */
        float sp = 0;
        for (int j = lane; j < d; j += 32)
            sp += ui[j] * ep[j];
        sp = loss_warp_sum(sp);
        double loss = loss_softplus(-(double)sp);
        const float gp = (loss_sigmoid(sp) - 1.0f) * scale;

        /* -log(1 - sigma(s)) = softplus(s), d/ds = sigma(s); dropped when
         * the negative is masked */
        const int has_neg = !(k < 0 || k == p);
        const float *ek = has_neg ? e + k * d : ep;
        float gn = 0;
        if (has_neg) {
            float sn = 0;
            for (int j = lane; j < d; j += 32)
                sn += ui[j] * ek[j];
            sn = loss_warp_sum(sn);
            loss += loss_softplus((double)sn);
            gn = loss_sigmoid(sn) * scale;
        }
        for (int j = lane; j < d; j += 32) {
            const float uj = ui[j];
            float acc = 0.0f;
            acc += gp * ep[j];
            if (has_neg)
                acc += gn * ek[j];
            dui[j] = acc;
            (void)uj;
        }
        if (lane == 0) { /* de: summed in order later */
            key[2 * i] = p;
            coef[2 * i] = gp;
            key[2 * i + 1] = has_neg ? k : nu;
            coef[2 * i + 1] = gn;
            li[2 * i] = loss;
            li[2 * i + 1] = 1;
        }
    }
}

/* acc[0] += sum of li[2 i], acc[1] += sum of li[2 i + 1] over i < T: one
 * block, each thread its strided share in order, then the threads in order */
static __global__ void loss_total(int64_t T, const double *li, double *acc)
{
    __shared__ double part[2][LOSS_SM_THREADS];
    double a = 0, b = 0;
    for (int64_t i = threadIdx.x; i < T; i += blockDim.x) {
        a += li[2 * i];
        b += li[2 * i + 1];
    }
    part[0][threadIdx.x] = a;
    part[1][threadIdx.x] = b;
    __syncthreads();
    if (threadIdx.x == 0) {
        double sa = 0, sb = 0;
        for (unsigned t = 0; t < blockDim.x; t++) {
            sa += part[0][t];
            sb += part[1][t];
        }
        acc[0] += sa;
        acc[1] += sb;
    }
}

size_t cuda_loss_ws_bytes(int64_t T, int R)
{
    const int64_t M = T * (R + 1) > 0 ? T * (R + 1) : 1;
    return cuda_ws_round((size_t)(T > 0 ? T : 1) * 16) + cuda_ws_round((size_t)M * 4) +
           cuda_ws_round((size_t)M * 8) + cuda_segments_ws_bytes(M);
}

/* the fixed-order sums of both losses: de per row, the loss sum and count */
static void loss_finish(cudaStream_t s, int64_t T, int d, int per, int64_t nu, const float *u,
                        const double *li, const float *coef, const int64_t *key, float *de,
                        double *acc, struct cuda_ws *ws)
{
    struct cuda_segments g;
    const int64_t M = T * per;
    cuda_segments_build(s, M, key, nu, ws, &g);
    cuda_segments_add(s, &g, M, d, per, nu, coef, u, de);
    loss_total<<<1, LOSS_SM_THREADS, 0, s>>>(T, li, acc);
    CUDA_CHECK_LAUNCH("loss_total");
}

/* loss_softmax may take dyn bytes of dynamic shared memory: its static
 * shared memory (red_f, red_d) plus dyn within the device's opt-in limit
 * (else the job ends naming both), the opt-in raised when dyn passes what
 * the kernel allows by default (48 KiB less its static part). The
 * attributes are read once per process (one device per process); the
 * largest dyn set so far is remembered. The only kernel of cuda/ with
 * dynamic shared memory. */
static void loss_smem_fit(size_t dyn)
{
    static cudaFuncAttributes fa;
    static int optin = -1;
    static size_t allowed;
    if (optin < 0) {
        int dev;
        CUDA_CHECK(cudaFuncGetAttributes(&fa, loss_softmax));
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
        allowed = (size_t)fa.maxDynamicSharedSizeBytes;
    }
    if (dyn <= allowed)
        return;
    if (fa.sharedSizeBytes + dyn > (size_t)optin) {
        char why[256];
        snprintf(why, sizeof why,
                 "softmax loss: %zu bytes of shared memory per block (%zu static + %zu for R + 1 "
                 "candidates and d), the device allows %d: use fewer negatives or a smaller d",
                 fa.sharedSizeBytes + dyn, (size_t)fa.sharedSizeBytes, dyn, optin);
        cuda_check_failed((int)cudaErrorInvalidValue, why, "loss_smem_fit", __FILE__, __LINE__);
    }
    CUDA_CHECK(cudaFuncSetAttribute(loss_softmax, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)dyn));
    allowed = dyn;
}

void cuda_softmax_loss(cudaStream_t s, int64_t T, int d, int R, float inv_tau, const float *u,
                       int64_t nu, const float *e, const int64_t *pos, const int64_t *neg,
                       float scale, float *du, float *de, double *acc, struct cuda_ws *ws)
{
    cuda_softmax_loss_q(s, T, d, R, inv_tau, u, nu, e, NULL, pos, neg, scale, du, de, acc, ws);
}

void cuda_softmax_loss_q(cudaStream_t s, int64_t T, int d, int R, float inv_tau, const float *u,
                         int64_t nu, const float *e, const float *logq, const int64_t *pos,
                         const int64_t *neg, float scale, float *du, float *de, double *acc,
                         struct cuda_ws *ws)
{
    if (T <= 0)
        return;
    const int64_t M = T * (R + 1);
    double *li = (double *)cuda_ws_take(ws, (size_t)T * 16);
    float *coef = (float *)cuda_ws_take(ws, (size_t)M * 4);
    int64_t *key = (int64_t *)cuda_ws_take(ws, (size_t)M * 8);
    const size_t shmem = (size_t)(R + 1) * (sizeof(int64_t) + sizeof(float)) +
                         (size_t)d * sizeof(float);
    loss_smem_fit(shmem);
    const unsigned blocks = launch_blocks(T, 1); /* a block a position */
    loss_softmax<<<blocks, LOSS_SM_THREADS, shmem, s>>>(T, d, R, inv_tau, u, e, logq, pos, neg,
                                                        scale * inv_tau, du, nu, li, coef, key);
    CUDA_CHECK_LAUNCH("loss_softmax");
    loss_finish(s, T, d, R + 1, nu, u, li, coef, key, de, acc, ws);
}

void cuda_bce_loss(cudaStream_t s, int64_t T, int d, const float *u, int64_t nu, const float *e,
                   const int64_t *pos, const int64_t *neg, float scale, float *du, float *de,
                   double *acc, struct cuda_ws *ws)
{
    if (T <= 0)
        return;
    double *li = (double *)cuda_ws_take(ws, (size_t)T * 16);
    float *coef = (float *)cuda_ws_take(ws, (size_t)T * 2 * 4);
    int64_t *key = (int64_t *)cuda_ws_take(ws, (size_t)T * 2 * 8);
    const unsigned blocks = launch_blocks(T, LOSS_BCE_THREADS / 32); /* a warp a position */
    loss_bce<<<blocks, LOSS_BCE_THREADS, 0, s>>>(T, d, u, e, pos, neg, scale, du, nu, li, coef,
                                                 key);
    CUDA_CHECK_LAUNCH("loss_bce");
    loss_finish(s, T, d, 2, nu, u, li, coef, key, de, acc, ws);
}
