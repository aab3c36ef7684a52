/* gputime: device-side phase timers of the training step (doc/gpu.md):
 * timing events on the compute stream around forward + loss, backward, the
 * exchanges' device work (rows landing, gathers, the sparse update) and
 * the optimizer, read at the end of the step when they have completed
 * (event_query), else at the end of the next step: the step's end need not
 * wait for its last work (parallel.overlap = prefetch and the staged dense
 * all-reduce's read-back leave the optimizer and the next step's lookups
 * running behind the host), so the events of two steps alternate, and a
 * step's events still incomplete a step later are waited for (event_sync;
 * the stream is then more than a step behind the host).
 *
 * Only the compute stream's busy time counts: the host's blocking waits
 * inside a span (the exchanges' MPI and event waits: emb_set_wait_hook)
 * are bracketed by two more events, recorded before the wait and after
 * it; the stream runs out of work meanwhile, so their interval is its
 * idle time (less when the stream was still busy), subtracted from the
 * span. gpu_ms (the device time of the spans per step, less those
 * intervals) and gpu_busy (gpu_ms over the step's wall time) go on the
 * progress line and into the metrics. The fake device times its
 * operations on the host, so the same code runs in the tests; on the CPU
 * backend (no events) nothing is recorded. */
#ifndef FS_GPUTIME_H
#define FS_GPUTIME_H

#include <stdint.h>

#include "backend/backend.h"

enum gpu_phase { GPU_FORWARD, GPU_BACKWARD, GPU_EXCHANGE, GPU_OPTIMIZER, GPU_NPHASES };

#define GPU_SPANS 4  /* spans of one phase per step, at most */
#define GPU_WAITS 64 /* host waits inside spans per step, at most (later ones not subtracted) */

struct gputime {
    const struct backend_ops *be;  /* NULL: no events (host backends) */
    /* two sets, [cur] this step's, [!cur] the step before's when pend */
    struct backend_event *ev[2][GPU_NPHASES][GPU_SPANS][2];
    struct backend_event *wev[2][GPU_WAITS][2]; /* before, after a host wait */
    int wph[2][GPU_WAITS];         /* the phase of the span around wait w */
    int spans[2][GPU_NPHASES];     /* the set's spans */
    int waits[2];                  /* the set's waits */
    int cur, pend;                 /* this step's set; the other's step not read yet */
    double pend_wall_ms;           /* that step's wall time */
    int open, phase, in_wait;      /* a span begun, its phase; a wait begun */
    double ms[GPU_NPHASES];        /* the interval's device milliseconds */
    double wall_ms;                /* the interval's step wall time */
    int64_t steps;
};

void gputime_init(struct gputime *g, const struct backend_ops *be);
void gputime_free(struct gputime *g);
/* A span of phase ph begins / ends here (in the compute stream's order). */
void gputime_begin(struct gputime *g, enum gpu_phase ph);
void gputime_end(struct gputime *g, enum gpu_phase ph);
/* The host blocks (begin = 1) / blocked (begin = 0) here: inside an open
 * span, the interval between the two is taken out of it. */
void gputime_wait(struct gputime *g, int begin);
/* gputime_wait for a void * (emb_set_wait_hook's form) */
void gputime_wait_hook(void *g, int begin);
/* The step is over (on the host) and took wall_s seconds: the step
 * before's spans are read if pending, this step's if they completed
 * (else at the next call). */
void gputime_step(struct gputime *g, double wall_s);
/* 1 when the backend has events. The interval's means per step: ms[ph],
 * *gpu_ms (their sum), *busy (gpu_ms / wall); then reset. */
int gputime_take(struct gputime *g, double ms[GPU_NPHASES], double *gpu_ms, double *busy);
const char *gputime_name(enum gpu_phase ph);

#endif
