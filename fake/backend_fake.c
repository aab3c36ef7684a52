/* backend_fake: the fake device (device.type = fake), a test backend that
 * behaves like a discrete GPU while running the CPU backend's own
 * operations (fake/README, doc/gpu.md):
 *   - its memory is separate: every allocation stays inaccessible to host
 *     code except inside an operation on it (fake_mem.c), so a host
 *     dereference faults at once and the report names the allocation; an
 *     operation handed host memory ends the job;
 *   - operations run on the compute stream at once; the staging copies and
 *     the transports of the comm stream are deferred until synchronised
 *     (fake_stream.c), so a missing synchronisation shows as stale data;
 *   - asynchronous copies insist on pinned host memory (host_alloc);
 *   - IPC maps allocations between the processes of a node through shared
 *     memory, so the intra-node transports run with 2-4 ranks;
 *   - it counts what would keep a GPU idle (devstats.h).
 * Its operations are the CPU's, so its results are the CPU's bit for bit;
 * it offers what the CUDA backend offers (the context-parallel attention,
 * the full and logQ-corrected softmax: backend_fake_ctx.c).
 * This file: the compute operations (each translates its device operands
 * to the operations' view of the memory and launches backend_cpu's op on
 * the compute stream, fake_compute.c: a closure of its arguments and a run
 * function; an operation whose result the host reads waits for the stream
 * and runs in the caller) and the ops table; the device, memory, copies
 * and events are fake_device.c, the knobs there. */
#include <string.h>

#include "backend/backend_cpu.h"
#include "backend/devstats.h"
#include "base/check.h"
#include "backend/emb_optim.h"
#include "fake/fake.h"

#define OP(name) struct fk_op op_; fake_op_begin(&op_, name)
#define IN(p) ((p) = fake_op_arg(&op_, (p), #p))

static void run_gemm(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.gemm((int)a[0].i, (int)a[1].i, a[2].i, a[3].i, a[4].i, (float)a[5].d, a[6].p,
                     a[7].i, a[8].p, a[9].i, (float)a[10].d, a[11].p, a[12].i);
}

static void fk_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *A,
                    int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    OP("gemm");
    IN(A);
    IN(B);
    IN(C);
    LAUNCH(run_gemm, AI(ta), AI(tb), AI(m), AI(n), AI(k), AF(alpha), AP(A), AI(lda), AP(B), AI(ldb),
           AF(beta), AP(C), AI(ldc));
}

static void run_gemm_bf16(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.gemm_bf16((int)a[0].i, (int)a[1].i, a[2].i, a[3].i, a[4].i, (float)a[5].d, a[6].p,
                          a[7].i, a[8].p, a[9].i, (float)a[10].d, a[11].p, a[12].i);
}

static void fk_gemm_bf16(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                         float *C, int64_t ldc)
{
    OP("gemm_bf16");
    IN(A);
    IN(B);
    IN(C);
    LAUNCH(run_gemm_bf16, AI(ta), AI(tb), AI(m), AI(n), AI(k), AF(alpha), AP(A), AI(lda), AP(B),
           AI(ldb), AF(beta), AP(C), AI(ldc));
}

static void run_axpy(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.axpy(a[0].i, (float)a[1].d, a[2].p, a[3].p);
}

static void fk_axpy(int64_t n, float a, const float *x, float *y)
{
    OP("axpy");
    IN(x);
    IN(y);
    LAUNCH(run_axpy, AI(n), AF(a), AP(x), AP(y));
}

static void run_scale(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.scale(a[0].i, (float)a[1].d, a[2].p);
}

static void fk_scale(int64_t n, float a, float *x)
{
    OP("scale");
    IN(x);
    LAUNCH(run_scale, AI(n), AF(a), AP(x));
}

static void run_mul(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.mul(a[0].i, a[1].p, a[2].p, a[3].p);
}

static void fk_mul(int64_t n, const float *a, const float *b, float *y)
{
    OP("mul");
    IN(a);
    IN(b);
    IN(y);
    LAUNCH(run_mul, AI(n), AP(a), AP(b), AP(y));
}

