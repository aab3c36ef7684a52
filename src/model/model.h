/* model: the dense part of a sequence model (HSTU or SASRec) on jagged
 * batches, behind one small table of functions.
 *
 * Input: the item rows of the history tokens as looked up from the sharded
 * table, emb: [T, d], T = sum L_i. The model adds the rest of the input
 * layer (emb * sqrt(d) + learned position embedding pos[p], p = position of
 * the token in its sequence, 0 .. L_i - 1, then dropout), runs its blocks
 * causally per sequence, and writes out: [T, d] (HSTU: L2-normalised;
 * SASRec: after the final LayerNorm). backward takes dout: [T, d], writes
 * demb: [T, d] (the gradient of emb) and ACCUMULATES (+=) every dense
 * parameter's gradient into its g.
 *
 * Dense parameters are named tensors in backend memory, initialised from
 * keys (seed, name), identical on every rank and backend. */
#ifndef FS_MODEL_H
#define FS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

enum model_type { MODEL_HSTU, MODEL_SASREC };

/* A dense tensor the model holds but does not use: a task's head
 * (model/task.h), trained, all-reduced and checkpointed with the rest. */
struct model_extra {
    char name[48];
    int rows, cols;
    float scale;        /* U(-scale, scale) from (seed, name); 0: zeros */
    int decay;          /* AdamW weight decay applies */
};

#define MODEL_MAX_EXTRA 24

struct model_conf {
    enum model_type type;
    int d, layers, heads;
    int max_len;        /* N = data.max_seq_len: positions, HSTU's 1/N scale */
    float dropout;
    int time_bias;      /* HSTU: add the time-bucket bias (batch has timestamps) */
    int last_targets;   /* HSTU, model.last_layer = targets: see batch.reads */
    int nextra;         /* extra tensors, after the model's own (in this order) */
    struct model_extra extra[MODEL_MAX_EXTRA];
};

struct dense_tensor {
    char name[48];
    int64_t n;          /* values */
    int rows, cols;     /* shape as [rows, cols] (cols = n for vectors, rows = 1) */
    int decay;          /* AdamW weight decay applies (matrices, embeddings) */
    float lr_scale;     /* its rate: the optimizer's times this (1; model.factors_lr) */
    float *w, *g;       /* [n] values and gradients (backend memory) */
};

/* Context parallelism (parallel.split_long, HSTU and SASRec): the batch's
 * segments may be chunks of sequences whose earlier positions are on other
 * ranks. Segment b holds positions pos0[b] .. pos0[b] + L_b - 1 of its
 * sequence; its attention needs the keys and values of positions 0 ..
 * pos0[b] + L_b - 1, laid out as rows key_off[b] .. key_off[b + 1] of a key
 * buffer (key_off[b + 1] - key_off[b] = pos0[b] + L_b), with their
 * timestamps key_ts. Per layer the model calls, in this order,
 *   post_kv(ctx, w, k, v, kb, vb): k, v [T, w] this rank's keys and values
 *     (backend memory, kept until the backward); kb, vb [key_off[B], w]
 *     get each segment's own rows now and the earlier positions' rows from
 *     their owners (in flight: the model computes the own keys' attention);
 *   wait_kv(ctx): those rows have arrived;
 * and in the backward
 *   post_dkv(ctx, w, dkb, dvb): dkb, dvb [key_off[B], w] hold the gradients
 *     of the earlier positions' rows: they leave for their owners (the
 *     model computes the own keys' part meanwhile, on the other rows);
 *   wait_dkv(ctx, w, dkb, dvb, dk, dv): dk, dv [T, w] written: the own
 *     rows' gradients (from dkb, dvb) plus what the later chunks' ranks
 *     computed for them.
 * They are collective over the ranks holding chunks of the same sequences
 * (point-to-point), called at the same layer on each. */
struct model_split {
    const int64_t *pos0;      /* [B] (host memory, as every array here) */
    const int64_t *key_off;   /* [B + 1] */
    const int64_t *key_ts;    /* [key_off[B]] seconds, or NULL */
    void (*post_kv)(void *ctx, int64_t w, const float *k, const float *v, float *kb, float *vb);
    void (*wait_kv)(void *ctx);
    void (*post_dkv)(void *ctx, int64_t w, const float *dkb, const float *dvb);
    void (*wait_dkv)(void *ctx, int64_t w, const float *dkb, const float *dvb, float *dk,
                     float *dv);
    void *ctx;
};

