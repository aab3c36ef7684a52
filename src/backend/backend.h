/* backend: the one table of operations that model code calls (doc/architecture.md).
 *
 * Tensors are row-major float arrays in the backend's memory. A jagged batch
 * of B sequences is x: [T, d] with T = sum L_i and offsets[B + 1] (int64).
 * Every pointer an op takes is in the backend's memory (from alloc; copied
 * there with to_device), offsets, ts, row keys and indexes included; only
 * results documented as "on the host" come back in host memory. Ops run in
 * order on the backend's compute stream; to_host and synchronize wait. The CPU backend
 * (backend_cpu*.c) is the readable reference; every other backend must match
 * it op for op. HAVE_CUDA appears only in the registry (backend.c).
 *
 * Randomness inside ops (dropout) is keyed: row r of the input uses the key
 * row_keys[r] (derived from seed, epoch, sample index and position by the
 * caller) mixed with a per-site constant, never a backend's own stream, so
 * masks do not depend on the rank count or the backend. */
#ifndef FS_BACKEND_H
#define FS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

struct emb_optim_conf; /* backend/emb_optim.h */
struct backend_event;  /* a point in a stream's work (device backends) */

/* The streams of a device backend: every operation runs on the compute
 * stream; the staging copies and the intra-node transports on the comm
 * stream (high priority); copy_up and copy_down on the copy stream,
 * ordered only by events (the device cache's fills and write-backs:
 * embedding/emb_cache.c). */
enum backend_stream { BACKEND_COMPUTE, BACKEND_COMM, BACKEND_COPY };

struct backend_ops {
    const char *name;

    /* memory */
    void *(*alloc)(size_t bytes);               /* zero-filled */
    void (*free)(void *p);
    void (*to_device)(void *dst, const void *host_src, size_t bytes);
    void (*to_host)(void *host_dst, const void *src, size_t bytes);
    void (*copy)(void *dst, const void *src, size_t bytes);
    void (*zero)(void *p, size_t bytes);
    void (*synchronize)(void);

    /* C[m, n] = alpha op(A) op(B) + beta C; op(A): [m, k], op(B): [k, n];
     * row-major with leading dimensions lda, ldb, ldc. */
    void (*gemm)(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                 int64_t ldc);
    /* The same with bf16 operands (device.precision = bf16): every element
     * of op(A) and op(B) rounded to bf16 (nearest even, emb_codec_row.h:
     * ecr_f32_to_bf16_rn), the products summed in fp32; alpha, beta and C
     * fp32. The CPU backend emulates it (backend_cpu_bf16.c: rounded copies,
     * sgemm), CUDA runs cublasGemmEx (CUDA_R_16BF, CUBLAS_COMPUTE_32F). NULL
     * on backends without it (device.precision = bf16 refused). */
    void (*gemm_bf16)(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                      float *C, int64_t ldc);
    /* The GEMM of the dense layers (the models' linear maps and the ranking
     * head: model code calls it through backend_gemm_dense); NULL = gemm.
     * The bf16 view of a backend (precision.h) sets it to gemm_bf16 and
     * leaves gemm fp32: bf16 where the dense layers' FLOPs are, never in
     * the full softmax's logits (scaled by 1 / temperature = 20 and
     * exponentiated), the bias GEMMs (k = 1, or a sum over positions) or
     * evaluation scoring. */
    void (*gemm_dense)(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                       float *C, int64_t ldc);

    /* elementwise on n values */
    void (*axpy)(int64_t n, float alpha, const float *x, float *y);      /* y += a x */
    void (*scale)(int64_t n, float alpha, float *x);                      /* x *= a */
    void (*mul)(int64_t n, const float *a, const float *b, float *y);     /* y = a * b */
    void (*silu_fwd)(int64_t n, const float *x, float *y);
    void (*silu_bwd)(int64_t n, const float *x, const float *dy, float *dx); /* dx = dy silu'(x) */
    void (*relu_fwd)(int64_t n, const float *x, float *y);
    void (*relu_bwd)(int64_t n, const float *x, const float *dy, float *dx);

    /* x: [rows, d]. y = (x - mean) * rstd (* gamma + beta when gamma);
     * mean, rstd: [rows] saved for the backward. */
    void (*layernorm_fwd)(int64_t rows, int d, float eps, const float *x, const float *gamma,
                          const float *beta, float *y, float *mean, float *rstd);
    /* dx written; dgamma, dbeta accumulated (+=) when gamma is given */
    void (*layernorm_bwd)(int64_t rows, int d, const float *x, const float *mean,
                          const float *rstd, const float *gamma, const float *dy, float *dx,
                          float *dgamma, float *dbeta);
    /* y = x / max(||x||_2, eps) per row; norm: [rows] saved */
    void (*l2norm_fwd)(int64_t rows, int d, float eps, const float *x, float *y, float *norm);
    void (*l2norm_bwd)(int64_t rows, int d, const float *y, const float *norm, const float *dy,
                       float *dx);

