/* bench_ops: the CPU backend's operations one by one, at the shapes of one
 * rank's step of the ML-1M configurations on 2 ranks (64 sequences of
 * lognormal(4.6, 1.0) lengths truncated to 200, d = 50, 1 head, 128
 * sampled negatives over 3416 items): milliseconds per call, the minimum
 * of REPS calls in CPU time of the process, BLAS and OpenMP on one thread (what a
 * loaded machine perturbs least), and
 * the calls a training step makes of each (2 layers), so that the table
 * reads as a profile of the step's compute.
 *   build: make bench/bench_ops      run: bench/bench_ops [REPS] [SEQS]    */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/backend_cpu.h"
#include "backend/blas.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/rng.h"

static struct rng g_rng;

static float *randf(int64_t n, float a)
{
    float *x = xmalloc((size_t)(n ? n : 1) * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(rng_uniform(&g_rng) * 2 - 1) * a;
    return x;
}

static int reps = 7;

/* CPU seconds of the process (all its threads): what time-sharing with
 * other processes perturbs least */
static double cpu_seconds(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t))
        fatal("clock_gettime: %s", strerror(errno));
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* the minimum over reps evaluations of expr, in CPU ms */
#define TIME(expr)                                                                        \
    ({                                                                                    \
        double best = 1e30;                                                               \
        for (int r_ = 0; r_ < reps; r_++) {                                               \
            double t0_ = cpu_seconds();                                                   \
            expr;                                                                         \
            double t_ = cpu_seconds() - t0_;                                              \
            best = t_ < best ? t_ : best;                                                 \
        }                                                                                 \
        best * 1e3;                                                                       \
    })

static double total;

static void row(const char *name, double ms, int per_step)
{
    total += ms * per_step;
    printf("%-28s %9.3f ms %4d x/step %9.2f ms/step\n", name, ms, per_step, ms * per_step);
}

