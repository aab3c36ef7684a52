/* bench_full: train.loss = full's model/loss_full.c at the shapes of an
 * ML-1M step (HSTU: d = 50, 3416 items, L2-normalised rows, temperature
 * 0.05, ~14.7k supervised positions a step over all ranks), on P ranks
 * (mpirun -np P; the table sharded over the P ranks as in training): the
 * milliseconds of one call in CPU time of the rank (BLAS and OpenMP on
 * the trainer's threads: one per rank when the ranks fill the cores; what
 * a loaded machine perturbs least), the minimum over REPS calls after a
 * warm-up, the largest over the ranks, and its GEMM rate: the 3 GEMMs of
 * ng x I/P x d that one call makes per rank (6 ng I d / P FLOPs) over
 * that time, beside the rank's fp32 gemm
 * rate on [512, 512] x [512, 512] measured the trainer's way (the best of
 * 5 after a warm-up; backend/peak.c). It builds against older trees too
 * (loss_full_softmax's interface is that of c0a1225), for before/after.
 *   build: make bench/bench_full     run: mpirun -np 2 bench/bench_full [REPS] [NG] */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/blas.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/rng.h"
#include "comm/comm.h"
#include "model/loss_full.h"

/* GFLOP/s of be->gemm on [512, 512] x [512, 512]: the best of 5 after a warm-up */
static double gemm_rate(const struct backend_ops *be)
{
    const int64_t n = 512;
    float *a = xmalloc((size_t)(n * n) * sizeof *a), *cm = xmalloc((size_t)(n * n) * sizeof *cm);
    for (int64_t i = 0; i < n * n; i++)
        a[i] = (float)(i % 13) * 0.01f - 0.06f;
    double best = 0;
    for (int rep = 0; rep < 6; rep++) {
        const double t0 = clock_seconds();
        be->gemm(0, 0, n, n, n, 1.0f, a, n, a, n, 0.0f, cm, n);
        const double dt = clock_seconds() - t0;
        if (rep > 0 && dt > 0 && 2.0 * (double)(n * n * n) / dt > best)
            best = 2.0 * (double)(n * n * n) / dt;
    }
    free(a);
    free(cm);
    return best / 1e9;
}

/* CPU seconds of the process (all its threads) */
static double cpu_seconds(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t))
        fatal("clock_gettime: %s", strerror(errno));
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    struct comm c;
    comm_init(&c, &argc, &argv);
    const int reps = argc > 1 ? atoi(argv[1]) : 7;
    const int64_t N = argc > 2 ? atoll(argv[2]) : 14664, I = 3416;
    const int d = 50, P = c.size, me = c.rank;
    char err[256];
    if (reps < 1 || N < 1 || comm_setup_groups(&c, 0, err, sizeof err))
        fatal("usage: mpirun -np P bench_full [REPS >= 1] [POSITIONS >= 1] (%s)",
              reps < 1 || N < 1 ? "bad arguments" : err);
    blas_set_threads(c.g[COMM_NODE].size); /* the trainer's threads per rank */
    const struct backend_ops *be = &backend_cpu;
    const double peak = gemm_rate(be);
    struct rng g;
    rng_init(&g, rng_key(5, (uint64_t)N, (uint64_t)I));
    const int64_t p0 = N * me / P, T = N * (me + 1) / P - p0;
    float *u = xmalloc((size_t)(T ? T : 1) * d * sizeof *u);
    float *du = xmalloc((size_t)(T ? T : 1) * d * sizeof *du);
    int64_t *tgt = xmalloc((size_t)(T ? T : 1) * sizeof *tgt);
    for (int64_t i = 0; i < T; i++) {
        double n2 = 0;
        for (int k = 0; k < d; k++) {
            u[i * d + k] = (float)rng_normal(&g);
            n2 += (double)u[i * d + k] * u[i * d + k];
        }
        for (int k = 0; k < d; k++)
            u[i * d + k] = (float)(u[i * d + k] / sqrt(n2));
        tgt[i] = 1 + (int64_t)rng_below(&g, (uint64_t)I);
    }
    const int64_t m = loss_full_shard_ids(P, me, I, NULL);
    int64_t *idx = xmalloc((size_t)(m ? m : 1) * sizeof *idx);
    float *rows = xmalloc((size_t)(m ? m : 1) * d * sizeof *rows);
    float *drows = xcalloc((size_t)(m ? m : 1) * d, sizeof *drows);
    for (int64_t j = 0; j < m; j++) {
        idx[j] = j;
        for (int k = 0; k < d; k++)
            rows[j * d + k] = (float)rng_normal(&g) * 0.3f;
    }
    const struct loss_full_shard sh = {.G = P, .shard = me, .num_items = I, .m = m, .idx = idx};
    double best = 1e30, wall = 1e30;
    for (int r = -1; r < reps; r++) { /* r = -1: the warm-up */
        comm_barrier(&c);
        const double t0 = cpu_seconds(), w0 = clock_seconds();
        int64_t count;
        loss_full_softmax(be, &c, T, d, 0.05f, 1, u, tgt, m, rows, &sh, 1.0f / (float)N, du,
                          drows, &count);
        const double dt = cpu_seconds() - t0, dw = clock_seconds() - w0;
        comm_barrier(&c);
        if (r >= 0 && dt < best)
            best = dt;
        if (r >= 0 && dw < wall)
            wall = dw;
    }
    best = comm_allreduce_max_f64(&c, COMM_DP, best);
    wall = comm_allreduce_max_f64(&c, COMM_DP, wall);
    const double flop = 6.0 * (double)N * (double)m * d;
    if (me == 0)
        printf("bench_full: %d ranks, %lld positions, %lld items (%lld a shard), d = %d: %.1f ms "
               "of CPU a call (min of %d; wall %.1f ms), GEMMs %.1f GFLOP/s per rank = %.0f%% "
               "of its fp32 gemm rate %.1f GFLOP/s\n",
               P, (long long)N, (long long)I, (long long)m, d, best * 1e3, reps, wall * 1e3,
               flop / best / 1e9, 100.0 * flop / best / 1e9 / peak, peak);
    free(u), free(du), free(tgt), free(idx), free(rows), free(drows);
    comm_free(&c);
    return 0;
}