    /* Inverted dropout with probability p: y = x * mask / (1 - p); mask
     * [rows, d] bytes saved. Element (r, j) is kept iff a uniform draw keyed
     * by (row_keys[r], site, j) is >= p. */
    void (*dropout_fwd)(int64_t rows, int d, float p, const uint64_t *row_keys, uint64_t site,
                        const float *x, float *y, uint8_t *mask);
    void (*dropout_bwd)(int64_t rows, int d, float p, const uint8_t *mask, const float *dy,
                        float *dx);

    /* rows: out[i] = table[idx[i]]; scatter: table[idx[i]] += src[i] */
    void (*gather_rows)(int64_t n, int d, const float *table, const int64_t *idx, float *out);
    void (*scatter_add_rows)(int64_t n, int d, const float *src, const int64_t *idx,
                             float *table);

    /* AdamW on n dense values, bias-corrected with step t (t >= 1) */
    void (*adamw_step)(int64_t n, float *w, float *m, float *v, const float *g, float lr,
                       float beta1, float beta2, float eps, float weight_decay, int64_t t);
    /* sum of squares of n values (gradient clipping), returned on the host */
    double (*sum_squares)(int64_t n, const float *x);
    /* The same, added to acc[0] (backend memory) in double, in a fixed
     * order: it stays on the device until the caller reads it (the
     * divergence guard reads it with the loss at the end of the step). */
    void (*sumsq_acc)(int64_t n, const float *x, double *acc);

    /* HSTU pointwise attention, per sequence b (tokens offsets[b] ..
     * offsets[b+1]) and head h, causal (j <= i):
     *   A[i, j] = SiLU(q_i . k_j + rab(i, j)) / N,   out_i = sum_j A[i, j] v_j
     * q, k: [T, H * dqk]; v, out: [T, H * dv]. rab(i, j) = pos_bias[N - 1 + j - i]
     * (pos_bias: [2N - 1], NULL = none) + time_bias[bucket(ts_i - ts_j)]
     * (time_bias: [HSTU_TIME_BUCKETS + 1], NULL = none; ts: [T] seconds),
     * bucket(dt) = min(floor(ln(max(|dt|, 1)) / 0.301), HSTU_TIME_BUCKETS).
     * Shared by all heads. The backward recomputes A; gradients of q, k, v
     * are written, those of the biases accumulated (+=). */
    void (*hstu_attn_fwd)(int64_t B, const int64_t *offsets, int H, int dqk, int dv, int N,
                          const float *q, const float *k, const float *v, const float *pos_bias,
                          const float *time_bias, const int64_t *ts, float *out);
    void (*hstu_attn_bwd)(int64_t B, const int64_t *offsets, int H, int dqk, int dv, int N,
                          const float *q, const float *k, const float *v, const float *pos_bias,
                          const float *time_bias, const int64_t *ts, const float *dout,
                          float *dq, float *dk, float *dvv, float *dpos_bias, float *dtime_bias);
    /* The same for segments that continue a sequence (parallel.split_long,
     * context parallelism): segment b's L_b queries (rows offsets[b] ..
     * offsets[b + 1] of q, dout, out, dq) sit at absolute positions
     * pos0[b] + r; the keys/values of its positions 0 .. pos0[b] + L_b - 1
     * are rows key_off[b] .. key_off[b + 1] of kb, vb (key_off[b + 1] -
     * key_off[b] = pos0[b] + L_b), key_ts (rows as kb, or NULL) their
     * timestamps, a query's being that of its own position. keys (enum
     * hstu_keys) picks the keys of one call: OWN, the segment's own
     * positions pos0[b] .. i (causal), or PREFIX, the earlier positions 0 ..
     * pos0[b] - 1 (unmasked); the two calls add up to the whole attention.
     * The forward ADDS to out; the backward adds to dq, writes dkb and dvb
     * on the call's key rows and accumulates the bias gradients. NULL on
     * backends without it (split_long refused). */
    void (*hstu_attn_ctx_fwd)(int64_t B, const int64_t *offsets, const int64_t *pos0,
                              const int64_t *key_off, int keys, int H, int dqk, int dv, int N,
                              const float *q, const float *kb, const float *vb,
                              const float *pos_bias, const float *time_bias,
                              const int64_t *key_ts, float *out);
    void (*hstu_attn_ctx_bwd)(int64_t B, const int64_t *offsets, const int64_t *pos0,
                              const int64_t *key_off, int keys, int H, int dqk, int dv, int N,
                              const float *q, const float *kb, const float *vb,
                              const float *pos_bias, const float *time_bias,
                              const int64_t *key_ts, const float *dout, float *dq, float *dkb,
                              float *dvb, float *dpos_bias, float *dtime_bias);
    /* The same for some query rows alone (model.last_layer = targets: the
     * rows whose outputs are read): group b's queries are rows qoff[b] ..
     * qoff[b + 1] of q, dout, out, dq (compact), query row r at position
     * qpos[r] of its sequence (ascending within a group), attending to the
     * keys of positions 0 .. qpos[r] (causal), rows key_off[b] + j of kb,
     * vb, key_ts (NULL: none); the query's timestamp is key_ts[key_off[b] +
     * qpos[r]]. out and dq are written; dkb and dvb are written on every
     * key row of the groups (key_off[b] .. key_off[b + 1]; those no query
     * reaches get 0); the bias gradients accumulated. NULL on backends
     * without it (model.last_layer = targets refused). */
    void (*hstu_attn_rows_fwd)(int64_t B, const int64_t *qoff, const int64_t *qpos,
                               const int64_t *key_off, int H, int dqk, int dv, int N,
                               const float *q, const float *kb, const float *vb,
                               const float *pos_bias, const float *time_bias,
                               const int64_t *key_ts, float *out);
    void (*hstu_attn_rows_bwd)(int64_t B, const int64_t *qoff, const int64_t *qpos,
                               const int64_t *key_off, int H, int dqk, int dv, int N,
                               const float *q, const float *kb, const float *vb,
                               const float *pos_bias, const float *time_bias,
                               const int64_t *key_ts, const float *dout, float *dq, float *dkb,
                               float *dvb, float *dpos_bias, float *dtime_bias);

