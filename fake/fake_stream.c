/* fake_stream: the fake device's comm and copy streams and events (fake.h).
 *
 * The compute stream is fake_compute.c (at once, or a thread behind the
 * host). The comm stream is a queue: its copies and additions
 * run only when they become due, in order, each after the compute work
 * enqueued before it (as the CUDA backend orders them):
 *   - comm_sync, or event_sync of an event recorded on it;
 *   - event_query of such an event once the device has "had time" (a later
 *     call into the device was made since the record);
 *   - a compute operation enqueued after the compute stream was made to
 *     wait for them (stream_wait, to_device_async).
 * Nothing else runs them, so a reader that skipped the synchronisation sees
 * the buffer as it was before the copy. The copy stream (BACKEND_COPY:
 * copy_up, copy_down) is a second such queue, due the same ways (and at
 * every drain), but its items follow only the compute work that the
 * stream was made to wait for (stream_wait(BACKEND_COPY, a compute
 * event)), and a copy down runs as soon as that work has run (the queue
 * up to it, without waiting): with the compute stream behind the host
 * (FREESCALE_FAKE_ASYNC) a copy down that skipped its wait runs before the
 * kernels enqueued ahead of it, as it may on a GPU, while a copy up runs
 * as late as its waiters allow. With FREESCALE_FAKE_ASYNC the copy stream
 * is fake_copy.c's thread instead, which runs every copy as soon as the
 * compute work it follows has run; the compute stream waits for it where
 * it was made to (a wait enqueued there), the host in a synchronisation.
 * Sequence numbers count each queue's work: an event is
 * the number of items enqueued on its stream at its record (the compute
 * stream's events carry what the compute stream waited for on both, and
 * a mark in the compute stream that must have been reached). */
#include "fake/fake.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/devstats.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"

struct fk_item {
    void *dst;
    const void *src;
    size_t bytes; /* a copy; or, with add, n floats dst += src */
    int add;
    int64_t cseq; /* the compute stream's items enqueued before it */
};

struct backend_event {
    int recorded, done, timing;
    int64_t need;   /* comm items that must have run */
    int64_t need_copy; /* copy stream items that must have run */
    int copy;       /* recorded on the copy stream */
    uint64_t tick;  /* the device call that recorded it */
    double t;       /* host seconds at completion */
    int compute;    /* recorded on the compute stream: a mark there too */
    int comm_ready; /* its comm work had run at the record */
    int64_t cseq;   /* the mark's position in the compute stream */
    _Atomic uint64_t gen;    /* record generation (the host) */
    _Atomic uint64_t marked; /* the generation whose mark the stream passed */
    double tc;               /* host seconds then (written before marked) */
};

#define FK_PENDING 256

struct fk_queue {
    struct fk_item *q;
    int64_t head, n, cap; /* pending items q[head .. n) */
    int64_t enq, ran;     /* items enqueued, run (monotonic) */
};

static struct {
    struct fk_queue cq, xq; /* the comm stream, the copy stream */
    int64_t compute_need; /* comm items the compute stream waits for */
    int64_t compute_need_copy; /* copy items likewise */
    int64_t copy_after;   /* the compute mark the copy stream waits for */
    uint64_t tick;
    struct backend_event *pending[FK_PENDING]; /* recorded, not yet complete */
    int npending;
    /* the copy stream's thread's checks: its copies not yet ordered before
     * the compute stream's work (neither waited for there nor seen
     * complete by the host), by their device side's allocation */
    struct fk_flight {
        const char *base;
        int64_t seq;
        int up;
    } *flight;
    int nflight, cap_flight;
    int64_t copy_known; /* copies the host has seen complete */
    const void *use[2 * FK_MAX_ARGS]; /* the operands of the operation being made */
    int nuse;
} g_st;

static void complete(struct backend_event *e);

void fake_tick(void) { g_st.tick++; }

static void run_one(const struct fk_item *it)
{
    char *b;
    size_t nb;
    void *dst = fake_mem_find(it->dst, &b, &nb)
                    ? fake_mem_shadow(it->dst, "comm stream", "destination") : it->dst;
    const void *src = fake_mem_find(it->src, &b, &nb)
                          ? fake_mem_shadow(it->src, "comm stream", "source") : it->src;
    if (it->add) {
        float *y = dst;
        const float *x = src;
        for (size_t i = 0; i < it->bytes; i++)
            y[i] += x[i];
    } else {
        memmove(dst, src, it->bytes);
    }
}