#define FK_UNARY(fn)                                                                       \
    static void run_##fn(const union fk_arg *a, const void *blob)                          \
    {                                                                                      \
        (void)blob;                                                                        \
        backend_cpu.fn(a[0].i, a[1].p, a[2].p);                                            \
    }                                                                                      \
    static void fk_##fn(int64_t n, const float *x, float *y)                               \
    {                                                                                      \
        OP(#fn);                                                                           \
        IN(x);                                                                             \
        IN(y);                                                                             \
        LAUNCH(run_##fn, AI(n), AP(x), AP(y));                                             \
    }
#define FK_BINARY(fn)                                                                      \
    static void run_##fn(const union fk_arg *a, const void *blob)                          \
    {                                                                                      \
        (void)blob;                                                                        \
        backend_cpu.fn(a[0].i, a[1].p, a[2].p, a[3].p);                                    \
    }                                                                                      \
    static void fk_##fn(int64_t n, const float *x, const float *dy, float *dx)             \
    {                                                                                      \
        OP(#fn);                                                                           \
        IN(x);                                                                             \
        IN(dy);                                                                            \
        IN(dx);                                                                            \
        LAUNCH(run_##fn, AI(n), AP(x), AP(dy), AP(dx));                                    \
    }
FK_UNARY(silu_fwd)
FK_UNARY(relu_fwd)
FK_BINARY(silu_bwd)
FK_BINARY(relu_bwd)

static void run_layernorm_fwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.layernorm_fwd(a[0].i, (int)a[1].i, (float)a[2].d, a[3].p, a[4].p, a[5].p, a[6].p,
                              a[7].p, a[8].p);
}

static void fk_layernorm_fwd(int64_t rows, int d, float eps, const float *x, const float *gamma,
                             const float *beta, float *y, float *mean, float *rstd)
{
    OP("layernorm_fwd");
    IN(x);
    IN(gamma);
    IN(beta);
    IN(y);
    IN(mean);
    IN(rstd);
    LAUNCH(run_layernorm_fwd, AI(rows), AI(d), AF(eps), AP(x), AP(gamma), AP(beta), AP(y), AP(mean),
           AP(rstd));
}

static void run_layernorm_bwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.layernorm_bwd(a[0].i, (int)a[1].i, a[2].p, a[3].p, a[4].p, a[5].p, a[6].p, a[7].p,
                              a[8].p, a[9].p);
}

static void fk_layernorm_bwd(int64_t rows, int d, const float *x, const float *mean,
                             const float *rstd, const float *gamma, const float *dy, float *dx,
                             float *dgamma, float *dbeta)
{
    OP("layernorm_bwd");
    IN(x);
    IN(mean);
    IN(rstd);
    IN(gamma);
    IN(dy);
    IN(dx);
    IN(dgamma);
    IN(dbeta);
    LAUNCH(run_layernorm_bwd, AI(rows), AI(d), AP(x), AP(mean), AP(rstd), AP(gamma), AP(dy), AP(dx),
           AP(dgamma), AP(dbeta));
}

static void run_l2norm_fwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.l2norm_fwd(a[0].i, (int)a[1].i, (float)a[2].d, a[3].p, a[4].p, a[5].p);
}

static void fk_l2norm_fwd(int64_t rows, int d, float eps, const float *x, float *y, float *norm)
{
    OP("l2norm_fwd");
    IN(x);
    IN(y);
    IN(norm);
    LAUNCH(run_l2norm_fwd, AI(rows), AI(d), AF(eps), AP(x), AP(y), AP(norm));
}

static void run_l2norm_bwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.l2norm_bwd(a[0].i, (int)a[1].i, a[2].p, a[3].p, a[4].p, a[5].p);
}