    /* SASRec causal softmax attention per sequence and head, scale
     * 1/sqrt(dh): q, k, v, out: [T, H * dh]; lse: [T, H] log-sum-exp saved
     * for the backward, which writes dq, dk, dv. N bounds every sequence's
     * length (N >= max L; backends may size launch grids by it). */
    void (*sasrec_attn_fwd)(int64_t B, const int64_t *offsets, int H, int dh, int N,
                            const float *q, const float *k, const float *v, float *out,
                            float *lse);
    void (*sasrec_attn_bwd)(int64_t B, const int64_t *offsets, int H, int dh, int N,
                            const float *q, const float *k, const float *v, const float *out,
                            const float *lse, const float *dout, float *dq, float *dk,
                            float *dv);
    /* Its context form (parallel.split_long; the layout as for
     * hstu_attn_ctx_*: segment b's queries at positions pos0[b] + r, its
     * keys rows key_off[b] .. key_off[b + 1] of kb, vb; keys = OWN or
     * PREFIX). The forward with OWN writes out and lse, the softmax over the
     * segment's own keys; with PREFIX it merges the softmax over the earlier
     * keys into them (out, lse become those over all the keys). The
     * backward takes the merged out and lse, ADDS to dq and writes dkb, dvb
     * on the call's key rows. NULL on backends without it. */
    void (*sasrec_attn_ctx_fwd)(int64_t B, const int64_t *offsets, const int64_t *pos0,
                                const int64_t *key_off, int keys, int H, int dh, const float *q,
                                const float *kb, const float *vb, float *out, float *lse);
    void (*sasrec_attn_ctx_bwd)(int64_t B, const int64_t *offsets, const int64_t *pos0,
                                const int64_t *key_off, int keys, int H, int dh, const float *q,
                                const float *kb, const float *vb, const float *out,
                                const float *lse, const float *dout, float *dq, float *dkb,
                                float *dvb);