static int mark_passed(const struct backend_event *e)
{
    return !e->compute ||
           atomic_load_explicit(&e->marked, memory_order_acquire) == atomic_load(&e->gen);
}

/* copies run on the copy stream (its thread's count with FREESCALE_FAKE_ASYNC) */
static int64_t copy_ran(void) { return fake_copy_on() ? fake_copy_ran() : g_st.xq.ran; }

static int work_ran(const struct backend_event *e)
{
    return e->need <= g_st.cq.ran && e->need_copy <= copy_ran() && mark_passed(e);
}

/* the events whose work has run are complete now */
static void complete_ready(void)
{
    for (int i = 0; i < g_st.npending;) {
        if (work_ran(g_st.pending[i])) {
            complete(g_st.pending[i]);
            g_st.pending[i] = g_st.pending[--g_st.npending];
        } else {
            i++;
        }
    }
}

/* Run queue Q's items up to sequence number upto, each once the compute
 * work it follows has run (block: wait for it; else stop there); the
 * events whose work has run are complete now. */
static void run_q(struct fk_queue *Q, int64_t upto, int block)
{
    while (Q->ran < upto && Q->head < Q->n) {
        const struct fk_item *it = &Q->q[Q->head];
        if (block)
            fake_compute_wait_for(it->cseq);
        else if (!fake_compute_passed(it->cseq)) {
            fake_compute_kick(it->cseq); /* a poll finds it done later */
            break;
        }
        run_one(it);
        Q->head++;
        Q->ran++;
    }
    if (Q->head == Q->n)
        Q->head = Q->n = 0;
    complete_ready();
}

static void unpend(struct backend_event *e)
{
    for (int i = 0; i < g_st.npending; i++)
        if (g_st.pending[i] == e) {
            g_st.pending[i] = g_st.pending[--g_st.npending];
            return;
        }
}

static void run_comm(int64_t upto, int block) { run_q(&g_st.cq, upto, block); }
/* the copy stream up to upto: run here, or (its thread) waited for when block */
static void run_copy(int64_t upto, int block)
{
    if (!fake_copy_on()) {
        run_q(&g_st.xq, upto, block);
        return;
    }
    if (block)
        fake_copy_wait_for(upto);
    complete_ready();
}

/* an item on Q after the compute stream's item cseq */
static void enqueue(struct fk_queue *Q, void *dst, const void *src, size_t bytes, int add,
                    int64_t cseq)
{
    if (Q->n == Q->cap) {
        if (Q->head > 0) { /* compact */
            memmove(Q->q, Q->q + Q->head, (size_t)(Q->n - Q->head) * sizeof *Q->q);
            Q->n -= Q->head;
            Q->head = 0;
        }
        if (Q->n == Q->cap) {
            Q->cap = Q->cap ? 2 * Q->cap : 64;
            Q->q = xrealloc(Q->q, (size_t)Q->cap * sizeof *Q->q);
        }
    }
    Q->q[Q->n++] = (struct fk_item){dst, src, bytes, add, cseq};
    Q->enq++;
}

void fake_comm_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes)
        enqueue(&g_st.cq, dst, src, bytes, 0, fake_compute_enqueued());
}

void fake_comm_add(float *y, const float *x, int64_t n)
{
    if (n > 0)
        enqueue(&g_st.cq, y, x, (size_t)n, 1, fake_compute_enqueued());
}

/* --- the copy stream's thread's checks ---------------------------------------- */

/* The copy about to be enqueued (number xq.enq + 1) has device side dev
 * (a copy up's destination, else a copy down's source): fatal() when
 * compute work that the copy stream was not made to wait for still uses
 * its allocation (a missing stream_wait(BACKEND_COPY, ...)) and the host
 * has not seen that work run; then it is in flight until ordered. */
static void flight_add(const void *dev, int up)
{
    int id;
    const int64_t last = fake_mem_last_use(dev, &id);
    const int64_t after = g_st.copy_after > fake_compute_seen() ? g_st.copy_after
                                                                : fake_compute_seen();
    if (last > after)
        fatal("fake device: copy_%s: device allocation #%d is used by the compute stream's "
              "work (item %lld) that the copy stream was not made to wait for (it waits for "
              "item %lld): a missing stream_wait(BACKEND_COPY, an event recorded after that "
              "work)", up ? "up" : "down", id, (long long)last, (long long)g_st.copy_after);
    char *base;
    size_t nb;
    if (!fake_mem_find(dev, &base, &nb))
        return;
    if (g_st.nflight == g_st.cap_flight) {
        g_st.cap_flight = g_st.cap_flight ? 2 * g_st.cap_flight : 16;
        g_st.flight = xrealloc(g_st.flight, (size_t)g_st.cap_flight * sizeof *g_st.flight);
    }
    g_st.flight[g_st.nflight++] = (struct fk_flight){base, g_st.xq.enq + 1, up};
}

