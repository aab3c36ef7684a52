/* emb_multi: one lookup of many tables at once (the feature tables,
 * doc/embedding.md: one exchange per step carries the ids of all sharded
 * tables), and its backward.
 *
 * Each table's requested ids are de-duplicated on their own (the inverse
 * index maps every request to its table's unique row). A replicated table
 * (conf.replicated, host memory) is read locally; the sharded ones travel
 * together: ONE all-to-all of counts (one per table per peer), ONE
 * all-to-allv of the ids of every sharded table, ONE all-to-allv of their
 * rows back, and in the backward ONE all-to-allv of their gradients, each
 * peer's part laid out table after table. Rows and gradients are fp32 on
 * the wire (the item table's codecs and subspace rows are not offered
 * here). Tables in device memory (embedding.placement = device; plain,
 * all on one device) are read and updated there: their ids staged up
 * without a host wait, the rows of a lookup gathered and copied to the
 * host at once (one host wait), the summed gradients staged up and the
 * optimizer run there; the exchanges and sums stay on the host. A cached
 * sharded table (embedding.cache, emb_cache.h: its slots are a device
 * table) is one of them: its owner's served ids are resolved by the cache
 * on the host (a training lookup: its misses fetched then, no prefetch)
 * and go up as virtual ids, which its gradients come back to.
 *
 * Gradients: the caller gives each table's gradient per unique row (gu[k]
 * [nuniq_k, width_k]). A sharded table's owner sums them per row over
 * requesters (requester order), then over the replicas of its shard
 * (emb_replica, replica order); a replicated table's gradients are summed
 * over dp by an all-gather of every rank's touched rows, summed in rank
 * order on every rank (so the replicas stay bitwise identical, and with G
 * = P a replicated and a sharded table get the very same sums). Then the
 * table's sparse optimizer updates the touched rows.
 *
 *   emb_multi_input    de-duplicate, read the replicated tables, post the
 *                      counts (non-blocking; collective over emb when a
 *                      table is sharded)
 *   emb_multi_lookup   complete the lookup (blocking): ids to the owners,
 *                      rows back; every table's rows (the replicated
 *                      ones too) are read now, after the updates before
 *   emb_multi_*        accessors: unique rows, inverse, unique ids
 *   emb_multi_backward the gradients, summed and applied (collective over
 *                      emb, emb_replica and dp as the tables need)
 *   emb_multi_free     drain and release.
 * Every rank calls them in the same order with the same tables. */
#ifndef FS_EMB_MULTI_H
#define FS_EMB_MULTI_H

#include <stdint.h>

#include "comm/comm.h"
#include "embedding/emb_table.h"

#define EMB_MULTI_MAX 136

struct emb_multi;

/* Look up ids[k][0 .. n[k]) of table t[k], k < nt (ids in 1..rows of
 * their table; fatal() naming the table otherwise). */
struct emb_multi *emb_multi_input(struct emb_table *const *t, int nt, struct comm *c,
                                  const int64_t *const *ids, const int64_t *n);
void emb_multi_lookup(struct emb_multi *x);
/* Mark x a training lookup (before emb_multi_lookup): a dynamic table's
 * lookup ticks its clock and inserts rows (emb_dyn.h); others only read. */
void emb_multi_train(struct emb_multi *x);
/* Table k's unique rows [nuniq, width], inverse [n[k]], unique ids [nuniq]
 * (after emb_multi_lookup). */
int64_t emb_multi_nuniq(const struct emb_multi *x, int k);
const int64_t *emb_multi_inverse(const struct emb_multi *x, int k);
const float *emb_multi_rows(const struct emb_multi *x, int k);
const int64_t *emb_multi_uniq(const struct emb_multi *x, int k);
/* Advance the counts exchange in flight (MPI_Test only). */
void emb_multi_progress(struct emb_multi *x);
/* gu[k]: [nuniq_k, width_k] gradients per unique row of table k. */
void emb_multi_backward(struct emb_multi *x, float *const *gu);
/* The same with exact sums (train.exact_sums): xg[k] [nuniq_k, width_k]
 * [EXACT_LIMBS] each table's per-row accumulators (base/exact.h), summed
 * over the ranks as integers: the same update on any number of ranks. */
void emb_multi_backward_exact(struct emb_multi *x, int64_t *const *xg);
void emb_multi_free(struct emb_multi *x);
/* Release the device buffers that lookups of device tables keep across
 * calls (a run's end; none on the host). */
void emb_multi_device_free(void);

#endif