    /* Sampled-softmax loss over R + 1 candidates per position (the maths:
     * loss.h). u: [T, d]; e: [nu, d] the rows the scores use (already
     * normalised when the loss normalises); pos: [T] index into e, < 0 =
     * unsupervised; neg: [T, R] indexes, masked when < 0 or == pos[i].
     * s_0 = u_i . e_pos * inv_tau, s_r likewise. Writes du: [T, d] (zero rows
     * for unsupervised positions), ACCUMULATES de: [nu, d]; both are the
     * gradients of scale * sum_i loss_i. Adds the unscaled sum of the
     * losses to acc[0] and the number of supervised positions to acc[1]
     * (acc: 2 doubles of backend memory, read when the caller needs them:
     * no host wait here). Sums in a fixed order (no float atomics), so runs
     * repeat bit for bit. Indexes are trusted (the caller built them). */
    void (*softmax_loss)(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                         const float *e, const int64_t *pos, const int64_t *neg, float scale,
                         float *du, float *de, double *acc);
    /* Binary cross-entropy with one negative per position (loss.h): pos,
     * neg: [T]; same conventions as softmax_loss (no temperature). */
    void (*bce_loss)(int64_t T, int d, const float *u, int64_t nu, const float *e,
                     const int64_t *pos, const int64_t *neg, float scale, float *du, float *de,
                     double *acc);
    /* softmax_loss with a correction per row: logq[k] (backend memory,
     * [nu]) is subtracted from the logit of every candidate that is row k,
     * the positive included (in-batch negatives, loss.h). NULL where the
     * backend does not have it. */
    void (*softmax_loss_q)(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                           const float *e, const float *logq, const int64_t *pos,
                           const int64_t *neg, float scale, float *du, float *de, double *acc);
    /* softmax_loss (logq NULL) or softmax_loss_q for negatives shared by
     * runs of consecutive positions (train.shared_negatives: the positions
     * of a run have the same neg row): the same losses, each run's scores
     * one GEMM [n, d] x [d, R] and its gradients two (du += G E_neg,
     * dE_neg = G^T U, added into de once a run); masking per position as
     * softmax_loss's. The sums' order differs from softmax_loss's. NULL
     * where the backend does not have it (softmax_loss serves, per
     * position). */
    void (*softmax_loss_shared)(int64_t T, int d, int R, float inv_tau, const float *u,
                                int64_t nu, const float *e, const float *logq,
                                const int64_t *pos, const int64_t *neg, float scale, float *du,
                                float *de, double *acc);
    /* Blocks of the full softmax (model/loss_full.h). s: [n, m] logits
     * before the temperature (u_i . e_j), row stride lds.
     * softmax_block_lse: lse[i] = log sum_j exp(s[i, j] inv_tau) ([n],
     * backend memory; -inf when m = 0).
     * softmax_block_grad: in place, s[i, j] = gscale (exp(s[i, j] inv_tau -
     * lse[i]) - [j == tcol[i]]) (the gradient of gscale/inv_tau times the
     * cross-entropy w.r.t. the logits); tcol: [n] the target's column in
     * this block, or < 0. acc[0] (backend memory) += s[i, tcol[i]]
     * inv_tau of every row with a target column, one by one in row order
     * (read before the overwrite; calls on consecutive rows continue one
     * sum): no host wait (loss_full.c reads the step's sums once).
     * NULL where the backend does not have them. */
    void (*softmax_block_lse)(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *s,
                              float *lse);
    void (*softmax_block_grad)(int64_t n, int64_t m, int64_t lds, float inv_tau,
                               const float *lse, const int64_t *tcol, float gscale, float *s,
                               double *acc);

    /* The embedding engine (embedding/: emb_exchange.c, emb_backward.c):
     * de-duplication and bucketing by owner, gathers of shard rows,
     * gradient sums per id and the sparse optimizers, in the memory of the
     * backend that holds the tables (embedding.placement). Orders are fixed
     * (stable sorts, sums in the order of the input, in double), so every
     * backend gives the same bits for the same inputs. ids are >= 1.
     *
     * emb_dedup: the distinct ids of ids[n] into uniq, grouped by owner
     * (id mod G), within an owner first those of chunk 0 (the ids that
     * occur among the first n_first tokens), then those of chunk 1, each
     * group in ascending id order; inverse[i] = the index of ids[i] in
     * uniq. counts[2G] (on the host): counts[p] = the unique ids owned by
     * p, counts[G + p] = of which in chunk 0. Returns the number of unique
     * ids (on the host). key_max: no id exceeds it (the table's rows; 0 =
     * not known): a device sorts only the bits it needs. */
    int64_t (*emb_dedup)(int64_t n, const int64_t *ids, int64_t n_first, int G, int64_t *uniq,
                         int64_t *inverse, int64_t *counts, int64_t key_max);
    /* out[i, :] = w[ids[i] / G, :] (rows of a shard: local slot id / G;
     * out: [n, dim]) */
    void (*emb_gather_shard)(int64_t n, int dim, const float *w, const int64_t *ids, int G,
                             float *out);
    /* The rows of g[n, dim] summed per distinct key: uid[0 .. k) the
     * distinct keys in ascending order, out[u, :] = the sum of the rows i
     * with keys[i] = uid[u] in increasing i, accumulated in double;
     * uid[k .. n) = -1 (their out rows unspecified). k stays on the device:
     * emb_sparse_update skips the -1. 0 <= keys <= key_max (0 = not
     * known), as emb_dedup's. */
    void (*emb_sum_by_id)(int64_t n, int dim, const int64_t *keys, const float *g, int64_t *uid,
                          float *out, int64_t key_max);
    /* The sparse optimizer (backend/emb_optim.h: emb_optim_row) on the
     * rows ids[k] of a shard (distinct, local slot id / G; an id < 0 is
     * skipped) with gradients g[k, dim]: w [slots, dim], state [slots,
     * state_floats] (NULL for sgd), steps [slots] (adam, else NULL); opt on
     * the host. */
    void (*emb_sparse_update)(const struct emb_optim_conf *opt, int64_t k, int dim, const int64_t *ids, int G,
                              const float *g, float *w, float *state, int64_t state_floats,
                              int64_t *steps);