int main(int argc, char **argv)
{
    blas_select(argv); /* the kernels the trainer uses */
    if (argc > 1)
        reps = atoi(argv[1]);
    const int64_t B = argc > 2 ? atoll(argv[2]) : 64;
    const int d = 50, R = 128, N = 200, L = 2;
    const int64_t items = 3416;
    const struct backend_ops *be = &backend_cpu;
    rng_init(&g_rng, rng_key(1, 2, 3));
    openblas_set_num_threads(1);
#ifdef _OPENMP
    omp_set_num_threads(1); /* as a rank of 2 on 2 cores */
#endif
    int64_t *off = xmalloc((size_t)(B + 1) * sizeof *off);
    off[0] = 0;
    for (int64_t b = 0; b < B; b++) {
        int64_t l = (int64_t)exp(4.6 + 1.0 * rng_normal(&g_rng));
        off[b + 1] = off[b] + (l < 2 ? 2 : l > N ? N : l);
    }
    const int64_t T = off[B];
    int64_t *ts = xmalloc((size_t)T * sizeof *ts);
    for (int64_t b = 0; b < B; b++) {
        int64_t t = 1000000000;
        for (int64_t i = off[b]; i < off[b + 1]; i++)
            ts[i] = t += (int64_t)rng_below(&g_rng, 200000);
    }
    uint64_t *keys = xmalloc((size_t)T * sizeof *keys);
    for (int64_t i = 0; i < T; i++)
        keys[i] = rng_u64(&g_rng);
    printf("bench_ops: %lld sequences, T = %lld tokens, d = %d, R = %d, %d reps (min)\n",
           (long long)B, (long long)T, d, R, reps);

    const int64_t td = T * d;
    float *x = randf(4 * td, 1), *y = randf(4 * td, 1), *dy = randf(4 * td, 1);
    float *dx = randf(4 * td, 1), *mean = randf(T, 1), *rstd = randf(T, 1);
    uint8_t *mask = xmalloc((size_t)td);
    row("layernorm_fwd [T,d]",
        TIME(be->layernorm_fwd(T, d, 1e-6f, x, NULL, NULL, y, mean, rstd)), 2 * L);
    row("layernorm_bwd [T,d]",
        TIME(be->layernorm_bwd(T, d, x, mean, rstd, NULL, dy, dx, NULL, NULL)), 2 * L);
    row("silu_fwd [4T,d]", TIME(be->silu_fwd(4 * td, x, y)), L);
    row("silu_bwd [4T,d]", TIME(be->silu_bwd(4 * td, x, dy, dx)), L);
    row("dropout_fwd [T,d]", TIME(be->dropout_fwd(T, d, 0.2f, keys, 1, x, y, mask)), L + 1);
    row("dropout_bwd [T,d]", TIME(be->dropout_bwd(T, d, 0.2f, mask, dy, dx)), L + 1);
    row("mul [T,d]", TIME(be->mul(td, x, y, dx)), 3 * L);
    row("axpy [T,d]", TIME(be->axpy(td, 0.5f, x, y)), L + 1);
    row("l2norm_fwd [T,d]", TIME(be->l2norm_fwd(T, d, 1e-6f, x, y, mean)), 1);
    row("l2norm_bwd [T,d]", TIME(be->l2norm_bwd(T, d, y, mean, dy, dx)), 1);
    float *w4 = randf((int64_t)d * 4 * d, 0.1f);
    row("gemm [T,d]x[d,4d]", TIME(be->gemm(0, 0, T, 4 * d, d, 1, x, d, w4, 4 * d, 0, y, 4 * d)),
        L);
    row("gemm [T,d]x[d,d]", TIME(be->gemm(0, 0, T, d, d, 1, x, d, w4, d, 0, y, d)), 9 * L);
    /* SASRec's linear layers start y at the bias' rows: once a rank-1 GEMM
     * 1 b (beta 0), now the rows gathered (model_sasrec.c linear_fwd) */
    float *ones = randf(T, 0);
    int64_t *zeros = xmalloc((size_t)T * sizeof *zeros);
    for (int64_t i = 0; i < T; i++) {
        ones[i] = 1.0f;
        zeros[i] = 0;
    }
    const double r1 = TIME(be->gemm(0, 0, T, d, 1, 1, ones, 1, w4, d, 0, y, d));
    row("bias rows: rank-1 gemm (was)", r1, 0);
    const double g0 = TIME(be->gather_rows(T, d, w4, zeros, y));
    row("bias rows: gather_rows", g0, 0);
    printf("%-28s %9.2f x (SASRec: 6 a layer)\n", "bias rows: gemm / gather", r1 / g0);

    /* attention: q, k, v [T, d] */
    float *q = randf(td, 0.3f), *k = randf(td, 0.3f), *v = randf(td, 0.3f);
    float *out = randf(td, 1), *dq = randf(td, 1), *dk = randf(td, 1), *dv = randf(td, 1);
    float *pb = randf(2 * N - 1, 0.03f), *tb = randf(HSTU_TIME_BUCKETS + 1, 0.03f);
    float *dpb = randf(2 * N - 1, 0), *dtb = randf(HSTU_TIME_BUCKETS + 1, 0);
    float *lse = randf(T, 1);
    /* the backend keeps a call's time buckets for the next call with the
     * same offsets and timestamps (a step's other calls): the step's first
     * forward computes them (timestamps that change from call to call
     * here), its other calls read them */
    int64_t *ts2 = xmalloc((size_t)T * sizeof *ts2);
    memcpy(ts2, ts, (size_t)T * sizeof *ts2);
    ts2[0]++;
    int flip = 0;
    row("hstu_attn_fwd (new timestamps)",
        TIME(be->hstu_attn_fwd(B, off, 1, d, d, N, q, k, v, pb, tb, (flip ^= 1) ? ts2 : ts, out)),
        1);
    row("hstu_attn_fwd", TIME(be->hstu_attn_fwd(B, off, 1, d, d, N, q, k, v, pb, tb, ts, out)),
        L - 1);
    row("hstu_attn_bwd", TIME(be->hstu_attn_bwd(B, off, 1, d, d, N, q, k, v, pb, tb, ts, dy, dq,
                                                  dk, dv, dpb, dtb)),
        L);
    row("sasrec_attn_fwd (no step)",
        TIME(be->sasrec_attn_fwd(B, off, 1, d, N, q, k, v, out, lse)), 0);
    row("sasrec_attn_bwd (no step)",
        TIME(be->sasrec_attn_bwd(B, off, 1, d, N, q, k, v, out, lse, dy, dq, dk, dv)), 0);

    /* the loss against nu unique rows */
    const int64_t nu = items;
    float *rows = randf(nu * d, 0.1f), *drows = randf(nu * d, 0);
    int64_t *pos = xmalloc((size_t)T * sizeof *pos), *neg = xmalloc((size_t)(T * R) * 8);
    for (int64_t i = 0; i < T; i++)
        pos[i] = (int64_t)rng_below(&g_rng, (uint64_t)nu);
    for (int64_t i = 0; i < T * R; i++)
        neg[i] = (int64_t)rng_below(&g_rng, (uint64_t)nu);
    double acc[2] = {0, 0};
    row("softmax_loss R=128", TIME(be->softmax_loss(T, d, R, 20.0f, y, nu, rows, pos, neg,
                                                     1e-4f, dx, drows, acc)),
        1);
    int64_t cnt = 0;
    row("softmax_loss (its reference)",
        TIME(cpu_softmax_loss_ref(T, d, R, 20.0f, y, nu, rows, NULL, pos, neg, 1e-4f, dx, drows,
                                  &cnt)),
        0);
    /* train.shared_negatives = S: the same loss with each block of S
     * positions of a sequence sharing the first one's negatives */
    int64_t *negs = xmalloc((size_t)(T * R) * 8);
    static const int shared[] = {8, 16, 64};
    for (size_t k = 0; k < sizeof shared / sizeof *shared; k++) {
        const int S = shared[k];
        char name[64];
        for (int64_t b = 0; b < B; b++)
            for (int64_t t = off[b]; t < off[b + 1]; t++)
                memcpy(negs + t * R, neg + (off[b] + (t - off[b]) / S * S) * R, (size_t)R * 8);
        snprintf(name, sizeof name, "softmax_loss shared %d (no step)", S);
        row(name, TIME(be->softmax_loss_shared(T, d, R, 20.0f, y, nu, rows, NULL, pos, negs,
                                               1e-4f, dx, drows, acc)),
            0);
    }
    row("sample_negatives T x R", TIME(be->sample_negatives(1, 0, keys, T, R, items, negs)), 1);
    uint64_t *skeys = xmalloc((size_t)T * sizeof *skeys); /* blocks of 64: shared keys */
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = off[b]; t < off[b + 1]; t++)
            skeys[t] = keys[off[b] + (t - off[b]) / 64 * 64];
    row("sample_negatives shared 64",
        TIME(be->sample_negatives(1, 0, skeys, T, R, items, negs)), 0);
    free(skeys);
    free(negs);
    row("bce_loss (no step)",
        TIME(be->bce_loss(T, d, y, nu, rows, pos, neg, 1e-4f, dx, drows, acc)), 0);
    row("scatter_add_rows [T,d]", TIME(be->scatter_add_rows(T, d, dx, pos, drows)), 2);
    row("gather_rows [T,d]", TIME(be->gather_rows(T, d, rows, pos, y)), 2);

    /* the embedding engine: the step's ids (inputs, targets, negatives) */
    const int64_t n = T * (2 + R);
    int64_t *ids = xmalloc((size_t)n * sizeof *ids), *uniq = xmalloc((size_t)n * 8);
    int64_t *inv = xmalloc((size_t)n * 8), counts[4];
    for (int64_t i = 0; i < n; i++)
        ids[i] = 1 + (int64_t)rng_below(&g_rng, (uint64_t)items);
    row("emb_dedup T(2+R) ids, G=2", TIME(be->emb_dedup(n, ids, T, 2, uniq, inv, counts, 0)), 1);
    printf("%-28s %36.2f ms/step (the ops above, 2 layers)\n", "total", total);

    /* train.loss = full (model/loss_full.c) instead of the sampled loss: the
     * group's ng = 2 T positions (2 ranks) against this rank's shard of
     * m = items / 2 rows, in blocks of cp = LOSS_FULL_LOGITS / m positions:
     * per block the logits' GEMM, the log-sum-exp, the logits' gradient and
     * its two GEMMs (as loss_full.c with one item block) */
    const int64_t m = items / 2 + 1, cp = ((int64_t)1 << 22) / m, ng = 2 * T;
    const int blocks = (int)((ng + cp - 1) / cp);
    float *U = randf(cp * d, 0.3f), *E = randf(m * d, 0.15f), *S = randf(cp * m, 0);
    float *lsev = randf(cp, 0), *du = randf(cp * d, 0), *de = randf(m * d, 0);
    int64_t *tcol = xmalloc((size_t)cp * sizeof *tcol);
    for (int64_t i = 0; i < cp; i++)
        tcol[i] = (int64_t)rng_below(&g_rng, (uint64_t)m);
    printf("full softmax: ng = %lld positions, shard m = %lld rows, %d blocks of %lld\n",
           (long long)ng, (long long)m, blocks, (long long)cp);
    double ft = 0, t;
    ft += t = TIME(be->gemm(0, 1, cp, m, d, 1, U, d, E, d, 0, S, m));
    row("full: gemm U E^T [cp,m]", t, blocks);
    const double gemm_ms = t;
    ft += t = TIME(be->softmax_block_lse(cp, m, m, 20.0f, S, lsev));
    row("full: softmax_block_lse", t, blocks);
    ft += t = TIME(cpu_softmax_block_lse_ref(cp, m, m, 20.0f, S, lsev));
    row("full: (its reference)", t, 0);
    ft -= t;
    double tsum = 0;
    ft += t = TIME(be->softmax_block_grad(cp, m, m, 20.0f, lsev, tcol, 1e-5f, S, &tsum));
    row("full: softmax_block_grad", t, blocks);
    ft += t = TIME(cpu_softmax_block_grad_ref(cp, m, m, 20.0f, lsev, tcol, 1e-5f, S, &tsum));
    row("full: (its reference)", t, 0);
    ft -= t;
    ft += t = TIME(be->gemm(0, 0, cp, d, m, 1, S, m, E, d, 0, du, d));
    row("full: gemm dS E [cp,d]", t, blocks);
    ft += t = TIME(be->gemm(1, 0, m, d, cp, 1, S, m, U, d, 1, de, d));
    row("full: gemm dS^T U [m,d]", t, blocks);
    const double flop = 6.0 * (double)cp * (double)m * d;
    printf("full softmax: %.2f ms/step, %.1f GFLOP/s (3 GEMMs' FLOPs over the block's time; "
           "the logits' GEMM alone %.1f GFLOP/s)\n",
           ft * blocks, flop / (ft * 1e6), flop / 3 / (gemm_ms * 1e6));
    return 0;
}