static void fk_l2norm_bwd(int64_t rows, int d, const float *y, const float *norm, const float *dy,
                          float *dx)
{
    OP("l2norm_bwd");
    IN(y);
    IN(norm);
    IN(dy);
    IN(dx);
    LAUNCH(run_l2norm_bwd, AI(rows), AI(d), AP(y), AP(norm), AP(dy), AP(dx));
}

static void run_dropout_fwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.dropout_fwd(a[0].i, (int)a[1].i, (float)a[2].d, a[3].p, a[4].u, a[5].p, a[6].p,
                            a[7].p);
}

static void fk_dropout_fwd(int64_t rows, int d, float p, const uint64_t *row_keys, uint64_t site,
                           const float *x, float *y, uint8_t *mask)
{
    OP("dropout_fwd");
    IN(row_keys);
    IN(x);
    IN(y);
    IN(mask);
    LAUNCH(run_dropout_fwd, AI(rows), AI(d), AF(p), AP(row_keys), AU(site), AP(x), AP(y), AP(mask));
}

static void run_dropout_bwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.dropout_bwd(a[0].i, (int)a[1].i, (float)a[2].d, a[3].p, a[4].p, a[5].p);
}

static void fk_dropout_bwd(int64_t rows, int d, float p, const uint8_t *mask, const float *dy,
                           float *dx)
{
    OP("dropout_bwd");
    IN(mask);
    IN(dy);
    IN(dx);
    LAUNCH(run_dropout_bwd, AI(rows), AI(d), AF(p), AP(mask), AP(dy), AP(dx));
}

static void run_gather_rows(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.gather_rows(a[0].i, (int)a[1].i, a[2].p, a[3].p, a[4].p);
}

static void fk_gather_rows(int64_t n, int d, const float *table, const int64_t *idx, float *out)
{
    OP("gather_rows");
    IN(table);
    IN(idx);
    IN(out);
    LAUNCH(run_gather_rows, AI(n), AI(d), AP(table), AP(idx), AP(out));
}

static void run_scatter_add_rows(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.scatter_add_rows(a[0].i, (int)a[1].i, a[2].p, a[3].p, a[4].p);
}

static void fk_scatter_add_rows(int64_t n, int d, const float *src, const int64_t *idx,
                                float *table)
{
    OP("scatter_add_rows");
    IN(src);
    IN(idx);
    IN(table);
    LAUNCH(run_scatter_add_rows, AI(n), AI(d), AP(src), AP(idx), AP(table));
}

static void run_adamw_step(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.adamw_step(a[0].i, a[1].p, a[2].p, a[3].p, a[4].p, (float)a[5].d, (float)a[6].d,
                           (float)a[7].d, (float)a[8].d, (float)a[9].d, a[10].i);
}

static void fk_adamw_step(int64_t n, float *w, float *m, float *v, const float *g, float lr,
                          float b1, float b2, float eps, float wd, int64_t t)
{
    OP("adamw_step");
    IN(w);
    IN(m);
    IN(v);
    IN(g);
    LAUNCH(run_adamw_step, AI(n), AP(w), AP(m), AP(v), AP(g), AF(lr), AF(b1), AF(b2), AF(eps),
           AF(wd), AI(t));
}

static double fk_sum_squares(int64_t n, const float *x)
{
    OP("sum_squares");
    IN(x);
    fake_compute_wait(); /* the host reads the result */
    double s = backend_cpu.sum_squares(n, x);
    devstats_sync(); /* the result comes back to the host */
    return s;
}

static void run_hstu_attn_fwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.hstu_attn_fwd(a[0].i, a[1].p, (int)a[2].i, (int)a[3].i, (int)a[4].i, (int)a[5].i,
                              a[6].p, a[7].p, a[8].p, a[9].p, a[10].p, a[11].p, a[12].p);
}