    /* The wire codecs of the exchanges (backend/emb_codec.h), on the
     * memory the rows are in: emb_encode writes wire [n, row bytes] from
     * rows [n, dim]; a row a lossy codec cannot carry (NaN, infinity) sets
     * bad[0] = max(bad[0], UINT64_MAX - i) (bad: backend memory, 0 = none:
     * UINT64_MAX - bad[0] is the first such row i); emb_decode is the
     * reverse. Bit for bit the CPU reference's (emb_codec_row.h). */
    void (*emb_encode)(int codec, int64_t n, int dim, const float *rows, uint8_t *wire,
                       uint64_t *bad);
    void (*emb_decode)(int codec, int64_t n, int dim, const uint8_t *wire, float *rows);
    /* acc[0] += the number of i < n with lo <= x[i] < hi (acc: backend
     * memory; the exchanges' counters). */
    void (*count_range)(int64_t n, const int64_t *x, int64_t lo, int64_t hi, int64_t *acc);
    /* The uniform negatives of T positions (model/loss.h:
     * loss_sample_negatives, the same draws): out[i R + r] in 1..num_items
     * keyed by (seed, epoch, keys[i]); keys [T], out [T, R] backend memory. */
    void (*sample_negatives)(uint64_t seed, uint64_t epoch, const uint64_t *keys, int64_t T,
                             int R, int64_t num_items, int64_t *out);

    /* Features and ranking (model/tokens_dev.c, model/task_ranking.c).
     * index_rows: for i < n, s = sidx ? sidx[i] : i, t = didx ? didx[i] : i,
     * skipped unless both >= 0: dst[t, :] = src[s, :] (add = 0) or
     * dst[t, :] += src[s, :] (add = 1; the t distinct); rows of d floats,
     * src and dst not overlapping.
     * col_sums: acc[j] += (float)(the sum over i < n of x[i, j] in row
     * order, in double); x: [n, m] (a bias's gradient).
     * rank_loss: the ranking head's losses (task_ranking.c) of logits z
     * [T, K] against labels [T, K] (NaN: missing); coef [4K] per task k:
     * binary (1) or regression (0), its weight over its labelled count
     * w_k, the labels' mean and standard deviation. Writes dz = w_k times
     * the loss's derivative (0 where missing); acc[0] += the sum over k of
     * w_k (sum over i of the losses, in token order, in double), acc[1] +=
     * T. */
    void (*index_rows)(int64_t n, int d, const float *src, const int64_t *sidx, float *dst,
                       const int64_t *didx, int add);
    void (*col_sums)(int64_t n, int m, const float *x, float *acc);
    void (*rank_loss)(int64_t T, int K, const float *z, const float *labels, const double *coef,
                      float *dz, double *acc);

    /* --- issue 51 B: the ranking head's factor terms on the device ------- */
    /* The walks of model.factors (model/task_factor.h; their per-sequence
     * bodies: backend/factor_walk.h, the same functions on every backend)
     * over B sequences (offsets [B + 1], backend memory): factor_fwd
     * writes z [T, K, F], w, vb, h [T, K] from the factor rows f [T, F]
     * and the residual values v [T, K] (double, NaN: no label); factor_bwd
     * writes df [T, F] from dh [T, K] and the forward's f, v, z, w, vb.
     * K <= 16, F <= 64. prior: the pseudo-events at 0, gain: the terms'.
     * ridge > 0 (model.factor_ridge, F <= 16): z is the ridge fit instead
     * of the shrunk mean, the forward writes ai [T, K, F, F] (each token's
     * A^-1) for the backward; ridge = 0: ai unused (may be NULL). */
    void (*factor_fwd)(int64_t B, const int64_t *offsets, int K, int F, const float *f,
                       const double *v, double prior, float gain, float *z, float *w, float *vb,
                       float *h, double ridge, float *ai);
    void (*factor_bwd)(int64_t B, const int64_t *offsets, int K, int F, const float *f,
                       const double *v, float gain, const float *z, const float *w,
                       const float *vb, const float *dh, float *df, double ridge,
                       const float *ai);
    /* --- end of issue 51 B's block ---------------------------------------- */

