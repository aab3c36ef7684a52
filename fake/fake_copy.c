/* fake_copy: the fake device's copy stream as a thread of its own (fake.h),
 * with FREESCALE_FAKE_ASYNC.
 *
 * The copy stream (BACKEND_COPY: copy_up, copy_down) is a queue of copies
 * (fake_stream.c enqueues them, their device sides already translated to
 * the operations' view of the memory, fake_mem_shadow). Without
 * FREESCALE_FAKE_ASYNC fake_stream.c runs them itself when a waiter makes
 * them due. With it this thread runs them in order as soon as it can,
 * beside the host and the compute stream's thread, as a GPU's copy engine
 * does: each copy once the compute work it follows (the compute stream's
 * mark the copy stream was last made to wait for) has run. Nothing else
 * orders them: the compute stream waits for them only through an event
 * (fake_copy_wait_for, enqueued there by stream_wait), the host through an
 * event's synchronisation. FREESCALE_FAKE_COPY_GBS=B makes each copy take
 * at least bytes / B GB/s (a PCIe link's time, so that a fill's time
 * shows where the step waits for it); 0 (default): a copy takes what its
 * memmove takes. After fork() the child starts with an empty stream. */
#include "fake/fake.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"

struct fx_item {
    void *dst;
    const void *src;
    size_t bytes;
    int64_t cseq; /* the compute stream's items that must have run first */
};

static struct {
    int on, started, atfork;
    double gbs; /* emulated bandwidth, GB/s; 0: none */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work, progress;
    struct fx_item *q;
    int64_t cap, head, count; /* ring q[(head + i) % cap], i < count */
    int64_t enq;              /* copies enqueued (monotonic) */
    _Atomic int64_t ran;      /* copies run */
    int waiters;
} g_cp = {.mu = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER,
          .progress = PTHREAD_COND_INITIALIZER};

static void lock(void) { fake_lock(&g_cp.mu, "copy stream"); }

static void unlock(void) { pthread_mutex_unlock(&g_cp.mu); }

/* sleep until host time t (seconds, clock_seconds) */
static void sleep_until(double t)
{
    for (double now = clock_seconds(); now < t; now = clock_seconds()) {
        const double d = t - now;
        struct timespec ts = {.tv_sec = (time_t)d, .tv_nsec = (long)((d - (double)(time_t)d) * 1e9)};
        if (nanosleep(&ts, NULL) != 0 && errno != EINTR)
            fatal("fake device: copy stream: nanosleep: %s", strerror(errno));
    }
}

static void *worker(void *arg)
{
    (void)arg;
    lock();
    for (;;) {
        while (g_cp.count == 0)
            pthread_cond_wait(&g_cp.work, &g_cp.mu);
        const struct fx_item it = g_cp.q[g_cp.head]; /* a copy: the ring may grow meanwhile */
        unlock();
        fake_compute_reach(it.cseq); /* the compute work it follows */
        const double t0 = clock_seconds();
        memmove(it.dst, it.src, it.bytes);
        if (g_cp.gbs > 0)
            sleep_until(t0 + (double)it.bytes / (g_cp.gbs * 1e9));
        lock();
        g_cp.head = (g_cp.head + 1) % g_cp.cap;
        g_cp.count--;
        atomic_store_explicit(&g_cp.ran, atomic_load(&g_cp.ran) + 1, memory_order_release);
        if (g_cp.waiters > 0)
            pthread_cond_broadcast(&g_cp.progress);
    }
    return NULL;
}

static void before_fork(void) { lock(); }
static void after_fork_parent(void) { unlock(); }

static void after_fork_child(void)
{
    pthread_mutex_init(&g_cp.mu, NULL);
    pthread_cond_init(&g_cp.work, NULL);
    pthread_cond_init(&g_cp.progress, NULL);
    g_cp.started = 0;
    g_cp.head = g_cp.count = 0;
    atomic_store(&g_cp.ran, g_cp.enq); /* the parent's copies are not ours to run */
    g_cp.waiters = 0;
}

void fake_copy_async(int on, double gbs)
{
    g_cp.on = on;
    g_cp.gbs = gbs;
    if (on && !g_cp.atfork) {
        int rc = pthread_atfork(before_fork, after_fork_parent, after_fork_child);
        if (rc)
            fatal("fake device: pthread_atfork: %s", strerror(rc));
        g_cp.atfork = 1;
    }
}

int fake_copy_on(void) { return g_cp.on; }

void fake_copy_push(void *dst, const void *src, size_t bytes, int64_t cseq)
{
    lock();
    if (!g_cp.started) {
        int rc = pthread_create(&g_cp.thread, NULL, worker, NULL);
        if (rc)
            fatal("fake device: starting the copy stream's thread: %s", strerror(rc));
        pthread_detach(g_cp.thread);
        g_cp.started = 1;
    }
    void *q = g_cp.q;
    fake_ring_grow(&q, sizeof *g_cp.q, &g_cp.cap, &g_cp.head, g_cp.count);
    g_cp.q = q;
    g_cp.q[(g_cp.head + g_cp.count) % g_cp.cap] = (struct fx_item){dst, src, bytes, cseq};
    g_cp.count++;
    g_cp.enq++;
    pthread_cond_signal(&g_cp.work);
    unlock();
}

int64_t fake_copy_ran(void) { return atomic_load_explicit(&g_cp.ran, memory_order_acquire); }

void fake_copy_wait_for(int64_t seq)
{
    if (fake_copy_ran() >= seq)
        return;
    lock();
    g_cp.waiters++;
    while (atomic_load_explicit(&g_cp.ran, memory_order_acquire) < seq)
        pthread_cond_wait(&g_cp.progress, &g_cp.mu);
    g_cp.waiters--;
    unlock();
}
