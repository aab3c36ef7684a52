/* preempt: signal flag, its agreement across ranks, and the launcher's
 * grace period; see preempt.h. */
#include "train/preempt.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

static volatile sig_atomic_t g_signal = 0;

static void on_signal(int sig) { g_signal = sig; }

void preempt_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0 ||
        sigaction(SIGINT, &sa, NULL) != 0)
        log_warn("cannot install the SIGINT/SIGTERM/SIGUSR1 handlers: no clean stop on a signal");
}

int preempt_requested(struct comm *c)
{
    return (int)comm_allreduce_max_i64(c, (int64_t)g_signal);
}

/* Seconds to give a checkpoint, generously: 4 times the estimate (the
 * first checkpoint also draws the rows never trained), at least 10, in
 * tens. */
static long generous(double secs) { return (long)fmax(10.0, ceil(4.0 * secs / 10.0) * 10.0); }

void preempt_advise(double bytes, double rate, const char *dir)
{
    const double secs = bytes / rate;
    char b[32], r[32];
    log_info("checkpoint: %s each, about %.2f s at the %s/s measured in %s now (the first "
             "one takes longer: it draws the rows never trained)", log_bytes(bytes, b, sizeof b),
             secs, log_bytes(rate, r, sizeof r), dir);
    /* Open MPI's mpirun (4.x: its ranks know its URI); Slurm's job */
    const char *mpi = getenv("OMPI_MCA_orte_hnp_uri"), *slurm = getenv("SLURM_JOB_ID");
    if (mpi) {
        const char *t = getenv("OMPI_MCA_odls_base_sigkill_timeout");
        const double grace = t && atof(t) > 0 ? atof(t) : 1.0;
        if (2 * secs > grace)
            log_info("notice: on Ctrl-C or SIGTERM, mpirun leaves the ranks %.0f s between its "
                     "SIGTERM and SIGKILL, too little for a checkpoint: give it the time with "
                     "'mpirun --mca odls_base_sigkill_timeout %ld' (or "
                     "OMPI_MCA_odls_base_sigkill_timeout=%ld in mpirun's environment), or stop "
                     "the run with 'kill -USR1 MPIRUN_PID' (forwarded to the ranks, no "
                     "deadline)", grace, generous(secs), generous(secs));
    }
    if (slurm && 2 * secs > 30)
        log_info("notice: Slurm kills a job KillWait seconds after its SIGTERM (30 by default: "
                 "'scontrol show config | grep KillWait'), and a checkpoint takes about %.0f s: "
                 "ask for a warning signal early enough, e.g. 'sbatch --signal=B:USR1@%ld' "
                 "(scripts/slurm/train.sbatch asks for 300 s)", secs, generous(secs) + 60);
}