    /* Device management; NULL on backends without devices (the CPU).
     * device_count: devices visible, or -1 with err set to the runtime's
     * reason. device_open: make `device` current for this process, create
     * the streams and the BLAS handle; tf32 allows TF32 tensor-core GEMMs.
     * device_describe: one line naming the device, its memory and the
     * driver and runtime versions. */
    int (*device_count)(char *err, size_t errlen);
    int (*device_open)(int device, int tf32, char *err, size_t errlen);
    void (*device_describe)(char *buf, size_t len);
    /* free and total bytes of the current device (on the host); 0, or -1
     * with err */
    int (*device_memory)(size_t *free_bytes, size_t *total_bytes, char *err, size_t errlen);
    /* The identity of device `device` (0 .. device_count - 1, before
     * device_open too): a string that processes seeing the same physical
     * device get alike (CUDA: the UUID and the PCI bus id), for the choice
     * of a rank's device among the node's ranks. 0, or -1 with err. */
    int (*device_uuid)(int device, char *buf, size_t len, char *err, size_t errlen);

    /* Events (NULL on the CPU backend). event_new(timing): a new event
     * (timing = 1: event_ms can measure it); event_record(e, s): e marks the
     * work enqueued so far on stream s; event_query: 1 once that work has
     * completed, else 0, never blocking; event_sync: blocks until it has (a
     * host wait, counted: devstats.h); stream_wait(s, e): work enqueued
     * later on stream s waits for e (the host does not); event_ms: the
     * milliseconds from start to end, two completed timing events. */
    struct backend_event *(*event_new)(int timing);
    void (*event_free)(struct backend_event *e);
    void (*event_record)(struct backend_event *e, enum backend_stream s);
    int (*event_query)(struct backend_event *e);
    void (*event_sync)(struct backend_event *e);
    void (*stream_wait)(enum backend_stream s, struct backend_event *e);
    float (*event_ms)(struct backend_event *start, struct backend_event *end);

    /* Device memory and MPI. mpi_direct: 1 when MPI may be handed device
     * pointers (NULL: as MPI says, comm_cuda_aware()). mpi_expose(p, bytes,
     * on): the region p[bytes] of device memory is (on = 1), or is no longer
     * (on = 0), read or written by an MPI operation in flight (the fake
     * device opens its guarded memory to MPI meanwhile; NULL elsewhere). */
    int (*mpi_direct)(void);
    void (*mpi_expose)(const void *p, size_t bytes, int on);

    /* Pinned host memory and copies on the communication stream, for
     * staging exchanges through the host when MPI cannot read device
     * memory (NULL on the CPU backend: its memory is host memory). The
     * copies are asynchronous; comm_sync waits for them. host_* buffers
     * must come from host_alloc. */
    void *(*host_alloc)(size_t bytes);
    void (*host_free)(void *p);
    void (*to_host_async)(void *host_dst, const void *src, size_t bytes);
    void (*to_device_async)(void *dst, const void *host_src, size_t bytes);
    void (*comm_sync)(void);
    /* The same copies on the copy stream (BACKEND_COPY), ordered by
     * events only: unlike to_*_async they follow no compute work and the
     * compute stream does not wait for them unless told (event_record on
     * BACKEND_COPY, stream_wait), so they run beside the kernels. host_*
     * buffers from host_alloc. */
    void (*copy_up)(void *dst, const void *host_src, size_t bytes);
    void (*copy_down)(void *host_dst, const void *src, size_t bytes);

    /* Device memory shared between the processes of one node (CUDA IPC),
     * for the intra-node transports of the dense gradient all-reduce
     * (doc/overlap.md, "Transports"; src/train/dense_ipc.c). NULL on the CPU backend.
     * ipc_export: write the handle of dev_ptr (the start of a buffer from
     * alloc) into handle[BACKEND_IPC_HANDLE_BYTES]; 0, or -1 with err.
     * ipc_open: map a handle exported by ANOTHER process of the node (never
     * this one's own) and return its address here; NULL with err when the
     * mapping is impossible (e.g. no peer access between the two devices).
     * ipc_close: unmap what ipc_open returned (after comm_sync).
     * peer_copy: dst[bytes] = src[bytes] (either may be a peer mapping, the
     * regions must not overlap) on the comm stream, after the work
     * enqueued so far on the compute stream; use_kernel = 0: the copy
     * engines (cudaMemcpyAsync, no SM), 1: a copy kernel (SMs, the way
     * NCCL moves data). comm_add: y[n] += x[n] elementwise, on the comm
     * stream likewise (the reduction, a kernel for both transports). Both
     * are asynchronous: comm_sync waits for them; the compute stream does
     * NOT wait for them by itself. */
    int (*ipc_export)(void *dev_ptr, void *handle, char *err, size_t errlen);
    void *(*ipc_open)(const void *handle, char *err, size_t errlen);
    void (*ipc_close)(void *peer_ptr);
    void (*peer_copy)(void *dst, const void *src, size_t bytes, int use_kernel);
    void (*comm_add)(float *y, const float *x, int64_t n);

