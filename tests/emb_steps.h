/* emb_steps: what the exchange tests (test_emb_prefetch, test_emb_ipc) do
 * to a lookup's buffers on either side of the device boundary: gradients
 * from a formula, rows back in token order. */
#ifndef FS_EMB_STEPS_H
#define FS_EMB_STEPS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "embedding/emb_exchange.h"

/* x's gradients [nuniq, dim]: a function of the id and the rank (so that
 * replicas differ). */
static inline void emb_steps_grads(struct emb_table *t, struct emb_exchange *x, int rank,
                                   int dim)
{
    const int64_t nu = emb_exchange_nuniq(x);
    void *o;
    const int64_t *u = backend_download(t->be, emb_exchange_uniq(x), (size_t)(nu ? nu : 1) * 8,
                                        &o);
    float *g = xmalloc((size_t)(nu ? nu : 1) * (size_t)dim * sizeof *g);
    for (int64_t i = 0; i < nu; i++)
        for (int j = 0; j < dim; j++)
            g[i * dim + j] = (float)sin(0.37 * (double)u[i] + 0.9 * j + rank);
    if (backend_is_host(t->be))
        memcpy(emb_exchange_grads(x), g, (size_t)nu * (size_t)dim * sizeof *g);
    else
        t->be->to_device(emb_exchange_grads(x), g, (size_t)nu * (size_t)dim * sizeof *g);
    free(g);
    free(o);
}

/* y's rows in token order (host memory, [n, dim]; the caller frees). */
static inline float *emb_steps_rows(struct emb_table *t, struct emb_exchange *y, int64_t n,
                                    int dim)
{
    const int64_t nu = emb_exchange_nuniq(y);
    void *oi, *or;
    const int64_t *inv = backend_download(t->be, emb_exchange_inverse(y),
                                          (size_t)(n ? n : 1) * 8, &oi);
    const float *rows = backend_download(t->be, emb_exchange_rows(y),
                                         (size_t)(nu ? nu : 1) * (size_t)dim * 4, &or);
    float *out = xmalloc((size_t)(n ? n : 1) * (size_t)dim * sizeof *out);
    for (int64_t i = 0; i < n; i++)
        memcpy(out + i * dim, rows + inv[i] * dim, (size_t)dim * sizeof *out);
    free(oi);
    free(or);
    return out;
}

#endif
