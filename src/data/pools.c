/* pools: pooled ranking histories (data.pools); see pools.h. */
#include "data/pools.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"

#define POOLS_BLOCK 1024 /* events read per block, at least */

int64_t pools_select(const struct dataset *ds, const struct pool_conf *pc, int64_t u,
                     int64_t end, int64_t per, int64_t *sel)
{
    const int K = pc->n;
    int64_t need[POOLS_MAX], n = 0, open = K;
    for (int k = 0; k < K; k++)
        need[k] = per;
    if (per <= 0)
        return 0;
    const int64_t blk = 2 * per * K > POOLS_BLOCK ? 2 * per * K : POOLS_BLOCK;
    float *lab = xmalloc((size_t)(blk * K) * sizeof *lab);
    for (int64_t hi = end; hi > 0 && open > 0;) { /* events [lo, hi), newest first */
        const int64_t lo = hi - blk > 0 ? hi - blk : 0;
        labels_read_events(ds, &pc->lc, ds->offsets[u] + lo, hi - lo, lab);
        for (int64_t e = hi - 1; e >= lo && open > 0; e--) {
            int take = 0;
            for (int k = 0; k < K; k++)
                if (lab[(e - lo) * K + k] == 1.0f && need[k] > 0) {
                    take = 1;
                    if (--need[k] == 0)
                        open--;
                }
            if (take)
                sel[n++] = e;
        }
        hi = lo;
    }
    free(lab);
    for (int64_t i = 0, j = n - 1; i < j; i++, j--) { /* ascending */
        const int64_t x = sel[i];
        sel[i] = sel[j];
        sel[j] = x;
    }
    return n;
}

int64_t pools_count(const struct dataset *ds, struct pool_conf *pc, int64_t u, int64_t end,
                    int64_t per)
{
    if (pc->cache_users != ds->num_users || pc->cache_of != ds->offsets) { /* a new dataset */
        free(pc->cache_end);
        free(pc->cache_len);
        pc->cache_users = ds->num_users;
        pc->cache_of = ds->offsets;
        const size_t n = (size_t)(ds->num_users ? ds->num_users : 1);
        pc->cache_end = xmalloc(n * sizeof *pc->cache_end);
        pc->cache_len = xmalloc(n * sizeof *pc->cache_len);
        for (size_t i = 0; i < n; i++)
            pc->cache_end[i] = -1;
    }
    if (pc->cache_end[u] == end)
        return pc->cache_len[u];
    int64_t *sel = xmalloc((size_t)(per * pc->n > 0 ? per * pc->n : 1) * sizeof *sel);
    pc->cache_len[u] = pools_select(ds, pc, u, end, per, sel);
    pc->cache_end[u] = end;
    free(sel);
    return pc->cache_len[u];
}

void pools_free(struct pool_conf *pc)
{
    for (int k = 0; k < POOLS_MAX; k++) {
        free(pc->decode[k]);
        pc->decode[k] = NULL;
    }
    free(pc->cache_end);
    free(pc->cache_len);
    pc->cache_end = pc->cache_len = NULL;
    pc->cache_users = 0;
    pc->cache_of = NULL;
}
