/* comm_fail: ending the job on an error that every rank meets at the same
 * point of the program (start-up: a parameter, a missing or bad file, a
 * dataset that does not fit the run).
 *
 * Every rank calls comm_fail_agree there with its own verdict; if any
 * rank failed, the lowest failing rank's message is printed once (by rank
 * 0: "freescale: error: MESSAGE", with "[rank R]" when it is another
 * rank's alone), the abort hooks run (temporary outputs removed), MPI is
 * finalised and every rank exits with code 1: no MPI_Abort and its
 * banner (mpirun still prints its own notice of a non-zero exit:
 * doc/robustness.md, "How errors are printed"). fatal() (MPI_Abort) stays
 * for an error met by one rank alone in the middle of the work, where the
 * others cannot be asked. */
#ifndef FS_COMM_FAIL_H
#define FS_COMM_FAIL_H

#include "comm/comm.h"

/* Collective over all ranks; returns only when no rank failed. err: this
 * rank's message when failed (ignored otherwise). */
void comm_fail_agree(struct comm *c, int failed, const char *err);

/* fn(arg) with fatal() caught (base/log.h, log_catch), then
 * comm_fail_agree on whether it called fatal() (its message): for set-up
 * code written with fatal() that one rank or every rank runs alone. fn
 * must call no collective (the others would wait in it while this rank
 * agrees) and leave nothing to undo when it jumps out: what it allocated
 * is left to the exit. Collective; returns only when no rank failed. */
void comm_fail_run(struct comm *c, void (*fn)(void *arg), void *arg);

#endif