struct batch {
    int64_t B, T;
    const int64_t *offsets;    /* [B + 1] */
    const int64_t *ts;         /* [T] seconds, or NULL */
    const uint64_t *row_keys;  /* [T] dropout key of each token (seed, epoch, sample, pos) */
    int train;                 /* 1: dropout on; 0: evaluation */
    const struct model_split *split; /* NULL: every segment is a whole sequence */
    /* The rows whose outputs the caller reads, ascending (NULL: all): with
     * model_conf.last_targets the last layer computes its attention, gating
     * and output projection for these rows alone (their outputs and every
     * gradient as the full layer's); the other rows' outputs are then not
     * the full model's, and their output gradients must be 0. */
    const int64_t *reads;
    int64_t nreads;
};

#define MODEL_MAX_PARAMS 128

/* The between-layers hook: forward and backward call hook.between_layers(
 * hook.ctx, first_final) after each block (and backward once more at its
 * end), so that a caller can move communication in flight while the model
 * computes (parallel.overlap).
 *   first_final: in the backward, every tensor from params[first_final] on
 *                has its final gradient (0 at the end: all of them); -1 in
 *                the forward.
 * The hook runs on the calling thread between two backend operations. It
 * may read (never write) the final gradients from params[first_final] on,
 * and post or test communication; it must not touch the parameters, the
 * gradients of earlier tensors or the batch's activations. */
struct model_hook {
    void (*between_layers)(void *ctx, int first_final);
    void *ctx;
};

struct model;
struct stage;
struct model_vtable {
    void (*forward)(struct model *m, const struct batch *b, const float *emb, float *out);
    void (*backward)(struct model *m, const struct batch *b, const float *dout, float *demb);
    void (*free)(struct model *m);
    /* Make the buffers hold batches of up to T tokens in B sequences and,
     * split (batch.split), K key rows (0: none) at once (model_reserve;
     * touch: every new buffer written, its pages resident). */
    void (*reserve)(struct model *m, int64_t B, int64_t T, int64_t K, int touch);
};

struct model {
    const struct model_vtable *vt;
    struct model_conf conf;
    const struct backend_ops *be;
    int nparams;
    struct dense_tensor params[MODEL_MAX_PARAMS];
    /* Every tensor's gradient lives in one arena (backend memory), tensor i
     * at a multiple of MODEL_GRAD_ALIGN floats (padding stays zero), so that
     * the dense all-reduce and the clipping work on one buffer. */
    float *grad;
    int64_t ngrad;
    struct model_hook hook; /* between layers (model_set_hook); none by default */
    struct stage *stage;    /* the batch's uploads (model_upload) */
    void *priv;         /* activations saved by forward for backward */
    /* train.exact_sums (model_exact_enable; base/exact.h): the gradients as
     * exact accumulators, [ngrad][EXACT_LIMBS] and a last int64 counting
     * the contributions out of range; the arena gets their values
     * (model_exact_finish). NULL: the gradients are summed in the arena. */
    int64_t *xgrad;
    float *xtmp;            /* scratch of one sample's gradients */
    int64_t xtmp_n;
};

/* Check conf without building anything (what model_init refuses): heads
 * dividing d, layers within MODEL_MAX_PARAMS tensors, max_len >= 1,
 * dropout in [0, 1). 0, or -1 with err naming the parameters. */
int model_conf_check(const struct model_conf *conf, char *err, size_t errlen);
/* Build the model of conf.type with parameters initialised from seed.
 * Returns 0, or -1 with err (model_conf_check's). */
int model_init(struct model *m, const struct model_conf *conf, const struct backend_ops *be,
               uint64_t seed, char *err, size_t errlen);
void model_free(struct model *m);
/* Size the buffers forward and backward keep for batches of up to T tokens
 * in B sequences and K split key rows, now: they otherwise grow with the
 * largest batch seen, so that a long run's memory creeps up as its batches
 * do (the stream schedule reserves its bound before the first window). */
void model_reserve(struct model *m, int64_t B, int64_t T, int64_t K);
/* The same without writing the buffers (their pages not made resident):
 * what embedding.placement = auto measures in the device's free memory
 * (placement.c), at the cost of the allocations alone. */
void model_reserve_cold(struct model *m, int64_t B, int64_t T, int64_t K);
/* The tensor called name, or NULL. */
struct dense_tensor *model_param(struct model *m, const char *name);
void model_zero_grads(struct model *m);
/* Install the between-layers hook (h.between_layers NULL: none). */
void model_set_hook(struct model *m, struct model_hook h);
/* For model files: call the hook, if any. */
void model_between_layers(const struct model *m, int first_final);

