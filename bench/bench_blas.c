/* bench_blas: sgemm throughput of OpenBLAS kernel sets on this machine.
 *
 * Runs itself once per kernel set (OpenBLAS reads the set when it loads, so
 * each needs its own process) and prints GFLOP/s on 1 and 2 threads, the
 * median of 7 runs of an n^3 sgemm, and the ratio against the baseline: the
 * kernels OpenBLAS picks by itself (or from OPENBLAS_CORETYPE in the
 * environment). The set marked '*' is what freescale chooses here. When
 * Debian's BLIS (libblis4-pthread) is installed, its sgemm is measured too,
 * loaded with dlopen so that it does not clash with the linked OpenBLAS.
 *   build: make bench/bench_blas      run: bench/bench_blas [n]            */
#include <cblas.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/blas.h"
#include "base/clock.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int,
                         const float *, int, float, float *, int);
typedef void (*threads_fn)(int64_t);

static double gflops(sgemm_fn sgemm, int n)
{
    float *a = malloc(sizeof(float) * (size_t)n * n), *b = malloc(sizeof(float) * (size_t)n * n);
    float *c = malloc(sizeof(float) * (size_t)n * n);
    for (long i = 0; i < (long)n * n; i++) {
        a[i] = (float)(i % 7) * 0.1f;
        b[i] = (float)(i % 5) * 0.2f;
    }
    sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
    double t[7];
    for (int r = 0; r < 7; r++) {
        double t0 = clock_seconds();
        sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        t[r] = clock_seconds() - t0;
    }
    qsort(t, 7, sizeof *t, cmp);
    free(a); free(b); free(c);
    return 2.0 * n * n * n / t[3] / 1e9;
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "--child")) {
        int n = atoi(argv[2]);
        sgemm_fn f = (sgemm_fn)cblas_sgemm;
        openblas_set_num_threads(1);
        double g1 = gflops(f, n);
        openblas_set_num_threads(2);
        printf("%-12s %8.1f %8.1f\n", openblas_get_corename(), g1, gflops(f, n));
        return 0;
    }
    if (argc > 2 && !strcmp(argv[1], "--child-blis")) {
        void *h = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
        if (!h)
            return 1;
        sgemm_fn f = (sgemm_fn)dlsym(h, "cblas_sgemm");
        threads_fn nt = (threads_fn)dlsym(h, "bli_thread_set_num_threads");
        if (!f || !nt)
            return 1;
        int n = atoi(argv[2]);
        nt(1);
        double g1 = gflops(f, n);
        nt(2);
        printf("BLIS %8.1f %8.1f\n", g1, gflops(f, n));
        return 0;
    }
    int n = argc > 1 ? atoi(argv[1]) : 1024;
    const char *sets[] = {"keep", "Prescott", "Haswell", "Zen", "SkylakeX", "Cooperlake", "BLIS"};
    const char *env = getenv("OPENBLAS_CORETYPE");
    const char *mine = blas_preferred_coretype();
    printf("sgemm %d^3, GFLOP/s (median of 7); baseline = OpenBLAS's own choice%s%s\n", n,
           env ? " with OPENBLAS_CORETYPE=" : "", env ? env : "");
    printf("%-12s %-12s %8s %8s %8s %8s\n", "requested", "loaded", "1 thr", "2 thr", "ratio1",
           "ratio2");
    double base1 = 0, base2 = 0;
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "FREESCALE_BLAS_CORETYPE=%s OPENBLAS_CORETYPE=%s '/proc/%ld/exe' --child %d",
                 sets[s], s == 0 && env ? env : sets[s], (long)getpid(), n);
        if (!strcmp(sets[s], "BLIS"))
            snprintf(cmd, sizeof cmd, "'/proc/%ld/exe' --child-blis %d 2>/dev/null", (long)getpid(), n);
        else if (s == 0 && !env)
            snprintf(cmd, sizeof cmd, "env -u OPENBLAS_CORETYPE FREESCALE_BLAS_CORETYPE=keep '/proc/%ld/exe' --child %d",
                     (long)getpid(), n);
        FILE *p = popen(cmd, "r");
        char name[64];
        double g1, g2;
        if (!p || fscanf(p, "%63s %lf %lf", name, &g1, &g2) != 3) {
            printf("%-12s %s\n", sets[s], strcmp(sets[s], "BLIS") ? "(failed to run)"
                                 : "(not installed: apt-get install libblis4-pthread)");
            if (p) pclose(p);
            continue;
        }
        pclose(p);
        if (s == 0) {
            base1 = g1;
            base2 = g2;
        }
        printf("%-12s %-12s %8.1f %8.1f %8.2f %8.2f%s\n", sets[s], name, g1, g2, g1 / base1,
               g2 / base2, mine && !strcasecmp(mine, sets[s]) ? "  * freescale's choice" : "");
    }
    return 0;
}
