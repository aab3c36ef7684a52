/* preempt: signal flag, its agreement across ranks, and the launcher's
 * grace period; see preempt.h. */
#include "train/preempt.h"

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"

static volatile sig_atomic_t g_signal = 0;
static pid_t g_main_tid;    /* the thread that runs the steps */
static int g_out_own[3];   /* [1], [2]: the rank's own output, a launcher's pipe or pty */

/* async-signal-safe calls only. A launcher that is ending the job may have
 * stopped reading the ranks' output: a write would then block the step
 * loop forever (with mpirun: until its SIGKILL, the checkpoint unwritten).
 * So the output becomes non-blocking (what cannot be written is dropped;
 * not a terminal shared with our shell), and the main
 * thread, which may be blocked in such a write, gets the signal as well. */
static void on_signal(int sig)
{
    g_signal = sig;
    for (int fd = 1; fd <= 2; fd++) {
        int fl = g_out_own[fd] ? fcntl(fd, F_GETFL) : -1;
        if (fl >= 0)
            fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    }
    if ((pid_t)syscall(SYS_gettid) != g_main_tid)
        syscall(SYS_tgkill, getpid(), g_main_tid, sig);
}

static int is_pipe(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

void preempt_install(void)
{
    g_main_tid = (pid_t)syscall(SYS_gettid);
    /* mpirun gives each rank its own pipe or pty; a pipe is ours anyway (a
     * terminal of our own shell is not: left blocking, it is always read) */
    const int mpirun = getenv("OMPI_MCA_orte_hnp_uri") != NULL;
    for (int fd = 1; fd <= 2; fd++)
        g_out_own[fd] = mpirun || is_pipe(fd);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART; /* a blocked write restarts, non-blocking by then */
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0 ||
        sigaction(SIGINT, &sa, NULL) != 0)
        log_warn("cannot install the SIGINT/SIGTERM/SIGUSR1 handlers: no clean stop on a signal");
    /* nor may a launcher that closed the ranks' output kill a rank before
     * its checkpoint and stop line: the write fails with EPIPE instead */
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
        log_warn("cannot ignore SIGPIPE: a closed output ends the run");
}

int preempt_requested(struct comm *c)
{
    return (int)comm_allreduce_max_i64(c, (int64_t)g_signal);
}

/* Seconds to give a checkpoint, generously: 3 times the estimate (the
 * gathers to rank 0, a busier machine), at least 10, in tens. */
static long generous(double secs) { return (long)fmax(10.0, ceil(3.0 * secs / 10.0) * 10.0); }

void preempt_advise(double bytes, const char *assume, double rate, double draw, const char *dir)
{
    const double secs = bytes / rate + draw; /* the first one's: the longest */
    char b[32], r[32];
    log_info("checkpoint: %s each%s%s%s, about %.2f s at the %s/s measured in %s now, plus the "
             "gathers of the rows to rank 0; the first one also draws the rows never trained "
             "(%.2f s)", log_bytes(bytes, b, sizeof b), assume[0] ? " (dynamic table " : "",
             assume, assume[0] ? ")" : "", bytes / rate, log_bytes(rate, r, sizeof r), dir, draw);
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
