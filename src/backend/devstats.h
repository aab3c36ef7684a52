/* devstats: what keeps a device idle, counted by the device backends (the
 * CUDA backend and the fake device, fake/) and reported per step in the
 * metrics (device_syncs, h2d_bytes, d2h_bytes, device_allocs; doc/gpu.md):
 *
 *   syncs   blocking host waits: stream and event synchronisations, the
 *           synchronous copies, the operations that return a result on the
 *           host (dedup's counts, sums of squares);
 *   h2d, d2h  bytes copied host -> device and device -> host (synchronous
 *           and asynchronous copies alike);
 *   allocs  device and pinned host allocations.
 *
 * One set of counters per process (a rank drives one device); the backends
 * add to them, the training loop takes them per logging interval. With
 * FREESCALE_SYNC_TRACE set in the environment every host wait prints its
 * call stack to stderr (a debugging aid: where do the waits come from). */
#ifndef FS_DEVSTATS_H
#define FS_DEVSTATS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct devstats {
    int64_t syncs, h2d, d2h, allocs;
};

void devstats_sync(void);
void devstats_h2d(size_t bytes);
void devstats_d2h(size_t bytes);
void devstats_alloc(void);
/* The counters since the last call (all zeros on the CPU backend), reset. */
void devstats_take(struct devstats *out);
/* Add d back to the counters (what a caller took to count a part apart:
 * the evaluation's bytes, eval.c, while the interval's go on). */
void devstats_add(const struct devstats *d);

#ifdef __cplusplus
}
#endif

#endif
