/* emb_exchange: one lookup of a sharded table and its backward, as
 * exchanges within the emb group (doc/architecture.md, "The embedding exchange").
 *
 * The contract, in the order a caller goes through it:
 *
 *   emb_ids_*           (optional) assemble the ids in the table's memory:
 *                       host parts uploaded without a host wait, uniform
 *                       negatives drawn by the table's backend
 *   emb_input_dist      de-duplicates the requested ids (the inverse index
 *                       maps every token to its unique id), buckets them by
 *                       owner and posts the counts exchange (non-blocking).
 *                       Unique ids come in two chunks: chunk 0 holds the
 *                       ids of the first n_first tokens (those the model
 *                       consumes first), chunk 1 the rest.
 *   emb_input_post_ids  posts the ids exchange (non-blocking).
 *   emb_output_post     owners read their rows NOW (after every update
 *                       applied before this call) and post them back, chunk
 *                       0 first.
 *   emb_output_wait     chunk k's rows have arrived in emb_exchange_rows().
 *   emb_exchange_grads  the buffer the caller fills with the gradients per
 *                       unique row.
 *   emb_grad_post_chunk sends chunk k's gradients to the owners (a chunk
 *                       whose gradients are final early can travel while the
 *                       caller computes); emb_grad_post sends the chunks not
 *                       yet sent.
 *   emb_grad_finish     owners sum the gradients of each row over
 *                       requesters and replicas and apply the sparse
 *                       optimizer to the touched rows.
 *   emb_exchange_free   drains what is in flight and releases the exchange.
 *
 * emb_exchange_progress may be called at any point in between to move what
 * is in flight (MPI_Test; it posts only point-to-point messages, those of
 * emb_output_hold, so every rank posts the same collectives in the same
 * order). The unique rows [nuniq, dim] are laid out
 * by owner; chunk k of them is the set of row spans emb_exchange_spans
 * returns (the one place the two-chunk layout is computed). The exchange's
 * state is private to the embedding module.
 *
 * Where the data lives: in the table's memory (emb_table.h: t->be), host
 * memory for host tables and device memory for device tables: ids, unique
 * ids, the inverse index, rows and gradients never leave the device; only
 * the per-owner counts travel to the host. The transfers (host: MPI
 * all-to-alls on host memory; device: staged through pinned buffers, or
 * device buffers handed to CUDA-aware MPI point to point) and what they
 * keep are in emb_exchange_priv.h. Buffers are kept across exchanges: a
 * step allocates nothing once they have grown.
 *
 * Rows and gradients travel in the table's wire formats (conf.rows_codec,
 * conf.grads_codec; emb_codec.h): owners encode every row they serve (to
 * themselves too) and emb_output_wait decodes chunk k into
 * emb_exchange_rows(); requesters encode their gradients in
 * emb_grad_post_chunk and owners decode them in emb_grad_finish. Of a
 * subspace table (emb_subspace.h) the k values c[i] travel and
 * emb_output_wait rebuilds the rows F(i) + U c[i]; the gradients travel as
 * U^T g. The rows and the gradients the caller sees are d wide. The
 * exchanges of the split calls are counted in t->wire (emb_table.h:
 * emb_table_wire_take); emb_lookup's are not. */
#ifndef FS_EMB_EXCHANGE_H
#define FS_EMB_EXCHANGE_H

#include <stdint.h>

#include "comm/comm.h"
#include "embedding/emb_table.h"

struct emb_exchange;

/* Seconds spent per stage, accumulated over calls. */
struct emb_times {
    double dedup, counts, ids, gather, rows, expand;    /* forward */
    double grad_sum, grads, aggregate, replica, update; /* backward */
};

/* A run of unique rows: rows [first, first + n) of the exchange's rows. */
struct emb_span {
    int64_t first, n;
};

/* Check ids[n] (host memory; fatal() naming the table and the token when
 * one is outside 1..rows), de-duplicate them and post the counts exchange.
 * ids[0..n_first) form chunk 0 (pass n for one chunk). Returns the new
 * exchange. */
struct emb_exchange *emb_input_dist(struct emb_table *t, struct comm *c, const int64_t *ids,
                                    int64_t n, int64_t n_first, struct emb_times *tm);
/* The same for the ids assembled by emb_ids_* (checked there). */
struct emb_exchange *emb_input_dist_at(struct emb_table *t, struct comm *c, int64_t n,
                                       int64_t n_first, struct emb_times *tm);
/* The ids of the next lookup in the table's memory: emb_ids_reserve(t, n)
 * makes room for n; emb_ids_put copies host ids into [off, off + count)
 * (checked as emb_input_dist does; no host wait); emb_ids_negatives draws
 * the uniform negatives of T positions into [off, off + T R) with the
 * table's backend (model/loss.h: loss_sample_negatives' draws; keys: host
 * [T]). Valid until the next emb_ids_reserve. */
int64_t *emb_ids_reserve(struct emb_table *t, int64_t n);
void emb_ids_put(struct emb_table *t, int64_t off, const int64_t *ids, int64_t count, int rank);
void emb_ids_negatives(struct emb_table *t, int64_t off, uint64_t seed, uint64_t epoch,
                       const uint64_t *keys, int64_t T, int R, int64_t num_items);
/* Complete the counts (blocking if needed) and post the ids exchange. */
void emb_input_post_ids(struct comm *c, struct emb_exchange *x);
/* Owners gather the rows and post both chunks back, non-blocking. */
void emb_output_post(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                     struct emb_times *tm);
/* Before emb_output_post (parallel.overlap = prioritized, prefetch):
 * priority that holds on a shared link. Chunk 1's rows are posted only
 * once chunk 0's exchange is complete at this rank (seen by
 * emb_output_post's end, emb_exchange_progress or emb_output_wait(x, 0),
 * else the first call that needs chunk 1), so no byte of chunk 1 shares a
 * connection or a link's queue with chunk 0's. (Testing chunk 0 while
 * chunk 1's rows are gathered, to move its rendezvous, made the gather
 * several times slower over TCP: not done.) The rows of a held exchange
 * travel point to point (the order of
 * their posts among the ranks' other exchanges need not agree). The rows
 * are the same bits either way (doc/overlap.md, "Priority on a shared
 * link"). */
