/* kernels: the C launchers of the CUDA kernels (doc/gpu.md). One family of
 * kernels per .cu file; C code (backend_cuda.c) reaches them only through
 * these functions. Each launcher takes the stream to run on, enqueues its
 * kernels (no synchronisation unless stated) and checks the launch with
 * CUDA_CHECK_LAUNCH. Shapes and semantics are those of the backend_ops
 * entry of the same name in src/backend/backend.h; all pointers are device memory
 * unless a parameter says "host". Sizes of zero are valid and launch
 * nothing.
 *
 * Scratch memory comes from a workspace the backend keeps (plain cudaMalloc,
 * grown before an op when the op's *_ws_bytes says so: counted, never in a
 * steady step), carved by cuda_ws_take; never from the stream-ordered
 * allocator, whose pool is trimmed at every synchronisation. Sums that must
 * repeat run in a fixed order: no float atomics. */
#ifndef FS_CUDA_KERNELS_H
#define FS_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* the workspace of one op: base[cap], used from the start */
struct cuda_ws {
    char *base;
    size_t cap, used;
};
/* bytes (256-aligned) of ws; ends the job when the op's *_ws_bytes was
 * too small */
void *cuda_ws_take(struct cuda_ws *ws, size_t bytes);
/* the bytes of cuda_ws_take(bytes) */
size_t cuda_ws_round(size_t bytes);

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

/* rows.cu. The scatter-add runs in the CPU's order: entries stably sorted
 * by row, each row's entries added in order, one rounding per operation,
 * so it gives the CPU's bits. The segments behind it serve the losses too:
 * M entries with keys[e] (a row, or >= bound: none) grouped by row in
 * order; cuda_segments_add adds, per row k and column j, (coef[e] *)
 * vec[(e / per) * d + j] over its entries e in order onto table[k, j]. */
void cuda_gather_rows(cudaStream_t s, int64_t n, int d, const float *table, const int64_t *idx,
                      float *out);
size_t cuda_scatter_add_ws_bytes(int64_t n);
void cuda_scatter_add_rows(cudaStream_t s, int64_t n, int d, const float *src,
                           const int64_t *idx, float *table, struct cuda_ws *ws);
struct cuda_segments {
    int64_t *skey, *spos, *start, *nseg; /* [M] x 3, [1] (device) */
};
size_t cuda_segments_ws_bytes(int64_t M);
void cuda_segments_build(cudaStream_t s, int64_t M, const int64_t *keys, int64_t bound,
                         struct cuda_ws *ws, struct cuda_segments *out);
void cuda_segments_add(cudaStream_t s, const struct cuda_segments *g, int64_t M, int d,
                       int64_t per, int64_t bound, const float *coef, const float *vec,
                       float *table);

/* emb.cu: the embedding engine; dedup waits once for its counts (on the
 * host: counts_host [2G]); nothing else waits */
struct emb_optim_conf;
size_t cuda_emb_dedup_ws_bytes(int64_t n, int G);
int64_t cuda_emb_dedup(cudaStream_t s, int64_t n, const int64_t *ids, int64_t n_first, int G,
                       int64_t *uniq, int64_t *inverse, int64_t *counts_host, int64_t key_max,
                       struct cuda_ws *ws);
/* the same with the owner of a dynamic table (dyn = 1: edr_owner, emb_dyn_row.h) */
int64_t cuda_emb_dedup_owner(cudaStream_t s, int64_t n, const int64_t *ids, int64_t n_first,
                             int G, int dyn, int64_t *uniq, int64_t *inverse,
                             int64_t *counts_host, int64_t key_max, struct cuda_ws *ws);
void cuda_emb_gather_shard(cudaStream_t s, int64_t n, int dim, const float *w, const int64_t *ids,
                           int G, float *out);
size_t cuda_emb_sum_by_id_ws_bytes(int64_t n);
void cuda_emb_sum_by_id(cudaStream_t s, int64_t n, int dim, const int64_t *keys, const float *g,
                        int64_t *uid, float *out, int64_t key_max, struct cuda_ws *ws);
void cuda_emb_sparse_update(cudaStream_t s, const struct emb_optim_conf *opt, int64_t k, int dim,
                            const int64_t *ids, int G, const float *g, float *w, float *state,
                            int64_t state_floats, int64_t *steps);

