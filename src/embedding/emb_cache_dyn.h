/* emb_cache_dyn: the device cache (emb_cache.h) over a dynamic table's
 * pool (emb_dyn.h): embedding.cache with embedding.dynamic = on and
 * embedding.placement = host (doc/embedding.md, "A device cache over a
 * host table").
 *
 * The cache is keyed by the pool's slot, the local index of a dense
 * shard: the pool (its rows, state and steps) is the cache's host shard,
 * grown with the pool (emb_cache_grow); the hash index, admission and
 * eviction stay the host table's (emb_dyn.c, unchanged). An owner's
 * served ids go through the table's map (raw id -> pool slot, a training
 * lookup's stamps, evictions and insertions) and then the cache's (pool
 * slot -> cache slot), one download of the ids for both. When the table
 * evicts or removes an id its cached row leaves the cache without a
 * write-back (emb_cache_drop: the value is discarded; a write-back of
 * that slot still in flight lands first, so the row drawn for the next id
 * in the slot is not overwritten); a row drawn for a new id is written to
 * the host pool and fetched when a lookup asks for it. The table evicts
 * only rows that neither this training lookup nor the one before uses, so
 * with parallel.overlap = prefetch no update in flight is lost. The pool's
 * slot 0 (the shared unadmitted row, virtual id = shard) is pinned in the
 * cache's slot 0: resident for good, reached by the same virtual id, so
 * its job-wide gradient sum (emb_dyn_shared_grad, in device memory) finds
 * it where a device table's does. */
#ifndef FS_EMB_CACHE_DYN_H
#define FS_EMB_CACHE_DYN_H

#include <stdint.h>

struct emb_table;

/* The raw ids[n] an owner serves to its pool's slots (local indices), in
 * place, through emb_dyn_map (train: a training lookup). */
void emb_cache_dyn_slots(struct emb_table *t, int64_t *ids, int64_t n, int train);
/* Pool slot := the initial row of id (0: the unadmitted row), zero state
 * and steps. */
void emb_cache_dyn_row_init(struct emb_table *t, int64_t slot, int64_t id);

#endif
