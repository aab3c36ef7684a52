/* devstats: the device counters; see devstats.h. */
#include "backend/devstats.h"

#include <string.h>

static struct devstats g_stats;

void devstats_sync(void) { g_stats.syncs++; }
void devstats_h2d(size_t bytes) { g_stats.h2d += (int64_t)bytes; }
void devstats_d2h(size_t bytes) { g_stats.d2h += (int64_t)bytes; }
void devstats_alloc(void) { g_stats.allocs++; }

void devstats_take(struct devstats *out)
{
    *out = g_stats;
    memset(&g_stats, 0, sizeof g_stats);
}