static void fk_hstu_attn_fwd(int64_t B, const int64_t *offsets, int H, int dqk, int dv, int N,
                             const float *q, const float *k, const float *v,
                             const float *pos_bias, const float *time_bias, const int64_t *ts,
                             float *out)
{
    OP("hstu_attn_fwd");
    IN(offsets);
    IN(q);
    IN(k);
    IN(v);
    IN(pos_bias);
    IN(time_bias);
    IN(ts);
    IN(out);
    LAUNCH(run_hstu_attn_fwd, AI(B), AP(offsets), AI(H), AI(dqk), AI(dv), AI(N), AP(q), AP(k),
           AP(v), AP(pos_bias), AP(time_bias), AP(ts), AP(out));
}

static void run_hstu_attn_bwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.hstu_attn_bwd(a[0].i, a[1].p, (int)a[2].i, (int)a[3].i, (int)a[4].i, (int)a[5].i,
                              a[6].p, a[7].p, a[8].p, a[9].p, a[10].p, a[11].p, a[12].p, a[13].p,
                              a[14].p, a[15].p, a[16].p, a[17].p);
}

static void fk_hstu_attn_bwd(int64_t B, const int64_t *offsets, int H, int dqk, int dv, int N,
                             const float *q, const float *k, const float *v,
                             const float *pos_bias, const float *time_bias, const int64_t *ts,
                             const float *dout, float *dq, float *dk, float *dvv,
                             float *dpos_bias, float *dtime_bias)
{
    OP("hstu_attn_bwd");
    IN(offsets);
    IN(q);
    IN(k);
    IN(v);
    IN(pos_bias);
    IN(time_bias);
    IN(ts);
    IN(dout);
    IN(dq);
    IN(dk);
    IN(dvv);
    IN(dpos_bias);
    IN(dtime_bias);
    LAUNCH(run_hstu_attn_bwd, AI(B), AP(offsets), AI(H), AI(dqk), AI(dv), AI(N), AP(q), AP(k),
           AP(v), AP(pos_bias), AP(time_bias), AP(ts), AP(dout), AP(dq), AP(dk), AP(dvv),
           AP(dpos_bias), AP(dtime_bias));
}

static void run_sasrec_attn_fwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.sasrec_attn_fwd(a[0].i, a[1].p, (int)a[2].i, (int)a[3].i, (int)a[4].i, a[5].p,
                                a[6].p, a[7].p, a[8].p, a[9].p);
}

static void fk_sasrec_attn_fwd(int64_t B, const int64_t *offsets, int H, int dh, int N,
                               const float *q, const float *k, const float *v, float *out,
                               float *lse)
{
    OP("sasrec_attn_fwd");
    IN(offsets);
    IN(q);
    IN(k);
    IN(v);
    IN(out);
    IN(lse);
    LAUNCH(run_sasrec_attn_fwd, AI(B), AP(offsets), AI(H), AI(dh), AI(N), AP(q), AP(k), AP(v),
           AP(out), AP(lse));
}

static void run_sasrec_attn_bwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.sasrec_attn_bwd(a[0].i, a[1].p, (int)a[2].i, (int)a[3].i, (int)a[4].i, a[5].p,
                                a[6].p, a[7].p, a[8].p, a[9].p, a[10].p, a[11].p, a[12].p,
                                a[13].p);
}

static void fk_sasrec_attn_bwd(int64_t B, const int64_t *offsets, int H, int dh, int N,
                               const float *q, const float *k, const float *v, const float *out,
                               const float *lse, const float *dout, float *dq, float *dk,
                               float *dv)
{
    OP("sasrec_attn_bwd");
    IN(offsets);
    IN(q);
    IN(k);
    IN(v);
    IN(out);
    IN(lse);
    IN(dout);
    IN(dq);
    IN(dk);
    IN(dv);
    LAUNCH(run_sasrec_attn_bwd, AI(B), AP(offsets), AI(H), AI(dh), AI(N), AP(q), AP(k), AP(v),
           AP(out), AP(lse), AP(dout), AP(dq), AP(dk), AP(dv));
}

static void run_softmax_loss(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.softmax_loss(a[0].i, (int)a[1].i, (int)a[2].i, (float)a[3].d, a[4].p, a[5].i,
                             a[6].p, a[7].p, a[8].p, (float)a[9].d, a[10].p, a[11].p, a[12].p);
}