/* optim.cu; sum_squares: a fixed-order two-pass reduction in double into
 * ws; cuda_sum_squares copies it to host *out (a host wait),
 * cuda_sumsq_acc adds it to acc[0] (device). */
void cuda_adamw_step(cudaStream_t s, int64_t n, float *w, float *m, float *v, const float *g,
                     float lr, float beta1, float beta2, float eps, float weight_decay,
                     int64_t t);
size_t cuda_sum_squares_ws_bytes(int64_t n);
void cuda_sum_squares(cudaStream_t s, int64_t n, const float *x, struct cuda_ws *ws,
                      double *out);
void cuda_sumsq_acc(cudaStream_t s, int64_t n, const float *x, struct cuda_ws *ws, double *acc);

/* loss.cu: the per-position losses and the rows' gradient coefficients
 * into ws, then the fixed-order sums: de through cuda_segments, the loss
 * sum and count added to acc[0], acc[1] (device; no host wait). */
size_t cuda_loss_ws_bytes(int64_t T, int R);
void cuda_softmax_loss(cudaStream_t s, int64_t T, int d, int R, float inv_tau, const float *u,
                       int64_t nu, const float *e, const int64_t *pos, const int64_t *neg,
                       float scale, float *du, float *de, double *acc, struct cuda_ws *ws);
void cuda_bce_loss(cudaStream_t s, int64_t T, int d, const float *u, int64_t nu, const float *e,
                   const int64_t *pos, const int64_t *neg, float scale, float *du, float *de,
                   double *acc, struct cuda_ws *ws);
/* softmax_loss with logq [nu] subtracted from every candidate's logit */
void cuda_softmax_loss_q(cudaStream_t s, int64_t T, int d, int R, float inv_tau, const float *u,
                         int64_t nu, const float *e, const float *logq, const int64_t *pos,
                         const int64_t *neg, float scale, float *du, float *de, double *acc,
                         struct cuda_ws *ws);

/* loss_full.cu: the blocks of the full softmax; block_grad adds the
 * target logits' sum to acc[0] in device memory (no host wait) */
void cuda_softmax_block_lse(cudaStream_t s, int64_t n, int64_t m, int64_t lds, float inv_tau,
                            const float *S, float *lse);
size_t cuda_softmax_block_grad_ws_bytes(int64_t n);
void cuda_softmax_block_grad(cudaStream_t s, int64_t n, int64_t m, int64_t lds, float inv_tau,
                             const float *lse, const int64_t *tcol, float gscale, float *S,
                             double *acc, struct cuda_ws *ws);

/* exchange.cu: the exchanges' device ops (backend.h): the wire codecs
 * (src/backend/emb_codec_row.h, the CPU's own row functions), the keyed
 * negatives (src/backend/loss_sample.h), a count of values in a range. */
void cuda_emb_encode(cudaStream_t s, int codec, int64_t n, int dim, const float *rows,
                     uint8_t *wire, uint64_t *bad);
void cuda_emb_decode(cudaStream_t s, int codec, int64_t n, int dim, const uint8_t *wire,
                     float *rows);
void cuda_sample_negatives(cudaStream_t s, uint64_t seed, uint64_t epoch, const uint64_t *keys,
                           int64_t T, int R, int64_t num_items, int64_t *out);
void cuda_count_range(cudaStream_t s, int64_t n, const int64_t *x, int64_t lo, int64_t hi,
                      int64_t *acc);
/* issue 51 G: dst[i] = mask[i] ? -1 : src[i] (backend.h: index_mask) */
void cuda_index_mask(cudaStream_t s, int64_t n, const int64_t *src, const uint8_t *mask,
                     int64_t *dst);

/* attn_hstu.cu. The backward's bias gradients: per-block partials in ws
 * (cuda_hstu_attn_bwd_ws_bytes; bias: a bias gradient is asked for), summed
 * in a fixed order by cuda_hstu_bias_sum: acc[k] += the sum over slots of
 * part[slot][k] (part: [slots, width]), which attn_ctx.cu uses too.
 * cuda_hstu_bias_take carves part and its scratch *tmp from ws
 * (cuda_hstu_bias_sum_ws_bytes of them). */
size_t cuda_hstu_bias_sum_ws_bytes(int64_t slots, int width);
float *cuda_hstu_bias_take(struct cuda_ws *ws, int64_t slots, int width, float **tmp);
void cuda_hstu_bias_sum(cudaStream_t s, int64_t slots, int width, const float *part, float *tmp,
                        float *acc);
