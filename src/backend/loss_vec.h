/* loss_vec: the short vector kernels of the CPU losses (backend_cpu_loss.c,
 * backend_cpu_loss_shared.c), blocked by 8 so that the compiler's SLP
 * vectoriser turns them into SIMD at -O2 (d = 50: one dot is ~7 vector
 * FMAs). Their order of operations is part of the losses' bits. */
#ifndef FS_LOSS_VEC_H
#define FS_LOSS_VEC_H

#include <stdint.h>

#include "base/log.h"

static inline void loss_check_index(const char *what, int64_t i, int64_t k, int64_t nu)
{
    if (k >= nu)
        fatal("%s: position %lld: row index %lld out of range (nu = %lld)", what, (long long)i,
              (long long)k, (long long)nu);
}

/* a . b over d values, float accumulators in 8 lanes (a: [d], b: [d]). */
static inline float loss_dot(int d, const float *restrict a, const float *restrict b)
{
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int j = 0;
    for (; j + 8 <= d; j += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += a[j + k] * b[j + k];
    float tail = 0;
    for (; j < d; j++)
        tail += a[j] * b[j];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) +
           tail;
}

/* y += alpha x over d values (x, y: [d], not overlapping). */
static inline void loss_axpy(int d, float alpha, const float *restrict x, float *restrict y)
{
    int j = 0;
    for (; j + 8 <= d; j += 8)
        for (int k = 0; k < 8; k++)
            y[j + k] += alpha * x[j + k];
    for (; j < d; j++)
        y[j] += alpha * x[j];
}

#endif
