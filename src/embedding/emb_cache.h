/* emb_cache: a device cache of hot rows over a host-memory shard
 * (embedding.cache; doc/embedding.md, "A device cache over a host table").
 *
 * The shard and its optimizer state live in host memory, as a host-placed
 * table's do (lazily initialised); the device holds C slots of rows with
 * their optimizer state (rows [C, dim], state [C, state_floats], adam's
 * steps [C]) as the table's t->w, t->state, t->steps: the table is a
 * device table to the exchanges (t->be, the backend's memory), whose
 * gathers and sparse updates run on the slots with the per-row arithmetic
 * of embedding.placement = device. The host keeps the id -> slot map and
 * the eviction order: least recently used, ties broken by id (the
 * smaller id goes first).
 *
 * The slots are the local indices k0 .. k0 + C - 1 of the device arrays,
 * those of the shard's first C ids (k0 = 1 on shard 0, whose index 0 is
 * id 0, else 0): slot s is reached by the virtual id s G + shard, a valid
 * id of the shard, as a dynamic table's slots are (emb_dyn.h). An owner
 * rewrites the ids it serves into virtual ids when they arrive
 * (emb_cache_map, from emb_input_serve): from there on the dense device
 * table's code (gathers, sums per id, sparse updates, prefetch marks)
 * serves the slots unchanged.
 *
 * A training lookup (x->counted) is one tick: its rows are resolved on
 * the host; those not resident are fetched host -> device, into free
 * slots or in place of the least recently used rows, which are written
 * back device -> host first when a training lookup updated them (dirty).
 * The rows of this lookup and of the training lookup before (whose update
 * may be pending: parallel.overlap = prefetch maps step t + 1's rows
 * during step t) are never evicted; a cache too small for them ends the
 * job naming embedding.cache. With prefetch the lookup of step t + 1 is
 * mapped during step t (its misses are prefetch fills, x->pf_on), and its
 * rows that step t updates are resident (step t's): the lookup itself has
 * no misses. The copies are asynchronous, on the backend's copy stream
 * (BACKEND_COPY), ordered by events only, so that they run beside the
 * compute stream's kernels: fills are staged in pinned host memory and
 * copied up once the compute stream's last read of the device staging
 * has run (the slots' scatters wait for them on the compute stream), as
 * are the served ids' virtual ids; dirty evicted rows are gathered on the
 * compute stream before the fills that overwrite their slots and copied
 * down once gathered (enqueued after the lookup's copies up, which do not
 * wait for the gathers), landing in the host shard before it is read next
 * (the next lookup, a read-through, a get or set): the host waits only
 * for the served ids it resolves. A lookup that is not training (evaluation, recommend,
 * export) reads through: its rows are copied into a buffer of their own
 * (resident rows from the slots, the others from the host), nothing is
 * evicted or stamped. Host reads and writes of the shard (checkpoints,
 * evaluation's scoring, export: emb_table_get_slots, set_slots) see the
 * current values: resident rows are read from their slots; a row set
 * from the host leaves the cache. */
#ifndef FS_EMB_CACHE_H
#define FS_EMB_CACHE_H

#include <stdint.h>

struct emb_table;
struct emb_exchange;
struct comm;

/* A table's cache figures (this rank's since it began; emb_cache_take:
 * since its last take, summed over the job). Rows are unique rows of a
 * lookup on their owner. */
struct emb_cache_stats {
    int64_t hits, misses; /* training lookups' rows resident / fetched at the lookup */
    int64_t fills;        /* fetched ahead (parallel.overlap = prefetch) */
    int64_t evicted, written; /* rows evicted; of which written back (dirty) */
    int64_t fetched_bytes, written_bytes; /* host -> device, device -> host (rows, state) */
    int64_t resident, slots; /* at the take: rows in the cache, its slots (summed) */
    int64_t lookups;      /* training lookups mapped (per rank) */
    /* microseconds a training lookup's fills held back the host (its waits
     * for the fills' copies) and the compute stream (its wait for them,
     * from timing events around it); emb_cache_take: the ranks' mean */
    int64_t fill_host_us, fill_stall_us;
};

