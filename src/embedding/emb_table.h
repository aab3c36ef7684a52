/* emb_table: row-wise sharded embedding tables (doc/embedding.md).
 *
 * A table of `rows` rows (ids 1..rows; 0 is padding and never looked up) is
 * sharded over the G ranks of the emb group: id belongs to shard id mod G,
 * at local slot id / G. Each rank allocates only its shard (rows/G + 1
 * slots) and that shard's optimizer state. Rows are initialised lazily, on
 * first use, from a random stream keyed by (seed, table, id): the values do
 * not depend on G or P, and untouched rows cost no memory pages. With
 * G < P the P/G groups hold replicas of the same shards, kept identical by
 * summing every sparse gradient across the emb_replica communicator.
 * A replicated table (conf.replicated: the small feature tables,
 * doc/embedding.md) is whole on every rank: G = 1, shard 0 (emb_multi.h looks it up and
 * sums its gradients over dp).
 *
 * Lookups and sparse updates of a table are exchanges between the ranks of
 * the emb group: emb_exchange.h. */
#ifndef FS_EMB_TABLE_H
#define FS_EMB_TABLE_H

#include <stdint.h>

#include "backend/backend.h"
#include "comm/comm.h"
#include "backend/emb_codec.h"
#include "backend/emb_optim.h"
#include "embedding/emb_dyn.h"

enum emb_init { EMB_INIT_UNIFORM, EMB_INIT_NORMAL };

struct emb_subspace;
struct emb_xstate; /* the exchanges' shared state (emb_exchange_priv.h) */

struct emb_table_conf {
    char name[64];
    int64_t rows; /* valid ids 1..rows */
    int dim;
    enum emb_init init;
    float init_scale; /* uniform: U(-s, s); normal: N(0, s^2) */
    uint64_t seed;
    struct emb_optim_conf optim;
    /* where the shard and its optimizer state live and the engine runs
     * (embedding.placement): NULL = host memory (the CPU backend), else a
     * device backend, on which the shard is initialised eagerly */
    const struct backend_ops *placement;
    /* a device table's exchanges: 1 = device buffers handed to MPI
     * (CUDA-aware), 0 = staged through pinned host memory */
    int direct;
    /* wire formats of the row and gradient exchanges (parallel.rows_codec,
     * parallel.grads_codec; emb_codec.h); 0 = fp32 */
    enum emb_codec rows_codec, grads_codec;
    /* subspace-factorised rows (embedding.subspace_k; emb_subspace.h): 0 =
     * a plain table; else rows are F(i) + U c[i], c[i] of subspace_k values
     * stored (host tables only); identity: U = I[:, :k], F = 0 (a test hook) */
    int subspace_k, subspace_identity;
    int replicated; /* whole on every rank (G = 1), not sharded over emb */
    /* embedding.dynamic and its settings (emb_dyn.h): a hash table of raw
     * ids, rows a pool of slots; rows = the ids' bound when known (0 = none) */
    struct emb_dyn_conf dyn;
    /* train.exact_sums: the rows' gradients summed exactly (emb_exact.h) */
    int exact;
    /* embedding.cache: the rows per shard of a device cache over a host
     * shard (emb_cache.h; placement: the device backend; a plain sharded
     * table: train/backend_check.h refuses the rest); 0 = none */
    int64_t cache;
    int cache_lfu; /* embedding.cache_policy = lfu (else lru) */
};

/* Bytes the exchanges of a table sent, counted by every rank for what it
 * sends (emb_lookup, used by evaluation and export, is not counted). */
struct emb_wire_stats {
    int64_t lookups;              /* exchanges counted (with prefetch: the next
                                   * step's too, once posted) */
    int64_t backwards;            /* of those, whose gradients went back: the
                                   * steps the gradient bytes belong to */
    int64_t rows, grads;          /* bytes to other ranks of the emb group */
    int64_t rows_xnode, grads_xnode; /* of which to ranks on other nodes */
    int64_t fp32;                 /* fp32 without de-duplication: 4 dim bytes per
                                   * requested token owned by another rank (the
                                   * rows'; the gradients' is the same) */
    int64_t pf_rows, pf_late;     /* prefetch: unique rows requested that came
                                   * ahead, and late (collided with the update) */
};

struct emb_table {
    struct emb_table_conf conf;
    const struct backend_ops *be; /* holds the shard and runs its engine ops */
    int G, shard;         /* emb group size, this rank's shard */
    int64_t local_rows;   /* slots: local index = id / G */
    int width;            /* values stored per row: dim, or subspace_k */
    struct emb_subspace *sub; /* the basis of a subspace table, else NULL */
    int64_t state_floats; /* optimizer floats per row */
    float *w;             /* [local_rows, width] */
    float *state;         /* [local_rows, state_floats] (of width values) */
    int64_t *steps;       /* [local_rows] adam step counts, else NULL */
    uint8_t *ready;       /* [local_rows / 8 + 1] bitmap: row initialised (host
                           * tables: lazy); NULL on a device (initialised eagerly) */
    int index;                /* in its registry: the exchanges' message tags */
    struct emb_xstate *xs;    /* what its exchanges keep across steps (created on first use) */
    struct emb_wire_stats wire;         /* this rank's, since the last emb_table_wire_take */
    struct emb_dyn *dyn;      /* a dynamic table's index and pool (emb_dyn.h), else NULL */
    struct emb_cache *cache;  /* a cached table's host shard and map (emb_cache.h), else
                               * NULL; t->w, state, steps are then its device slots */
};

