/* log: rank-aware logging and fatal(); see log.h. */
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>

static int g_rank = 0;
static int g_size = 1;
static void (*g_job_abort)(int code);

void log_set_rank(int rank, int size)
{
    g_rank = rank;
    g_size = size;
}

void log_set_job_abort(void (*fn)(int code)) { g_job_abort = fn; }

int log_rank(void) { return g_rank; }

void log_info(const char *fmt, ...)
{
    if (g_rank != 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    fflush(stdout);
}

void log_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (g_size > 1)
        fprintf(stderr, "freescale: warning [rank %d]: ", g_rank);
    else
        fprintf(stderr, "freescale: warning: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

const char *log_bytes(double bytes, char *buf, size_t len)
{
    static const char *unit[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 1000 && u < 4) {
        bytes /= 1000;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}

int errorf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

void log_error(int rank, const char *msg)
{
    fflush(stdout);
    if (rank >= 0)
        fprintf(stderr, "freescale: error [rank %d]: %s\n", rank, msg);
    else
        fprintf(stderr, "freescale: error: %s\n", msg);
    fflush(stderr);
}

void vfatal(const char *fmt, va_list ap)
{
    char msg[4096];
    vsnprintf(msg, sizeof msg, fmt, ap);
    log_error(g_size > 1 ? g_rank : -1, msg);
    log_run_abort_hooks();
    if (g_size > 1 && g_job_abort) /* one process alone (a serial command) exits without MPI's banner */
        g_job_abort(1);
    exit(1);
}

static void (*g_abort_hooks[8])(void);
static int g_nabort_hooks;

void log_at_abort(void (*fn)(void))
{
    for (int i = 0; i < g_nabort_hooks; i++)
        if (g_abort_hooks[i] == fn)
            return;
    if (g_nabort_hooks == (int)(sizeof g_abort_hooks / sizeof *g_abort_hooks))
        fatal("log_at_abort: more than %d abort hooks", g_nabort_hooks);
    g_abort_hooks[g_nabort_hooks++] = fn;
}

void log_run_abort_hooks(void)
{
    for (int i = 0; i < g_nabort_hooks; i++)
        g_abort_hooks[i]();
}

void fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfatal(fmt, ap);
}
