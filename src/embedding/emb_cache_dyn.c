/* emb_cache_dyn: the device cache over a dynamic table's pool; see
 * emb_cache_dyn.h. */
#include "embedding/emb_cache_dyn.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "embedding/emb_cache.h"
#include "embedding/emb_dyn.h"
#include "embedding/emb_table.h"

void emb_cache_dyn_slots(struct emb_table *t, int64_t *ids, int64_t n, int train)
{
    emb_dyn_map(t, 1, &ids, &n, train); /* virtual ids of the pool: slot G + shard */
    for (int64_t i = 0; i < n; i++)
        ids[i] /= t->G;
}

void emb_cache_dyn_row_init(struct emb_table *t, int64_t slot, int64_t id)
{
    float *row = xmalloc((size_t)t->width * sizeof *row);
    float *state = xcalloc((size_t)t->state_floats + 1, sizeof *state);
    const int64_t steps = 0;
    emb_init_row_n(&t->conf, id, row, t->width);
    emb_cache_set(t, slot, 1, row, state, &steps);
    free(row);
    free(state);
}
