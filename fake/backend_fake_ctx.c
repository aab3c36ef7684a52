/* backend_fake_ctx: the fake device's context-parallel attention
 * (parallel.split_long), its attention over some query rows
 * (model.last_layer = targets) and its full and logQ-corrected softmax (train.loss
 * = full, train.negatives_from = in_batch | mixed): the CPU's operations,
 * each launched with its operands translated like those of backend_fake.c, so that the host
 * flow around them (keys and values exchanged from device buffers, the
 * blocks of the full softmax) runs against a GPU's memory behaviour. */
#include "backend/backend_cpu.h"
#include "backend/devstats.h"
#include "fake/fake.h"

#define OP(name) struct fk_op op_; fake_op_begin(&op_, name)
#define IN(p) ((p) = fake_op_arg(&op_, (p), #p))

static void run_hstu_attn_ctx_fwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.hstu_attn_ctx_fwd(a[0].i, a[1].p, a[2].p, a[3].p, (int)a[4].i, (int)a[5].i,
                                  (int)a[6].i, (int)a[7].i, (int)a[8].i, a[9].p, a[10].p, a[11].p,
                                  a[12].p, a[13].p, a[14].p, a[15].p);
}

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
    LAUNCH(run_hstu_attn_ctx_fwd, AI(B), AP(offsets), AP(pos0), AP(key_off), AI(keys), AI(H),
           AI(dqk), AI(dv), AI(N), AP(q), AP(kb), AP(vb), AP(pos_bias), AP(time_bias), AP(key_ts),
           AP(out));
}

static void run_hstu_attn_ctx_bwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.hstu_attn_ctx_bwd(a[0].i, a[1].p, a[2].p, a[3].p, (int)a[4].i, (int)a[5].i,
                                  (int)a[6].i, (int)a[7].i, (int)a[8].i, a[9].p, a[10].p, a[11].p,
                                  a[12].p, a[13].p, a[14].p, a[15].p, a[16].p, a[17].p, a[18].p,
                                  a[19].p, a[20].p);
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
    LAUNCH(run_hstu_attn_ctx_bwd, AI(B), AP(offsets), AP(pos0), AP(key_off), AI(keys), AI(H),
           AI(dqk), AI(dv), AI(N), AP(q), AP(kb), AP(vb), AP(pos_bias), AP(time_bias), AP(key_ts),
           AP(dout), AP(dq), AP(dkb), AP(dvb), AP(dpos_bias), AP(dtime_bias));
}

static void run_hstu_attn_rows_fwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.hstu_attn_rows_fwd(a[0].i, a[1].p, a[2].p, a[3].p, (int)a[4].i, (int)a[5].i,
                                   (int)a[6].i, (int)a[7].i, a[8].p, a[9].p, a[10].p, a[11].p,
                                   a[12].p, a[13].p, a[14].p);
}

void fk_hstu_attn_rows_fwd(int64_t B, const int64_t *qoff, const int64_t *qpos,
                           const int64_t *key_off, int H, int dqk, int dv, int N, const float *q,
                           const float *kb, const float *vb, const float *pos_bias,
                           const float *time_bias, const int64_t *key_ts, float *out)
{
    OP("hstu_attn_rows_fwd");
    IN(qoff);
    IN(qpos);
    IN(key_off);
    IN(q);
    IN(kb);
    IN(vb);
    IN(pos_bias);
    IN(time_bias);
    IN(key_ts);
    IN(out);
    LAUNCH(run_hstu_attn_rows_fwd, AI(B), AP(qoff), AP(qpos), AP(key_off), AI(H), AI(dqk),
           AI(dv), AI(N), AP(q), AP(kb), AP(vb), AP(pos_bias), AP(time_bias), AP(key_ts),
           AP(out));
}

static void run_hstu_attn_rows_bwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.hstu_attn_rows_bwd(a[0].i, a[1].p, a[2].p, a[3].p, (int)a[4].i, (int)a[5].i,
                                   (int)a[6].i, (int)a[7].i, a[8].p, a[9].p, a[10].p, a[11].p,
                                   a[12].p, a[13].p, a[14].p, a[15].p, a[16].p, a[17].p,
                                   a[18].p, a[19].p);
}