#define MODEL_GRAD_ALIGN 64

/* train.exact_sums (model_exact.c): every gradient below is a sum over
 * tokens of the batch; with exact sums it is summed per sequence (the
 * same floats whichever rank holds the sequence) and each sequence's part
 * added exactly, so the sum has the same bits on any number of ranks.
 * Host backends only (backend_check refuses the others). */
void model_exact_enable(struct model *m);
static inline int model_exact(const struct model *m) { return m->xgrad != NULL; }
/* The accumulators and their size in int64 (ngrad * EXACT_LIMBS + 1): what
 * the dense all-reduce sums. */
int64_t *model_exact_arena(struct model *m, int64_t *n);
/* The arena (m->grad) := the accumulators' values. */
void model_exact_finish(struct model *m);
/* C [T, N] = A [T, K] op(B) + beta C (op: B^T when trans_b) over the
 * batch's tokens, rows = tokens; with exact sums one sequence at a time
 * (BLAS may round a row differently with other rows beside it: the same
 * call for a sequence on any rank); dense: through backend_gemm_dense. */
void model_gemm_rows(struct model *m, const struct batch *b, int dense, int trans_b, int64_t N,
                     int64_t K, const float *A, int64_t lda, const float *B, int64_t ldb,
                     float beta, float *C, int64_t ldc);
/* g[M, N] (ld ldg, a tensor's gradient in the arena) += A^T Bm over the
 * batch's tokens: A [T, M] (ld lda), Bm [T, N] (ld ldb); dense: through
 * backend_gemm_dense (else be->gemm). */
void model_grad_tokens(struct model *m, const struct batch *b, int dense, int64_t M, int64_t N,
                       const float *A, int64_t lda, const float *Bm, int64_t ldb, float *g,
                       int64_t ldg);
/* be->layernorm_bwd over the batch's tokens (x, dy, dx [T, d], mean, rstd
 * [T]), its dgamma, dbeta (gradients in the arena) summed exactly per
 * sequence with exact sums. */
void model_layernorm_bwd(struct model *m, const struct batch *b, int d, const float *x,
                         const float *mean, const float *rstd, const float *gamma,
                         const float *dy, float *dx, float *dgamma, float *dbeta);
/* g[o] += the column sums of dy [T, o] over the batch's tokens. */
void model_grad_colsums(struct model *m, const struct batch *b, int o, const float *dy, float *g);
/* g[idx[t]] += dx[t] (rows of d) for the T tokens. */
void model_grad_rows(struct model *m, int64_t T, int d, const float *dx, const int64_t *idx,
                     float *g);
/* Exact sums only: g[n] += v[n] (one sequence's part, computed apart). */
void model_grad_add(struct model *m, float *g, const float *v, int64_t n);
/* Exact sums only: scratch of n floats (kept by the model). */
float *model_grad_tmp(struct model *m, int64_t n);

/* For model files: dst[bytes] (backend memory) = the host bytes src, before
 * the backend's next operation, without a host wait (backend/stage.h); src
 * may be reused at once. */
void model_upload(struct model *m, void *dst, const void *src, size_t bytes);

/* For model files: pos[t] = the position of token t in its sequence
 * (pos0[b] + t - offsets[b] with batch.split, else t - offsets[b]), after
 * checking the batch: offsets span T, every position below max_len, and a
 * split batch's key rows match its segments (fatal() naming `who`). */
void model_positions(const struct model *m, const struct batch *b, const char *who,
                     int64_t *pos);

/* Helpers for model files: add a tensor [rows, cols] initialised
 * U(-scale, scale) from (seed, name) (scale 0: zeros; ones: fill 1). */
struct dense_tensor *model_add_param(struct model *m, const char *name, int rows, int cols,
                                     float scale, int decay, uint64_t seed);
void model_fill(const struct model *m, struct dense_tensor *t, float value);

int model_hstu_init(struct model *m, uint64_t seed, char *err, size_t errlen);
int model_sasrec_init(struct model *m, uint64_t seed, char *err, size_t errlen);
/* The parameter tensors each model needs for conf (at most MODEL_MAX_PARAMS). */
int model_hstu_tensors(const struct model_conf *conf);
int model_sasrec_tensors(const struct model_conf *conf);

#endif
