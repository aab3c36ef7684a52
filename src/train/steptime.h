/* steptime: phase timers of the training step, bubble accounting and the
 * Chrome trace (doc/balance.md, "Timeline").
 *
 * Every rank times the phases of each step. Its busy time is the step's
 * wall time less the time spent inside MPI calls (waiting at collectives);
 * for step s with T_s = max_r step_r,s the bubble fraction is
 * sum_r (T_s - busy_r,s) / (P T_s), and the imbalance max_r busy / mean_r
 * busy. Communication time inside MPI is "exposed"; non-blocking exchanges
 * in flight while the rank computed are "hidden"; the overlap ratio is
 * hidden / (hidden + exposed). Steps are recorded locally; steptime_collect() makes the one
 * collective of a logging interval (an all-gather of each rank's steps and
 * phase sums) and returns the interval's means. */
#ifndef FS_STEPTIME_H
#define FS_STEPTIME_H

#include <stdint.h>

#include "comm/comm.h"

enum phase {
    PH_READ, PH_PLAN, PH_INPUT_DIST, PH_LOOKUP, PH_FORWARD, PH_BACKWARD, PH_GRAD_EXCHANGE,
    PH_ALLREDUCE, PH_OPTIMIZER,
    PH_KV, /* split_long: waiting for keys/values inside forward and backward */
    PH_PREFETCH, /* overlap = prefetch: the next step's rows planned and posted ahead */
    PH_LATE,     /* ... its colliding rows posted after the update */
    PH_COUNT
};

struct steptime {
    double t[PH_COUNT];        /* this interval's seconds per phase */
    double mark, step_start, mpi_start, hidden_start;
    double mpi_mark;           /* comm_mpi_seconds() at mark */
    double w[PH_COUNT];        /* this interval's seconds inside MPI per phase */
    double exposed, hidden;    /* this interval's communication seconds */
    int64_t cap, k;            /* steps recorded in this interval */
    double *dur, *busy, *cost; /* [cap] per step: wall, busy, predicted cost */
    int cpu;                   /* steptime_time_cpu: busy CPU time measured too */
    double cpu_start, mpi_cpu_start; /* the step's start: thread CPU, of it inside MPI */
    double *cpu_busy;          /* [cap] per step: busy CPU seconds (cpu) */
    /* trace window */
    int64_t trace_left, trace_n, trace_cap;
    double trace_origin;
    double *trace;             /* [trace_n, 3]: phase, start us, duration us */
    int trace_peers;           /* output.trace_peers: the per-peer events (comm_trace.h)
                                * recorded in the trace window, written with it */
    int64_t step_index;
};

struct step_stats {
    double bubble, imbalance;  /* means over the interval's steps */
    double phase_ms[PH_COUNT]; /* mean per step over ranks */
    double phase_wait_ms[PH_COUNT]; /* of which inside MPI (waiting), mean per step */
    double wait_ms;            /* mean time inside MPI per step: the exposed
                                * communication (step time - busy time) */
    double overlap;            /* hidden / (hidden + exposed) communication
                                * time, hidden = in flight behind compute */
    double steps_s;            /* the interval's steps' wall seconds (each the slowest
                                * rank's), summed */
    double *tau;               /* [P] busy seconds per unit of predicted cost (heap) */
    double *tau_cpu;           /* [P] busy CPU seconds per unit of predicted cost (heap;
                                * NULL without steptime_time_cpu) */
    double *cost_sum;          /* [P] predicted cost of each rank over the interval (heap) */
};

const char *phase_name(enum phase ph);
void steptime_init(struct steptime *st, int64_t interval, int64_t trace_steps);
void steptime_free(struct steptime *st);
/* Measure each step's busy CPU time as well: the main thread's CPU time
 * less its CPU time inside MPI (comm_time_cpu), for balance_adapt where
 * the compute is the host's (on a device the host's CPU time is not the
 * compute's: it is asynchronous). Collective: every rank alike. */
void steptime_time_cpu(struct steptime *st);
void steptime_begin(struct steptime *st);
/* Close phase ph at now (it began at the previous mark). */
void steptime_phase(struct steptime *st, enum phase ph);
/* End the step; cost = this rank's predicted cost of it. */
void steptime_end(struct steptime *st, double cost);
/* The interval's figures (collective over all ranks); resets the interval. */
void steptime_collect(struct steptime *st, struct comm *c, struct step_stats *out);
/* When the trace window is full (or force), gather every rank's slices to
 * rank 0 and write Chrome trace-event JSON to path (temporary + rename).
 * Collective. Returns 1 once written. */
int steptime_trace_write(struct steptime *st, struct comm *c, const char *path, int force);

#endif
