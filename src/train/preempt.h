/* preempt: stop cleanly on SIGUSR1 or SIGTERM (Slurm's warning before a
 * time limit or preemption). The handler only sets a flag; the training
 * loop asks after every step, all ranks agree (a one-int all-reduce), and
 * the job finishes the step, writes a checkpoint and exits with
 * PREEMPT_EXIT_CODE so that a batch script can requeue it. */
#ifndef FS_PREEMPT_H
#define FS_PREEMPT_H

#include "comm/comm.h"

#define PREEMPT_EXIT_CODE 75 /* EX_TEMPFAIL: checkpointed, run again to continue */

void preempt_install(void);
/* The signal received by any rank (0 = none). Collective over all ranks. */
int preempt_requested(struct comm *c);

#endif
