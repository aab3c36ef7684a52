/* preempt: signal flag and its agreement across ranks; see preempt.h. */
#include "train/preempt.h"

#include <signal.h>
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
    if (sigaction(SIGUSR1, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0)
        log_warn("cannot install the SIGUSR1/SIGTERM handlers: no clean stop on preemption");
}

int preempt_requested(struct comm *c)
{
    return (int)comm_allreduce_max_i64(c, (int64_t)g_signal);
}
