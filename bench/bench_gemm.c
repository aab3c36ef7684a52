/* bench_gemm: the matrix peak a backend reaches here, the baseline that
 * bench/bench_gpu.sh divides training throughput by. For the CUDA backend
 * (when compiled in and a GPU is visible) it times an n^3 float GEMM through
 * be->gemm with TF32 off and on, and gemm_bf16; for the CPU backend through
 * OpenBLAS.
 * Prints the median of 9 runs (after 2 warm-ups) in GFLOP/s, one line per
 * setting:  "cuda fp32 N GFLOP/s", "cuda tf32 ...", "cuda bf16 ...", "cpu fp32 ...".
 *   build: make bench/bench_gemm      run: bench/bench_gemm [cpu|cuda] [n] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/clock.h"

#define RUNS 9

static double gemm_gflops(const struct backend_ops *be, int n)
{
    size_t bytes = (size_t)n * (size_t)n * sizeof(float);
    float *h = malloc(bytes);
    if (!h) {
        fprintf(stderr, "bench_gemm: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < (size_t)n * n; i++)
        h[i] = (float)(i % 7) * 0.1f;
    float *a = be->alloc(bytes), *b = be->alloc(bytes), *c = be->alloc(bytes);
    be->to_device(a, h, bytes);
    be->to_device(b, h, bytes);
    double t[RUNS];
    for (int r = -2; r < RUNS; r++) {
        be->synchronize();
        double t0 = clock_seconds();
        be->gemm(0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        be->synchronize();
        if (r >= 0)
            t[r] = clock_seconds() - t0;
    }
    for (int i = 1; i < RUNS; i++) /* insertion sort: the median */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    be->free(a);
    be->free(b);
    be->free(c);
    free(h);
    return 2.0 * n * (double)n * n / t[RUNS / 2] / 1e9;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "cuda";
    int n = argc > 2 ? atoi(argv[2]) : 8192;
    if (n < 16) {
        fprintf(stderr, "usage: bench_gemm [cpu|cuda] [n >= 16]\n");
        return 2;
    }
    char err[512];
    const struct backend_ops *be = backend_get(name, err, sizeof err);
    if (!be) {
        printf("bench_gemm: %s\n", err);
        return 77;
    }
    if (!backend_is_host(be)) {
        int count = be->device_count(err, sizeof err);
        if (count <= 0) {
            printf("bench_gemm: no GPU: %s\n", count < 0 ? err : "none visible");
            return 77;
        }
        for (int tf32 = 0; tf32 <= 1; tf32++) {
            if (be->device_open(0, tf32, err, sizeof err)) {
                printf("bench_gemm: %s\n", err);
                return 1;
            }
            char desc[256];
            be->device_describe(desc, sizeof desc);
            printf("%s %s %.0f GFLOP/s (n = %d, %s)\n", name, tf32 ? "tf32" : "fp32",
                   gemm_gflops(be, n), n, desc);
        }
        if (be->gemm_bf16 && !be->device_open(0, 0, err, sizeof err)) {
            struct backend_ops bf = *be; /* device.precision = bf16 (precision.h) */
            bf.gemm = be->gemm_bf16;
            printf("%s bf16 %.0f GFLOP/s (n = %d; operands rounded, fp32 sums)\n", name,
                   gemm_gflops(&bf, n), n);
        }
        return 0;
    }
    printf("%s fp32 %.0f GFLOP/s (n = %d)\n", name, gemm_gflops(be, n), n);
    return 0;
}
