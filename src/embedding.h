/* embedding: row-wise sharded embedding tables and their all-to-all
 * exchanges (DESIGN.md §5).
 *
 * A table of `rows` rows (ids 1..rows; 0 is padding and never looked up) is
 * sharded over the G ranks of the emb group: id belongs to shard id mod G,
 * at local slot id / G. Each rank allocates only its shard (rows/G + 1
 * slots) and that shard's optimizer state. Rows are initialised lazily, on
 * first use, from a random stream keyed by (seed, table, id): the values do
 * not depend on G or P, and untouched rows cost no memory pages. With
 * G < P the P/G groups hold replicas of the same shards, kept identical by
 * summing every sparse gradient across the emb_replica communicator.
 *
 * One lookup is two stages, so that the second can overlap compute:
 *   emb_input_dist   de-duplicate ids (inverse index kept), bucket them by
 *                    owner, exchange counts (all-to-all) and ids
 *                    (all-to-allv, non-blocking);
 *   emb_output_dist  owners gather rows; rows come back (all-to-allv) and are
 *                    expanded to token order.
 * emb_backward sums gradients per unique id, sends them to the owners, sums
 * them across requesters and replicas, and applies the sparse optimizer to
 * the touched rows only. */
#ifndef FS_EMBEDDING_H
#define FS_EMBEDDING_H

#include <stdint.h>

#include "comm.h"
#include "emb_optim.h"

enum emb_init { EMB_INIT_UNIFORM, EMB_INIT_NORMAL };

struct emb_table_conf {
    char name[32];
    int64_t rows; /* valid ids 1..rows */
    int dim;
    enum emb_init init;
    float init_scale; /* uniform: U(-s, s); normal: N(0, s^2) */
    uint64_t seed;
    struct emb_optim_conf optim;
};

struct emb_table {
    struct emb_table_conf conf;
    int G, shard;         /* emb group size, this rank's shard */
    int64_t local_rows;   /* slots: local index = id / G */
    int64_t state_floats; /* optimizer floats per row */
    float *w;             /* [local_rows, dim] */
    float *state;         /* [local_rows, state_floats] */
    int64_t *steps;       /* [local_rows] adam step counts, else NULL */
    uint8_t *ready;       /* [local_rows / 8 + 1] bitmap: row initialised */
};

#define EMB_MAX_TABLES 16
struct emb_registry {
    int n;
    struct emb_table tables[EMB_MAX_TABLES];
};

/* Seconds spent per stage, accumulated over calls. */
struct emb_times {
    double dedup, counts, ids, gather, rows, expand;          /* forward */
    double grad_sum, grads, aggregate, replica, update;       /* backward */
};

/* One lookup in flight or done, kept for its backward. */
struct emb_exchange {
    int64_t n;                 /* tokens */
    int64_t nuniq;             /* unique ids requested */
    int64_t *uniq;             /* [nuniq] grouped by owner */
    int64_t *inverse;          /* [n] token -> index in uniq */
    int64_t *scounts, *sdispls, *rcounts, *rdispls; /* [G] ids per peer */
    int64_t nserve;            /* ids this rank serves as owner */
    int64_t *serve;            /* [nserve] grouped by requester */
    float *rows;               /* [nuniq, dim] rows of uniq */
    struct comm_request req;   /* the ids exchange in flight */
    int pending;
};

/* Add a table sharded over c's emb group; returns it. Refuses duplicate
 * names and bad shapes with fatal(). */
struct emb_table *emb_registry_add(struct emb_registry *r, const struct comm *c,
                                   const struct emb_table_conf *conf);
struct emb_table *emb_registry_find(struct emb_registry *r, const char *name);
void emb_registry_free(struct emb_registry *r);

/* The initial value of row id (identical on every rank, for any G): row[dim]. */
void emb_init_row(const struct emb_table_conf *conf, int64_t id, float *row);
/* 0 if every id is in 1..rows, else -1 with err naming the table, the id,
 * its token index and the rank. */
int emb_check_ids(const struct emb_table_conf *conf, const int64_t *ids, int64_t n, int rank,
                  char *err, size_t errlen);

void emb_input_dist(struct emb_table *t, struct comm *c, const int64_t *ids, int64_t n,
                    struct emb_exchange *x, struct emb_times *tm);
/* out: [n, dim] rows in token order, or NULL to keep only the unique rows
 * x->rows: [nuniq, dim] (token i's row is x->rows[x->inverse[i]]). */
void emb_output_dist(struct emb_table *t, struct comm *c, struct emb_exchange *x, float *out,
                     struct emb_times *tm);
void emb_lookup(struct emb_table *t, struct comm *c, const int64_t *ids, int64_t n, float *out,
                struct emb_exchange *x, struct emb_times *tm);
/* grad: [n, dim] in token order of the lookup x. */
void emb_backward(struct emb_table *t, struct comm *c, struct emb_exchange *x, const float *grad,
                  struct emb_times *tm);
/* The same from gradients already summed per unique id: gu: [nuniq, dim]
 * in the order of x->uniq (x->rows' order). */
void emb_backward_unique(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                         const float *gu, struct emb_times *tm);
void emb_exchange_free(struct emb_exchange *x);

/* The storage of row id of this rank's shard, initialised on first use. */
float *emb_shard_slot(struct emb_table *t, int64_t id);
/* Copy row id of this rank's shard into row[dim] (initialising it if
 * needed); id must belong to this shard. */
void emb_shard_row(struct emb_table *t, int64_t id, float *row);

#endif
