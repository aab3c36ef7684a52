/* adamw_elem: one value's AdamW update, the body of the dense optimizer's
 * step written once: the CPU backend's adamw_step (backend_cpu.c) loops
 * over it, and the lazy replay of model.bias's rows (train/bias_rows.c)
 * applies it to a row's values step by step, so that a row updated late
 * ends with the bits the dense update would have given it. */
#ifndef FS_ADAMW_ELEM_H
#define FS_ADAMW_ELEM_H

#include <math.h>
#include <stdint.h>

/* The bias corrections of step t (>= 1): c1 = 1 - b1^t, c2 = 1 - b2^t. */
static inline void adamw_corrections(float b1, float b2, int64_t t, float *c1, float *c2)
{
    *c1 = 1.0f - (float)pow(b1, (double)t);
    *c2 = 1.0f - (float)pow(b2, (double)t);
}

/* w, m, v: one value and its moments, g its gradient; lr, b1, b2, eps, wd
 * the step's settings and c1, c2 its corrections (adamw_corrections). */
static inline void adamw_elem(float *w, float *m, float *v, float g, float lr, float b1, float b2,
                              float eps, float wd, float c1, float c2)
{
    *m = b1 * *m + (1.0f - b1) * g;
    *v = b2 * *v + (1.0f - b2) * g * g;
    *w -= lr * ((*m / c1) / (sqrtf(*v / c2) + eps) + wd * *w);
}

#endif
