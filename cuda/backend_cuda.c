/* backend_cuda: the CUDA backend (backend.h): device state, memory, cuBLAS
 * GEMM, and the ops table whose entries call the kernel launchers of
 * kernels.h. Plain C; the kernels live in the .cu files.
 *
 * State (one device per process, made current by device_open):
 *   compute stream  every op runs on it, in order (lowest priority,
 *                   non-blocking w.r.t. the legacy default stream);
 *   comm stream     the staging copies to_host_async / to_device_async
 *                   and the intra-node transport (peer_copy, comm_add)
 *                   (highest priority, so exchanges are not queued behind
 *                   kernels); each copy first waits for the work enqueued
 *                   so far on the compute stream (an event), so it reads
 *                   finished results and does not overwrite a buffer that
 *                   a kernel still reads;
 *   copy stream     copy_up / copy_down (the device cache's fills and
 *                   write-backs), ordered only by the caller's events, so
 *                   they run beside the kernels (lowest priority);
 *   cuBLAS handle   bound to the compute stream, TF32 only when asked;
 *   workspace       the ops' scratch (kernels.h: struct cuda_ws), grown
 *                   before an op that needs more (a counted allocation),
 *                   kept: a steady step allocates nothing.
 * Every op before device_open ends the job with a message (cuda_state()).
 *
 * Memory comes from cudaMalloc, not the stream-ordered allocator: buffers
 * may be handed to a CUDA-aware MPI, and pool memory breaks the CUDA IPC of
 * several MPI/UCX versions (and its pool is trimmed at every
 * synchronisation). Every host wait goes through cuda_host_wait and every
 * allocation through cuda_alloc or the workspace: both counted
 * (devstats.h). FREESCALE_CUDA_SYNC=1 synchronises and checks after every
 * kernel launch, so that a kernel's fault names that kernel (with
 * compute-sanitizer, tests/test_backend_ops takes a test name). */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "backend/backend.h"
#include "backend/devstats.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_priv.h"
#include "cuda/kernels.h"
#include "base/log.h"

void cuda_check_failed(int err, const char *reason, const char *call, const char *file,
                       int line)
{
    fatal("%s:%d: CUDA call failed: %s: error %d (%s)", file, line, call, err, reason);
}

void cuda_host_wait(cudaStream_t s)
{
    devstats_sync();
    CUDA_CHECK(cudaStreamSynchronize(s));
}

struct cuda_state g_cuda;

static int g_sync_mode = -1; /* FREESCALE_CUDA_SYNC: unread, off, on */

void cuda_check_launch(const char *name, const char *file, int line)
{
    cudaError_t e = cudaPeekAtLastError();
    if (e != cudaSuccess)
        cuda_check_failed((int)e, cudaGetErrorString(e), name, file, line);
    if (g_sync_mode < 0) {
        const char *v = getenv("FREESCALE_CUDA_SYNC");
        g_sync_mode = v && strcmp(v, "0") != 0;
    }
    if (g_sync_mode) { /* the kernel's own faults, reported at its launch */
        devstats_sync();
        e = cudaDeviceSynchronize();
        if (e == cudaSuccess)
            e = cudaGetLastError();
        if (e != cudaSuccess)
            cuda_check_failed((int)e, cudaGetErrorString(e), name, file, line);
    }
}

void *cuda_ws_take(struct cuda_ws *ws, size_t bytes)
{
    const size_t b = cuda_ws_round(bytes);
    if (ws->used + b > ws->cap)
        fatal("backend cuda: workspace of %zu bytes exhausted (%zu more wanted): an op's "
              "*_ws_bytes is too small", ws->cap, b);
    void *p = ws->base + ws->used;
    ws->used += b;
    return p;
}

size_t cuda_ws_round(size_t bytes) { return (bytes + 255) / 256 * 256; }

struct cuda_state *cuda_state(void)
{
    if (!g_cuda.open)
        fatal("backend cuda: no device opened");
    return &g_cuda;
}

/* The workspace, at least bytes, empty: grown (plain cudaMalloc, counted)
 * after the device is idle; kept. */
static struct cuda_ws *ws_for(struct cuda_state *st, size_t bytes)
{
    if (bytes > st->ws.cap) {
        if (st->ws.base) {
            cuda_host_wait(st->compute); /* no kernel still uses it */
            CUDA_CHECK(cudaFree(st->ws.base));
        }
        st->ws.cap = bytes + bytes / 4;
        devstats_alloc();
        CUDA_CHECK(cudaMalloc((void **)&st->ws.base, st->ws.cap));
    }
    st->ws.used = 0;
    return &st->ws;
}