static void fk_softmax_loss(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                            const float *e, const int64_t *pos, const int64_t *neg, float scale,
                            float *du, float *de, double *acc)
{
    OP("softmax_loss");
    IN(u);
    IN(e);
    IN(pos);
    IN(neg);
    IN(du);
    IN(de);
    IN(acc);
    LAUNCH(run_softmax_loss, AI(T), AI(d), AI(R), AF(inv_tau), AP(u), AI(nu), AP(e), AP(pos),
           AP(neg), AF(scale), AP(du), AP(de), AP(acc));
}

static void run_bce_loss(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.bce_loss(a[0].i, (int)a[1].i, a[2].p, a[3].i, a[4].p, a[5].p, a[6].p, (float)a[7].d,
                         a[8].p, a[9].p, a[10].p);
}

static void fk_bce_loss(int64_t T, int d, const float *u, int64_t nu, const float *e,
                        const int64_t *pos, const int64_t *neg, float scale, float *du,
                        float *de, double *acc)
{
    OP("bce_loss");
    IN(u);
    IN(e);
    IN(pos);
    IN(neg);
    IN(du);
    IN(de);
    IN(acc);
    LAUNCH(run_bce_loss, AI(T), AI(d), AP(u), AI(nu), AP(e), AP(pos), AP(neg), AF(scale), AP(du),
           AP(de), AP(acc));
}

static void run_sumsq_acc(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.sumsq_acc(a[0].i, a[1].p, a[2].p);
}

static void fk_sumsq_acc(int64_t n, const float *x, double *acc)
{
    OP("sumsq_acc");
    IN(x);
    IN(acc);
    LAUNCH(run_sumsq_acc, AI(n), AP(x), AP(acc));
}

static void run_count_range(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.count_range(a[0].i, a[1].p, a[2].i, a[3].i, a[4].p);
}

static void fk_count_range(int64_t n, const int64_t *x, int64_t lo, int64_t hi, int64_t *acc)
{
    OP("count_range");
    IN(x);
    IN(acc);
    LAUNCH(run_count_range, AI(n), AP(x), AI(lo), AI(hi), AP(acc));
}

/* issue 51 G */
static void run_index_mask(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.index_mask(a[0].i, a[1].p, a[2].p, a[3].p);
}

static void fk_index_mask(int64_t n, const int64_t *src, const uint8_t *mask, int64_t *dst)
{
    OP("index_mask");
    IN(src);
    IN(mask);
    IN(dst);
    LAUNCH(run_index_mask, AI(n), AP(src), AP(mask), AP(dst));
}

static void run_sample_negatives(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.sample_negatives(a[0].u, a[1].u, a[2].p, a[3].i, (int)a[4].i, a[5].i, a[6].p);
}

static void fk_sample_negatives(uint64_t seed, uint64_t epoch, const uint64_t *keys, int64_t T,
                                int R, int64_t num_items, int64_t *out)
{
    OP("sample_negatives");
    IN(keys);
    IN(out);
    LAUNCH(run_sample_negatives, AU(seed), AU(epoch), AP(keys), AI(T), AI(R), AI(num_items),
           AP(out));
}

static void run_emb_encode(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.emb_encode((int)a[0].i, a[1].i, (int)a[2].i, a[3].p, a[4].p, a[5].p);
}

static void fk_emb_encode(int codec, int64_t n, int dim, const float *rows, uint8_t *wire,
                          uint64_t *bad)
{
    OP("emb_encode");
    IN(rows);
    IN(wire);
    IN(bad);
    LAUNCH(run_emb_encode, AI(codec), AI(n), AI(dim), AP(rows), AP(wire), AP(bad));
}

static void run_emb_decode(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.emb_decode((int)a[0].i, a[1].i, (int)a[2].i, a[3].p, a[4].p);
}

