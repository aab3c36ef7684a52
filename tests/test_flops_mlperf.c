/* test_flops_mlperf: MLPerf DLRMv4's FLOP count (src/model/flops_mlperf.c)
 * against the figures its README prints (mlcommons/training
 * recommendation/README.MD, "Computation cost analysis"): at S = 4096,
 * D = 512, 4 heads, qk = v = 128, 3 layers, 315.7 GFLOP per sample, of
 * which attention 180.4, UVQK 77.3 and the output projection 58.0 (each to
 * the printed digit), 57% attention, and 323.26 TFLOP a step of 1024
 * samples; then the count's shape: at S / 2 the projections halve and the
 * attention quarters, a batch's count is the sum of its samples', and the
 * sum of squares from tokens and causal pairs is exact.
 *   test_flops_mlperf   exit 0 pass, 1 fail */
#include <math.h>
#include <stdio.h>

#include "model/flops_mlperf.h"

static int failures;

static void expect(int ok, const char *what, double got, double want)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s: %.6f, expected %.6f\n", what, got, want);
        failures++;
    } else {
        printf("ok: %s: %.6f\n", what, got);
    }
}

/* got rounds to `want` at `digits` decimals */
static void printed(const char *what, double got, double want, int digits)
{
    const double u = pow(10.0, digits);
    expect(fabs(round(got * u) - round(want * u)) < 0.5, what, got, want);
}

int main(void)
{
    struct flops_mlperf f;
    flops_mlperf_init(&f, 512, 4, 128, 128, 3);
    const double S = 4096;
    const double total = flops_mlperf_sample(&f, S) / 1e9;
    const double attn = f.per_square * S * S / 1e9;
    printed("GFLOP per sample at S = 4096", total, 315.7, 1);
    printed("attention GFLOP per sample", attn, 180.4, 1);
    /* the projections apart: the UVQK term as the README writes it, 3 layers of
     * 3 * 2 * S * D * H (2 qk + 2 v); the output projection is the rest */
    const double uvqk = 3 * 6.0 * 512 * 4 * (2 * 128 + 2 * 128) * S / 1e9;
    printed("UVQK GFLOP per sample", uvqk, 77.3, 1);
    printed("output projection GFLOP per sample", total - attn - uvqk, 58.0, 1);
    printed("attention share (%)", 100 * attn / total, 57, 0);
    printed("TFLOP per step of 1024 samples", 1024 * total / 1e3, 323.26, 2);
    /* S / 2: projections halve, attention quarters */
    const double half = flops_mlperf_sample(&f, S / 2) / 1e9;
    expect(fabs(half - ((total - attn) / 2 + attn / 4)) < 1e-9 * total,
           "GFLOP per sample at S = 2048", half, (total - attn) / 2 + attn / 4);
    /* a batch of lengths 7, 100, 4096: its tokens and causal pairs */
    const double s[3] = {7, 100, 4096};
    double tokens = 0, pairs = 0, sum = 0, sq = 0;
    for (int i = 0; i < 3; i++) {
        tokens += s[i];
        pairs += 0.5 * s[i] * (s[i] + 1);
        sq += s[i] * s[i];
        sum += flops_mlperf_sample(&f, s[i]);
    }
    expect(flops_mlperf_squares(tokens, pairs) == sq, "sum s^2 from tokens and pairs",
           flops_mlperf_squares(tokens, pairs), sq);
    const double batch = flops_mlperf_count(&f, tokens, flops_mlperf_squares(tokens, pairs));
    expect(fabs(batch - sum) <= 1e-12 * sum, "a batch's FLOPs: the sum of its samples'", batch,
           sum);
    /* layers scale the count; a zero-length sample counts nothing */
    struct flops_mlperf six;
    flops_mlperf_init(&six, 512, 4, 128, 128, 6);
    expect(fabs(flops_mlperf_sample(&six, S) - 2 * flops_mlperf_sample(&f, S)) < 1e-3,
           "6 layers: twice 3", flops_mlperf_sample(&six, S) / 1e9, 2 * total);
    expect(flops_mlperf_sample(&f, 0) == 0, "S = 0", flops_mlperf_sample(&f, 0), 0);
    return failures ? 1 : 0;
}
