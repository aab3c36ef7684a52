/* backend_cpu_factor: the CPU backend's walks of the ranking head's factor
 * terms (backend.h: factor_fwd, factor_bwd): backend/factor_walk.h's
 * bodies, one per (sequence, task) and (sequence, column), threaded
 * (each writes its own elements: any order gives the same bits). */
#include "backend/backend_cpu.h"

#include "backend/factor_walk.h"
#include "base/log.h"

static void check(const char *op, int K, int F)
{
    if (K < 1 || K > FACTOR_MAX_TASKS || F < 1 || F > FACTOR_MAX_F)
        fatal("%s: %d tasks and %d factors (at most %d and %d)", op, K, F, FACTOR_MAX_TASKS,
              FACTOR_MAX_F);
}

void cpu_factor_fwd(int64_t B, const int64_t *offsets, int K, int F, const float *f,
                    const double *v, double prior, float gain, float *z, float *w, float *vb,
                    float *h)
{
    check("factor_fwd", K, F);
    const int64_t n = B * K;
#pragma omp parallel for schedule(dynamic, 4) if (n >= 64 && offsets[B] >= 4096)
    for (int64_t i = 0; i < n; i++)
        factor_walk_fwd_task(offsets[i / K], offsets[i / K + 1], (int)(i % K), K, F, f, v, prior,
                             gain, z, w, vb, h);
}

void cpu_factor_bwd(int64_t B, const int64_t *offsets, int K, int F, const float *f,
                    const double *v, float gain, const float *z, const float *w, const float *vb,
                    const float *dh, float *df)
{
    check("factor_bwd", K, F);
    const int64_t n = B * F;
#pragma omp parallel for schedule(dynamic, 4) if (n >= 64 && offsets[B] >= 4096)
    for (int64_t i = 0; i < n; i++)
        factor_walk_bwd_col(offsets[i / F], offsets[i / F + 1], (int)(i % F), K, F, f, v, gain,
                            z, w, vb, dh, df);
}