static void fk_emb_decode(int codec, int64_t n, int dim, const uint8_t *wire, float *rows)
{
    OP("emb_decode");
    IN(wire);
    IN(rows);
    LAUNCH(run_emb_decode, AI(codec), AI(n), AI(dim), AP(wire), AP(rows));
}

static int64_t fk_emb_dedup(int64_t n, const int64_t *ids, int64_t n_first, int G, int64_t *uniq,
                            int64_t *inverse, int64_t *counts, int64_t key_max)
{
    OP("emb_dedup");
    IN(ids);
    IN(uniq);
    IN(inverse);
    fake_not_device(counts, "emb_dedup", "counts");
    fake_compute_wait(); /* the host reads the result */
    int64_t nu = backend_cpu.emb_dedup(n, ids, n_first, G, uniq, inverse, counts, key_max);
    devstats_sync(); /* the counts come back to the host */
    return nu;
}

static void run_emb_gather_shard(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.emb_gather_shard(a[0].i, (int)a[1].i, a[2].p, a[3].p, (int)a[4].i, a[5].p);
}

static void fk_emb_gather_shard(int64_t n, int dim, const float *w, const int64_t *ids, int G,
                                float *out)
{
    OP("emb_gather_shard");
    IN(w);
    IN(ids);
    IN(out);
    LAUNCH(run_emb_gather_shard, AI(n), AI(dim), AP(w), AP(ids), AI(G), AP(out));
}

static void run_emb_sum_by_id(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.emb_sum_by_id(a[0].i, (int)a[1].i, a[2].p, a[3].p, a[4].p, a[5].p, a[6].i);
}

static void fk_emb_sum_by_id(int64_t n, int dim, const int64_t *keys, const float *g,
                             int64_t *uid, float *out, int64_t key_max)
{
    OP("emb_sum_by_id");
    IN(keys);
    IN(g);
    IN(uid);
    IN(out);
    LAUNCH(run_emb_sum_by_id, AI(n), AI(dim), AP(keys), AP(g), AP(uid), AP(out), AI(key_max));
}

static void run_emb_sparse_update(const union fk_arg *a, const void *blob)
{
    backend_cpu.emb_sparse_update(blob, a[0].i, (int)a[1].i, a[2].p, (int)a[3].i, a[4].p, a[5].p,
                                  a[6].p, a[7].i, a[8].p);
}

static void fk_emb_sparse_update(const struct emb_optim_conf *opt, int64_t k, int dim,
                                 const int64_t *ids, int G, const float *g, float *w,
                                 float *state, int64_t state_floats, int64_t *steps)
{
    OP("emb_sparse_update");
    IN(ids);
    IN(g);
    IN(w);
    IN(state);
    IN(steps);
    LAUNCH_BLOB(run_emb_sparse_update, opt, sizeof *opt, AI(k), AI(dim), AP(ids), AI(G), AP(g),
                AP(w), AP(state), AI(state_floats), AP(steps));
}

/* the features' and the ranking head's operations */
static void run_index_rows(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.index_rows(a[0].i, (int)a[1].i, a[2].p, a[3].p, a[4].p, a[5].p, (int)a[6].i);
}

static void fk_index_rows(int64_t n, int d, const float *src, const int64_t *sidx, float *dst,
                          const int64_t *didx, int add)
{
    OP("index_rows");
    IN(src);
    IN(sidx);
    IN(dst);
    IN(didx);
    LAUNCH(run_index_rows, AI(n), AI(d), AP(src), AP(sidx), AP(dst), AP(didx), AI(add));
}

static void run_rows_match(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.rows_match(a[0].i, (int)a[1].i, a[2].p, a[3].p, a[4].p);
}

static void fk_rows_match(int64_t n, int d, const float *rows, const float *row, uint8_t *out)
{
    OP("rows_match");
    IN(rows);
    IN(row);
    IN(out);
    LAUNCH(run_rows_match, AI(n), AI(d), AP(rows), AP(row), AP(out));
}

