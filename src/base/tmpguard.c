/* tmpguard: removal of an unfinished temporary output; see tmpguard.h. */
#include "base/tmpguard.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/check.h"
#include "base/log.h"

static char g_tmp[4200];
static volatile sig_atomic_t g_active;
static int g_hooked, g_signalled;
static const int g_signals[] = {SIGTERM, SIGINT, SIGHUP};

/* exit handler and abort hook: async-signal-safe calls only */
static void remove_tmp(void)
{
    if (g_active)
        unlink(g_tmp);
    g_active = 0;
}

/* unlink, then the signal's default action */
static void remove_on_signal(int sig)
{
    remove_tmp();
    signal(sig, SIG_DFL);
    raise(sig);
}

void tmpguard_begin(const char *tmp, int on_signals)
{
    if (g_active)
        fatal("%s: %s is still being written", tmp, g_tmp);
    if (strlen(tmp) >= sizeof g_tmp)
        fatal("%s: path too long", tmp);
    memcpy(g_tmp, tmp, strlen(tmp) + 1);
    g_active = 1;
    if (!g_hooked) {
        if (atexit(remove_tmp) != 0)
            fatal("%s: atexit failed", tmp);
        log_at_abort(remove_tmp); /* fatal() and the watchdog end the job without atexit */
        g_hooked = 1;
    }
    for (size_t i = 0; on_signals && !g_signalled && i < sizeof g_signals / sizeof *g_signals;
         i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = remove_on_signal;
        sigemptyset(&sa.sa_mask);
        if (sigaction(g_signals[i], &sa, NULL) != 0)
            fatal("%s: sigaction: %s", tmp, strerror(errno));
    }
    g_signalled |= on_signals;
}

void tmpguard_end(void) { g_active = 0; }
