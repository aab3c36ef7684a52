/* blas: kernel-set selection for OpenBLAS; see blas.h. */
#include "backend/blas.h"

#include <cblas.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/log.h"

static char g_reason[160] = "OpenBLAS's own detection";

const char *blas_corename(void) { return openblas_get_corename(); }

const char *blas_preferred_coretype(void)
{
    /* Measured with bench/bench_blas (sgemm 1024^3): SkylakeX kernels beat
     * the detected or environment-forced sets on AVX-512 CPUs. */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
    return NULL;
}

int blas_env_prepare(void)
{
    const char *forced = getenv("FREESCALE_BLAS_CORETYPE");
    const char *was = getenv("FREESCALE_BLAS_ENV_WAS");
    if (getenv("FREESCALE_BLAS_REEXEC")) { /* second life: record and stop */
        unsetenv("FREESCALE_BLAS_REEXEC");
        snprintf(g_reason, sizeof g_reason, "%s%s%s",
                 forced ? "FREESCALE_BLAS_CORETYPE" : "chosen for this CPU",
                 was && was[0] ? "; environment had OPENBLAS_CORETYPE=" : "", was ? was : "");
        return 0;
    }
    const char *env = getenv("OPENBLAS_CORETYPE");
    if (forced && !strcasecmp(forced, "keep")) {
        snprintf(g_reason, sizeof g_reason, "%s", env ? "OPENBLAS_CORETYPE" : "OpenBLAS's own detection");
        return 0;
    }
    const char *want = forced && forced[0] ? forced : blas_preferred_coretype();
    if (!want || !strcasecmp(want, openblas_get_corename())) {
        snprintf(g_reason, sizeof g_reason, "%s",
                 want ? (forced ? "FREESCALE_BLAS_CORETYPE" : "chosen for this CPU")
                      : env ? "OPENBLAS_CORETYPE" : "OpenBLAS's own detection");
        return 0;
    }
    if (setenv("FREESCALE_BLAS_ENV_WAS", env ? env : "", 1) ||
        setenv("OPENBLAS_CORETYPE", want, 1) || setenv("FREESCALE_BLAS_REEXEC", "1", 1)) {
        log_warn("cannot set OPENBLAS_CORETYPE; keeping %s kernels", openblas_get_corename());
        return 0;
    }
    return 1;
}

void blas_env_reexec_failed(void)
{
    unsetenv("FREESCALE_BLAS_REEXEC");
    snprintf(g_reason, sizeof g_reason, "re-execution failed");
}

void blas_select(char **argv)
{
    if (!blas_env_prepare())
        return;
    fflush(NULL);
    execv("/proc/self/exe", argv);
    /* exec failed: carry on with what is loaded */
    log_warn("cannot re-execute to load other BLAS kernels; keeping %s", openblas_get_corename());
    blas_env_reexec_failed();
}

void blas_describe(char *buf, size_t len)
{
    /* openblas_get_config(): "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..." */
    char ver[64] = "OpenBLAS";
    const char *cfg = openblas_get_config();
    if (cfg && !strncmp(cfg, "OpenBLAS ", 9)) {
        size_t n = strcspn(cfg + 9, " ");
        snprintf(ver, sizeof ver, "OpenBLAS %.*s", (int)n, cfg + 9);
    }
    const char *par = openblas_get_parallel() == 1 ? "pthreads"
                      : openblas_get_parallel() == 2 ? "OpenMP" : "serial";
    snprintf(buf, len, "%s (%s), kernels %s (%s)", ver, par, openblas_get_corename(), g_reason);
}

int blas_set_threads(int ranks_on_node)
{
    const char *env = getenv("OPENBLAS_NUM_THREADS");
    int n = env && atoi(env) > 0 ? atoi(env) : 0;
    if (n == 0) {
        /* a rank bound to some cores (mpirun's default binding) uses those;
         * an unbound one shares the node's cores with the other ranks */
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        cpu_set_t set;
        long mine = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : cores;
        n = (int)(mine < cores ? mine : cores / (ranks_on_node > 0 ? ranks_on_node : 1));
        if (n < 1)
            n = 1;
    }
    openblas_set_num_threads(n);
#ifdef _OPENMP
    omp_set_num_threads(n); /* the host loops over rows (emb_backward.c) */
#endif
    return n;
}