    /* --- Dynamic tables in the backend's memory (embedding/emb_dyn_dev.c,
     * issue 51 item 1) ----------------------------------------------------
     * A shard's index (keys[cap], 0 = empty, vals[cap]: cap a power of
     * two, at most half full; emb_dyn_row.h), its slot statistics
     * (sid[slots] the id of a slot's row, last[slots], freq[slots]), its
     * free list freel and its rows (w, state, steps as emb_sparse_update's)
     * all in the backend's memory; the host keeps only their sizes. The
     * CPU reference is backend_cpu_dyn.c (the host table's algorithm,
     * emb_dyn.c, step by step); ids are >= 1.
     *
     * emb_dyn_dedup: emb_dedup with the dynamic owner (edr_owner: mix mod
     * G) and no bound on the ids; counts and the result on the host.
     * dyn_find: slot[i] = the value of ids[i] in the index, -1 if absent.
     * dyn_stamp: every row slot[i] >= 0 used at tick clock: last = clock
     * and freq + 1 once per tick.
     * dyn_missing: out[0] = m, out[1 .. m] the distinct ids[i] with
     * slot[i] < 0 ascending (out: [n + 1]).
     * dyn_insert: the ids[k] (distinct, absent) get rows: the i-th slot
     * edr_slot(i, nfree, freel, next); w := rows[i] (width floats), state
     * and steps zero, sid = id, last = clock, freq = 1, the index keys it.
     * dyn_rehash: every key of the old index into the new (empty) one.
     * dyn_virtual: ids[i] := s G + shard with s = slot[i] when >= 0, else
     * the index's value of ids[i], else 0 (the unadmitted row; acc[0] +=
     * 1 when count). */
    int64_t (*emb_dyn_dedup)(int64_t n, const int64_t *ids, int64_t n_first, int G,
                             int64_t *uniq, int64_t *inverse, int64_t *counts);
    void (*dyn_find)(int64_t n, const int64_t *ids, const int64_t *keys, const int64_t *vals,
                     int64_t cap, int64_t *slot);
    void (*dyn_stamp)(int64_t n, const int64_t *slot, int64_t clock, int64_t *last,
                      int64_t *freq);
    void (*dyn_missing)(int64_t n, const int64_t *ids, const int64_t *slot, int64_t *out);
    void (*dyn_insert)(int64_t k, const int64_t *ids, const float *rows, int width,
                       int64_t nfree, const int64_t *freel, int64_t next, int64_t clock,
                       int64_t *keys, int64_t *vals, int64_t cap, int64_t *sid, int64_t *last,
                       int64_t *freq, float *w, float *state, int64_t state_floats,
                       int64_t *steps);
    void (*dyn_rehash)(const int64_t *okeys, const int64_t *ovals, int64_t ocap, int64_t *keys,
                       int64_t *vals, int64_t cap);
    void (*dyn_virtual)(int64_t n, int64_t *ids, const int64_t *slot, const int64_t *keys,
                        const int64_t *vals, int64_t cap, int G, int shard, int count,
                        int64_t *acc);
    /* The sequential steps of a tick (emb_dyn_row.h: edr_expire, edr_admit,
     * edr_evict_full; one thread on a device), their counters in ctl
     * [EDR_CTL]: dyn_expire: ttl's evictions (their ids onto gone, their
     * slots onto freel); dyn_admit: out[0] = m distinct missing ids out[1
     * .. m] -> the na admitted ones (out[0] = na), the probation list
     * pkeys/pvals (pcap, bound prob_max; scratch [3 (pn + m)]);
     * dyn_evict_full: lru (lfu = 0) or lfu's evictions for the na = out[0]
     * admitted ids when the shard (top slots) is full (scratch [3 next]). */
    void (*dyn_expire)(int64_t ttl, int64_t clock, int64_t next, int64_t *sid,
                       const int64_t *last, int64_t *keys, int64_t *vals, int64_t cap,
                       int64_t *freel, int64_t *gone, int64_t *ctl);
    void (*dyn_admit)(int64_t *out, int64_t admit, int64_t clock, int64_t *pkeys, int64_t *pvals,
                      int64_t pcap, int64_t prob_max, int64_t *scratch, int64_t *ctl);
    void (*dyn_evict_full)(int lfu, int64_t clock, int64_t next, int64_t top, const int64_t *out,
                           int64_t *sid, const int64_t *last, const int64_t *freq, int64_t *keys,
                           int64_t *vals, int64_t cap, int64_t *freel, int64_t *gone,
                           int64_t *ctl, int64_t *scratch);

