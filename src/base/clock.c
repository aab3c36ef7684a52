/* clock: monotonic wall seconds, thread CPU seconds; see clock.h. */
#include "base/clock.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "base/check.h"

double clock_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double clock_thread_seconds(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0)
        fatal("clock_gettime(CLOCK_THREAD_CPUTIME_ID): %s", strerror(errno));
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
