/* placeholder, replaced by the implementation */
#include "backend_cpu.h"
#include "log.h"
void cpu_hstu_attn_fwd(int64_t B, const int64_t *offsets, int H, int dqk, int dv, int N,
                       const float *q, const float *k, const float *v, const float *pos_bias,
                       const float *time_bias, const int64_t *ts, float *out)
{ (void)B; (void)offsets; (void)H; (void)dqk; (void)dv; (void)N; (void)q; (void)k; (void)v; (void)pos_bias; (void)time_bias; (void)ts; (void)out; fatal("placeholder"); }
void cpu_hstu_attn_bwd(int64_t B, const int64_t *offsets, int H, int dqk, int dv, int N,
                       const float *q, const float *k, const float *v, const float *pos_bias,
                       const float *time_bias, const int64_t *ts, const float *dout, float *dq,
                       float *dk, float *dvv, float *dpos_bias, float *dtime_bias)
{ (void)B; (void)offsets; (void)H; (void)dqk; (void)dv; (void)N; (void)q; (void)k; (void)v; (void)pos_bias; (void)time_bias; (void)ts; (void)dout; (void)dq; (void)dk; (void)dvv; (void)dpos_bias; (void)dtime_bias; fatal("placeholder"); }
