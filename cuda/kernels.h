/* kernels: the C launchers of the CUDA kernels (DESIGN.md §6). One family of
 * kernels per .cu file; C code (backend_cuda.c) reaches them only through
 * these functions. Each launcher takes the stream to run on, enqueues its
 * kernels (no synchronisation unless stated) and checks the launch with
 * CUDA_CHECK_LAUNCH. Shapes and semantics are those of the backend_ops
 * entry of the same name in src/backend/backend.h; all pointers are device memory
 * unless a parameter says "host". Sizes of zero are valid and launch
 * nothing. */
#ifndef FS_CUDA_KERNELS_H
#define FS_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* elementwise.cu */
void cuda_axpy(cudaStream_t s, int64_t n, float alpha, const float *x, float *y);
void cuda_scale(cudaStream_t s, int64_t n, float alpha, float *x);
void cuda_mul(cudaStream_t s, int64_t n, const float *a, const float *b, float *y);
void cuda_silu_fwd(cudaStream_t s, int64_t n, const float *x, float *y);
void cuda_silu_bwd(cudaStream_t s, int64_t n, const float *x, const float *dy, float *dx);
void cuda_relu_fwd(cudaStream_t s, int64_t n, const float *x, float *y);
void cuda_relu_bwd(cudaStream_t s, int64_t n, const float *x, const float *dy, float *dx);

/* norm.cu */
void cuda_layernorm_fwd(cudaStream_t s, int64_t rows, int d, float eps, const float *x,
                        const float *gamma, const float *beta, float *y, float *mean,
                        float *rstd);
void cuda_layernorm_bwd(cudaStream_t s, int64_t rows, int d, const float *x, const float *mean,
                        const float *rstd, const float *gamma, const float *dy, float *dx,
                        float *dgamma, float *dbeta);
void cuda_l2norm_fwd(cudaStream_t s, int64_t rows, int d, float eps, const float *x, float *y,
                     float *norm);
void cuda_l2norm_bwd(cudaStream_t s, int64_t rows, int d, const float *y, const float *norm,
                     const float *dy, float *dx);

/* dropout.cu: the same keyed draws as the CPU backend (src/base/rng.h) */
void cuda_dropout_fwd(cudaStream_t s, int64_t rows, int d, float p, const uint64_t *row_keys,
                      uint64_t site, const float *x, float *y, uint8_t *mask);
void cuda_dropout_bwd(cudaStream_t s, int64_t rows, int d, float p, const uint8_t *mask,
                      const float *dy, float *dx);

/* rows.cu */
void cuda_gather_rows(cudaStream_t s, int64_t n, int d, const float *table, const int64_t *idx,
                      float *out);
void cuda_scatter_add_rows(cudaStream_t s, int64_t n, int d, const float *src,
                           const int64_t *idx, float *table);

/* emb.cu: the embedding engine; dedup and sum_by_id synchronise s and
 * return their counts on the host (counts_host: [2G]) */
struct emb_optim_conf;
int64_t cuda_emb_dedup(cudaStream_t s, int64_t n, const int64_t *ids, int64_t n_first, int G,
                       int64_t *uniq, int64_t *inverse, int64_t *counts_host);
void cuda_emb_gather_shard(cudaStream_t s, int64_t n, int dim, const float *w, const int64_t *ids,
                           int G, float *out);
int64_t cuda_emb_sum_by_id(cudaStream_t s, int64_t n, int dim, const int64_t *keys,
                           const float *g, int64_t *uid, float *out);
void cuda_emb_sparse_update(cudaStream_t s, const struct emb_optim_conf *opt, int64_t k, int dim,
                            const int64_t *ids, int G, const float *g, float *w, float *state,
                            int64_t state_floats, int64_t *steps);

/* optim.cu; sum_squares: partial sums in the device buffer `work` (at least
 * cuda_sum_squares_work_bytes(n) bytes), result copied to host *out
 * (synchronous on s). */
void cuda_adamw_step(cudaStream_t s, int64_t n, float *w, float *m, float *v, const float *g,
                     float lr, float beta1, float beta2, float eps, float weight_decay,
                     int64_t t);
size_t cuda_sum_squares_work_bytes(int64_t n);
void cuda_sum_squares(cudaStream_t s, int64_t n, const float *x, void *work, double *out);

/* loss.cu; the loss sum and count are accumulated in the device buffer
 * `work` (cuda_loss_work_bytes()) and copied to host *sum, *count
 * (synchronous on s). */
size_t cuda_loss_work_bytes(void);
void cuda_softmax_loss(cudaStream_t s, int64_t T, int d, int R, float inv_tau, const float *u,
                       int64_t nu, const float *e, const int64_t *pos, const int64_t *neg,
                       float scale, float *du, float *de, void *work, double *sum,
                       int64_t *count);
void cuda_bce_loss(cudaStream_t s, int64_t T, int d, const float *u, int64_t nu, const float *e,
                   const int64_t *pos, const int64_t *neg, float scale, float *du, float *de,
                   void *work, double *sum, int64_t *count);

/* attn_hstu.cu */
void cuda_hstu_attn_fwd(cudaStream_t s, int64_t B, const int64_t *offsets, int H, int dqk,
                        int dv, int N, const float *q, const float *k, const float *v,
                        const float *pos_bias, const float *time_bias, const int64_t *ts,
                        float *out);
void cuda_hstu_attn_bwd(cudaStream_t s, int64_t B, const int64_t *offsets, int H, int dqk,
                        int dv, int N, const float *q, const float *k, const float *v,
                        const float *pos_bias, const float *time_bias, const int64_t *ts,
                        const float *dout, float *dq, float *dk, float *dvv, float *dpos_bias,
                        float *dtime_bias);

/* attn_sasrec.cu */
void cuda_sasrec_attn_fwd(cudaStream_t s, int64_t B, const int64_t *offsets, int H, int dh,
                          int N, const float *q, const float *k, const float *v, float *out,
                          float *lse);
void cuda_sasrec_attn_bwd(cudaStream_t s, int64_t B, const int64_t *offsets, int H, int dh,
                          int N, const float *q, const float *k, const float *v,
                          const float *out, const float *lse, const float *dout, float *dq,
                          float *dk, float *dv);

/* copy.cu: the intra-node transports (backend.h: peer_copy, comm_add).
 * cuda_copy_kernel: dst[bytes] = src[bytes] by a copy kernel on a bounded
 * number of SMs (either pointer may be a CUDA IPC mapping of a peer's
 * buffer; no overlap). cuda_add: y[n] += x[n]. */
void cuda_copy_kernel(cudaStream_t s, void *dst, const void *src, size_t bytes);
void cuda_add(cudaStream_t s, int64_t n, float *y, const float *x);

#ifdef __cplusplus
}
#endif

#endif