void cuda_hstu_attn_fwd(cudaStream_t s, int64_t B, const int64_t *offsets, int H, int dqk,
                        int dv, int N, const float *q, const float *k, const float *v,
                        const float *pos_bias, const float *time_bias, const int64_t *ts,
                        float *out);
void cuda_hstu_attn_bwd(cudaStream_t s, int64_t B, const int64_t *offsets, int H, int dqk,
                        int dv, int N, const float *q, const float *k, const float *v,
                        const float *pos_bias, const float *time_bias, const int64_t *ts,
                        const float *dout, float *dq, float *dk, float *dvv, float *dpos_bias,
                        float *dtime_bias, struct cuda_ws *ws);
size_t cuda_hstu_attn_bwd_ws_bytes(int64_t B, int H, int N, int bias);

/* attn_sasrec.cu */
void cuda_sasrec_attn_fwd(cudaStream_t s, int64_t B, const int64_t *offsets, int H, int dh,
                          int N, const float *q, const float *k, const float *v, float *out,
                          float *lse);
void cuda_sasrec_attn_bwd(cudaStream_t s, int64_t B, const int64_t *offsets, int H, int dh,
                          int N, const float *q, const float *k, const float *v,
                          const float *out, const float *lse, const float *dout, float *dq,
                          float *dk, float *dv);

/* attn_ctx.cu: the context forms (parallel.split_long) of both attentions */
void cuda_hstu_attn_ctx_fwd(cudaStream_t s, int64_t B, const int64_t *offsets,
                            const int64_t *pos0, const int64_t *key_off, int keys, int H, int dqk,
                            int dv, int N, const float *q, const float *kb, const float *vb,
                            const float *pos_bias, const float *time_bias, const int64_t *key_ts,
                            float *out);
void cuda_hstu_attn_ctx_bwd(cudaStream_t s, int64_t B, const int64_t *offsets,
                            const int64_t *pos0, const int64_t *key_off, int keys, int H, int dqk,
                            int dv, int N, const float *q, const float *kb, const float *vb,
                            const float *pos_bias, const float *time_bias, const int64_t *key_ts,
                            const float *dout, float *dq, float *dkb, float *dvb,
                            float *dpos_bias, float *dtime_bias, struct cuda_ws *ws);
size_t cuda_hstu_attn_ctx_bwd_ws_bytes(int H, int N);
void cuda_sasrec_attn_ctx_fwd(cudaStream_t s, int64_t B, const int64_t *offsets,
                              const int64_t *pos0, const int64_t *key_off, int keys, int H,
                              int dh, const float *q, const float *kb, const float *vb,
                              float *out, float *lse);
void cuda_sasrec_attn_ctx_bwd(cudaStream_t s, int64_t B, const int64_t *offsets,
                              const int64_t *pos0, const int64_t *key_off, int keys, int H,
                              int dh, const float *q, const float *kb, const float *vb,
                              const float *out, const float *lse, const float *dout, float *dq,
                              float *dkb, float *dvb);

/* copy.cu: the intra-node transports (backend.h: peer_copy, comm_add).
 * cuda_copy_kernel: dst[bytes] = src[bytes] by a copy kernel on a bounded
 * number of SMs (either pointer may be a CUDA IPC mapping of a peer's
 * buffer; no overlap). cuda_add: y[n] += x[n]. */
void cuda_copy_kernel(cudaStream_t s, void *dst, const void *src, size_t bytes);
void cuda_add(cudaStream_t s, int64_t n, float *y, const float *x);

/* feat.cu: the features' and the ranking head's operations (backend.h:
 * index_rows, col_sums, rank_loss) and rows_match (the evaluation's) */
void cuda_index_rows(cudaStream_t s, int64_t n, int d, const float *src, const int64_t *sidx,
                     float *dst, const int64_t *didx, int add);
void cuda_col_sums(cudaStream_t s, int64_t n, int m, const float *x, float *acc);
void cuda_rows_match(cudaStream_t s, int64_t n, int d, const float *rows, const float *row,
                     uint8_t *out);
void cuda_rank_loss(cudaStream_t s, int64_t T, int K, const float *z, const float *labels,
                    const double *coef, float *dz, double *acc);
/* factor.cu (issue 51 B): the ranking head's factor walks (backend.h:
 * factor_fwd, factor_bwd; backend/factor_walk.h) */