#define EMB_MAX_TABLES 136 /* the item table, up to 64 feature tables and their projections */
struct emb_registry {
    int n;
    struct emb_table tables[EMB_MAX_TABLES];
};

/* Add a table sharded over c's emb group; returns it. Refuses duplicate
 * names and bad shapes with fatal(). */
struct emb_table *emb_registry_add(struct emb_registry *r, const struct comm *c,
                                   const struct emb_table_conf *conf);
struct emb_table *emb_registry_find(struct emb_registry *r, const char *name);
void emb_registry_free(struct emb_registry *r);
/* Bytes of a shard of `slots` slots (the sizing of embedding.placement =
 * auto and device, embedding.cache and 'freescale plan --memory'): rows
 * of width floats with their optimizer's state (kind) and adam's int64
 * step counts; a dynamic table's pool (dyn) adds 32 bytes of statistics a
 * slot and its index at most half full (the power of two >= 2 slots of
 * 16-byte entries, 16 at least). */
double emb_shard_bytes(double slots, int width, enum emb_optimizer kind, int dyn);

/* The wire counters of t since the last call, summed over the ranks of the
 * job (collective over world), then reset; out->lookups is the number of
 * exchanges per rank (the steps, in training). */
void emb_table_wire_take(struct emb_table *t, struct comm *c, struct emb_wire_stats *out);

/* The initial value of row id (identical on every rank, for any G): row[dim]. */
void emb_init_row(const struct emb_table_conf *conf, int64_t id, float *row);
/* The first n values of that row (a subspace table's initial c[i]): row[n]. */
void emb_init_row_n(const struct emb_table_conf *conf, int64_t id, float *row, int n);
/* The table's key in the random streams (a hash of its name). */
uint64_t emb_name_hash(const char *name);
/* 0 if every id is in 1..rows, else -1 with err naming the table, the id,
 * its token index and the rank. */
int emb_check_ids(const struct emb_table_conf *conf, const int64_t *ids, int64_t n, int rank,
                  char *err, size_t errlen);

/* The storage of row id of this rank's shard ([width] values), initialised on first use
 * (host tables only: a device table ends the job). */
float *emb_shard_slot(struct emb_table *t, int64_t id);
/* Initialise the rows ids[n] of this rank's shard not yet initialised
 * (before the engine ops read or update them). */
void emb_table_ready(struct emb_table *t, const int64_t *ids, int64_t n);
/* The local slots the virtual ids of t's lookups reach (id / G below it):
 * the shard's, or a cached dynamic pool's cache slots when more. */
int64_t emb_table_vslots(const struct emb_table *t);
/* A bound on those virtual ids (the backends' key_max): the dataset's
 * rows, or a dynamic table's slots times G (its pool's, or its cache's:
 * above the dataset's items when a shard holds more than its share). */
int64_t emb_table_key_max(const struct emb_table *t);
/* Host copies of the slots [slot0, slot0 + n) of this rank's shard (slot
 * k holds id k G + shard; slots of no valid id are zeros): w [n, dim] (a
 * subspace table's rows F(i) + U c[i], rebuilt),
 * state [n, state_floats] and steps [n] when not NULL (steps: zeros unless
 * adam). Rows not yet used hold their initial values. Any placement. */
void emb_table_get_slots(struct emb_table *t, int64_t slot0, int64_t n, float *w, float *state,
                         int64_t *steps);
/* The same with w [n, width]: the values stored (a subspace table's c[i];
 * for checkpoints). */
void emb_table_get_stored(struct emb_table *t, int64_t slot0, int64_t n, float *w, float *state,
                          int64_t *steps);
/* get_stored of the slots slot[n] (any order): w [n, width], state, steps
 * in slot's order; a cached table's in one pass (emb_cache_get_rows), any
 * other's a slot at a time. */
void emb_table_get_rows(struct emb_table *t, int64_t n, const int64_t *slot, float *w,
                        float *state, int64_t *steps);
/* The reverse of get_stored: set those slots from host copies (NULL: leave
 * as is). */
void emb_table_set_slots(struct emb_table *t, int64_t slot0, int64_t n, const float *w,
                         const float *state, const int64_t *steps);
/* Copy row id of this rank's shard into row[dim] (initialising it if
 * needed); id must belong to this shard. */
void emb_shard_row(struct emb_table *t, int64_t id, float *row);

#endif
