/* backend_cpu: the CPU implementations of the attention operations, defined
 * in their own files and gathered into the backend_cpu table (backend.h). */
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
void cpu_sasrec_attn_fwd(int64_t B, const int64_t *offsets, int H, int dh, const float *q,
                         const float *k, const float *v, float *out, float *lse);
void cpu_sasrec_attn_bwd(int64_t B, const int64_t *offsets, int H, int dh, const float *q,
                         const float *k, const float *v, const float *out, const float *lse,
                         const float *dout, float *dq, float *dk, float *dv);

#endif