void fake_copy_check_use(const void *p, const char *op, const char *what)
{
    const int64_t ordered = g_st.copy_known > g_st.compute_need_copy ? g_st.copy_known
                                                                     : g_st.compute_need_copy;
    int m = 0;
    for (int i = 0; i < g_st.nflight; i++) /* those ordered now leave */
        if (g_st.flight[i].seq > ordered)
            g_st.flight[m++] = g_st.flight[i];
    g_st.nflight = m;
    char *base;
    size_t nb;
    if (m && fake_mem_find(p, &base, &nb))
        for (int i = 0; i < m; i++)
            if (g_st.flight[i].base == base) {
                int id;
                fake_mem_last_use(p, &id);
                fatal("fake device: %s: %s = %p lies in device allocation #%d, which the copy "
                      "stream's copy_%s #%lld %s, and the compute stream was not made to wait "
                      "for that copy (a missing stream_wait(BACKEND_COMPUTE, an event recorded "
                      "on the copy stream after it) or an event synchronisation)", op, what, p,
                      id, g_st.flight[i].up ? "up" : "down", (long long)g_st.flight[i].seq,
                      g_st.flight[i].up ? "writes" : "reads");
            }
    if (g_st.nuse < (int)(sizeof g_st.use / sizeof *g_st.use))
        g_st.use[g_st.nuse++] = p; /* its use recorded when the operation is launched */
}

void fake_copy_uses_launched(int64_t seq)
{
    for (int i = 0; i < g_st.nuse; i++)
        fake_mem_use(g_st.use[i], seq);
    g_st.nuse = 0;
}

void fake_copy_uses_drop(void) { g_st.nuse = 0; }

/* p's view for a copy: the operations' mapping when it is device memory */
static void *copy_view(const void *p, const char *what)
{
    char *b;
    size_t nb;
    return fake_mem_find(p, &b, &nb) ? fake_mem_shadow(p, "copy stream", what) : (void *)p;
}

void fake_copy_copy(void *dst, const void *src, size_t bytes, int early)
{
    if (!bytes)
        return;
    if (fake_copy_on()) { /* its thread runs it as soon as the compute work it follows has */
        flight_add(early ? src : dst, !early);
        fake_copy_push(copy_view(dst, "destination"), copy_view(src, "source"), bytes,
                       g_st.copy_after);
        g_st.xq.enq++;
        return;
    }
    enqueue(&g_st.xq, dst, src, bytes, 0, g_st.copy_after); /* after only what it waits for */
    if (early) /* as soon as that compute work has run, not later */
        run_copy(g_st.xq.enq, 0);
}

void fake_comm_drain(void)
{
    run_comm(g_st.cq.enq, 1);
    run_copy(g_st.xq.enq, 1);
}

void fake_compute_due(void)
{
    run_comm(g_st.compute_need, 1);
    if (!fake_copy_on()) /* else the compute stream waits for its thread (fake_stream_wait) */
        run_copy(g_st.compute_need_copy, 1);
}

void fake_compute_after_comm(void)
{
    if (g_st.cq.enq > g_st.compute_need)
        g_st.compute_need = g_st.cq.enq;
}

/* --- events --------------------------------------------------------------- */

struct backend_event *fake_event_new(int timing)
{
    struct backend_event *e = xcalloc(1, sizeof *e);
    e->timing = timing;
    return e;
}

void fake_event_free(struct backend_event *e)
{
    if (!e)
        return;
    if (e->recorded && e->compute)
        fake_compute_wait_for(e->cseq); /* the stream must not reach a freed mark */
    unpend(e);
    free(e);
}

static void complete(struct backend_event *e)
{
    if (e->need_copy > g_st.copy_known) /* the host has seen them run */
        g_st.copy_known = e->need_copy;
    if (e->compute)
        fake_compute_saw(e->cseq);
    if (!e->done) {
        e->done = 1;
        /* a compute event: when the stream reached it, unless comm work it
         * waits for ran later (found now) */
        e->t = e->compute && e->comm_ready ? e->tc : clock_seconds();
        if (e->compute && e->tc > e->t)
            e->t = e->tc;
    }
}

