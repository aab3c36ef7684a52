/* emb_dyn: dynamic embedding tables (embedding.dynamic; doc/embedding.md,
 * "Dynamic tables").
 *
 * A dynamic table has no vocabulary: the owner of an id is a 64-bit mix
 * of the id modulo G (emb_dyn_owner; never id mod G), and each shard keeps
 * an open-addressing index (linear probing, backward-shift deletion) from
 * id to a slot of its row pool. The pool is the table's t->w, t->state,
 * t->steps and t->ready arrays as a dense shard has them, t->local_rows
 * slots, grown by doubling up to the shard's share of embedding.capacity
 * (0 = unbounded). Slot 0 of every shard is the table's one shared
 * "unadmitted" row, kept identical on every rank (its gradient is summed
 * over the whole job). A new row is drawn by emb_init_row from (seed,
 * table, id), so it does not depend on which rank owns it or when it was
 * inserted: with admit = 1 and no binding capacity a dynamic table gives
 * the dense table's losses on any P.
 *
 * Inside the exchanges (emb_exchange.c, emb_multi.c, emb_backward.c,
 * emb_prefetch.c) an owner rewrites the ids it serves into virtual ids,
 * slot G + shard, as soon as they arrive (emb_dyn_map): from there on the
 * dense shard's code (gathers, sums per id, sparse updates, prefetch
 * bitmaps: local slot = id / G) serves the pool unchanged.
 *
 * Each training lookup of a table is one tick of its clock. At that
 * lookup, in this order: the ids already present are stamped (last use,
 * use count); with evict = ttl:S, rows not used in the last S ticks go
 * (the rows of the lookup before, whose update may not be applied yet,
 * and those of this one are never candidates: prefetch stays exact); the
 * missing ids are counted on a probation list (admit = N: a row at the
 * N-th lookup that has the id; until then they get the unadmitted row);
 * the admitted ones get rows in ascending id order, and when the shard is
 * full lru / lfu evict the least recently / frequently used rows (ties:
 * smaller id first) not used by this lookup or the one before. A full
 * shard without lru / lfu gives the unadmitted row. Lookups that are not
 * training (evaluation, recommend) neither insert nor stamp: an id without
 * a row gets the unadmitted row. */
#ifndef FS_EMB_DYN_H
#define FS_EMB_DYN_H

#include <stddef.h>
#include <stdint.h>

struct emb_table;
struct comm;

enum emb_evict { EMB_EVICT_NONE, EMB_EVICT_TTL, EMB_EVICT_LRU, EMB_EVICT_LFU };

struct emb_dyn_conf {
    int on;                /* a dynamic table */
    int64_t capacity;      /* rows over all shards (0 = unbounded) */
    int64_t admit;         /* lookups before an id gets a row (1 = at once) */
    enum emb_evict evict;
    int64_t ttl;           /* evict = ttl:S: S */
};

/* Parse embedding.evict ("none", "ttl:S" with S >= 1, "lru", "lfu"):
 * 0, or -1 with err naming the parameter. */
int emb_dyn_parse_evict(const char *s, struct emb_dyn_conf *dc, char *err, size_t errlen);
/* The conf's checks against G shards (capacity at least one row per
 * shard; with embedding groups, replicas = P / G > 1: admit = 1, evict =
 * none, capacity = 0 only, as the replicas of a shard see different ids):
 * 0, or -1 with err. */
int emb_dyn_check(const struct emb_dyn_conf *dc, const char *table, int G, int replicas,
                  char *err, size_t errlen);

/* --- the index: id -> value, open addressing ------------------------------------ */

struct emb_dyn_index {
    int64_t *keys;         /* [cap] 0 = empty */
    int64_t *vals;         /* [cap] */
    int64_t cap, n;        /* cap a power of two; kept at most half full */
};