/* ---- memory ----------------------------------------------------------- */

static void *cuda_alloc(size_t bytes)
{
    struct cuda_state *st = cuda_state();
    void *p = NULL;
    size_t b = bytes ? bytes : 1; /* never NULL, as on the CPU */
    devstats_alloc();
    CUDA_CHECK(cudaMalloc(&p, b));
    CUDA_CHECK(cudaMemsetAsync(p, 0, b, st->compute));
    /* zero for every reader, a CUDA-aware MPI or the comm stream included;
     * allocations belong outside the step loop (cudaMalloc/cudaFree are
     * synchronising anyway) */
    cuda_host_wait(st->compute);
    return p;
}

static void cuda_free(void *p)
{
    if (!p)
        return;
    struct cuda_state *st = cuda_state();
    /* no kernel or staging copy may still touch p */
    cuda_host_wait(st->compute);
    cuda_host_wait(st->comm);
    CUDA_CHECK(cudaFree(p));
}

/* Synchronous: the host buffer may be pageable and reused or freed by the
 * caller as soon as we return, and a pinned one (host_alloc) would not make
 * cudaMemcpyAsync wait at all; correctness before speed. */
static void cuda_to_device(void *dst, const void *host_src, size_t bytes)
{
    struct cuda_state *st = cuda_state();
    if (!bytes)
        return;
    devstats_h2d(bytes);
    CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, st->compute));
    cuda_host_wait(st->compute);
}

static void cuda_to_host(void *host_dst, const void *src, size_t bytes)
{
    struct cuda_state *st = cuda_state();
    if (!bytes)
        return;
    devstats_d2h(bytes);
    CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, st->compute));
    cuda_host_wait(st->compute);
}

/* device to device, in stream order (regions must not overlap) */
static void cuda_copy(void *dst, const void *src, size_t bytes)
{
    struct cuda_state *st = cuda_state();
    if (!bytes || dst == src)
        return;
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st->compute));
}

static void cuda_zero(void *p, size_t bytes)
{
    struct cuda_state *st = cuda_state();
    if (!bytes)
        return;
    CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, st->compute));
}

static void cuda_synchronize(void) { cuda_host_wait(cuda_state()->compute); }

/* ---- pinned host memory and the comm stream --------------------------- */

static void *cuda_host_alloc(size_t bytes)
{
    (void)cuda_state(); /* the device must be current before pinning */
    void *p = NULL;
    devstats_alloc();
    CUDA_CHECK(cudaMallocHost(&p, bytes ? bytes : 1));
    return p;
}

static void cuda_host_free(void *p)
{
    if (!p)
        return;
    struct cuda_state *st = cuda_state();
    cuda_host_wait(st->comm); /* no staging copy still uses p */
    cuda_host_wait(st->copy);
    CUDA_CHECK(cudaFreeHost(p));
}

/* the comm stream waits for everything enqueued so far on the compute one */
void cuda_comm_after_compute(struct cuda_state *st)
{
    CUDA_CHECK(cudaEventRecord(st->compute_mark, st->compute));
    CUDA_CHECK(cudaStreamWaitEvent(st->comm, st->compute_mark, 0));
}

static void cuda_to_host_async(void *host_dst, const void *src, size_t bytes)
{
    struct cuda_state *st = cuda_state();
    if (!bytes)
        return;
    cuda_comm_after_compute(st);
    devstats_d2h(bytes);
    CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, st->comm));
}

static void cuda_to_device_async(void *dst, const void *host_src, size_t bytes)
{
    struct cuda_state *st = cuda_state();
    if (!bytes)
        return;
    cuda_comm_after_compute(st); /* kernels enqueued before may still read dst */
    devstats_h2d(bytes);
    CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, st->comm));
    /* and kernels enqueued after must see the data even without comm_sync */
    CUDA_CHECK(cudaEventRecord(st->comm_mark, st->comm));
    CUDA_CHECK(cudaStreamWaitEvent(st->compute, st->comm_mark, 0));
}

static void cuda_comm_sync(void) { cuda_host_wait(cuda_state()->comm); }

/* on the copy stream, ordered by the caller's events only */
static void cuda_copy_up(void *dst, const void *host_src, size_t bytes)
{
    struct cuda_state *st = cuda_state();
    if (!bytes)
        return;
    devstats_h2d(bytes);
    CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, st->copy));
}

