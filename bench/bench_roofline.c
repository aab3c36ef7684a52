/* bench_roofline: the two rates the roofline of the training step divides
 * by (bench/roofline.sh, doc/benchmarks.md): one core's memory bandwidth
 * (a STREAM triad, a[i] = b[i] + s c[i], counted as 3 arrays of n floats
 * moved) and one core's sgemm rate at given shapes, through the trainer's
 * OpenBLAS kernels (blas_select) on one thread. Each figure is the best of
 * REPS timed rounds in CPU time of the process (what time-sharing with other
 * processes perturbs least), a round repeating the kernel until it has run
 * >= 20 ms. One line per argument:
 *   triad:BYTES          -> "triad BYTES GB/s"        (3 arrays of BYTES / 3 in all)
 *   gemm:TA,TB,M,N,K     -> "gemm TA,TB,M,N,K GFLOP/s" (C[M,N] = op(A) op(B), k = K)
 * and first "blas DESCRIPTION" (the OpenBLAS kernels).
 *   build: make bench/bench_roofline
 *   run:   bench/bench_roofline triad:201326592 gemm:0,0,7000,50,50 ...            */
#include <cblas.h>
#include <errno.h>
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

#define REPS 5
#define ROUND_S 0.02

static double cpu_seconds(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t))
        fatal("clock_gettime: %s", strerror(errno));
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *filled(size_t n, float a)
{
    float *x = xmalloc((n ? n : 1) * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = a * (float)(i % 17) - 0.5f;
    return x;
}

/* a[i] = b[i] + s c[i]; kept out of line so the loop is the measured one */
static __attribute__((noinline)) void triad(size_t n, float *a, const float *b, const float *c,
                                            float s)
{
    for (size_t i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}

/* the best seconds of one call of the round's body (calls per round
 * doubled until a round runs ROUND_S) */
#define BEST_SECONDS(body)                                                                 \
    ({                                                                                     \
        long calls_ = 1;                                                                   \
        double best_ = 1e30;                                                               \
        for (int r_ = 0; r_ < REPS;) {                                                     \
            double t0_ = cpu_seconds();                                                    \
            for (long i_ = 0; i_ < calls_; i_++)                                           \
                body;                                                                      \
            double t_ = cpu_seconds() - t0_;                                               \
            if (t_ < ROUND_S && calls_ < (1L << 30)) {                                     \
                calls_ *= 2;                                                               \
                continue;                                                                  \
            }                                                                              \
            if (t_ / (double)calls_ < best_)                                               \
                best_ = t_ / (double)calls_;                                               \
            r_++;                                                                          \
        }                                                                                  \
        best_;                                                                             \
    })

static int run_triad(const char *spec)
{
    char *end;
    errno = 0;
    long long bytes = strtoll(spec, &end, 10);
    if (errno || *end || bytes < 3 * 64) {
        fprintf(stderr, "bench_roofline: triad:%s: give the bytes of the 3 arrays (>= 192)\n",
                spec);
        return 2;
    }
    size_t n = (size_t)bytes / 3 / sizeof(float);
    float *a = filled(n, 0.0f), *b = filled(n, 0.01f), *c = filled(n, 0.02f);
    triad(n, a, b, c, 0.5f); /* touch every page */
    double s = BEST_SECONDS(triad(n, a, b, c, 0.5f + (float)(i_ & 1)));
    printf("triad %lld %.2f\n", bytes, 3.0 * (double)n * sizeof(float) / s / 1e9);
    free(a);
    free(b);
    free(c);
    return 0;
}

static int run_gemm(const char *spec)
{
    long long v[5];
    int used = 0;
    if (sscanf(spec, "%lld,%lld,%lld,%lld,%lld%n", &v[0], &v[1], &v[2], &v[3], &v[4], &used) != 5 ||
        spec[used] || v[0] < 0 || v[0] > 1 || v[1] < 0 || v[1] > 1 || v[2] < 1 || v[3] < 1 ||
        v[4] < 1) {
        fprintf(stderr, "bench_roofline: gemm:%s: give TA,TB,M,N,K (TA, TB 0 or 1; M, N, K >= 1)\n",
                spec);
        return 2;
    }
    const int ta = (int)v[0], tb = (int)v[1];
    const int64_t M = v[2], N = v[3], K = v[4];
    float *A = filled((size_t)(M * K), 0.01f), *B = filled((size_t)(K * N), 0.02f);
    float *C = filled((size_t)(M * N), 0.0f);
    const struct backend_ops *be = &backend_cpu;
    /* row-major as the backend's gemm: op(A) [M, K], op(B) [K, N] */
    const int64_t lda = ta ? M : K, ldb = tb ? K : N;
    double s = BEST_SECONDS(be->gemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, N));
    printf("gemm %d,%d,%lld,%lld,%lld %.2f\n", ta, tb, (long long)M, (long long)N, (long long)K,
           2.0 * (double)M * (double)N * (double)K / s / 1e9);
    free(A);
    free(B);
    free(C);
    return 0;
}

int main(int argc, char **argv)
{
    blas_select(argv); /* the kernels the trainer uses */
    openblas_set_num_threads(1);
#ifdef _OPENMP
    omp_set_num_threads(1); /* a rank of 2 on 2 cores */
#endif
    if (argc < 2) {
        fprintf(stderr, "usage: bench_roofline triad:BYTES | gemm:TA,TB,M,N,K ...\n");
        return 2;
    }
    char desc[256];
    blas_describe(desc, sizeof desc);
    printf("blas %s\n", desc);
    for (int i = 1; i < argc; i++) {
        int rc;
        if (!strncmp(argv[i], "triad:", 6))
            rc = run_triad(argv[i] + 6);
        else if (!strncmp(argv[i], "gemm:", 5))
            rc = run_gemm(argv[i] + 5);
        else {
            fprintf(stderr, "bench_roofline: '%s' is not triad:BYTES or gemm:TA,TB,M,N,K\n",
                    argv[i]);
            rc = 2;
        }
        if (rc)
            return rc;
        fflush(stdout);
    }
    return 0;
}
