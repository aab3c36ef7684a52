/* fake_compute: the fake device's compute stream (fake.h).
 *
 * By default an operation runs when it is enqueued, in the calling thread.
 * With FREESCALE_FAKE_ASYNC=N (N >= 1) the stream is a thread of its own
 * that runs the operations in order BEHIND the host: an operation waits in
 * the queue until more than N are queued, or until the host waits for the
 * stream (a synchronisation, a synchronous copy, an operation whose result
 * the host reads, an event synchronisation, a free); so at any time up to
 * N operations enqueued by the host have not run yet, as on a GPU. Host
 * code (MPI of the direct path, a peer process through IPC) that touches a
 * device buffer which an operation enqueued earlier still uses, without an
 * ordering in between, then sees or leaves the wrong data: the race shows
 * as a wrong result instead of passing by luck. A large N makes that
 * deterministic (nothing runs before the host waits); N = 1 keeps the
 * stream just behind.
 *
 * An operation is a closure: its run function and its arguments by value
 * (union fk_arg; device operands already translated to the operations'
 * view of the memory, fake_mem_shadow), plus a small blob for a host
 * structure passed by pointer. The queue is a growable ring under one
 * mutex; the host signals the thread only when it must run (over N queued,
 * or a waiter), so a run of enqueues costs a lock each and no system call.
 * The CPU backend's operations then run in two threads at once (the
 * host's own work and the stream's): those with static scratch must not
 * run in both, and do not: emb_dedup runs in the caller (the host reads
 * its result), gemm_bf16 (its rounded copies) only on device data.
 * The thread's OpenMP regions take the host thread's number of threads
 * (omp_set_num_threads is per thread: a new thread would take the default,
 * every core). After fork() the child starts with an empty stream (its
 * thread is started again on first use). */
#include "fake/fake.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"

struct fk_call {
    fk_run_fn run;                  /* NULL: an event mark */
    int n;
    union fk_arg a[FK_MAX_ARGS];
    _Alignas(8) unsigned char blob[FK_BLOB];
    struct backend_event *mark;     /* run == NULL: the event, and its record's generation */
    uint64_t gen;
};

static struct {
    int lag;                /* N: 0 = at once, in the caller */
    int started;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work, progress;
    struct fk_call *q;
    int64_t cap, head, count; /* ring q[(head + i) % cap], i < count */
    int64_t enq;            /* items enqueued (monotonic) */
    _Atomic int64_t done;   /* items run */
    int64_t target;         /* run at least this far (an event query's nudge) */
    int threads;            /* the host thread's OpenMP threads */
    int waiters;
    int atfork;
} g_cs = {.mu = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER,
          .progress = PTHREAD_COND_INITIALIZER};

void fake_lock(pthread_mutex_t *mu, const char *who)
{
    int rc = pthread_mutex_lock(mu);
    if (rc)
        fatal("fake device: %s: pthread_mutex_lock: %s", who, strerror(rc));
}

void fake_ring_grow(void **q, size_t size, int64_t *cap, int64_t *head, int64_t count)
{
    if (count < *cap)
        return;
    const int64_t nc = *cap ? 2 * *cap : 64;
    char *n = xmalloc((size_t)nc * size);
    for (int64_t i = 0; i < count; i++) /* unrolled to its start */
        memcpy(n + (size_t)i * size, (char *)*q + (size_t)((*head + i) % *cap) * size, size);
    free(*q);
    *q = n;
    *cap = nc;
    *head = 0;
}

static void lock(void) { fake_lock(&g_cs.mu, "compute stream"); }

static void unlock(void) { pthread_mutex_unlock(&g_cs.mu); }

static void run_call(const struct fk_call *c)
{
    if (c->run)
        c->run(c->a, c->blob);
    else
        fake_event_mark(c->mark, c->gen);
}

static void *worker(void *arg)
{
    (void)arg;
    int threads = 0;
    lock();
    for (;;) {
        while (!(g_cs.count > g_cs.lag ||
                 (g_cs.count > 0 && (g_cs.waiters > 0 || atomic_load(&g_cs.done) < g_cs.target))))
            pthread_cond_wait(&g_cs.work, &g_cs.mu);
        struct fk_call c = g_cs.q[g_cs.head]; /* a copy: the ring may grow meanwhile */
        g_cs.head = (g_cs.head + 1) % g_cs.cap;
        g_cs.count--;
        const int want = g_cs.threads;
        unlock();
#ifdef _OPENMP
        if (want != threads)
            omp_set_num_threads(want);
#endif
        threads = want;
        run_call(&c);
        lock();
        atomic_store_explicit(&g_cs.done, atomic_load(&g_cs.done) + 1, memory_order_release);
        if (g_cs.waiters > 0)
            pthread_cond_broadcast(&g_cs.progress);
    }
    return NULL;
}

