/* backend_cuda_ctx: the CUDA backend's entries for the context-parallel
 * attention (parallel.split_long: attn_ctx.cu) and the full and
 * logQ-corrected softmax (train.loss = full: loss_full.cu; in-batch
 * negatives: loss.cu), in the ops table of backend_cuda.c. */
#include <stdint.h>

#include "base/check.h"
#include "cuda/cuda_priv.h"

void cuda_op_hstu_attn_ctx_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                               const int64_t *key_off, int keys, int H, int dqk, int dv,
                               int N, const float *q, const float *kb, const float *vb,
                               const float *pos_bias, const float *time_bias,
                               const int64_t *key_ts, float *out)
{
    cuda_hstu_attn_ctx_fwd(cuda_state()->compute, B, offsets, pos0, key_off, keys, H, dqk, dv, N,
                           q, kb, vb, pos_bias, time_bias, key_ts, out);
}

void cuda_op_hstu_attn_ctx_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                               const int64_t *key_off, int keys, int H, int dqk, int dv,
                               int N, const float *q, const float *kb, const float *vb,
                               const float *pos_bias, const float *time_bias,
                               const int64_t *key_ts, const float *dout, float *dq,
                               float *dkb, float *dvb, float *dpos_bias, float *dtime_bias)
{
    struct cuda_state *st = cuda_state();
    cuda_hstu_attn_ctx_bwd(st->compute, B, offsets, pos0, key_off, keys, H, dqk, dv, N, q, kb, vb,
                           pos_bias, time_bias, key_ts, dout, dq, dkb, dvb, dpos_bias, dtime_bias,
                           cuda_ws_get(st, cuda_hstu_attn_ctx_bwd_ws_bytes(H, N)));
}

void cuda_op_sasrec_attn_ctx_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                                 const int64_t *key_off, int keys, int H, int dh,
                                 const float *q, const float *kb, const float *vb,
                                 float *out, float *lse)
{
    cuda_sasrec_attn_ctx_fwd(cuda_state()->compute, B, offsets, pos0, key_off, keys, H, dh, q, kb,
                             vb, out, lse);
}

void cuda_op_sasrec_attn_ctx_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                                 const int64_t *key_off, int keys, int H, int dh,
                                 const float *q, const float *kb, const float *vb,
                                 const float *out, const float *lse, const float *dout,
                                 float *dq, float *dkb, float *dvb)
{
    cuda_sasrec_attn_ctx_bwd(cuda_state()->compute, B, offsets, pos0, key_off, keys, H, dh, q, kb,
                             vb, out, lse, dout, dq, dkb, dvb);
}

void cuda_op_softmax_loss_q(int64_t T, int d, int R, float inv_tau, const float *u,
                            int64_t nu, const float *e, const float *logq,
                            const int64_t *pos, const int64_t *neg, float scale, float *du,
                            float *de, double *acc)
{
    struct cuda_state *st = cuda_state();
    if (d < 1 || R < 0 || T < 0 || !(inv_tau > 0))
        fatal("backend cuda: softmax_loss_q: bad arguments T = %lld, d = %d, R = %d, "
              "inv_tau = %g",
              (long long)T, d, R, (double)inv_tau);
    cuda_softmax_loss_q(st->compute, T, d, R, inv_tau, u, nu, e, logq, pos, neg, scale, du, de,
                        acc, cuda_ws_get(st, cuda_loss_ws_bytes(T, R)));
}

void cuda_op_softmax_block_lse(int64_t n, int64_t m, int64_t lds, float inv_tau,
                               const float *s, float *lse)
{
    cuda_softmax_block_lse(cuda_state()->compute, n, m, lds, inv_tau, s, lse);
}

void cuda_op_softmax_block_grad(int64_t n, int64_t m, int64_t lds, float inv_tau,
                                const float *lse, const int64_t *tcol, float gscale, float *s,
                                double *acc)
{
    struct cuda_state *st = cuda_state();
    cuda_softmax_block_grad(st->compute, n, m, lds, inv_tau, lse, tcol, gscale, s, acc,
                            cuda_ws_get(st, cuda_softmax_block_grad_ws_bytes(n)));
}