static void run_col_sums(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.col_sums(a[0].i, (int)a[1].i, a[2].p, a[3].p);
}

static void fk_col_sums(int64_t n, int m, const float *x, float *acc)
{
    OP("col_sums");
    IN(x);
    IN(acc);
    LAUNCH(run_col_sums, AI(n), AI(m), AP(x), AP(acc));
}

static void run_rank_loss(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.rank_loss(a[0].i, (int)a[1].i, a[2].p, a[3].p, a[4].p, a[5].p, a[6].p);
}

static void fk_rank_loss(int64_t T, int K, const float *z, const float *labels,
                         const double *coef, float *dz, double *acc)
{
    OP("rank_loss");
    IN(z);
    IN(labels);
    IN(coef);
    IN(dz);
    IN(acc);
    LAUNCH(run_rank_loss, AI(T), AI(K), AP(z), AP(labels), AP(coef), AP(dz), AP(acc));
}

/* --- issue 51 B: the ranking head's factor terms --------------------------- */
static void run_factor_fwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.factor_fwd(a[0].i, a[1].p, (int)a[2].i, (int)a[3].i, a[4].p, a[5].p, a[6].d,
                           (float)a[7].d, a[8].p, a[9].p, a[10].p, a[11].p, a[12].d, a[13].p);
}

static void fk_factor_fwd(int64_t B, const int64_t *offsets, int K, int F, const float *f,
                          const double *v, double prior, float gain, float *z, float *w,
                          float *vb, float *h, double ridge, float *ai)
{
    OP("factor_fwd");
    IN(offsets);
    IN(f);
    IN(v);
    IN(z);
    IN(w);
    IN(vb);
    IN(h);
    if (ridge > 0)
        IN(ai);
    LAUNCH(run_factor_fwd, AI(B), AP(offsets), AI(K), AI(F), AP(f), AP(v), AF(prior), AF(gain),
           AP(z), AP(w), AP(vb), AP(h), AF(ridge), AP(ai));
}

static void run_factor_bwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.factor_bwd(a[0].i, a[1].p, (int)a[2].i, (int)a[3].i, a[4].p, a[5].p,
                           (float)a[6].d, a[7].p, a[8].p, a[9].p, a[10].p, a[11].p, a[12].d,
                           a[13].p);
}

static void fk_factor_bwd(int64_t B, const int64_t *offsets, int K, int F, const float *f,
                          const double *v, float gain, const float *z, const float *w,
                          const float *vb, const float *dh, float *df, double ridge,
                          const float *ai)
{
    OP("factor_bwd");
    IN(offsets);
    IN(f);
    IN(v);
    IN(z);
    IN(w);
    IN(vb);
    IN(dh);
    IN(df);
    if (ridge > 0)
        IN(ai);
    LAUNCH(run_factor_bwd, AI(B), AP(offsets), AI(K), AI(F), AP(f), AP(v), AF(gain), AP(z),
           AP(w), AP(vb), AP(dh), AP(df), AF(ridge), AP(ai));
}
/* --- end of issue 51 B's block ------------------------------------------------ */

