/* flops_mlperf: the FLOP count of MLPerf Training DLRMv4 (HSTU ranking;
 * mlcommons/training recommendation/README.MD, "Computation cost
 * analysis", and _hstu_layer_flops in its modules/dlrm_hstu.py), beside
 * the trainer's own (balance/cost.h). Per STU layer and sample of s
 * positions, forward and backward:
 *   UVQK projection     3 * 2 * s * D * H (2 dqk + 2 dv)
 *   causal attention    3.5 * 2 * (s^2 / 2) * H (dqk + dv)
 *   output projection   3 * 2 * s * (3 H dv) * D
 * (x3: a weight GEMM's backward is two GEMMs; x3.5: attention's backward
 * is about five GEMMs to its forward's two; 3 H dv: the benchmark's output
 * projection reads the attention output, U and the layer input). Times the
 * layers, summed over the samples: linear in sum s and sum s^2. At S = 4096,
 * D = 512, H = 4, dqk = dv = 128, 3 layers: 315.7 GFLOP per sample
 * (doc/ranking.md, "The benchmark's FLOP count"). */
#ifndef FS_FLOPS_MLPERF_H
#define FS_FLOPS_MLPERF_H

/* The count's two coefficients: FLOPs per position (the projections) and
 * per squared sample length (the attention). */
struct flops_mlperf {
    double per_token, per_square;
};

/* The coefficients of a model of width d, `heads` heads of qk_dim and
 * v_dim each, and `layers` STU layers. */
void flops_mlperf_init(struct flops_mlperf *f, int d, int heads, int qk_dim, int v_dim,
                       int layers);

/* FLOPs of samples whose lengths s_i sum to `tokens` and whose squares
 * sum to `squares`. */
double flops_mlperf_count(const struct flops_mlperf *f, double tokens, double squares);

/* FLOPs of one sample of length s. */
double flops_mlperf_sample(const struct flops_mlperf *f, double s);

/* Sum s^2 of samples from their tokens (sum s) and their causal attention
 * pairs (sum s (s + 1) / 2), as the planner counts them (train/planner.h). */
double flops_mlperf_squares(double tokens, double pairs);

#endif
