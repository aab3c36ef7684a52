/* dense_sync: the sum of the dense gradient arena over dp (doc/architecture.md,
 * "One step") with the transport of parallel.transport: MPI (in place on a
 * host backend or with CUDA-aware MPI, else staged through pinned host
 * memory), or CUDA IPC within a node (train/dense_ipc.c).
 *
 * Bucketed (parallel.overlap = prioritized, gradients in host memory: no
 * device pointer ever reaches a non-blocking collective): the arena is
 * posted in buckets during the backward, each as soon as the model's
 * between-layers hook reports its tensors final; the bucket of the first
 * tensors is posted last, after the sparse gradients. Otherwise the arena is summed at once in
 * dense_sync_finish, except where it is staged through pinned host memory
 * (a device by MPI), the host would bucket it and dp >= 3 (at 2 one sum
 * has the buckets' bits): the buckets' bounds are
 * recorded during the backward and the staged copy summed in the same
 * non-blocking all-reduces, for the host's bits (at P >= 3 Open MPI's
 * order depends on the call and the count: one all-reduce of the arena
 * differs from its buckets' in the last bits). The IPC transports sum in
 * node-rank order: other bits than MPI's at P >= 3. With
 * train.exact_sums the model's exact accumulators are summed instead (at
 * once, as int64: the same bits on any number of ranks) and the arena gets
 * their values. */
#ifndef FS_DENSE_SYNC_H
#define FS_DENSE_SYNC_H

#include "backend/device.h"
#include "comm/comm.h"
#include "model/model.h"

struct dense_sync;

/* Choose the transport (transport: parallel.transport; want_buckets: the
 * schedule would post buckets) and log the choice. An explicit transport
 * the backend cannot give ends the job. Collective. */
struct dense_sync *dense_sync_init(struct comm *c, const struct device_choice *dev,
                                   struct model *m, const char *transport, int want_buckets);
void dense_sync_free(struct dense_sync *s);
/* 1 when the arena goes in buckets during the backward. */
int dense_sync_bucketed(const struct dense_sync *s);
/* A new step: no bucket posted. */
void dense_sync_begin(struct dense_sync *s);
/* Bucketed: tensors from params[first_final] on are final: post those not
 * yet posted (first_final > 0; the first bucket waits for dense_sync_post_last). */
void dense_sync_post_final(struct dense_sync *s, int first_final);
/* Bucketed: post the rest of the arena. */
void dense_sync_post_last(struct dense_sync *s);
/* Test the buckets in flight. */
void dense_sync_progress(struct dense_sync *s);
/* The arena holds the sum over dp: wait for the buckets, or sum it now. */
void dense_sync_finish(struct dense_sync *s);

/* --- issue 51 G: the staged copy down started early ----------------------- */
/* The staged all-reduce (a device without CUDA-aware MPI or IPC, dp > 1,
 * no buckets, no exact sums): enqueue the arena's copy down now (its
 * gradients final) and with it ride[ride_bytes] (backend memory) into
 * ride_host (pinned host memory); dense_sync_finish waits for them only
 * where they are not done by then. 1 when started; 0 (nothing enqueued)
 * otherwise. */
int dense_sync_start(struct dense_sync *s, const void *ride, void *ride_host, size_t ride_bytes);
/* After dense_sync_finish of a started copy: the sum of squares of the
 * summed arena (in double, the CPU backend's order), made on the host. */
double dense_sync_sumsq(const struct dense_sync *s);

#endif