const struct backend_ops backend_fake = {
    .name = "fake",
    .alloc = fk_alloc,
    .free = fk_free,
    .to_device = fk_to_device,
    .to_host = fk_to_host,
    .copy = fk_copy,
    .zero = fk_zero,
    .synchronize = fk_synchronize,
    .gemm = fk_gemm,
    .gemm_bf16 = fk_gemm_bf16,
    .axpy = fk_axpy,
    .scale = fk_scale,
    .mul = fk_mul,
    .silu_fwd = fk_silu_fwd,
    .silu_bwd = fk_silu_bwd,
    .relu_fwd = fk_relu_fwd,
    .relu_bwd = fk_relu_bwd,
    .layernorm_fwd = fk_layernorm_fwd,
    .layernorm_bwd = fk_layernorm_bwd,
    .l2norm_fwd = fk_l2norm_fwd,
    .l2norm_bwd = fk_l2norm_bwd,
    .dropout_fwd = fk_dropout_fwd,
    .dropout_bwd = fk_dropout_bwd,
    .gather_rows = fk_gather_rows,
    .scatter_add_rows = fk_scatter_add_rows,
    .adamw_step = fk_adamw_step,
    .sum_squares = fk_sum_squares,
    .sumsq_acc = fk_sumsq_acc,
    .hstu_attn_fwd = fk_hstu_attn_fwd,
    .hstu_attn_bwd = fk_hstu_attn_bwd,
    .sasrec_attn_fwd = fk_sasrec_attn_fwd,
    .sasrec_attn_bwd = fk_sasrec_attn_bwd,
    .hstu_attn_ctx_fwd = fk_hstu_attn_ctx_fwd,
    .hstu_attn_ctx_bwd = fk_hstu_attn_ctx_bwd,
    .hstu_attn_rows_fwd = fk_hstu_attn_rows_fwd,
    .hstu_attn_rows_bwd = fk_hstu_attn_rows_bwd,
    .sasrec_attn_ctx_fwd = fk_sasrec_attn_ctx_fwd,
    .sasrec_attn_ctx_bwd = fk_sasrec_attn_ctx_bwd,
    .softmax_loss_q = fk_softmax_loss_q,
    .softmax_block_lse = fk_softmax_block_lse,
    .softmax_block_grad = fk_softmax_block_grad,
    .softmax_loss = fk_softmax_loss,
    .bce_loss = fk_bce_loss,
    .emb_dedup = fk_emb_dedup,
    .emb_gather_shard = fk_emb_gather_shard,
    .emb_sum_by_id = fk_emb_sum_by_id,
    .emb_sparse_update = fk_emb_sparse_update,
    .emb_encode = fk_emb_encode,
    .emb_decode = fk_emb_decode,
    .count_range = fk_count_range,
    .sample_negatives = fk_sample_negatives,
    .index_rows = fk_index_rows,
    .col_sums = fk_col_sums,
    .rows_match = fk_rows_match, /* issue 51 item 3 (H) */
    .factor_fwd = fk_factor_fwd, /* issue 51 B */
    .factor_bwd = fk_factor_bwd,
    .rank_loss = fk_rank_loss,
    .device_count = fk_device_count,
    .device_open = fk_device_open,
    .device_describe = fk_device_describe,
    .device_memory = fk_device_memory,
    .device_uuid = fk_device_uuid,
    .event_new = fk_event_new,
    .event_free = fake_event_free,
    .event_record = fk_event_record,
    .event_query = fk_event_query,
    .event_sync = fk_event_sync,
    .stream_wait = fk_stream_wait,
    .event_ms = fake_event_ms,
    .mpi_direct = fk_mpi_direct,
    .mpi_expose = fk_mpi_expose,
    .host_alloc = fk_host_alloc,
    .host_free = fk_host_free,
    .to_host_async = fk_to_host_async,
    .to_device_async = fk_to_device_async,
    .comm_sync = fk_comm_sync,
    .copy_up = fk_copy_up,
    .copy_down = fk_copy_down,
    .ipc_export = fk_ipc_export,
    .ipc_open = fk_ipc_open,
    .ipc_close = fk_ipc_close,
    .peer_copy = fk_peer_copy,
    .comm_add = fk_comm_add,
    /* dynamic tables (backend_fake_dyn.c) */
    .emb_dyn_dedup = fk_emb_dyn_dedup,
    .dyn_find = fk_dyn_find,
    .dyn_stamp = fk_dyn_stamp,
    .dyn_missing = fk_dyn_missing,
    .dyn_insert = fk_dyn_insert,
    .dyn_rehash = fk_dyn_rehash,
    .dyn_virtual = fk_dyn_virtual,
    .dyn_expire = fk_dyn_expire,
    .dyn_admit = fk_dyn_admit,
    .dyn_evict_full = fk_dyn_evict_full,
    .index_mask = fk_index_mask, /* issue 51 G */
};
