/* comm_fail: ending the job on an error that every rank meets at the same
 * point of the program (start-up: a parameter, a missing or bad file, a
 * dataset that does not fit the run).
 *
 * Every rank calls comm_fail_agree there with its own verdict; if any
 * rank failed, the lowest failing rank's message is printed once (by rank
 * 0: "freescale: error: MESSAGE", with "[rank R]" when it is another
 * rank's alone), the abort hooks run (temporary outputs removed), MPI is
 * finalised and every rank exits with code 1: no MPI_Abort and its
 * banner. fatal() (MPI_Abort) stays for an error met by one rank alone
 * in the middle of the work, where the others cannot be asked. */
#ifndef FS_COMM_FAIL_H
#define FS_COMM_FAIL_H

#include "comm/comm.h"

/* Collective over all ranks; returns only when no rank failed. err: this
 * rank's message when failed (ignored otherwise). */
void comm_fail_agree(struct comm *c, int failed, const char *err);

#endif
