/* gputime: device-side phase timers of the training step (DESIGN.md §9):
 * timing events on the compute stream around forward + loss, backward, the
 * exchanges' device work and waits (rows arriving, gathers, the sparse
 * update) and the optimizer, read at the end of the step, after its
 * read-back: they have completed by then, so reading them costs no host
 * wait. gpu_ms (the device time of those spans per step) and gpu_busy
 * (gpu_ms over the step's wall time) go on the progress line and into the
 * metrics. The fake device times its operations on the host, so the same
 * code runs in the tests; on the CPU backend (no events) nothing is
 * recorded. */
#ifndef FS_GPUTIME_H
#define FS_GPUTIME_H

#include <stdint.h>

#include "backend/backend.h"

enum gpu_phase { GPU_FORWARD, GPU_BACKWARD, GPU_EXCHANGE, GPU_OPTIMIZER, GPU_NPHASES };

#define GPU_SPANS 4 /* spans of one phase per step, at most */

struct gputime {
    const struct backend_ops *be;  /* NULL: no events (host backends) */
    struct backend_event *ev[GPU_NPHASES][GPU_SPANS][2];
    int spans[GPU_NPHASES], open;  /* this step's spans; one begun */
    double ms[GPU_NPHASES];        /* the interval's device milliseconds */
    double wall_ms;                /* the interval's step wall time */
    int64_t steps;
};

void gputime_init(struct gputime *g, const struct backend_ops *be);
void gputime_free(struct gputime *g);
/* A span of phase ph begins / ends here (in the compute stream's order). */
void gputime_begin(struct gputime *g, enum gpu_phase ph);
void gputime_end(struct gputime *g, enum gpu_phase ph);
/* The step is over (its work completed: after the read-back) and took
 * wall_s seconds: its spans are read. */
void gputime_step(struct gputime *g, double wall_s);
/* 1 when the backend has events. The interval's means per step: ms[ph],
 * *gpu_ms (their sum), *busy (gpu_ms / wall); then reset. */
int gputime_take(struct gputime *g, double ms[GPU_NPHASES], double *gpu_ms, double *busy);
const char *gputime_name(enum gpu_phase ph);

#endif
