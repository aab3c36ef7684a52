/* watchdog: ends a job that has stopped making progress (parallel.timeout).
 *
 * A thread on every rank wakes about once a second and looks at two
 * counters: the heartbeat the main thread advances at every phase of the
 * step (steptime.c) and around evaluation and checkpoints (train.c), and
 * the blocking MPI calls completed (comm.c). When neither has moved for
 * the timeout, the rank prints what it was doing: the step, the last phase
 * it finished (or the activity it is in), the collective and communicator it
 * waits in and for how long (or that it waits in none: it is the one that
 * hangs, computing or stuck outside MPI), and aborts the whole job.
 * Heartbeats are relaxed atomic stores: nothing on the step path waits. */
#ifndef FS_WATCHDOG_H
#define FS_WATCHDOG_H

#include <stdint.h>

/* Start the thread (timeout_s 0: no thread; every call below is then
 * nearly free). rank: for the message; unit: what watchdog_step counts
 * ("step" in train, "round" in recommend; a literal). */
void watchdog_start(double timeout_s, int rank, const char *unit);
void watchdog_stop(void);
/* The main thread is running step (numbered as in the progress lines), or
 * the unit's number. */
void watchdog_step(int64_t step);
/* Progress: what the main thread has just done or now does, as "<where>
 * <what>": ("after phase", "lookup"), ("in", "evaluation"). Both strings
 * must outlive the call (literals). */
void watchdog_beat(const char *where, const char *what);
/* debug.hang_rank: stop making progress, for ever (the watchdog's test). */
void watchdog_debug_hang(void) __attribute__((noreturn));

#endif