void emb_output_hold(struct emb_exchange *x);
/* Block until chunk k's rows are in emb_exchange_rows(x). */
void emb_output_wait(struct emb_exchange *x, int k, struct emb_times *tm);
/* hook(arg, 1) before and hook(arg, 0) after each blocking wait of a
 * transfer (MPI, device events), process-wide (the step's device timers,
 * train/gputime.h, take the waits out of their spans); NULL: none. */
void emb_set_wait_hook(void (*hook)(void *arg, int begin), void *arg);
/* Advance whatever of x is in flight (counts, ids, rows, gradients) without
 * blocking; post a held chunk 1 whose chunk 0 is done (emb_output_hold). */
void emb_exchange_progress(struct emb_exchange *x);

/* Unique ids requested (the rows' count), the inverse index [n] (token ->
 * unique row) and the unique rows [nuniq, dim], in the table's memory
 * (chunk k's part of the rows is valid after emb_output_wait(x, k)). */
int64_t emb_exchange_nuniq(const struct emb_exchange *x);
const int64_t *emb_exchange_inverse(const struct emb_exchange *x);
const float *emb_exchange_rows(const struct emb_exchange *x);
/* The unique ids [nuniq] in the rows' order (item features: tokens.h). */
const int64_t *emb_exchange_uniq(const struct emb_exchange *x);
/* The gradients per unique row [nuniq, dim] in the table's memory, in the
 * rows' order: the caller fills them (unset values are not zero); chunk k's
 * rows are read by emb_grad_post_chunk(k) until emb_grad_finish returns. */
float *emb_exchange_grads(struct emb_exchange *x);
/* Chunk k's rows as spans (one per owner, some empty): *spans points into
 * x; returns their number. */
int emb_exchange_spans(const struct emb_exchange *x, int k, const struct emb_span **spans);

/* Post chunk k's gradients (emb_exchange_grads) to the owners. */
void emb_grad_post_chunk(struct emb_table *t, struct comm *c, struct emb_exchange *x, int k,
                         struct emb_times *tm);
/* Post every chunk not posted yet, in chunk order. */
void emb_grad_post(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                   struct emb_times *tm);
/* Complete the gradients (every chunk posted): sum per row, across
 * replicas, and apply the sparse optimizer. */
void emb_grad_finish(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                     struct emb_times *tm);
void emb_exchange_free(struct emb_exchange *x);

/* parallel.overlap = prefetch (doc/overlap.md): the rows of the next
 * lookup y while the current one x (rows served, update not yet applied)
 * is in its backward, exactly (emb_prefetch.c):
 *   emb_prefetch_plan  (y's ids posted; x's update not applied) owners mark
 *                      the rows of y that x's update touches (x's served
 *                      ids, over the replicas of the shard: collective over
 *                      emb_replica) and post the marks to the requesters
 *   emb_prefetch_post  owners gather and post y's unmarked rows (hold:
 *                      gather them now, post them with the late ones, so
 *                      that x's gradients go ahead of them on a shared
 *                      link; doc/overlap.md, "Priority on a shared link")
 *   emb_prefetch_late  after x's emb_grad_finish: owners post the marked
 *                      (colliding) rows, read now
 * then emb_output_wait(y, 0) completes every row of y (chunk 1 with them;
 * emb_output_post is not called for y): bitwise the rows emb_output_post
 * would have served after x's update. Every rank calls them in the same
 * order. */
void emb_prefetch_plan(struct emb_table *t, struct comm *c, struct emb_exchange *y,
                       const struct emb_exchange *x);
void emb_prefetch_post(struct emb_table *t, struct comm *c, struct emb_exchange *y, int hold);
void emb_prefetch_late(struct emb_table *t, struct comm *c, struct emb_exchange *y);

/* parallel.transport = copy-engine | kernel (emb_ipc.c): a device table's
 * rows and gradients between ranks of one node (comm_peer_remote) go
 * through CUDA IPC mappings, copied by the copy engines (use_kernel = 0)
 * or a copy kernel (1); between nodes by MPI as before. Collective over
 * the emb group, before the table's first exchange, for a table in device
 * memory on a backend with CUDA IPC (backend_has_ipc; train/backend_check.c
 * refuses the rest); 0, or -1 with err (a table not sharded over the
 * group). */
int emb_ipc_init(struct emb_table *t, struct comm *c, int use_kernel, char *err, size_t errlen);

/* The whole lookup, blocking, host memory in and out. out: [n, dim] rows
 * in token order. Returns the exchange, kept for emb_backward (or to be
 * freed). */
struct emb_exchange *emb_lookup(struct emb_table *t, struct comm *c, const int64_t *ids,
                                int64_t n, float *out, struct emb_times *tm);
/* emb_lookup with out [n, dim] in the table's memory (a device table's:
 * the rows gathered on the device, none brought down). */
struct emb_exchange *emb_lookup_dev(struct emb_table *t, struct comm *c, const int64_t *ids,
                                    int64_t n, float *out, struct emb_times *tm);
/* The whole backward of a lookup, blocking. grad: [n, dim] in token order,
 * host memory (summed per unique id in double, then sent as floats). */
void emb_backward(struct emb_table *t, struct comm *c, struct emb_exchange *x, const float *grad,
                  struct emb_times *tm);

#endif