    /* --- Evaluation over device tables (issue 51 item 3, eval_retrieval.c) --
     * rows_match: out[i] = 1 when rows[i, 0 .. d) equals row[0 .. d) bit
     * for bit, else 0 (rows [n, d], row [d], out [n] bytes: backend
     * memory): the shard's items that hold a dynamic table's shared row,
     * told apart where the rows are. */
    void (*rows_match)(int64_t n, int d, const float *rows, const float *row, uint8_t *out);

    /* --- issue 51 G: host waits ------------------------------------------ */
    /* index_mask: dst[i] = -1 where mask[i] != 0, else src[i] (i < n; all
     * backend memory): the loss's target rows with the positions without a
     * target unset (model/task_retrieval.c). */
    void (*index_mask)(int64_t n, const int64_t *src, const uint8_t *mask, int64_t *dst);
    /* --- end of issue 51 G's block ---------------------------------------- */
};

/* bytes of an ipc_export handle (the size of a cudaIpcMemHandle_t) */
#define BACKEND_IPC_HANDLE_BYTES 64

#define HSTU_TIME_BUCKETS 128
/* query rows per tile of the HSTU attention: the shortest chunk split_long cuts */
#define HSTU_TILE 64
/* the keys of one context-parallel attention call (hstu_attn_ctx_*) */
enum hstu_keys { HSTU_KEYS_OWN, HSTU_KEYS_PREFIX };

/* The CPU backend (always available), the fake device (fake/: a test
 * backend, always available: the CPU's operations behind the behaviour of
 * a discrete GPU) and the CUDA backend (cuda/, defined only in builds
 * configured --with-cuda: reach it through backend_get). */
extern const struct backend_ops backend_cpu;
extern const struct backend_ops backend_fake;
extern const struct backend_ops backend_cuda;

/* The backends compiled in, e.g. "cpu, cuda". */
const char *backend_names(void);

/* 1 when the backend's memory is host memory (no device: the CPU). */
int backend_is_host(const struct backend_ops *be);
/* 1 when the backend maps and copies device buffers between the processes
 * of a node (CUDA IPC: ipc_export/open/close, peer_copy, comm_add). */
int backend_has_ipc(const struct backend_ops *be);
/* A dense layer's GEMM: be->gemm_dense, or be->gemm when it has none. */
static inline void backend_gemm_dense(const struct backend_ops *be, int trans_a, int trans_b,
                                      int64_t m, int64_t n, int64_t k, float alpha,
                                      const float *A, int64_t lda, const float *B, int64_t ldb,
                                      float beta, float *C, int64_t ldc)
{
    (be->gemm_dense ? be->gemm_dense : be->gemm)(trans_a, trans_b, m, n, k, alpha, A, lda, B,
                                                 ldb, beta, C, ldc);
}
/* host[bytes] as backend memory: the pointer itself on a host backend,
 * else a copy in backend memory, also returned in *owned (be->free it;
 * *owned is NULL when nothing was allocated). */
const void *backend_upload(const struct backend_ops *be, const void *host, size_t bytes,
                           void **owned);
/* The reverse: src[bytes] of backend memory readable on the host; a copy
 * from xmalloc in *owned (free() it) unless the backend is the host. */
const void *backend_download(const struct backend_ops *be, const void *src, size_t bytes,
                             void **owned);
/* Host access to p[bytes] of be's memory: p itself on a host backend, else
 * a host copy (filled from p when read) that backend_host_end writes back
 * to p (when write) and frees. The pair is the one host/device branch of
 * code that reads or writes a few values of backend memory on the host. */
void *backend_host_begin(const struct backend_ops *be, void *p, size_t bytes, int read);
void backend_host_end(const struct backend_ops *be, void *p, void *host, size_t bytes,
                      int write);
/* 1 when buffers of a and b are the same memory (the same backend, or both
 * the host): no copies between them. */
int backend_same_memory(const struct backend_ops *a, const struct backend_ops *b);

/* "cpu", "fake" (and, when compiled in, "cuda"); NULL + err if unavailable. */
const struct backend_ops *backend_get(const char *name, char *err, size_t errlen);

#endif
