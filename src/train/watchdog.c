/* watchdog: the no-progress detector; see watchdog.h. */
#include "train/watchdog.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "comm/comm.h"

static struct {
    pthread_t thread;
    pthread_mutex_t lock;    /* guards stop; wake signals it */
    pthread_cond_t wake;
    int running, stop;
    double timeout;
    int rank;
    uint64_t beats;          /* heartbeat: advanced by the main thread */
    int64_t step;
    const char *unit;        /* what step counts */
    const char *where, *what;
} g_dog = {.unit = "step", .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .where = "at",
           .what = "the start of the run"};

void watchdog_step(int64_t step) { __atomic_store_n(&g_dog.step, step, __ATOMIC_RELAXED); }

void watchdog_beat(const char *where, const char *what)
{
    __atomic_store_n(&g_dog.where, where, __ATOMIC_RELAXED);
    __atomic_store_n(&g_dog.what, what, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g_dog.beats, 1, __ATOMIC_RELAXED);
}

/* Print what this rank was doing and end the job. Runs on the watchdog
 * thread: it writes its message itself (fatal() would run exit handlers
 * under the main thread's feet). */
static void __attribute__((noreturn)) bark(double idle)
{
    char op[64];
    const char *group;
    double waited;
    comm_wait_state(op, sizeof op, &group, &waited);
    char in[256];
    const char *what = __atomic_load_n(&g_dog.what, __ATOMIC_RELAXED);
    if (op[0])
        snprintf(in, sizeof in, "waiting in %s on communicator '%s' for %.1f s", op, group,
                 waited);
    else if (strstr(what, "checkpoint")) /* HDF5's MPI-IO: collective, not counted by comm */
        snprintf(in, sizeof in, "inside HDF5's collective file I/O (MPI-IO: waiting for the "
                                "other ranks, or for the file system)");
    else
        snprintf(in, sizeof in, "not in any MPI call (this rank itself is stuck: computing, "
                                "or blocked outside MPI)");
    char unit[64] = ""; /* "step 5, " (none before the first) */
    const long long step = (long long)__atomic_load_n(&g_dog.step, __ATOMIC_RELAXED);
    if (step > 0)
        snprintf(unit, sizeof unit, "%s %lld, ", g_dog.unit, step);
    fprintf(stderr,
            "freescale: error [rank %d]: watchdog: no progress for %.0f s (parallel.timeout = "
            "%g): %s%s %s; %s; aborting the job\n",
            g_dog.rank, idle, g_dog.timeout, unit,
            __atomic_load_n(&g_dog.where, __ATOMIC_RELAXED), what, in);
    fflush(stderr);
    alarm(10); /* if the abort itself hangs, SIGALRM ends the process (and the launcher the job) */
    log_run_abort_hooks(); /* temporary outputs (_exit runs no exit handlers) */
    comm_abort(1);
    _exit(1);
}

/* Sleep up to s seconds or until watchdog_stop; 1 = stop. */
static int nap(double s)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long ns = until.tv_nsec + (long)((s - (double)(time_t)s) * 1e9);
    until.tv_sec += (time_t)s + ns / 1000000000L;
    until.tv_nsec = ns % 1000000000L;
    pthread_mutex_lock(&g_dog.lock);
    while (!g_dog.stop && pthread_cond_timedwait(&g_dog.wake, &g_dog.lock, &until) == 0)
        ;
    int stop = g_dog.stop;
    pthread_mutex_unlock(&g_dog.lock);
    return stop;
}

static void *watch(void *arg)
{
    (void)arg;
    double quiet_since = clock_seconds();
    uint64_t last = (uint64_t)-1;
    while (!nap(g_dog.timeout < 4 ? g_dog.timeout / 4 : 1)) {
        char op[8];
        const char *group;
        double waited;
        uint64_t now = __atomic_load_n(&g_dog.beats, __ATOMIC_RELAXED) +
                       comm_wait_state(op, sizeof op, &group, &waited);
        double t = clock_seconds();
        if (now != last) {
            last = now;
            quiet_since = t;
        } else if (t - quiet_since >= g_dog.timeout) {
            bark(t - quiet_since);
        }
    }
    return NULL;
}

void watchdog_start(double timeout_s, int rank, const char *unit)
{
    if (timeout_s <= 0 || g_dog.running)
        return;
    g_dog.unit = unit;
    g_dog.timeout = timeout_s;
    g_dog.rank = rank;
    g_dog.stop = 0;
    int rc = pthread_create(&g_dog.thread, NULL, watch, NULL);
    if (rc != 0)
        fatal("parallel.timeout: cannot start the watchdog thread: %s", strerror(rc));
    g_dog.running = 1;
}

void watchdog_stop(void)
{
    if (!g_dog.running)
        return;
    pthread_mutex_lock(&g_dog.lock);
    g_dog.stop = 1;
    pthread_cond_signal(&g_dog.wake);
    pthread_mutex_unlock(&g_dog.lock);
    pthread_join(g_dog.thread, NULL);
    g_dog.running = 0;
}

void watchdog_debug_hang(void)
{
    for (;;)
        sleep(1000);
}
