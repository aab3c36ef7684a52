/* placeholder, replaced by the implementation */
#include "backend_cpu.h"
#include "log.h"
void cpu_sasrec_attn_fwd(int64_t B, const int64_t *offsets, int H, int dh, const float *q,
                         const float *k, const float *v, float *out, float *lse)
{ (void)B; (void)offsets; (void)H; (void)dh; (void)q; (void)k; (void)v; (void)out; (void)lse; fatal("placeholder"); }
void cpu_sasrec_attn_bwd(int64_t B, const int64_t *offsets, int H, int dh, const float *q,
                         const float *k, const float *v, const float *out, const float *lse,
                         const float *dout, float *dq, float *dk, float *dv)
{ (void)B; (void)offsets; (void)H; (void)dh; (void)q; (void)k; (void)v; (void)out; (void)lse; (void)dout; (void)dq; (void)dk; (void)dv; fatal("placeholder"); }