static void cuda_copy_down(void *host_dst, const void *src, size_t bytes)
{
    struct cuda_state *st = cuda_state();
    if (!bytes)
        return;
    devstats_d2h(bytes);
    CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, st->copy));
}

/* ---- GEMM ------------------------------------------------------------- */

static int cuda_gemm_dim(const char *what, int64_t v)
{
    if (v < 0 || v > INT_MAX)
        fatal("backend cuda: gemm: %s = %lld is outside cuBLAS's 32-bit range", what,
              (long long)v);
    return (int)v;
}

/* A gemm with no product term: m or n is 0 (nothing), or k is 0 (C: [m, n],
 * row r at C + r ldc, *= beta); 1 when so (the gemm is done), else 0. */
static int cuda_gemm_empty(struct cuda_state *st, int64_t m, int64_t n, int64_t k, float beta,
                           float *C, int64_t ldc)
{
    if (m == 0 || n == 0)
        return 1;
    if (k != 0)
        return 0;
    if (beta == 1.0f)
        return 1;
    if (beta == 0.0f) { /* as BLAS: C is not read, so NaNs there do not survive */
        CUDA_CHECK(cudaMemset2DAsync(C, (size_t)ldc * sizeof(float), 0,
                                     (size_t)n * sizeof(float), (size_t)m, st->compute));
    } else if (ldc == n) {
        cuda_scale(st->compute, m * n, beta, C);
    } else {
        for (int64_t r = 0; r < m; r++)
            cuda_scale(st->compute, n, beta, C + r * ldc);
    }
    return 1;
}

/* Row-major C = alpha op(A) op(B) + beta C is column-major
 * C^T = alpha op(B)^T op(A)^T + beta C^T, and a row-major matrix read as
 * column-major is its transpose: so cuBLAS gets (op_b, op_a, n, m, k, B, A)
 * with the same leading dimensions. */
static void cuda_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                      float *C, int64_t ldc)
{
    struct cuda_state *st = cuda_state();
    if (cuda_gemm_empty(st, m, n, k, beta, C, ldc))
        return;
    const int im = cuda_gemm_dim("m", m), in = cuda_gemm_dim("n", n),
              ik = cuda_gemm_dim("k", k), ilda = cuda_gemm_dim("lda", lda),
              ildb = cuda_gemm_dim("ldb", ldb), ildc = cuda_gemm_dim("ldc", ldc);
    CUBLAS_CHECK(cublasSgemm(st->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                             ta ? CUBLAS_OP_T : CUBLAS_OP_N, in, im, ik, &alpha, B, ildb, A,
                             ilda, &beta, C, ildc));
}

/* gemm with bf16 operands (device.precision = bf16): op(A) and op(B)
 * rounded into the workspace as stored (packed: leading dimension = the
 * stored row's length), then cublasGemmEx with fp32 accumulation and an
 * fp32 C; the operand mapping as in cuda_gemm. */