void emb_dyn_index_init(struct emb_dyn_index *ix, int64_t cap);
void emb_dyn_index_free(struct emb_dyn_index *ix);
/* The value of key (!= 0), or -1 when absent. */
int64_t emb_dyn_index_get(const struct emb_dyn_index *ix, int64_t key);
/* Where key's value is kept, or NULL (valid until the next put or del). */
int64_t *emb_dyn_index_at(const struct emb_dyn_index *ix, int64_t key);
/* Set key's value (adding key; the index doubles past half full). */
void emb_dyn_index_put(struct emb_dyn_index *ix, int64_t key, int64_t val);
/* Remove key; 1 if it was there. */
int emb_dyn_index_del(struct emb_dyn_index *ix, int64_t key);
/* Bytes held. */
size_t emb_dyn_index_bytes(const struct emb_dyn_index *ix);

/* 64-bit mix of an id (splitmix64's finaliser): the owner is mix mod G. */
uint64_t emb_dyn_mix(int64_t id);
static inline int emb_dyn_owner(int64_t id, int G) { return (int)(emb_dyn_mix(id) % (uint64_t)G); }

/* --- the table ------------------------------------------------------------------ */

/* Counters since the last emb_dyn_take. */
struct emb_dyn_stats {
    int64_t rows;          /* rows held now (the unadmitted one not counted) */
    int64_t inserted, evicted, unadmitted_hits;
    int64_t slots, index_cap; /* the pool's slots and the index's */
    int64_t bytes;         /* pool, index and probation list */
};

struct emb_dyn;

/* Make t's dynamic state (t->conf.dyn.on; emb_registry_add, host tables):
 * the pool of a few slots, slot 0 initialised. */
void emb_dyn_init(struct emb_table *t);
void emb_dyn_free(struct emb_table *t);

/* The owner side of a lookup: the ids of seg[s][0 .. n[s]), s < nseg
 * (this shard's), rewritten in place into virtual ids (slot G + shard).
 * train: a training lookup (a tick: stamps, eviction, admission,
 * insertion, as above); else read only. */
void emb_dyn_map(struct emb_table *t, int nseg, int64_t *const *seg, const int64_t *n, int train);
/* emb_dyn_map of nt tables' lookups at once (emb_multi.c: the dynamic
 * tables of one exchange; table k's segments seg[k][0 .. nseg[k]) of
 * n[k][s] ids): the same results; tables in device memory read their
 * missing ids back in one host wait together. */
void emb_dyn_map_tables(int nt, struct emb_table *const *t, const int *nseg,
                        int64_t *const *const *seg, const int64_t *const *n, int train);
/* Virtual ids back to ids (the unadmitted row: 0), in place; ids < 0 kept. */
void emb_dyn_unmap(const struct emb_table *t, int64_t *ids, int64_t n);
/* Ids (0: the unadmitted row) to virtual ids, a row made for an id
 * without one (the replicas of a shard: rows another replica made), in
 * place; ids < 0 kept. */
void emb_dyn_rebind(struct emb_table *t, int64_t *ids, int64_t n);
/* Ids to virtual ids of the rows present, -1 for the others, in place. */
void emb_dyn_find(const struct emb_table *t, int64_t *ids, int64_t n);

/* The gradient of the unadmitted row, summed over the emb group (in shard
 * order, so every rank applies the same): ids [*k] ascending (virtual ids;
 * the shared row is id t->shard, the smallest), g [*k, width]. Collective
 * over emb. Returns the lists to update (ids, g, or a copy with the
 * shared row in front; *k updated), valid until the next call. */
void emb_dyn_shared_grad(struct emb_table *t, struct comm *c, int64_t **ids, float **g,
                         int64_t *k);
/* The same knowing (maybe = 0) that this shard's lists lack the shared row
 * (a device table then reads nothing back: emb_dyn_map_shared). */
void emb_dyn_shared_grad_in(struct emb_table *t, struct comm *c, int64_t **ids, float **g,
                            int64_t *k, int maybe);
/* The same over lists in host memory whatever t's memory (emb_multi.c:
 * a device table's lists summed on the host before they go up). */
void emb_dyn_shared_grad_host(struct emb_table *t, struct comm *c, int64_t **ids, float **g,
                              int64_t *k);
