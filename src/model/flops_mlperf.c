/* flops_mlperf: MLPerf DLRMv4's FLOP count of an HSTU stack; see
 * flops_mlperf.h. */
#include "model/flops_mlperf.h"

void flops_mlperf_init(struct flops_mlperf *f, int d, int heads, int qk_dim, int v_dim,
                       int layers)
{
    const double D = d, H = heads, qk = qk_dim, v = v_dim, L = layers;
    const double uvqk = 3.0 * 2.0 * D * H * (2.0 * qk + 2.0 * v); /* per position */
    const double out = 3.0 * 2.0 * (3.0 * H * v) * D;               /* per position */
    const double attn = 3.5 * 2.0 * 0.5 * H * (qk + v);             /* per s^2 */
    f->per_token = L * (uvqk + out);
    f->per_square = L * attn;
}

double flops_mlperf_count(const struct flops_mlperf *f, double tokens, double squares)
{
    return f->per_token * tokens + f->per_square * squares;
}

double flops_mlperf_sample(const struct flops_mlperf *f, double s)
{
    return flops_mlperf_count(f, s, s * s);
}

double flops_mlperf_squares(double tokens, double pairs)
{
    return 2.0 * pairs - tokens;
}