static void cuda_gemm_bf16(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                           const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                           float *C, int64_t ldc)
{
    struct cuda_state *st = cuda_state();
    if (cuda_gemm_empty(st, m, n, k, beta, C, ldc))
        return;
    const int64_t ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
    const size_t ba = (size_t)(ra * ca) * 2, bb = (size_t)(rb * cb) * 2;
    struct cuda_ws *ws = ws_for(st, cuda_ws_round(ba) + cuda_ws_round(bb));
    uint16_t *a16 = cuda_ws_take(ws, ba), *b16 = cuda_ws_take(ws, bb);
    cuda_round_bf16(st->compute, ra, ca, A, lda, a16);
    cuda_round_bf16(st->compute, rb, cb, B, ldb, b16);
    const int im = cuda_gemm_dim("m", m), in = cuda_gemm_dim("n", n),
              ik = cuda_gemm_dim("k", k), ilda = cuda_gemm_dim("lda", ca),
              ildb = cuda_gemm_dim("ldb", cb), ildc = cuda_gemm_dim("ldc", ldc);
    CUBLAS_CHECK(cublasGemmEx(st->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                              ta ? CUBLAS_OP_T : CUBLAS_OP_N, in, im, ik, &alpha, b16,
                              CUDA_R_16BF, ildb, a16, CUDA_R_16BF, ilda, &beta, C, CUDA_R_32F,
                              ildc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* ---- elementwise, norms, dropout, rows, optimizer --------------------- */

static void cuda_op_axpy(int64_t n, float a, const float *x, float *y)
{
    cuda_axpy(cuda_state()->compute, n, a, x, y);
}

static void cuda_op_scale(int64_t n, float a, float *x)
{
    cuda_scale(cuda_state()->compute, n, a, x);
}

static void cuda_op_mul(int64_t n, const float *a, const float *b, float *y)
{
    cuda_mul(cuda_state()->compute, n, a, b, y);
}

static void cuda_op_silu_fwd(int64_t n, const float *x, float *y)
{
    cuda_silu_fwd(cuda_state()->compute, n, x, y);
}

static void cuda_op_silu_bwd(int64_t n, const float *x, const float *dy, float *dx)
{
    cuda_silu_bwd(cuda_state()->compute, n, x, dy, dx);
}

static void cuda_op_relu_fwd(int64_t n, const float *x, float *y)
{
    cuda_relu_fwd(cuda_state()->compute, n, x, y);
}

static void cuda_op_relu_bwd(int64_t n, const float *x, const float *dy, float *dx)
{
    cuda_relu_bwd(cuda_state()->compute, n, x, dy, dx);
}

static void cuda_op_layernorm_fwd(int64_t rows, int d, float eps, const float *x,
                                  const float *gamma, const float *beta, float *y, float *mean,
                                  float *rstd)
{
    cuda_layernorm_fwd(cuda_state()->compute, rows, d, eps, x, gamma, beta, y, mean, rstd);
}

static void cuda_op_layernorm_bwd(int64_t rows, int d, const float *x, const float *mean,
                                  const float *rstd, const float *gamma, const float *dy,
                                  float *dx, float *dgamma, float *dbeta)
{
    cuda_layernorm_bwd(cuda_state()->compute, rows, d, x, mean, rstd, gamma, dy, dx, dgamma,
                       dbeta);
}

static void cuda_op_l2norm_fwd(int64_t rows, int d, float eps, const float *x, float *y,
                               float *norm)
{
    cuda_l2norm_fwd(cuda_state()->compute, rows, d, eps, x, y, norm);
}

static void cuda_op_l2norm_bwd(int64_t rows, int d, const float *y, const float *norm,
                               const float *dy, float *dx)
{
    cuda_l2norm_bwd(cuda_state()->compute, rows, d, y, norm, dy, dx);
}

static void cuda_op_dropout_fwd(int64_t rows, int d, float p, const uint64_t *row_keys,
                                uint64_t site, const float *x, float *y, uint8_t *mask)
{
    cuda_dropout_fwd(cuda_state()->compute, rows, d, p, row_keys, site, x, y, mask);
}

static void cuda_op_dropout_bwd(int64_t rows, int d, float p, const uint8_t *mask,
                                const float *dy, float *dx)
{
    cuda_dropout_bwd(cuda_state()->compute, rows, d, p, mask, dy, dx);
}

static void cuda_op_gather_rows(int64_t n, int d, const float *table, const int64_t *idx,
                                float *out)
{
    cuda_gather_rows(cuda_state()->compute, n, d, table, idx, out);
}

static int64_t cuda_op_emb_dedup(int64_t n, const int64_t *ids, int64_t n_first, int G,
                                 int64_t *uniq, int64_t *inverse, int64_t *counts, int64_t key_max)
{
    struct cuda_state *st = cuda_state();
    return cuda_emb_dedup(st->compute, n, ids, n_first, G, uniq, inverse, counts, key_max,
                          ws_for(st, cuda_emb_dedup_ws_bytes(n, G)));
}

static void cuda_op_emb_gather_shard(int64_t n, int dim, const float *w, const int64_t *ids,
                                     int G, float *out)
{
    cuda_emb_gather_shard(cuda_state()->compute, n, dim, w, ids, G, out);
}

static void cuda_op_emb_sum_by_id(int64_t n, int dim, const int64_t *keys, const float *g,
                                  int64_t *uid, float *out, int64_t key_max)
{
    struct cuda_state *st = cuda_state();
    cuda_emb_sum_by_id(st->compute, n, dim, keys, g, uid, out, key_max,
                       ws_for(st, cuda_emb_sum_by_id_ws_bytes(n)));
}

static void cuda_op_emb_sparse_update(const struct emb_optim_conf *opt, int64_t k, int dim,
                                      const int64_t *ids, int G, const float *g, float *w,
                                      float *state, int64_t state_floats, int64_t *steps)
{
    cuda_emb_sparse_update(cuda_state()->compute, opt, k, dim, ids, G, g, w, state, state_floats,
                           steps);
}

static void cuda_op_scatter_add_rows(int64_t n, int d, const float *src, const int64_t *idx,
                                     float *table)
{
    struct cuda_state *st = cuda_state();
    cuda_scatter_add_rows(st->compute, n, d, src, idx, table,
                          ws_for(st, cuda_scatter_add_ws_bytes(n)));
}

static void cuda_op_adamw_step(int64_t n, float *w, float *m, float *v, const float *g,
                               float lr, float b1, float b2, float eps, float wd, int64_t t)
{
    cuda_adamw_step(cuda_state()->compute, n, w, m, v, g, lr, b1, b2, eps, wd, t);
}

static double cuda_op_sum_squares(int64_t n, const float *x)
{
    struct cuda_state *st = cuda_state();
    double s = 0;
    cuda_sum_squares(st->compute, n, x, ws_for(st, cuda_sum_squares_ws_bytes(n)), &s);
    return s;
}

static void cuda_op_sumsq_acc(int64_t n, const float *x, double *acc)
{
    struct cuda_state *st = cuda_state();
    cuda_sumsq_acc(st->compute, n, x, ws_for(st, cuda_sum_squares_ws_bytes(n)), acc);
}

static void cuda_op_emb_encode(int codec, int64_t n, int dim, const float *rows, uint8_t *wire,
                               uint64_t *bad)
{
    cuda_emb_encode(cuda_state()->compute, codec, n, dim, rows, wire, bad);
}

static void cuda_op_emb_decode(int codec, int64_t n, int dim, const uint8_t *wire, float *rows)
{
    cuda_emb_decode(cuda_state()->compute, codec, n, dim, wire, rows);
}

static void cuda_op_count_range(int64_t n, const int64_t *x, int64_t lo, int64_t hi,
                                int64_t *acc)
{
    cuda_count_range(cuda_state()->compute, n, x, lo, hi, acc);
}

/* issue 51 G */
static void cuda_op_index_mask(int64_t n, const int64_t *src, const uint8_t *mask, int64_t *dst)
{
    cuda_index_mask(cuda_state()->compute, n, src, mask, dst);
}

static void cuda_op_sample_negatives(uint64_t seed, uint64_t epoch, const uint64_t *keys,
                                     int64_t T, int R, int64_t num_items, int64_t *out)
{
    cuda_sample_negatives(cuda_state()->compute, seed, epoch, keys, T, R, num_items, out);
}

/* ---- attention and losses --------------------------------------------- */

static void cuda_op_hstu_attn_fwd(int64_t B, const int64_t *offsets, int H, int dqk, int dv,
                                  int N, const float *q, const float *k, const float *v,
                                  const float *pos_bias, const float *time_bias,
                                  const int64_t *ts, float *out)
{
    cuda_hstu_attn_fwd(cuda_state()->compute, B, offsets, H, dqk, dv, N, q, k, v, pos_bias,
                       time_bias, ts, out);
}

static void cuda_op_hstu_attn_bwd(int64_t B, const int64_t *offsets, int H, int dqk, int dv,
                                  int N, const float *q, const float *k, const float *v,
                                  const float *pos_bias, const float *time_bias,
                                  const int64_t *ts, const float *dout, float *dq, float *dk,
                                  float *dvv, float *dpos_bias, float *dtime_bias)
{
    struct cuda_state *st = cuda_state();
    const int bias = dpos_bias != NULL || dtime_bias != NULL;
    cuda_hstu_attn_bwd(st->compute, B, offsets, H, dqk, dv, N, q, k, v, pos_bias, time_bias, ts,
                       dout, dq, dk, dvv, dpos_bias, dtime_bias,
                       ws_for(st, cuda_hstu_attn_bwd_ws_bytes(B, H, N, bias)));
}

static void cuda_op_sasrec_attn_fwd(int64_t B, const int64_t *offsets, int H, int dh, int N,
                                    const float *q, const float *k, const float *v, float *out,
                                    float *lse)
{
    cuda_sasrec_attn_fwd(cuda_state()->compute, B, offsets, H, dh, N, q, k, v, out, lse);
}

static void cuda_op_sasrec_attn_bwd(int64_t B, const int64_t *offsets, int H, int dh, int N,
                                    const float *q, const float *k, const float *v,
                                    const float *out, const float *lse, const float *dout,
                                    float *dq, float *dk, float *dv)
{
    cuda_sasrec_attn_bwd(cuda_state()->compute, B, offsets, H, dh, N, q, k, v, out, lse, dout,
                         dq, dk, dv);
}

static void cuda_op_softmax_loss(int64_t T, int d, int R, float inv_tau, const float *u,
                                 int64_t nu, const float *e, const int64_t *pos,
                                 const int64_t *neg, float scale, float *du, float *de,
                                 double *acc)
{
    struct cuda_state *st = cuda_state();
    if (d < 1 || R < 0 || T < 0 || !(inv_tau > 0))
        fatal("backend cuda: softmax_loss: bad arguments T = %lld, d = %d, R = %d, "
              "inv_tau = %g",
              (long long)T, d, R, (double)inv_tau);
    cuda_softmax_loss(st->compute, T, d, R, inv_tau, u, nu, e, pos, neg, scale, du, de, acc,
                      ws_for(st, cuda_loss_ws_bytes(T, R)));
}

static void cuda_op_bce_loss(int64_t T, int d, const float *u, int64_t nu, const float *e,
                             const int64_t *pos, const int64_t *neg, float scale, float *du,
                             float *de, double *acc)
{
    struct cuda_state *st = cuda_state();
    if (d < 1 || T < 0)
        fatal("backend cuda: bce_loss: bad arguments T = %lld, d = %d", (long long)T, d);
    cuda_bce_loss(st->compute, T, d, u, nu, e, pos, neg, scale, du, de, acc,
                  ws_for(st, cuda_loss_ws_bytes(T, 1)));
}

/* the workspace for the ops of the other C files (cuda_priv.h) */
struct cuda_ws *cuda_ws_get(struct cuda_state *st, size_t bytes) { return ws_for(st, bytes); }
/* ---- features and the ranking head (feat.cu) ------------------------------ */

static void cuda_op_index_rows(int64_t n, int d, const float *src, const int64_t *sidx,
                               float *dst, const int64_t *didx, int add)
{
    cuda_index_rows(cuda_state()->compute, n, d, src, sidx, dst, didx, add);
}

static void cuda_op_rows_match(int64_t n, int d, const float *rows, const float *row,
                               uint8_t *out)
{
    cuda_rows_match(cuda_state()->compute, n, d, rows, row, out);
}

static void cuda_op_col_sums(int64_t n, int m, const float *x, float *acc)
{
    cuda_col_sums(cuda_state()->compute, n, m, x, acc);
}

static void cuda_op_rank_loss(int64_t T, int K, const float *z, const float *labels,
                              const double *coef, float *dz, double *acc)
{
    cuda_rank_loss(cuda_state()->compute, T, K, z, labels, coef, dz, acc);
}

/* issue 51 B: the ranking head's factor walks */
static void cuda_op_factor_fwd(int64_t B, const int64_t *offsets, int K, int F, const float *f,
                               const double *v, double prior, float gain, float *z, float *w,
                               float *vb, float *h, double ridge, float *ai)
{
    cuda_factor_fwd(cuda_state()->compute, B, offsets, K, F, f, v, prior, gain, z, w, vb, h,
                    ridge, ai);
}

static void cuda_op_factor_bwd(int64_t B, const int64_t *offsets, int K, int F, const float *f,
                               const double *v, float gain, const float *z, const float *w,
                               const float *vb, const float *dh, float *df, double ridge,
                               const float *ai)
{
    cuda_factor_bwd(cuda_state()->compute, B, offsets, K, F, f, v, gain, z, w, vb, dh, df, ridge,
                    ai);
}

/* --- dynamic tables (dyn.cu; emb_dyn_dedup: emb.cu with the dynamic owner) --- */

static int64_t cuda_op_emb_dyn_dedup(int64_t n, const int64_t *ids, int64_t n_first, int G,
                                     int64_t *uniq, int64_t *inverse, int64_t *counts)
{
    struct cuda_state *st = cuda_state();
    return cuda_emb_dedup_owner(st->compute, n, ids, n_first, G, 1, uniq, inverse, counts, 0,
                                ws_for(st, cuda_emb_dedup_ws_bytes(n, G)));
}

static void cuda_op_dyn_find(int64_t n, const int64_t *ids, const int64_t *keys,
                             const int64_t *vals, int64_t cap, int64_t *slot)
{
    cuda_dyn_find(cuda_state()->compute, n, ids, keys, vals, cap, slot);
}

static void cuda_op_dyn_stamp(int64_t n, const int64_t *slot, int64_t clock, int64_t *last,
                              int64_t *freq)
{
    cuda_dyn_stamp(cuda_state()->compute, n, slot, clock, last, freq);
}

static void cuda_op_dyn_missing(int64_t n, const int64_t *ids, const int64_t *slot, int64_t *out)
{
    struct cuda_state *st = cuda_state();
    cuda_dyn_missing(st->compute, n, ids, slot, out, ws_for(st, cuda_dyn_missing_ws_bytes(n)));
}

static void cuda_op_dyn_insert(int64_t k, const int64_t *ids, const float *rows, int width,
                               int64_t nfree, const int64_t *freel, int64_t next, int64_t clock,
                               int64_t *keys, int64_t *vals, int64_t cap, int64_t *sid,
                               int64_t *last, int64_t *freq, float *w, float *state,
                               int64_t state_floats, int64_t *steps)
{
    cuda_dyn_insert(cuda_state()->compute, k, ids, rows, width, nfree, freel, next, clock, keys,
                    vals, cap, sid, last, freq, w, state, state_floats, steps);
}

static void cuda_op_dyn_rehash(const int64_t *okeys, const int64_t *ovals, int64_t ocap,
                               int64_t *keys, int64_t *vals, int64_t cap)
{
    cuda_dyn_rehash(cuda_state()->compute, okeys, ovals, ocap, keys, vals, cap);
}

/* FREESCALE_CUDA_DYN_SERIAL=1: the one-thread form of the dynamic tables'
 * sequential steps (cuda/dyn.cu), where a parallel one exists */
static int dyn_serial(void)
{
    static int mode = -1;
    if (mode < 0) {
        const char *v = getenv("FREESCALE_CUDA_DYN_SERIAL");
        mode = v && strcmp(v, "0") != 0;
    }
    return mode;
}

static void cuda_op_dyn_expire(int64_t ttl, int64_t clock, int64_t next, int64_t *sid,
                               const int64_t *last, int64_t *keys, int64_t *vals, int64_t cap,
                               int64_t *freel, int64_t *gone, int64_t *ctl)
{
    struct cuda_state *st = cuda_state();
    if (dyn_serial())
        cuda_dyn_expire(st->compute, ttl, clock, next, sid, last, keys, vals, cap, freel, gone,
                        ctl);
    else
        cuda_dyn_expire_par(st->compute, ttl, clock, next, sid, last, keys, vals, cap, freel,
                            gone, ctl, ws_for(st, cuda_dyn_expire_ws_bytes(next)));
}

static void cuda_op_dyn_admit(int64_t *out, int64_t admit, int64_t clock, int64_t *pkeys,
                              int64_t *pvals, int64_t pcap, int64_t prob_max, int64_t *scratch,
                              int64_t *ctl)
{
    cuda_dyn_admit(cuda_state()->compute, out, admit, clock, pkeys, pvals, pcap, prob_max,
                   scratch, ctl);
}

static void cuda_op_dyn_evict_full(int lfu, int64_t clock, int64_t next, int64_t top,
                                   const int64_t *out, int64_t *sid, const int64_t *last,
                                   const int64_t *freq, int64_t *keys, int64_t *vals, int64_t cap,
                                   int64_t *freel, int64_t *gone, int64_t *ctl, int64_t *scratch)
{
    struct cuda_state *st = cuda_state();
    if (dyn_serial())
        cuda_dyn_evict_full(st->compute, lfu, clock, next, top, out, sid, last, freq, keys, vals,
                            cap, freel, gone, ctl, scratch);
    else
        cuda_dyn_evict_full_par(st->compute, lfu, clock, next, top, out, sid, last, freq, keys,
                                vals, cap, freel, gone, ctl,
                                ws_for(st, cuda_dyn_evict_full_ws_bytes(next)));
}

static void cuda_op_dyn_virtual(int64_t n, int64_t *ids, const int64_t *slot, const int64_t *keys,
                                const int64_t *vals, int64_t cap, int G, int shard, int count,
                                int64_t *acc)
{
    cuda_dyn_virtual(cuda_state()->compute, n, ids, slot, keys, vals, cap, G, shard, count, acc);
}

const struct backend_ops backend_cuda = {
    .name = "cuda",
    .alloc = cuda_alloc,
    .free = cuda_free,
    .to_device = cuda_to_device,
    .to_host = cuda_to_host,
    .copy = cuda_copy,
    .zero = cuda_zero,
    .synchronize = cuda_synchronize,
    .gemm = cuda_gemm,
    .gemm_bf16 = cuda_gemm_bf16,
    .axpy = cuda_op_axpy,
    .scale = cuda_op_scale,
    .mul = cuda_op_mul,
    .silu_fwd = cuda_op_silu_fwd,
    .silu_bwd = cuda_op_silu_bwd,
    .relu_fwd = cuda_op_relu_fwd,
    .relu_bwd = cuda_op_relu_bwd,
    .layernorm_fwd = cuda_op_layernorm_fwd,
    .layernorm_bwd = cuda_op_layernorm_bwd,
    .l2norm_fwd = cuda_op_l2norm_fwd,
    .l2norm_bwd = cuda_op_l2norm_bwd,
    .dropout_fwd = cuda_op_dropout_fwd,
    .dropout_bwd = cuda_op_dropout_bwd,
    .gather_rows = cuda_op_gather_rows,
    .scatter_add_rows = cuda_op_scatter_add_rows,
    .adamw_step = cuda_op_adamw_step,
    .sum_squares = cuda_op_sum_squares,
    .sumsq_acc = cuda_op_sumsq_acc,
    .hstu_attn_fwd = cuda_op_hstu_attn_fwd,
    .hstu_attn_bwd = cuda_op_hstu_attn_bwd,
    .sasrec_attn_fwd = cuda_op_sasrec_attn_fwd,
    .sasrec_attn_bwd = cuda_op_sasrec_attn_bwd,
    .softmax_loss = cuda_op_softmax_loss,
    .bce_loss = cuda_op_bce_loss,
    .hstu_attn_ctx_fwd = cuda_op_hstu_attn_ctx_fwd,
    .hstu_attn_ctx_bwd = cuda_op_hstu_attn_ctx_bwd,
    .sasrec_attn_ctx_fwd = cuda_op_sasrec_attn_ctx_fwd,
    .sasrec_attn_ctx_bwd = cuda_op_sasrec_attn_ctx_bwd,
    .softmax_loss_q = cuda_op_softmax_loss_q,
    .softmax_block_lse = cuda_op_softmax_block_lse,
    .softmax_block_grad = cuda_op_softmax_block_grad,
    .emb_dedup = cuda_op_emb_dedup,
    .emb_gather_shard = cuda_op_emb_gather_shard,
    .emb_sum_by_id = cuda_op_emb_sum_by_id,
    .emb_sparse_update = cuda_op_emb_sparse_update,
    .emb_encode = cuda_op_emb_encode,
    .emb_decode = cuda_op_emb_decode,
    .count_range = cuda_op_count_range,
    .sample_negatives = cuda_op_sample_negatives,
    .index_rows = cuda_op_index_rows,
    .col_sums = cuda_op_col_sums,
    .rows_match = cuda_op_rows_match, /* issue 51 item 3 (H) */
    .rank_loss = cuda_op_rank_loss,
    .factor_fwd = cuda_op_factor_fwd, /* issue 51 B */
    .factor_bwd = cuda_op_factor_bwd,
    .device_count = cuda_device_count,
    .device_open = cuda_device_open,
    .device_describe = cuda_device_describe,
    .device_memory = cuda_device_memory,
    .device_uuid = cuda_device_uuid,
    .event_new = cuda_event_new,
    .event_free = cuda_event_free,
    .event_record = cuda_event_record,
    .event_query = cuda_event_query,
    .event_sync = cuda_event_sync,
    .stream_wait = cuda_stream_wait,
    .event_ms = cuda_event_ms,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .to_host_async = cuda_to_host_async,
    .to_device_async = cuda_to_device_async,
    .comm_sync = cuda_comm_sync,
    .copy_up = cuda_copy_up,
    .copy_down = cuda_copy_down,
    .ipc_export = cuda_ipc_export,
    .ipc_open = cuda_ipc_open,
    .ipc_close = cuda_ipc_close,
    .peer_copy = cuda_peer_copy,
    .comm_add = cuda_comm_add,
    /* dynamic tables */
    .emb_dyn_dedup = cuda_op_emb_dyn_dedup,
    .dyn_find = cuda_op_dyn_find,
    .dyn_stamp = cuda_op_dyn_stamp,
    .dyn_missing = cuda_op_dyn_missing,
    .dyn_insert = cuda_op_dyn_insert,
    .dyn_rehash = cuda_op_dyn_rehash,
    .dyn_virtual = cuda_op_dyn_virtual,
    .dyn_expire = cuda_op_dyn_expire,
    .dyn_admit = cuda_op_dyn_admit,
    .dyn_evict_full = cuda_op_dyn_evict_full,
    .index_mask = cuda_op_index_mask, /* issue 51 G */
};
