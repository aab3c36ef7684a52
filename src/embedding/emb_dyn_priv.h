/* emb_dyn_priv: a dynamic table's shard state, shared by emb_dyn.c (the
 * host algorithm, the checkpoints' accessors) and emb_dyn_dev.c (the same
 * in the table's backend memory, embedding.placement = device); see
 * emb_dyn.h. */
#ifndef FS_EMB_DYN_PRIV_H
#define FS_EMB_DYN_PRIV_H

#include <stdint.h>

#include "embedding/emb_dyn.h"

#define POOL0 64 /* slots of a new pool (slot 0: the unadmitted row) */

struct emb_dyn {
    struct emb_dyn_index ix;   /* id -> slot */
    struct emb_dyn_index prob; /* admit > 1: id -> (last tick << 16) | sightings */
    int64_t prob_max;          /* the probation list's bound (0 = none) */
    int64_t max_slots;         /* the pool's bound (0 = none): capacity / G + 1 */
    int64_t *ids;              /* [slots] the id of a slot's row, 0 = free (and slot 0) */
    int64_t *last, *freq;      /* [slots] last tick used, ticks used */
    int64_t *freel, nfree;     /* free slots below next */
    int64_t next;              /* slots [next, local_rows) never used */
    int64_t clock;             /* training lookups so far */
    int64_t rows;              /* rows held (slot 0 not counted) */
    struct emb_dyn_stats st;   /* inserted, evicted, unadmitted_hits since the last take */
    int64_t *sid;              /* emb_dyn_shared_grad's lists */
    float *sg;
    int64_t ck_clock;          /* the clock at the last checkpoint of the chain */
    int64_t *gone, ngone, capgone; /* ids evicted since then (delta checkpoints) */
    /* a table in device memory (emb_dyn_dev.c): the arrays above (ix's,
     * ids, last, freq, freel) are the host's mirror of dv's, read back
     * when stale; the sizes and counters above are the host's own */
    struct emb_dyn_dev *dv;
    int stale;                 /* the mirror is older than dv's arrays */
    int dirty;                 /* dv's arrays are older than the mirror */
    int shared_served;         /* the last lookup gave some id the unadmitted row (device,
                                  cached) */
    struct emb_dyn_sg *sgb;    /* emb_dyn_dev_shared_grad's buffers (emb_dyn_dev.c) */
};

struct emb_table;

/* The pool to `slots` slots (the table's arrays and the statistics; a
 * device table's through emb_dyn_dev_resize, the mirror here). */
void emb_dyn_pool_resize(struct emb_table *t, int64_t slots);
/* The gradient of the shared unadmitted row summed over the emb group
 * (emb_dyn_shared_grad): has: this shard had it, its row g0[width] (host)
 * or, exact, its limbs x0[width][EXACT_LIMBS] (host; read when has); the
 * sum into sum[width]. 1 when some shard had it. Collective over emb. */
int emb_dyn_shared_sum(struct emb_table *t, struct comm *c, int has, int exact,
                       const float *g0, const int64_t *x0, float *sum);


/* --- emb_dyn_dev.c: a dynamic table whose arrays live in the table's backend
 * memory (t->be not the host) ---------------------------------------------- */

/* The device arrays at the pool's and the index's sizes (new: zero). */
void emb_dyn_dev_init(struct emb_table *t);
void emb_dyn_dev_free(struct emb_table *t);
/* The pool to `slots` slots on the device: the rows, state, steps and the
 * statistics arrays (the new slots zero). */
void emb_dyn_dev_resize(struct emb_table *t, int64_t slots);
/* Row `slot` := the initial row of id, zero state and steps (device). */
void emb_dyn_dev_row_init(struct emb_table *t, int64_t slot, int64_t id);
/* The host mirror from the device when stale (pull); push: the host
 * changed the mirror (the device follows before its next use). */
void emb_dyn_dev_pull(struct emb_table *t);
void emb_dyn_dev_push(struct emb_table *t);
/* emb_dyn_map on the device (emb_dyn.h). */
void emb_dyn_dev_map(struct emb_table *t, int nseg, int64_t *const *seg, const int64_t *n,
                     int train);
/* emb_dyn_map_tables on device tables (one backend): the lookups
 * enqueued, their read-backs down in one host wait, then finished. */
void emb_dyn_dev_map_many(int nt, struct emb_table *const *t, const int *nseg,
                          int64_t *const *const *seg, const int64_t *const *n, int train);
/* The unadmitted hits counted on the device since the last call (then 0). */
int64_t emb_dyn_dev_hits(struct emb_table *t);
/* emb_dyn_dev_shared_grad's buffers freed (emb_dyn_free). */
void emb_dyn_dev_sg_free(struct emb_table *t);
/* emb_dyn_shared_grad on lists in device memory (a device table's or a
 * cached one's: t->be a device's) (x0: exact sums, refused;
 * maybe = 0: the lists lack the shared row, nothing read back). */
void emb_dyn_dev_shared_grad(struct emb_table *t, struct comm *c, int64_t **ids, float **g,
                             int64_t *k, const int64_t *x0, int maybe);

#endif
