/* backend_cpu: the CPU implementations of the attention, loss and embedding-engine operations,
 * defined in their own files and gathered into the backend_cpu table (backend.h). */
#ifndef FS_BACKEND_CPU_H
#define FS_BACKEND_CPU_H

#include <stdint.h>

void cpu_hstu_attn_fwd(int64_t B, const int64_t *offsets, int H, int dqk, int dv, int N,
                       const float *q, const float *k, const float *v, const float *pos_bias,
                       const float *time_bias, const int64_t *ts, float *out);
void cpu_hstu_attn_bwd(int64_t B, const int64_t *offsets, int H, int dqk, int dv, int N,
                       const float *q, const float *k, const float *v, const float *pos_bias,
                       const float *time_bias, const int64_t *ts, const float *dout, float *dq,
                       float *dk, float *dvv, float *dpos_bias, float *dtime_bias);
void cpu_hstu_attn_ctx_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                           const int64_t *key_off, int keys, int H, int dqk, int dv, int N,
                           const float *q, const float *kb, const float *vb,
                           const float *pos_bias, const float *time_bias,
                           const int64_t *key_ts, float *out);
void cpu_hstu_attn_ctx_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                           const int64_t *key_off, int keys, int H, int dqk, int dv, int N,
                           const float *q, const float *kb, const float *vb,
                           const float *pos_bias, const float *time_bias,
                           const int64_t *key_ts, const float *dout, float *dq, float *dkb,
                           float *dvb, float *dpos_bias, float *dtime_bias);
void cpu_hstu_attn_rows_fwd(int64_t B, const int64_t *qoff, const int64_t *qpos,
                            const int64_t *key_off, int H, int dqk, int dv, int N,
                            const float *q, const float *kb, const float *vb,
                            const float *pos_bias, const float *time_bias,
                            const int64_t *key_ts, float *out);
void cpu_hstu_attn_rows_bwd(int64_t B, const int64_t *qoff, const int64_t *qpos,
                            const int64_t *key_off, int H, int dqk, int dv, int N,
                            const float *q, const float *kb, const float *vb,
                            const float *pos_bias, const float *time_bias,
                            const int64_t *key_ts, const float *dout, float *dq, float *dkb,
                            float *dvb, float *dpos_bias, float *dtime_bias);
void cpu_sasrec_attn_fwd(int64_t B, const int64_t *offsets, int H, int dh, int N,
                         const float *q, const float *k, const float *v, float *out, float *lse);
void cpu_sasrec_attn_bwd(int64_t B, const int64_t *offsets, int H, int dh, int N,
                         const float *q, const float *k, const float *v, const float *out,
                         const float *lse, const float *dout, float *dq, float *dk, float *dv);
void cpu_sasrec_attn_ctx_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                             const int64_t *key_off, int keys, int H, int dh, const float *q,
                             const float *kb, const float *vb, float *out, float *lse);
void cpu_sasrec_attn_ctx_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                             const int64_t *key_off, int keys, int H, int dh, const float *q,
                             const float *kb, const float *vb, const float *out,
                             const float *lse, const float *dout, float *dq, float *dkb,
                             float *dvb);
void cpu_softmax_loss(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                      const float *e, const int64_t *pos, const int64_t *neg, float scale,
                      float *du, float *de, double *acc);
void cpu_bce_loss(int64_t T, int d, const float *u, int64_t nu, const float *rows,
                  const int64_t *pos, const int64_t *neg, float scale, float *du, float *drows,
                  double *acc);
void cpu_softmax_loss_q(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                        const float *e, const float *logq, const int64_t *pos,
                        const int64_t *neg, float scale, float *du, float *de, double *acc);
/* backend_cpu_loss_shared.c: softmax_loss_shared, the GEMM form over runs of
 * positions with the same negatives (logq NULL: none) */
void cpu_softmax_loss_shared(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                             const float *e, const float *logq, const int64_t *pos,
                             const int64_t *neg, float scale, float *du, float *de, double *acc);
/* backend_cpu_loss.c: the reference of softmax_loss (logq NULL) and
 * softmax_loss_q (the ops are a faster form of it, bit for bit the same):
 * returns the sum of the positions' losses, *count the positions */
double cpu_softmax_loss_ref(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                            const float *e, const float *logq, const int64_t *pos,
                            const int64_t *neg, float scale, float *du, float *de,
                            int64_t *count);
void cpu_softmax_block_lse(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *s,
                           float *lse);
void cpu_softmax_block_grad(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *lse,
                            const int64_t *tcol, float gscale, float *s, double *acc);
/* backend_cpu_full.c: the references of the two (the ops are faster forms
 * of them, bit for bit the same); y[i] = cpu_expf(x[i]) by the ops' own
 * exponential (returns 1 when that is the AVX-512 form) */
int cpu_full_expf_block(int64_t n, const float *x, float *y);
void cpu_softmax_block_lse_ref(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *s,
                               float *lse);