void cuda_factor_fwd(cudaStream_t s, int64_t B, const int64_t *offsets, int K, int F,
                     const float *f, const double *v, double prior, float gain, float *z,
                     float *w, float *vb, float *h, double ridge, float *ai);
void cuda_factor_bwd(cudaStream_t s, int64_t B, const int64_t *offsets, int K, int F,
                     const float *f, const double *v, float gain, const float *z, const float *w,
                     const float *vb, const float *dh, float *df, double ridge,
                     const float *ai);
/* gemm_bf16.cu: y[rows, cols] (packed, bf16 bits) = x (row stride ldx)
 * rounded to bf16, nearest even (emb_codec_row.h: ecr_f32_to_bf16_rn) */
void cuda_round_bf16(cudaStream_t s, int64_t rows, int64_t cols, const float *x, int64_t ldx,
                     uint16_t *y);

/* dyn.cu: the dynamic tables' operations (backend.h); nothing waits */
size_t cuda_dyn_missing_ws_bytes(int64_t n);
size_t cuda_dyn_expire_ws_bytes(int64_t next);
void cuda_dyn_find(cudaStream_t s, int64_t n, const int64_t *ids, const int64_t *keys,
                   const int64_t *vals, int64_t cap, int64_t *slot);
void cuda_dyn_stamp(cudaStream_t s, int64_t n, const int64_t *slot, int64_t clock,
                    int64_t *last, int64_t *freq);
void cuda_dyn_missing(cudaStream_t s, int64_t n, const int64_t *ids, const int64_t *slot,
                      int64_t *out, struct cuda_ws *ws);
void cuda_dyn_insert(cudaStream_t s, int64_t k, const int64_t *ids, const float *rows, int width,
                     int64_t nfree, const int64_t *freel, int64_t next, int64_t clock,
                     int64_t *keys, int64_t *vals, int64_t cap, int64_t *sid, int64_t *last,
                     int64_t *freq, float *w, float *state, int64_t state_floats,
                     int64_t *steps);
void cuda_dyn_rehash(cudaStream_t s, const int64_t *okeys, const int64_t *ovals, int64_t ocap,
                     int64_t *keys, int64_t *vals, int64_t cap);
void cuda_dyn_virtual(cudaStream_t s, int64_t n, int64_t *ids, const int64_t *slot,
                      const int64_t *keys, const int64_t *vals, int64_t cap, int G, int shard,
                      int count, int64_t *acc);
void cuda_dyn_expire(cudaStream_t s, int64_t ttl, int64_t clock, int64_t next, int64_t *sid,
                     const int64_t *last, int64_t *keys, int64_t *vals, int64_t cap,
                     int64_t *freel, int64_t *gone, int64_t *ctl);
/* the parallel form of cuda_dyn_expire (the same results; not yet run on a GPU) */
void cuda_dyn_expire_par(cudaStream_t s, int64_t ttl, int64_t clock, int64_t next, int64_t *sid,
                         const int64_t *last, int64_t *keys, int64_t *vals, int64_t cap,
                         int64_t *freel, int64_t *gone, int64_t *ctl, struct cuda_ws *ws);
void cuda_dyn_admit(cudaStream_t s, int64_t *out, int64_t admit, int64_t clock, int64_t *pkeys,
                    int64_t *pvals, int64_t pcap, int64_t prob_max, int64_t *scratch,
                    int64_t *ctl);
void cuda_dyn_evict_full(cudaStream_t s, int lfu, int64_t clock, int64_t next, int64_t top,
                         const int64_t *out, int64_t *sid, const int64_t *last,
                         const int64_t *freq, int64_t *keys, int64_t *vals, int64_t cap,
                         int64_t *freel, int64_t *gone, int64_t *ctl, int64_t *scratch);
/* the parallel form of cuda_dyn_evict_full (the same results; not yet run on a GPU) */
size_t cuda_dyn_evict_full_ws_bytes(int64_t next);
void cuda_dyn_evict_full_par(cudaStream_t s, int lfu, int64_t clock, int64_t next, int64_t top,
                             const int64_t *out, int64_t *sid, const int64_t *last,
                             const int64_t *freq, int64_t *keys, int64_t *vals, int64_t cap,
                             int64_t *freel, int64_t *gone, int64_t *ctl, struct cuda_ws *ws);

#ifdef __cplusplus
}
#endif

#endif