/* fork(): hold the lock across it, so that the child's copy is consistent;
 * the child has no thread and drops the parent's queue. */
static void before_fork(void)
{
    if (g_cs.lag)
        lock();
}

static void after_fork_parent(void)
{
    if (g_cs.lag)
        unlock();
}

static void after_fork_child(void)
{
    if (!g_cs.lag)
        return;
    pthread_mutex_init(&g_cs.mu, NULL);
    pthread_cond_init(&g_cs.work, NULL);
    pthread_cond_init(&g_cs.progress, NULL);
    g_cs.started = 0;
    g_cs.head = g_cs.count = 0;
    atomic_store(&g_cs.done, g_cs.enq); /* the parent's operations are not ours to run */
    g_cs.waiters = 0;
    g_cs.target = 0;
}

void fake_compute_async(int lag)
{
    g_cs.lag = lag > 0 ? lag : 0;
    if (g_cs.lag && !g_cs.atfork) {
        int rc = pthread_atfork(before_fork, after_fork_parent, after_fork_child);
        if (rc)
            fatal("fake device: pthread_atfork: %s", strerror(rc));
        g_cs.atfork = 1;
    }
}

int fake_compute_lag(void) { return g_cs.lag; }

static void start(void)
{
    if (g_cs.started)
        return;
    int rc = pthread_create(&g_cs.thread, NULL, worker, NULL);
    if (rc)
        fatal("fake device: starting the compute stream's thread: %s", strerror(rc));
    pthread_detach(g_cs.thread);
    g_cs.started = 1;
}

static void push(const struct fk_call *c)
{
    lock();
    start();
    void *q = g_cs.q;
    fake_ring_grow(&q, sizeof *g_cs.q, &g_cs.cap, &g_cs.head, g_cs.count);
    g_cs.q = q;
    g_cs.q[(g_cs.head + g_cs.count) % g_cs.cap] = *c;
#ifdef _OPENMP
    g_cs.threads = omp_get_max_threads();
#else
    g_cs.threads = 1;
#endif
    g_cs.count++;
    g_cs.enq++;
    if (g_cs.count > g_cs.lag)
        pthread_cond_signal(&g_cs.work);
    unlock();
}

void fake_launch(fk_run_fn run, const union fk_arg *a, int n, const void *blob, size_t blob_bytes)
{
    if (n > FK_MAX_ARGS || blob_bytes > FK_BLOB)
        fatal("fake device: an operation with %d arguments and %zu bytes of host data (at most "
              "%d and %d)", n, blob_bytes, FK_MAX_ARGS, FK_BLOB);
    struct fk_call c;
    c.run = run;
    c.n = n;
    memcpy(c.a, a, (size_t)n * sizeof *a);
    if (blob_bytes)
        memcpy(c.blob, blob, blob_bytes);
    c.mark = NULL;
    c.gen = 0;
    if (!g_cs.lag) {
        run_call(&c);
        return;
    }
    push(&c);
    fake_copy_uses_launched(g_cs.enq); /* (the copy stream's checks: its operands' use) */
}

int64_t fake_compute_mark(struct backend_event *e, uint64_t gen)
{
    if (!g_cs.lag) {
        fake_event_mark(e, gen);
        return 0;
    }
    struct fk_call c = {.run = NULL, .mark = e, .gen = gen};
    push(&c);
    return g_cs.enq;
}

int fake_compute_passed(int64_t seq)
{
    return !g_cs.lag || atomic_load_explicit(&g_cs.done, memory_order_acquire) >= seq;
}

static int64_t g_seen; /* the items the host has seen run */

int64_t fake_compute_seen(void) { return g_seen; }

void fake_compute_saw(int64_t seq)
{
    if (seq > g_seen)
        g_seen = seq;
}

void fake_compute_wait_for(int64_t seq)
{
    fake_copy_uses_drop(); /* an operation run by the host now: done before it goes on */
    fake_compute_reach(seq);
    fake_compute_saw(seq);
}

void fake_compute_reach(int64_t seq)
{
    if (fake_compute_passed(seq))
        return;
    lock();
    g_cs.waiters++;
    pthread_cond_signal(&g_cs.work);
    while (atomic_load_explicit(&g_cs.done, memory_order_acquire) < seq)
        pthread_cond_wait(&g_cs.progress, &g_cs.mu);
    g_cs.waiters--;
    unlock();
}

void fake_compute_kick(int64_t seq)
{
    if (fake_compute_passed(seq))
        return;
    lock();
    if (g_cs.target < seq) {
        g_cs.target = seq;
        pthread_cond_signal(&g_cs.work);
    }
    unlock();
}

int64_t fake_compute_enqueued(void) { return g_cs.lag ? g_cs.enq : 0; }

void fake_compute_wait(void) { fake_compute_wait_for(fake_compute_enqueued()); }