void cpu_softmax_block_grad_ref(int64_t n, int64_t m, int64_t lds, float inv_tau,
                                const float *lse, const int64_t *tcol, float gscale, float *s,
                                double *acc);
/* backend_cpu_bf16.c: gemm_bf16's emulation; y[rows, cols] (packed) = x
 * (row stride ldx) rounded to bf16 and back (ecr_f32_to_bf16_rn) */
void cpu_gemm_bf16(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *A,
                   int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
void cpu_round_bf16(int64_t rows, int64_t cols, const float *x, int64_t ldx, float *y);
/* backend_cpu.c: the reference of dropout_fwd (the op is a faster form of it) */
void cpu_dropout_fwd_ref(int64_t rows, int d, float p, const uint64_t *row_keys, uint64_t site,
                         const float *x, float *y, uint8_t *mask);
/* backend_cpu_emb.c: the embedding engine */
struct emb_optim_conf;
int64_t cpu_emb_dedup(int64_t n, const int64_t *ids, int64_t n_first, int G, int64_t *uniq,
                      int64_t *inverse, int64_t *counts, int64_t key_max);
void cpu_emb_gather_shard(int64_t n, int dim, const float *w, const int64_t *ids, int G,
                          float *out);
void cpu_emb_sum_by_id(int64_t n, int dim, const int64_t *keys, const float *g, int64_t *uid,
                       float *out, int64_t key_max);
void cpu_emb_sparse_update(const struct emb_optim_conf *opt, int64_t k, int dim,
                           const int64_t *ids, int G, const float *g, float *w, float *state,
                           int64_t state_floats, int64_t *steps);
/* backend_cpu_dyn.c: the dynamic tables' operations (backend.h) */
int64_t cpu_emb_dyn_dedup(int64_t n, const int64_t *ids, int64_t n_first, int G, int64_t *uniq,
                          int64_t *inverse, int64_t *counts);
void cpu_dyn_find(int64_t n, const int64_t *ids, const int64_t *keys, const int64_t *vals,
                  int64_t cap, int64_t *slot);
void cpu_dyn_stamp(int64_t n, const int64_t *slot, int64_t clock, int64_t *last, int64_t *freq);
void cpu_dyn_missing(int64_t n, const int64_t *ids, const int64_t *slot, int64_t *out);
void cpu_dyn_insert(int64_t k, const int64_t *ids, const float *rows, int width, int64_t nfree,
                    const int64_t *freel, int64_t next, int64_t clock, int64_t *keys,
                    int64_t *vals, int64_t cap, int64_t *sid, int64_t *last, int64_t *freq,
                    float *w, float *state, int64_t state_floats, int64_t *steps);
void cpu_dyn_rehash(const int64_t *okeys, const int64_t *ovals, int64_t ocap, int64_t *keys,
                    int64_t *vals, int64_t cap);
void cpu_dyn_expire(int64_t ttl, int64_t clock, int64_t next, int64_t *sid, const int64_t *last,
                    int64_t *keys, int64_t *vals, int64_t cap, int64_t *freel, int64_t *gone,
                    int64_t *ctl);
void cpu_dyn_admit(int64_t *out, int64_t admit, int64_t clock, int64_t *pkeys, int64_t *pvals,
                   int64_t pcap, int64_t prob_max, int64_t *scratch, int64_t *ctl);
void cpu_dyn_evict_full(int lfu, int64_t clock, int64_t next, int64_t top, const int64_t *out,
                        int64_t *sid, const int64_t *last, const int64_t *freq, int64_t *keys,
                        int64_t *vals, int64_t cap, int64_t *freel, int64_t *gone, int64_t *ctl,
                        int64_t *scratch);
void cpu_dyn_virtual(int64_t n, int64_t *ids, const int64_t *slot, const int64_t *keys,
                     const int64_t *vals, int64_t cap, int G, int shard, int count, int64_t *acc);
/* backend_cpu_feat.c: the features' and the ranking head's operations */
void cpu_index_rows(int64_t n, int d, const float *src, const int64_t *sidx, float *dst,
                    const int64_t *didx, int add);
void cpu_col_sums(int64_t n, int m, const float *x, float *acc);
void cpu_rows_match(int64_t n, int d, const float *rows, const float *row, uint8_t *out);
void cpu_rank_loss(int64_t T, int K, const float *z, const float *labels, const double *coef,
                   float *dz, double *acc);
/* backend_cpu_factor.c: the factor terms' walks (backend/factor_walk.h) */
void cpu_factor_fwd(int64_t B, const int64_t *offsets, int K, int F, const float *f,
                    const double *v, double prior, float gain, float *z, float *w, float *vb,
                    float *h, double ridge, float *ai);
void cpu_factor_bwd(int64_t B, const int64_t *offsets, int K, int F, const float *f,
                    const double *v, float gain, const float *z, const float *w, const float *vb,
                    const float *dh, float *df, double ridge, const float *ai);

#endif
