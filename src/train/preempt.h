/* preempt: stop cleanly on SIGINT (Ctrl-C), SIGTERM (a launcher's or
 * Slurm's stop) or SIGUSR1 (Slurm's --signal warning before a time limit,
 * or by hand). The handler only sets a flag; the training loop asks after
 * every step, all ranks agree (a one-int all-reduce), and the job finishes
 * the step, writes one checkpoint and exits with PREEMPT_EXIT_CODE so that
 * a batch script can requeue it. A signal to any one rank stops them all.
 *
 * A launcher kills what has not ended some time after its SIGTERM: Open
 * MPI 4.1's mpirun, on SIGINT or SIGTERM, sends the ranks SIGCONT, then
 * SIGTERM after odls_base_sigkill_timeout seconds (default 1), then SIGKILL
 * after as many again, and exits 1 whatever the ranks return; SIGUSR1 it
 * forwards without a deadline, and then exits with the ranks' 75. Slurm
 * sends SIGKILL KillWait seconds (default 30) after its SIGTERM.
 * preempt_advise says, before training, how long a checkpoint takes and how
 * to give it that time. */
#ifndef FS_PREEMPT_H
#define FS_PREEMPT_H

#include "comm/comm.h"

#define PREEMPT_EXIT_CODE 75 /* EX_TEMPFAIL: checkpointed, run again to continue */

/* The handlers of SIGINT, SIGTERM, SIGUSR1; SIGPIPE ignored. */
void preempt_install(void);
/* The signal received by any rank (0 = none). Collective over all ranks. */
int preempt_requested(struct comm *c);
/* Rank 0, before training: a checkpoint of `bytes` written at `rate`
 * bytes/s (measured in dir), the first one `draw` seconds longer (the rows
 * never trained are drawn): its size and time, and, where that exceeds the
 * launcher's time between SIGTERM and SIGKILL, how to give it more. */
void preempt_advise(double bytes, const char *assume, double rate, double draw, const char *dir);

#endif
