/* backend_cpu_factor: the CPU backend's walks of the ranking head's factor
 * terms (backend.h: factor_fwd, factor_bwd): backend/factor_walk.h's
 * bodies, one per (sequence, task) and (sequence, column), threaded
 * (each writes its own elements: any order gives the same bits); the
 * ridge fit's (ridge > 0) likewise. */
#include "backend/backend_cpu.h"

#include "backend/factor_walk.h"
#include "base/log.h"

static void check(const char *op, int K, int F, double ridge)
{
    if (K < 1 || K > FACTOR_MAX_TASKS || F < 1 || F > FACTOR_MAX_F)
        fatal("%s: %d tasks and %d factors (at most %d and %d)", op, K, F, FACTOR_MAX_TASKS,
              FACTOR_MAX_F);
    if (ridge > 0 && F > FACTOR_RIDGE_MAX_F)
        fatal("%s: the ridge fit of %d factors (at most %d)", op, F, FACTOR_RIDGE_MAX_F);
}

void cpu_factor_fwd(int64_t B, const int64_t *offsets, int K, int F, const float *f,
                    const double *v, double prior, float gain, float *z, float *w, float *vb,
                    float *h, double ridge, float *ai)
{
    check("factor_fwd", K, F, ridge);
    const int64_t n = B * K;
#pragma omp parallel for schedule(dynamic, 4) if (n >= 64 && offsets[B] >= 4096)
    for (int64_t i = 0; i < n; i++) {
        const int64_t t0 = offsets[i / K], t1 = offsets[i / K + 1];
        if (ridge > 0)
            factor_walk_fwd_ridge(t0, t1, (int)(i % K), K, F, f, v, prior, ridge, gain, z, w, vb,
                                  h, ai);
        else
            factor_walk_fwd_task(t0, t1, (int)(i % K), K, F, f, v, prior, gain, z, w, vb, h);
    }
}

void cpu_factor_bwd(int64_t B, const int64_t *offsets, int K, int F, const float *f,
                    const double *v, float gain, const float *z, const float *w, const float *vb,
                    const float *dh, float *df, double ridge, const float *ai)
{
    check("factor_bwd", K, F, ridge);
    const int64_t n = B * F;
#pragma omp parallel for schedule(dynamic, 4) if (n >= 64 && offsets[B] >= 4096)
    for (int64_t i = 0; i < n; i++) {
        const int64_t t0 = offsets[i / F], t1 = offsets[i / F + 1];
        if (ridge > 0)
            factor_walk_bwd_ridge(t0, t1, (int)(i % F), K, F, f, v, gain, z, vb, dh, ai, df);
        else
            factor_walk_bwd_col(t0, t1, (int)(i % F), K, F, f, v, gain, z, w, vb, dh, df);
    }
}
