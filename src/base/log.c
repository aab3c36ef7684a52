/* log: rank-aware logging and fatal(); see log.h. */
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* the held lines (log_hold) */
static struct {
    int on;
    char *text;
    size_t len, cap;
} g_held;

static void held_drop(void)
{
    free(g_held.text);
    memset(&g_held, 0, sizeof g_held);
}

void log_release(void)
{
    if (g_held.len) {
        fwrite(g_held.text, 1, g_held.len, stdout);
        fflush(stdout);
    }
    held_drop();
}

void log_hold(void)
{
    static int registered;
    if (!registered && atexit(log_release) == 0)
        registered = 1;
    g_held.on = 1;
}

/* Hold one line: 0, or -1 (ap untouched) when there is no memory to hold
 * it: what is held is printed and holding stops. */
static int held_add(const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0)
        n = 0;
    if (g_held.len + (size_t)n + 2 > g_held.cap) {
        const size_t cap = 2 * g_held.cap + (size_t)n + 4096;
        char *t = realloc(g_held.text, cap);
        if (!t) {
            log_release();
            return -1;
        }
        g_held.text = t;
        g_held.cap = cap;
    }
    vsnprintf(g_held.text + g_held.len, g_held.cap - g_held.len, fmt, ap);
    g_held.len += (size_t)n;
    g_held.text[g_held.len++] = '\n';
    return 0;
}

static _Atomic int g_mute; /* log_mute: read by any thread that logs */

void log_mute(int on) { g_mute = on; }

static struct {
    char *buf;
    size_t len, used;
} g_keep; /* log_keep */

void log_keep(char *buf, size_t len)
{
    g_keep.buf = buf;
    g_keep.len = len;
    g_keep.used = 0;
    if (buf && len)
        buf[0] = 0;
}

/* Keep one line (log_keep), if it fits with its newline. */
static void keep_add(const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    const size_t room = g_keep.len - g_keep.used;
    const int n = vsnprintf(g_keep.buf + g_keep.used, room, fmt, aq);
    va_end(aq);
    if (n >= 0 && (size_t)n + 1 < room) {
        g_keep.used += (size_t)n;
        g_keep.buf[g_keep.used++] = '\n';
    }
    g_keep.buf[g_keep.used] = 0;
}

void log_info(const char *fmt, ...)
{
    va_list ap;
    if (g_rank == 0 && g_keep.buf) {
        va_start(ap, fmt);
        keep_add(fmt, ap);
        va_end(ap);
    }
    if (g_rank != 0 || g_mute)
        return;
    va_start(ap, fmt);
    if (!g_held.on || held_add(fmt, ap) != 0) {
        vfprintf(stdout, fmt, ap);
        fputc('\n', stdout);
        fflush(stdout);
    }
    va_end(ap);
}

/* log_dedupe: the warnings printed in the span (this thread's) */
#define DEDUPE_MAX 64
static __thread struct {
    int on, n;
    char *seen[DEDUPE_MAX];
} g_dedupe;

void log_dedupe(int on)
{
    for (int i = 0; i < g_dedupe.n; i++)
        free(g_dedupe.seen[i]);
    g_dedupe.n = 0;
    g_dedupe.on = on;
}

/* 1 when fmt's text was printed already in the span (else remembered,
 * while there is room and memory). */
static int dedupe_seen(const char *fmt, va_list ap)
{
    char text[2048];
    va_list aq;
    va_copy(aq, ap);
    vsnprintf(text, sizeof text, fmt, aq);
    va_end(aq);
    for (int i = 0; i < g_dedupe.n; i++)
        if (!strcmp(g_dedupe.seen[i], text))
            return 1;
    if (g_dedupe.n < DEDUPE_MAX && (g_dedupe.seen[g_dedupe.n] = strdup(text)) != NULL)
        g_dedupe.n++;
    return 0;
}

void log_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (g_dedupe.on && dedupe_seen(fmt, ap)) {
        va_end(ap);
        return;
    }
    /* the whole line in one write: the ranks share the terminal, and a
     * line written in pieces interleaves with another rank's */
    char line[2048];
    int n = g_size > 1 ? snprintf(line, sizeof line, "freescale: warning [rank %d]: ", g_rank)
                       : snprintf(line, sizeof line, "freescale: warning: ");
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    if ((size_t)(n + m) > sizeof line - 2)
        m = (int)(sizeof line - 2) - n;
    line[n + m] = '\n';
    fwrite(line, 1, (size_t)(n + m + 1), stderr);
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
    held_drop(); /* the error first: what set-up said before it is moot */
    fflush(stdout);
    if (rank >= 0)
        fprintf(stderr, "freescale: error [rank %d]: %s\n", rank, msg);
    else
        fprintf(stderr, "freescale: error: %s\n", msg);
    fflush(stderr);
}

static __thread struct log_catch *g_catch;

struct log_catch *log_catch_set(struct log_catch *k)
{
    struct log_catch *was = g_catch;
    g_catch = k;
    return was;
}

/* Before MPI starts: the launcher's rank of this process, 0 when none says */
static long env_rank(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return strtol(v, NULL, 10);
    }
    return 0;
}

void vfatal(const char *fmt, va_list ap)
{
    char msg[4096];
    struct log_catch *k = g_catch;
    if (k) { /* comm_fail_run: the ranks agree on it (comm/comm_fail.h) */
        g_catch = NULL;
        vsnprintf(k->msg, sizeof k->msg, fmt, ap);
        longjmp(k->jb, 1);
    }
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (g_size > 1 || g_job_abort || env_rank() == 0) { /* before MPI: rank 0 alone prints */
        log_error(g_size > 1 ? g_rank : -1, msg);
    } else {
        /* the others exit a moment later, so that mpirun's notice of the
         * first non-zero exit (doc/robustness.md) usually follows rank 0's
         * line instead of preceding it (cosmetic: the order is mpirun's) */
        struct timespec pause = {0, 300 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
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
