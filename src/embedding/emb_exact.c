/* emb_exact: a table's row gradients as exact sums; see emb_exact.h. */
#include "embedding/emb_exact.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/exact.h"
#include "embedding/emb_exchange_priv.h"

static size_t at_least1(int64_t n) { return (size_t)(n > 0 ? n : 1); }

int64_t *emb_exchange_exact(struct emb_exchange *x, int64_t **bad)
{
    if (!x->tab->conf.exact)
        return NULL;
    if (!x->xg) {
        const size_t bytes = at_least1(x->nuniq) * (size_t)x->dim * EXACT_LIMBS * sizeof(int64_t);
        x->xg = emb_buf_get(x->tab->be, &x->b_xg, bytes);
        memset(x->xg, 0, bytes);
        x->xbad = 0;
    }
    if (bad)
        *bad = &x->xbad;
    return x->xg;
}

void emb_exact_add_rows(int64_t *x, int dim, int64_t n, const float *g, const int64_t *idx,
                        int64_t *bad)
{
    for (int64_t t = 0; t < n; t++)
        exact_add_vec(x + idx[t] * dim * EXACT_LIMBS, g + t * dim, dim, bad);
}

void emb_exact_local(struct emb_exchange *x)
{
    int64_t *bad;
    const int64_t *xg = emb_exchange_exact(x, &bad);
    exact_to_float(xg, x->nuniq * x->dim, *bad, emb_exchange_grads(x));
}

struct key_pos {
    int64_t key, pos;
};
static int by_key(const void *a, const void *b)
{
    const int64_t ka = ((const struct key_pos *)a)->key, kb = ((const struct key_pos *)b)->key;
    return (ka > kb) - (ka < kb);
}

int64_t emb_exact_sum_by_id(int64_t n, int dim, const int64_t *keys, const uint32_t *ws,
                            int64_t *uid, float *out, int64_t *sums)
{
    const int64_t nl = (int64_t)dim * EXACT_LIMBS;
    struct key_pos *kp = xmalloc(at_least1(n) * sizeof *kp);
    for (int64_t i = 0; i < n; i++)
        kp[i] = (struct key_pos){keys[i], i};
    qsort(kp, (size_t)n, sizeof *kp, by_key); /* equal keys in any order: integer sums */
    int64_t *acc = xmalloc((size_t)nl * sizeof *acc), k = 0;
    for (int64_t i = 0; i < n;) {
        const int64_t key = kp[i].key;
        memset(acc, 0, (size_t)nl * sizeof *acc);
        for (; i < n && kp[i].key == key; i++)
            exact_unpack_add(acc, ws + kp[i].pos * nl, dim);
        uid[k] = key;
        exact_to_float(acc, dim, 0, out + k * dim);
        if (sums)
            memcpy(sums + k * nl, acc, (size_t)nl * sizeof *acc);
        k++;
    }
    for (int64_t u = k; u < n; u++)
        uid[u] = -1; /* as emb_sum_by_id: the update skips these */
    free(acc);
    free(kp);
    return k;
}