/* Set up t's cache of t->conf.cache slots (emb_registry_add, for a dense
 * table on a device backend; emb_dyn_init for a dynamic table's pool,
 * emb_cache_dyn.h: the host shard then empty, grown with the pool, and
 * slot 0 pinned): the device slots as t->w, t->state, t->steps, the host
 * shard in the cache. */
void emb_cache_init(struct emb_table *t);
void emb_cache_free(struct emb_table *t);
/* The owner's side of lookup x (its served ids arrived, x->serve in the
 * table's memory): resolve them to slots (training) or read through, and
 * rewrite x->serve into virtual ids; once per exchange. */
void emb_cache_map(struct emb_table *t, struct emb_exchange *x);
/* The same for served ids[n] of t's shard in host memory (the feature
 * tables' lookups, emb_multi.c): a training lookup (train; ahead: its
 * misses are prefetch fills) resolves them to slots, another reads
 * through; ids rewritten into virtual ids in place. Returns the
 * read-through rows (t's memory, row i + 1 for ids[i]; valid until t's
 * next lookup), NULL for a training lookup. */
float *emb_cache_resolve(struct emb_table *t, int64_t *ids, int64_t n, int train, int ahead);
/* A lookup mapped ahead (parallel.overlap = prefetch): its fills' copies
 * are enqueued by the map, the compute stream's wait for them and their
 * scatters into the slots by emb_cache_land, which the owner calls before
 * the rows are first read on the device (emb_prefetch_post; the cache's
 * own entry points call it too), so that the copies run beside the compute
 * work enqueued in between (emb_prefetch_late: the fetched rows leave
 * with the late ones, emb_cache_fetched). emb_cache_served: the virtual ids of the last
 * map on the host (n of them, x->serve's; valid until the next map). */
void emb_cache_land(struct emb_table *t);
const int64_t *emb_cache_served(const struct emb_table *t);
/* 1 when the row of virtual id vid was fetched by the last training map
 * (a miss or a fill): a prefetch sends such rows with the late ones, after
 * emb_cache_land, so that their copies run beside the step's backward. */
int emb_cache_fetched(const struct emb_table *t, int64_t vid);
/* After emb_cache_resolve and the lookup's own copies up: the write-backs
 * its evictions gathered, down on the copy stream (emb_cache_map calls
 * it; a caller of emb_cache_resolve must). */
void emb_cache_post(struct emb_table *t);
/* emb_table_get_stored / emb_table_set_slots of a cached table (emb_table.h:
 * host copies of the slots [slot0, slot0 + n) of the shard). */
void emb_cache_get(struct emb_table *t, int64_t slot0, int64_t n, float *w, float *state,
                   int64_t *steps);
void emb_cache_set(struct emb_table *t, int64_t slot0, int64_t n, const float *w,
                   const float *state, const int64_t *steps);
/* The same for the local indices ks[n] (distinct), in one pass: w [n,
 * width], state [n, state_floats], steps [n] in ks's order (a dynamic
 * table's checkpoint rows, emb_table_get_rows: the resident ones down
 * in one copy; its restored rows, emb_dyn_put_rows: the free list sorted
 * once). */
void emb_cache_get_rows(struct emb_table *t, int64_t n, const int64_t *ks, float *w,
                        float *state, int64_t *steps);
void emb_cache_set_rows(struct emb_table *t, int64_t n, const int64_t *ks, const float *w,
                        const float *state, const int64_t *steps);
/* A dynamic table's pool (emb_cache_dyn.h): the host shard grown to rows
 * local indices (the new ones not resident; the pool's slot 0 pinned in
 * the cache's slot 0 from the first growth); local index k's row out of
 * the cache, not written back (its id evicted from the pool: the value
 * is discarded); the device's slots (virtual ids s G + shard, s below). */
void emb_cache_grow(struct emb_table *t, int64_t rows);
void emb_cache_drop(struct emb_table *t, int64_t k);
int64_t emb_cache_slots(const struct emb_table *t);
/* The figures since the last call with the same which (0: the logging
 * interval, 1: the stream's window) summed over the job (collective over
 * world); out->lookups and the fills' waits per rank (the ranks' mean). */
void emb_cache_take(struct emb_table *t, struct comm *c, int which, struct emb_cache_stats *out);

#endif