/* 0 when the last lookup of t (emb_dyn_map) gave none of its ids the
 * unadmitted row, as far as the host knows it (a device table's training
 * lookups); else 1. */
int emb_dyn_map_shared(const struct emb_table *t);
/* The same with exact sums (train.exact_sums): x0 [width][EXACT_LIMBS] the
 * limbs of ids[0]'s row on this shard (read when it is the shared row),
 * summed over the emb group as integers. */
void emb_dyn_shared_grad_exact(struct emb_table *t, struct comm *c, int64_t **ids, float **g,
                               int64_t *k, const int64_t *x0);

/* Requester side: the distinct ids of ids[n] grouped by owner (emb_dyn_owner),
 * within an owner chunk 0 (among the first n_first) before chunk 1, each
 * ascending; inverse and counts[2G] as backend emb_dedup's. Host memory. */
int64_t emb_dyn_dedup(int64_t n, const int64_t *ids, int64_t n_first, int G, int64_t *uniq,
                      int64_t *inverse, int64_t *counts);

/* This rank's counters (rows, slots, bytes: now; the rest since the last
 * call, then reset). */
void emb_dyn_take(struct emb_table *t, struct emb_dyn_stats *out);
/* The id of every row held on this shard, ascending, into *ids (xmalloc'd),
 * with their slots; returns their number. */
int64_t emb_dyn_rows(const struct emb_table *t, int64_t **ids, int64_t **slots);

/* Checkpoints (ckpt/ckpt_dyn.c): the clock; a row's statistics
 * (slot: of emb_dyn_rows); a row restored (made with the initial values,
 * which the caller overwrites, on a device table not written: the caller
 * writes it, emb_dyn_put_rows; its statistics set): its slot, or -1 when
 * the id has a row already (fatal() when the shard is full); the probation
 * list (admit > 1) as pairs (id, value) ascending by id (xmalloc'd), and
 * an entry restored. */
int64_t emb_dyn_clock(const struct emb_table *t);
void emb_dyn_set_clock(struct emb_table *t, int64_t clock);
void emb_dyn_row_stats(const struct emb_table *t, int64_t slot, int64_t *last, int64_t *freq);
int64_t emb_dyn_restore(struct emb_table *t, int64_t id, int64_t last, int64_t freq);
/* A device table's rows restored into slots slot[n] (emb_dyn_restore's,
 * emb_dyn_upsert's; its restore leaves them unwritten): w [n, width],
 * state [n, state_floats] (NULL: left), steps [n] (NULL or a table
 * without: left), host memory; one upload (one host wait) and three
 * copies on the device (emb_dyn_dev.c). fatal() on a host table (its
 * rows are written in place). */
void emb_dyn_put_rows(struct emb_table *t, int64_t n, const int64_t *slot, const float *w,
                      const float *state, const int64_t *steps);
int64_t emb_dyn_probation(const struct emb_table *t, int64_t **pairs);
void emb_dyn_probation_put(struct emb_table *t, int64_t id, int64_t value);

/* Delta checkpoints: the ids evicted since the last checkpoint of the
 * chain (*gone, their number returned) and that checkpoint's clock (rows
 * used since: last > *since); emb_dyn_delta_mark: a checkpoint of the
 * chain was written or read (the list emptied). Applying a delta: a row
 * made or overwritten (its slot returned, statistics set; id 0: slot 0),
 * a row removed by id (not counted as evicted), the probation list
 * emptied. */
int64_t emb_dyn_delta(const struct emb_table *t, const int64_t **gone, int64_t *since);
void emb_dyn_delta_mark(struct emb_table *t);
int64_t emb_dyn_upsert(struct emb_table *t, int64_t id, int64_t last, int64_t freq);
void emb_dyn_remove(struct emb_table *t, int64_t id);
void emb_dyn_probation_clear(struct emb_table *t);
/* Every row removed (not counted as evicted), the probation list and the
 * evicted list emptied: the table as new, its pool kept (a full checkpoint
 * read into a table that holds rows: keep_best's reload of best.h5). */
void emb_dyn_clear(struct emb_table *t);

#endif
