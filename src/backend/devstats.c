/* devstats: the device counters; see devstats.h. */
#include "backend/devstats.h"

#include <execinfo.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct devstats g_stats;
static int g_trace = -1; /* FREESCALE_SYNC_TRACE: unread, off, on */

void devstats_sync(void)
{
    g_stats.syncs++;
    if (g_trace < 0)
        g_trace = getenv("FREESCALE_SYNC_TRACE") != NULL;
    if (g_trace) { /* where each host wait comes from (addr2line -f -e freescale ADDR) */
        void *f[8];
        int n = backtrace(f, 8);
        backtrace_symbols_fd(f, n, 2);
        (void)!write(2, "-- host wait\n", 13);
    }
}

void devstats_h2d(size_t bytes) { g_stats.h2d += (int64_t)bytes; }
void devstats_d2h(size_t bytes) { g_stats.d2h += (int64_t)bytes; }
void devstats_alloc(void) { g_stats.allocs++; }

void devstats_take(struct devstats *out)
{
    *out = g_stats;
    memset(&g_stats, 0, sizeof g_stats);
}

void devstats_add(const struct devstats *d)
{
    g_stats.syncs += d->syncs;
    g_stats.h2d += d->h2d;
    g_stats.d2h += d->d2h;
    g_stats.allocs += d->allocs;
}
