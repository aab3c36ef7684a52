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

#include "comm/comm.h"
#include "embedding/emb_optim.h"

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

enum emb_stage { EMB_IDLE, EMB_COUNTS_POSTED, EMB_COUNTS_DONE, EMB_IDS_POSTED, EMB_IDS_DONE };

/* One lookup in flight or done, kept for its backward. Unique ids are in
 * two chunks: chunk 0 holds the ids of the first n_first tokens (those the
 * model consumes first), chunk 1 the rest; within each owner's block of
 * uniq, chunk 0 comes first. */
struct emb_exchange {
    struct comm *c;
    int G;
    int64_t n;                 /* tokens */
    int64_t nuniq;             /* unique ids requested */
    int64_t *uniq;             /* [nuniq] grouped by owner, chunk 0 first */
    int64_t *inverse;          /* [n] token -> index in uniq */
    int64_t *scounts, *sdispls, *rcounts, *rdispls; /* [G] ids per peer */
    int64_t *scounts0, *rcounts0; /* [G] of which in chunk 0 */
    int64_t *cnt;              /* [4G] counts sent and received */
    int64_t nserve;            /* ids this rank serves as owner */
    int64_t *serve;            /* [nserve] grouped by requester */
    float *served;             /* [nserve, dim] rows on their way out */
    float *rows;               /* [nuniq, dim] rows of uniq */
    enum emb_stage stage;      /* of the counts and ids exchange */
    struct comm_request req;   /* counts, then ids, in flight */
    struct comm_request rreq[2]; /* rows of chunk 0 and chunk 1 */
    int rpending[2];
    struct comm_request greq[2]; /* gradients to the owners, per chunk */
    float *gs;                 /* [nserve, dim] gradients received */
    int gpending[2];
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

/* De-duplicate ids[n] and post the counts exchange (non-blocking; the ids
 * exchange follows in emb_input_post_ids or in the output stage).
 * ids[0..n_first) form chunk 0 (pass n for one chunk). */
void emb_input_dist(struct emb_table *t, struct comm *c, const int64_t *ids, int64_t n,
                    int64_t n_first, struct emb_exchange *x, struct emb_times *tm);
/* Advance the counts or ids exchange without blocking (MPI_Test: never
 * posts, so that every rank posts in the same order); 1 once the ids have
 * reached their owners. Call between compute phases. */
int emb_input_progress(struct emb_exchange *x);
/* Complete the counts (blocking if needed) and post the ids exchange. */
void emb_input_post_ids(struct comm *c, struct emb_exchange *x);
/* Owners gather the rows (read NOW: after any update applied before this
 * call) and post both chunks back, non-blocking. */
void emb_output_post(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                     struct emb_times *tm);
/* 1 once chunk's rows are in x->rows (non-blocking); emb_output_wait blocks. */
int emb_output_test(struct emb_exchange *x, int chunk);
void emb_output_wait(struct emb_exchange *x, int chunk, struct emb_times *tm);
/* All of it, blocking. out: [n, dim] rows in token order, or NULL to keep
 * only the unique rows x->rows: [nuniq, dim] (token i's row is
 * x->rows[x->inverse[i]]). */
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
/* The same in two halves: post the gradients to their owners
 * (non-blocking; gu is read until emb_grad_finish returns), then complete:
 * sum per row, across replicas, and apply the sparse optimizer. */
void emb_grad_post(struct emb_table *t, struct comm *c, struct emb_exchange *x, const float *gu,
                   struct emb_times *tm);
int emb_grad_test(struct emb_exchange *x);
/* Post chunk k's gradients alone (gu: [nuniq, dim] as above; only chunk
 * k's rows are read): a chunk whose gradients are final early (chunk 1,
 * the ids used only by the loss) can travel during the model's backward.
 * emb_grad_finish needs both chunks posted. */
void emb_grad_post_chunk(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                         const float *gu, int k, struct emb_times *tm);
void emb_grad_finish(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                     struct emb_times *tm);
void emb_exchange_free(struct emb_exchange *x);

/* The storage of row id of this rank's shard, initialised on first use. */
float *emb_shard_slot(struct emb_table *t, int64_t id);
/* Copy row id of this rank's shard into row[dim] (initialising it if
 * needed); id must belong to this shard. */
void emb_shard_row(struct emb_table *t, int64_t id, float *row);

#endif
