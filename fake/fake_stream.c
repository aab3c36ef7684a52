/* fake_stream: the fake device's streams and events (fake.h).
 *
 * The compute stream runs each operation when it is enqueued (the CPU's
 * code, on the host). The comm stream is a queue: its copies and additions
 * run only when they become due, in order:
 *   - comm_sync, or event_sync of an event recorded on it;
 *   - event_query of such an event once the device has "had time" (a later
 *     call into the device was made since the record);
 *   - a compute operation enqueued after the compute stream was made to
 *     wait for them (stream_wait, to_device_async).
 * Nothing else runs them, so a reader that skipped the synchronisation sees
 * the buffer as it was before the copy. Sequence numbers count the comm
 * stream's work: an event is the number of items enqueued at its record
 * (the compute stream's events also carry what the compute stream waited
 * for). */
#include "fake/fake.h"

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
};

struct backend_event {
    int recorded, done, timing;
    int64_t need;   /* comm items that must have run */
    uint64_t tick;  /* the device call that recorded it */
    double t;       /* host seconds at completion */
};

#define FK_PENDING 256

static struct {
    struct fk_item *q;
    int64_t head, n, cap; /* pending items q[head .. n) */
    int64_t enq, ran;     /* comm items enqueued, run (monotonic) */
    int64_t compute_need; /* comm items the compute stream waits for */
    uint64_t tick;
    struct backend_event *pending[FK_PENDING]; /* recorded, not yet complete */
    int npending;
} g_st;

static void complete(struct backend_event *e);

void fake_tick(void) { g_st.tick++; }

static void run_one(const struct fk_item *it)
{
    char *b;
    size_t nb;
    int dst_dev = fake_mem_find(it->dst, &b, &nb), src_dev = fake_mem_find(it->src, &b, &nb);
    if (dst_dev)
        fake_mem_open(it->dst, "comm stream", "destination");
    if (src_dev)
        fake_mem_open(it->src, "comm stream", "source");
    if (it->add) {
        float *y = it->dst;
        const float *x = it->src;
        for (size_t i = 0; i < it->bytes; i++)
            y[i] += x[i];
    } else {
        memmove(it->dst, it->src, it->bytes);
    }
    if (src_dev)
        fake_mem_close(it->src);
    if (dst_dev)
        fake_mem_close(it->dst);
}

/* Run the comm stream's items up to sequence number upto; the events
 * whose work has run are complete now (their time: now). */
static void run_comm(int64_t upto)
{
    while (g_st.ran < upto && g_st.head < g_st.n) {
        run_one(&g_st.q[g_st.head++]);
        g_st.ran++;
    }
    if (g_st.head == g_st.n)
        g_st.head = g_st.n = 0;
    for (int i = 0; i < g_st.npending;) {
        if (g_st.pending[i]->need <= g_st.ran) {
            complete(g_st.pending[i]);
            g_st.pending[i] = g_st.pending[--g_st.npending];
        } else {
            i++;
        }
    }
}

static void unpend(struct backend_event *e)
{
    for (int i = 0; i < g_st.npending; i++)
        if (g_st.pending[i] == e) {
            g_st.pending[i] = g_st.pending[--g_st.npending];
            return;
        }
}

static void enqueue(void *dst, const void *src, size_t bytes, int add)
{
    if (g_st.n == g_st.cap) {
        if (g_st.head > 0) { /* compact */
            memmove(g_st.q, g_st.q + g_st.head, (size_t)(g_st.n - g_st.head) * sizeof *g_st.q);
            g_st.n -= g_st.head;
            g_st.head = 0;
        }
        if (g_st.n == g_st.cap) {
            g_st.cap = g_st.cap ? 2 * g_st.cap : 64;
            g_st.q = xrealloc(g_st.q, (size_t)g_st.cap * sizeof *g_st.q);
        }
    }
    g_st.q[g_st.n++] = (struct fk_item){dst, src, bytes, add};
    g_st.enq++;
}

void fake_comm_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes)
        enqueue(dst, src, bytes, 0);
}

void fake_comm_add(float *y, const float *x, int64_t n)
{
    if (n > 0)
        enqueue(y, x, (size_t)n, 1);
}

void fake_comm_drain(void) { run_comm(g_st.enq); }

void fake_compute_due(void) { run_comm(g_st.compute_need); }

void fake_compute_after_comm(void)
{
    if (g_st.enq > g_st.compute_need)
        g_st.compute_need = g_st.enq;
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
    unpend(e);
    free(e);
}

static void complete(struct backend_event *e)
{
    if (!e->done) {
        e->done = 1;
        e->t = clock_seconds();
    }
}

void fake_event_record(struct backend_event *e, enum backend_stream s)
{
    fake_tick();
    e->recorded = 1;
    e->done = 0;
    e->tick = g_st.tick;
    e->need = s == BACKEND_COMM ? g_st.enq : g_st.compute_need;
    unpend(e);
    if (g_st.ran >= e->need) {
        complete(e); /* the compute stream's work so far has run */
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
    if (!e->done && g_st.tick > e->tick) {
        run_comm(e->need);
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
    run_comm(e->need);
    complete(e);
}

void fake_stream_wait(enum backend_stream s, struct backend_event *e)
{
    fake_tick();
    if (s == BACKEND_COMPUTE && e->recorded && e->need > g_st.compute_need)
        g_st.compute_need = e->need;
    /* the comm stream waiting for a compute event: that work has run */
}

float fake_event_ms(struct backend_event *start, struct backend_event *end)
{
    if (!start->timing || !end->timing)
        fatal("fake device: event_ms of an event made without timing");
    if (!start->done || !end->done)
        fatal("fake device: event_ms of an event not yet completed");
    return (float)(1e3 * (end->t - start->t));
}