/* in the compute stream's thread (or at once, synchronous) */
void fake_event_mark(struct backend_event *e, uint64_t gen)
{
    if (atomic_load(&e->gen) != gen)
        return; /* recorded again since: that record's mark counts */
    e->tc = clock_seconds();
    atomic_store_explicit(&e->marked, gen, memory_order_release);
}

void fake_event_record(struct backend_event *e, enum backend_stream s)
{
    fake_tick();
    e->recorded = 1; /* an earlier record's mark still queued: its generation no longer counts */
    e->done = 0;
    e->tick = g_st.tick;
    e->compute = s == BACKEND_COMPUTE;
    e->copy = s == BACKEND_COPY;
    uint64_t gen = atomic_load(&e->gen) + 1;
    atomic_store(&e->gen, gen);
    e->need = s == BACKEND_COMM ? g_st.cq.enq : e->compute ? g_st.compute_need : 0;
    e->need_copy = e->copy ? g_st.xq.enq : e->compute ? g_st.compute_need_copy : 0;
    /* (the copy stream's thread: the compute stream itself waits for it) */
    e->comm_ready = g_st.cq.ran >= e->need && (fake_copy_on() || copy_ran() >= e->need_copy);
    if (e->compute)
        e->cseq = fake_compute_mark(e, gen);
    unpend(e);
    if (work_ran(e)) {
        complete(e); /* the work it follows has run */
    } else {
        if (g_st.npending == FK_PENDING)
            fatal("fake device: more than %d events in flight", FK_PENDING);
        g_st.pending[g_st.npending++] = e;
    }
}

int fake_event_query(struct backend_event *e)
{
    if (!e->recorded)
        return 1; /* as CUDA: an event never recorded counts as completed */
    if (e->done)
        return 1;
    if (e->compute)
        fake_compute_kick(e->cseq); /* the stream runs on to it; a later query finds it */
    if (g_st.tick > e->tick) {
        run_comm(e->need, 0);
        run_copy(e->need_copy, 0);
    }
    if ((g_st.tick > e->tick || e->compute) && work_ran(e)) {
        unpend(e);
        complete(e);
    }
    return e->done;
}

void fake_event_sync(struct backend_event *e)
{
    fake_tick();
    devstats_sync();
    if (!e->recorded)
        return;
    if (e->compute)
        fake_compute_wait_for(e->cseq);
    run_comm(e->need, 1);
    run_copy(e->need_copy, 1);
    unpend(e);
    complete(e);
}

/* in the compute stream: wait for the copy stream's first a[0] copies */
static void run_copy_wait(const union fk_arg *a, const void *blob)
{
    (void)blob;
    fake_copy_wait_for(a[0].i);
}

void fake_stream_wait(enum backend_stream s, struct backend_event *e)
{
    fake_tick();
    if (!e->recorded)
        return;
    if (s == BACKEND_COMPUTE) {
        if (e->need > g_st.compute_need)
            g_st.compute_need = e->need;
        if (e->need_copy > g_st.compute_need_copy) {
            g_st.compute_need_copy = e->need_copy;
            if (fake_copy_on()) /* the compute stream's thread waits for the copy stream's */
                LAUNCH(run_copy_wait, AI(e->need_copy));
        }
    } else if (s == BACKEND_COPY) { /* later copies follow the compute mark */
        if (!e->compute && !e->copy)
            fatal("fake device: the copy stream waiting for a comm stream event is not "
                  "emulated");
        if (e->compute && e->cseq > g_st.copy_after)
            g_st.copy_after = e->cseq;
    } else if (e->copy) {
        fatal("fake device: the comm stream waiting for a copy stream event is not emulated");
    }
    /* the comm stream waiting for a compute event: each comm item follows
     * all the compute work enqueued before it anyway */
}

float fake_event_ms(struct backend_event *start, struct backend_event *end)
{
    if (!start->timing || !end->timing)
        fatal("fake device: event_ms of an event made without timing");
    for (int i = 0; i < 2; i++) { /* found complete now (a host wait since ran the stream) */
        struct backend_event *e = i ? end : start;
        if (!e->done && e->recorded && work_ran(e)) {
            unpend(e);
            complete(e);
        }
    }
    if (!start->done || !end->done)
        fatal("fake device: event_ms of an event not yet completed");
    return (float)(1e3 * (end->t - start->t));
}
