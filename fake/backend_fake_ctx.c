/* backend_fake_ctx: the fake device's context-parallel attention
 * (parallel.split_long) and its full and logQ-corrected softmax (train.loss
 * = full, train.negatives_from = in_batch | mixed): the CPU's operations,
 * each opening its operands like those of backend_fake.c, so that the host
 * flow around them (keys and values exchanged from device buffers, the
 * blocks of the full softmax) runs against a GPU's memory behaviour. */
#include "backend/backend_cpu.h"
#include "backend/devstats.h"
#include "fake/fake.h"

#define OP(name) struct fk_op op_; fake_op_begin(&op_, name)
#define IN(p) fake_op_arg(&op_, (p), #p)
#define END() fake_op_end(&op_)

void fk_hstu_attn_ctx_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                          const int64_t *key_off, int keys, int H, int dqk, int dv, int N,
                          const float *q, const float *kb, const float *vb, const float *pos_bias,
                          const float *time_bias, const int64_t *key_ts, float *out)
{
    OP("hstu_attn_ctx_fwd");
    IN(offsets);
    IN(pos0);
    IN(key_off);
    IN(q);
    IN(kb);
    IN(vb);
    IN(pos_bias);
    IN(time_bias);
    IN(key_ts);
    IN(out);
    backend_cpu.hstu_attn_ctx_fwd(B, offsets, pos0, key_off, keys, H, dqk, dv, N, q, kb, vb,
                                  pos_bias, time_bias, key_ts, out);
    END();
}

void fk_hstu_attn_ctx_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                          const int64_t *key_off, int keys, int H, int dqk, int dv, int N,
                          const float *q, const float *kb, const float *vb, const float *pos_bias,
                          const float *time_bias, const int64_t *key_ts, const float *dout,
                          float *dq, float *dkb, float *dvb, float *dpos_bias, float *dtime_bias)
{
    OP("hstu_attn_ctx_bwd");
    IN(offsets);
    IN(pos0);
    IN(key_off);
    IN(q);
    IN(kb);
    IN(vb);
    IN(pos_bias);
    IN(time_bias);
    IN(key_ts);
    IN(dout);
    IN(dq);
    IN(dkb);
    IN(dvb);
    IN(dpos_bias);
    IN(dtime_bias);
    backend_cpu.hstu_attn_ctx_bwd(B, offsets, pos0, key_off, keys, H, dqk, dv, N, q, kb, vb,
                                  pos_bias, time_bias, key_ts, dout, dq, dkb, dvb, dpos_bias,
                                  dtime_bias);
    END();
}

void fk_sasrec_attn_ctx_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                            const int64_t *key_off, int keys, int H, int dh, const float *q,
                            const float *kb, const float *vb, float *out, float *lse)
{
    OP("sasrec_attn_ctx_fwd");
    IN(offsets);
    IN(pos0);
    IN(key_off);
    IN(q);
    IN(kb);
    IN(vb);
    IN(out);
    IN(lse);
    backend_cpu.sasrec_attn_ctx_fwd(B, offsets, pos0, key_off, keys, H, dh, q, kb, vb, out, lse);
    END();
}

void fk_sasrec_attn_ctx_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                            const int64_t *key_off, int keys, int H, int dh, const float *q,
                            const float *kb, const float *vb, const float *out, const float *lse,
                            const float *dout, float *dq, float *dkb, float *dvb)
{
    OP("sasrec_attn_ctx_bwd");
    IN(offsets);
    IN(pos0);
    IN(key_off);
    IN(q);
    IN(kb);
    IN(vb);
    IN(out);
    IN(lse);
    IN(dout);
    IN(dq);
    IN(dkb);
    IN(dvb);
    backend_cpu.sasrec_attn_ctx_bwd(B, offsets, pos0, key_off, keys, H, dh, q, kb, vb, out, lse,
                                    dout, dq, dkb, dvb);
    END();
}

void fk_softmax_loss_q(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                       const float *e, const float *logq, const int64_t *pos, const int64_t *neg,
                       float scale, float *du, float *de, double *acc)
{
    OP("softmax_loss_q");
    IN(u);
    IN(e);
    IN(logq);
    IN(pos);
    IN(neg);
    IN(du);
    IN(de);
    IN(acc);
    backend_cpu.softmax_loss_q(T, d, R, inv_tau, u, nu, e, logq, pos, neg, scale, du, de, acc);
    END();
}

void fk_softmax_block_lse(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *s,
                          float *lse)
{
    OP("softmax_block_lse");
    IN(s);
    IN(lse);
    backend_cpu.softmax_block_lse(n, m, lds, inv_tau, s, lse);
    END();
}

void fk_softmax_block_grad(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *lse,
                           const int64_t *tcol, float gscale, float *s, double *acc)
{
    OP("softmax_block_grad");
    IN(lse);
    IN(tcol);
    IN(s);
    IN(acc);
    backend_cpu.softmax_block_grad(n, m, lds, inv_tau, lse, tcol, gscale, s, acc);
    END();
}