void fk_hstu_attn_rows_bwd(int64_t B, const int64_t *qoff, const int64_t *qpos,
                           const int64_t *key_off, int H, int dqk, int dv, int N, const float *q,
                           const float *kb, const float *vb, const float *pos_bias,
                           const float *time_bias, const int64_t *key_ts, const float *dout,
                           float *dq, float *dkb, float *dvb, float *dpos_bias,
                           float *dtime_bias)
{
    OP("hstu_attn_rows_bwd");
    IN(qoff);
    IN(qpos);
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
    LAUNCH(run_hstu_attn_rows_bwd, AI(B), AP(qoff), AP(qpos), AP(key_off), AI(H), AI(dqk),
           AI(dv), AI(N), AP(q), AP(kb), AP(vb), AP(pos_bias), AP(time_bias), AP(key_ts),
           AP(dout), AP(dq), AP(dkb), AP(dvb), AP(dpos_bias), AP(dtime_bias));
}

static void run_sasrec_attn_ctx_fwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.sasrec_attn_ctx_fwd(a[0].i, a[1].p, a[2].p, a[3].p, (int)a[4].i, (int)a[5].i,
                                    (int)a[6].i, a[7].p, a[8].p, a[9].p, a[10].p, a[11].p);
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
    LAUNCH(run_sasrec_attn_ctx_fwd, AI(B), AP(offsets), AP(pos0), AP(key_off), AI(keys), AI(H),
           AI(dh), AP(q), AP(kb), AP(vb), AP(out), AP(lse));
}

static void run_sasrec_attn_ctx_bwd(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.sasrec_attn_ctx_bwd(a[0].i, a[1].p, a[2].p, a[3].p, (int)a[4].i, (int)a[5].i,
                                    (int)a[6].i, a[7].p, a[8].p, a[9].p, a[10].p, a[11].p, a[12].p,
                                    a[13].p, a[14].p, a[15].p);
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
    LAUNCH(run_sasrec_attn_ctx_bwd, AI(B), AP(offsets), AP(pos0), AP(key_off), AI(keys), AI(H),
           AI(dh), AP(q), AP(kb), AP(vb), AP(out), AP(lse), AP(dout), AP(dq), AP(dkb), AP(dvb));
}

static void run_softmax_loss_q(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.softmax_loss_q(a[0].i, (int)a[1].i, (int)a[2].i, (float)a[3].d, a[4].p, a[5].i,
                               a[6].p, a[7].p, a[8].p, a[9].p, (float)a[10].d, a[11].p, a[12].p,
                               a[13].p);
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
    LAUNCH(run_softmax_loss_q, AI(T), AI(d), AI(R), AF(inv_tau), AP(u), AI(nu), AP(e), AP(logq),
           AP(pos), AP(neg), AF(scale), AP(du), AP(de), AP(acc));
}

static void run_softmax_block_lse(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.softmax_block_lse(a[0].i, a[1].i, a[2].i, (float)a[3].d, a[4].p, a[5].p);
}

void fk_softmax_block_lse(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *s,
                          float *lse)
{
    OP("softmax_block_lse");
    IN(s);
    IN(lse);
    LAUNCH(run_softmax_block_lse, AI(n), AI(m), AI(lds), AF(inv_tau), AP(s), AP(lse));
}

static void run_softmax_block_grad(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.softmax_block_grad(a[0].i, a[1].i, a[2].i, (float)a[3].d, a[4].p, a[5].p,
                                   (float)a[6].d, a[7].p, a[8].p);
}

void fk_softmax_block_grad(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *lse,
                           const int64_t *tcol, float gscale, float *s, double *acc)
{
    OP("softmax_block_grad");
    IN(lse);
    IN(tcol);
    IN(s);
    IN(acc);
    LAUNCH(run_softmax_block_grad, AI(n), AI(m), AI(lds), AF(inv_tau), AP(lse), AP(tcol),
           AF(gscale), AP(s), AP(acc));
}
