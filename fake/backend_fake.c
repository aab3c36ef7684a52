/* backend_fake: the fake device (device.type = fake), a test backend that
 * behaves like a discrete GPU while running the CPU backend's own
 * operations (DESIGN.md §6; fake/README, doc/gpu.md):
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
 * This file: the compute operations (each opens its operands, runs
 * backend_cpu's op, closes them) and the ops table; the device, memory,
 * copies and events are fake_device.c, the knobs there. */
#include <string.h>

#include "backend/backend_cpu.h"
#include "backend/devstats.h"
#include "base/check.h"
#include "fake/fake.h"

#define OP(name) struct fk_op op_; fake_op_begin(&op_, name)
#define IN(p) fake_op_arg(&op_, (p), #p)
#define END() fake_op_end(&op_)

static void fk_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *A,
                    int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    OP("gemm");
    IN(A);
    IN(B);
    IN(C);
    backend_cpu.gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    END();
}

static void fk_gemm_bf16(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                         float *C, int64_t ldc)
{
    OP("gemm_bf16");
    IN(A);
    IN(B);
    IN(C);
    backend_cpu.gemm_bf16(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    END();
}

static void fk_axpy(int64_t n, float a, const float *x, float *y)
{
    OP("axpy");
    IN(x);
    IN(y);
    backend_cpu.axpy(n, a, x, y);
    END();
}

static void fk_scale(int64_t n, float a, float *x)
{
    OP("scale");
    IN(x);
    backend_cpu.scale(n, a, x);
    END();
}

static void fk_mul(int64_t n, const float *a, const float *b, float *y)
{
    OP("mul");
    IN(a);
    IN(b);
    IN(y);
    backend_cpu.mul(n, a, b, y);
    END();
}

#define FK_UNARY(fn)                                                                       \
    static void fk_##fn(int64_t n, const float *x, float *y)                               \
    {                                                                                      \
        OP(#fn);                                                                           \
        IN(x);                                                                             \
        IN(y);                                                                             \
        backend_cpu.fn(n, x, y);                                                           \
        END();                                                                             \
    }
#define FK_BINARY(fn)                                                                      \
    static void fk_##fn(int64_t n, const float *x, const float *dy, float *dx)             \
    {                                                                                      \
        OP(#fn);                                                                           \
        IN(x);                                                                             \
        IN(dy);                                                                            \
        IN(dx);                                                                            \
        backend_cpu.fn(n, x, dy, dx);                                                      \
        END();                                                                             \
    }
FK_UNARY(silu_fwd)
FK_UNARY(relu_fwd)
FK_BINARY(silu_bwd)
FK_BINARY(relu_bwd)

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
    backend_cpu.layernorm_fwd(rows, d, eps, x, gamma, beta, y, mean, rstd);
    END();
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
    backend_cpu.layernorm_bwd(rows, d, x, mean, rstd, gamma, dy, dx, dgamma, dbeta);
    END();
}

static void fk_l2norm_fwd(int64_t rows, int d, float eps, const float *x, float *y, float *norm)
{
    OP("l2norm_fwd");
    IN(x);
    IN(y);
    IN(norm);
    backend_cpu.l2norm_fwd(rows, d, eps, x, y, norm);
    END();
}

static void fk_l2norm_bwd(int64_t rows, int d, const float *y, const float *norm, const float *dy,
                          float *dx)
{
    OP("l2norm_bwd");
    IN(y);
    IN(norm);
    IN(dy);
    IN(dx);
    backend_cpu.l2norm_bwd(rows, d, y, norm, dy, dx);
    END();
}

static void fk_dropout_fwd(int64_t rows, int d, float p, const uint64_t *row_keys, uint64_t site,
                           const float *x, float *y, uint8_t *mask)
{
    OP("dropout_fwd");
    IN(row_keys);
    IN(x);
    IN(y);
    IN(mask);
    backend_cpu.dropout_fwd(rows, d, p, row_keys, site, x, y, mask);
    END();
}

static void fk_dropout_bwd(int64_t rows, int d, float p, const uint8_t *mask, const float *dy,
                           float *dx)
{
    OP("dropout_bwd");
    IN(mask);
    IN(dy);
    IN(dx);
    backend_cpu.dropout_bwd(rows, d, p, mask, dy, dx);
    END();
}

static void fk_gather_rows(int64_t n, int d, const float *table, const int64_t *idx, float *out)
{
    OP("gather_rows");
    IN(table);
    IN(idx);
    IN(out);
    backend_cpu.gather_rows(n, d, table, idx, out);
    END();
}

static void fk_scatter_add_rows(int64_t n, int d, const float *src, const int64_t *idx,
                                float *table)
{
    OP("scatter_add_rows");
    IN(src);
    IN(idx);
    IN(table);
    backend_cpu.scatter_add_rows(n, d, src, idx, table);
    END();
}

static void fk_adamw_step(int64_t n, float *w, float *m, float *v, const float *g, float lr,
                          float b1, float b2, float eps, float wd, int64_t t)
{
    OP("adamw_step");
    IN(w);
    IN(m);
    IN(v);
    IN(g);
    backend_cpu.adamw_step(n, w, m, v, g, lr, b1, b2, eps, wd, t);
    END();
}

static double fk_sum_squares(int64_t n, const float *x)
{
    OP("sum_squares");
    IN(x);
    double s = backend_cpu.sum_squares(n, x);
    END();
    devstats_sync(); /* the result comes back to the host */
    return s;
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
    backend_cpu.hstu_attn_fwd(B, offsets, H, dqk, dv, N, q, k, v, pos_bias, time_bias, ts, out);
    END();
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
    backend_cpu.hstu_attn_bwd(B, offsets, H, dqk, dv, N, q, k, v, pos_bias, time_bias, ts, dout,
                              dq, dk, dvv, dpos_bias, dtime_bias);
    END();
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
    backend_cpu.sasrec_attn_fwd(B, offsets, H, dh, N, q, k, v, out, lse);
    END();
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
    backend_cpu.sasrec_attn_bwd(B, offsets, H, dh, N, q, k, v, out, lse, dout, dq, dk, dv);
    END();
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
    backend_cpu.softmax_loss(T, d, R, inv_tau, u, nu, e, pos, neg, scale, du, de, acc);
    END();
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
    backend_cpu.bce_loss(T, d, u, nu, e, pos, neg, scale, du, de, acc);
    END();
}

static void fk_sumsq_acc(int64_t n, const float *x, double *acc)
{
    OP("sumsq_acc");
    IN(x);
    IN(acc);
    backend_cpu.sumsq_acc(n, x, acc);
    END();
}

static void fk_count_range(int64_t n, const int64_t *x, int64_t lo, int64_t hi, int64_t *acc)
{
    OP("count_range");
    IN(x);
    IN(acc);
    backend_cpu.count_range(n, x, lo, hi, acc);
    END();
}

static void fk_sample_negatives(uint64_t seed, uint64_t epoch, const uint64_t *keys, int64_t T,
                                int R, int64_t num_items, int64_t *out)
{
    OP("sample_negatives");
    IN(keys);
    IN(out);
    backend_cpu.sample_negatives(seed, epoch, keys, T, R, num_items, out);
    END();
}

static void fk_emb_encode(int codec, int64_t n, int dim, const float *rows, uint8_t *wire,
                          uint64_t *bad)
{
    OP("emb_encode");
    IN(rows);
    IN(wire);
    IN(bad);
    backend_cpu.emb_encode(codec, n, dim, rows, wire, bad);
    END();
}

static void fk_emb_decode(int codec, int64_t n, int dim, const uint8_t *wire, float *rows)
{
    OP("emb_decode");
    IN(wire);
    IN(rows);
    backend_cpu.emb_decode(codec, n, dim, wire, rows);
    END();
}

static int64_t fk_emb_dedup(int64_t n, const int64_t *ids, int64_t n_first, int G, int64_t *uniq,
                            int64_t *inverse, int64_t *counts)
{
    OP("emb_dedup");
    IN(ids);
    IN(uniq);
    IN(inverse);
    fake_not_device(counts, "emb_dedup", "counts");
    int64_t nu = backend_cpu.emb_dedup(n, ids, n_first, G, uniq, inverse, counts);
    END();
    devstats_sync(); /* the counts come back to the host */
    return nu;
}

static void fk_emb_gather_shard(int64_t n, int dim, const float *w, const int64_t *ids, int G,
                                float *out)
{
    OP("emb_gather_shard");
    IN(w);
    IN(ids);
    IN(out);
    backend_cpu.emb_gather_shard(n, dim, w, ids, G, out);
    END();
}

static void fk_emb_sum_by_id(int64_t n, int dim, const int64_t *keys, const float *g,
                             int64_t *uid, float *out)
{
    OP("emb_sum_by_id");
    IN(keys);
    IN(g);
    IN(uid);
    IN(out);
    backend_cpu.emb_sum_by_id(n, dim, keys, g, uid, out);
    END();
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
    backend_cpu.emb_sparse_update(opt, k, dim, ids, G, g, w, state, state_floats, steps);
    END();
}

/* the features' and the ranking head's operations */
static void fk_index_rows(int64_t n, int d, const float *src, const int64_t *sidx, float *dst,
                          const int64_t *didx, int add)
{
    OP("index_rows");
    IN(src);
    IN(sidx);
    IN(dst);
    IN(didx);
    backend_cpu.index_rows(n, d, src, sidx, dst, didx, add);
    END();
}

static void fk_col_sums(int64_t n, int m, const float *x, float *acc)
{
    OP("col_sums");
    IN(x);
    IN(acc);
    backend_cpu.col_sums(n, m, x, acc);
    END();
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
    backend_cpu.rank_loss(T, K, z, labels, coef, dz, acc);
    END();
}

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
    .ipc_export = fk_ipc_export,
    .ipc_open = fk_ipc_open,
    .ipc_close = fk_ipc_close,
    .peer_copy = fk_peer_copy,
    .comm_add = fk_comm_add,
};
