/* emb_xfer: one transfer of rows between the ranks of the emb group, host,
 * staged or direct, and through CUDA IPC within a node (emb_ipc.c); see
 * emb_exchange_priv.h. */
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "comm/comm_tags.h"
#include "comm/comm_trace.h"
#include "embedding/emb_exchange_priv.h"

/* the host's blocking waits, announced (emb_set_wait_hook) */
static void (*wait_hook)(void *arg, int begin);
static void *wait_arg;

void emb_set_wait_hook(void (*hook)(void *arg, int begin), void *arg)
{
    wait_hook = hook;
    wait_arg = arg;
}

static void blocking(int begin)
{
    if (wait_hook)
        wait_hook(wait_arg, begin);
}

/* point-to-point tags: one per table and kind (comm/comm_tags.h) */
_Static_assert(EMB_MAX_TABLES * EMB_NX <= COMM_TAG_IPC_CTL - COMM_TAG_XFER, "tags overlap");
static int xfer_tag(const struct emb_xfer *f)
{
    return comm_tag_table(COMM_TAG_XFER, f->t->index, EMB_NX, f->kind);
}

static const int64_t *sc_of(const struct emb_xfer *f) { return f->lay.send.counts; }
static const int64_t *sd_of(const struct emb_xfer *f) { return f->lay.send.displs; }
static const int64_t *rc_of(const struct emb_xfer *f) { return f->lay.recv.counts; }
static const int64_t *rd_of(const struct emb_xfer *f) { return f->lay.recv.displs; }

/* rows end of a layout: max over peers of displacement + count */
static int64_t extent(const int64_t *cnt, const int64_t *dsp, int G)
{
    int64_t e = 0;
    for (int p = 0; p < G; p++)
        if (cnt[p] > 0 && dsp[p] + cnt[p] > e)
            e = dsp[p] + cnt[p];
    return e;
}

/* pinned buffer of at least bytes (staged) */
static char *pinned(const struct backend_ops *be, struct emb_buf *b, size_t bytes)
{
    if (bytes > b->cap || !b->p) {
        if (b->p)
            be->host_free(b->p);
        b->cap = bytes + bytes / 4 + 64;
        b->p = be->host_alloc(b->cap);
    }
    return b->p;
}

/* peer p's segments travel by MPI (not to itself, not through IPC) */
static int by_mpi(const struct emb_xfer *f, int p, int me)
{
    return p != me && !emb_ipc_peer(f->t, p);
}

/* Post this rank's messages: sends (send = 1, from base) or receives. */
static void post(struct emb_xfer *f, int send, const char *base, struct comm_msgs *out)
{
    const int G = f->t->G, me = f->c->g[COMM_EMB].rank;
    const int64_t *cnt = send ? sc_of(f) : rc_of(f), *dsp = send ? sd_of(f) : rd_of(f);
    struct comm_msg *m = xmalloc((size_t)G * sizeof *m);
    int n = 0;
    for (int p = 0; p < G; p++)
        if (by_mpi(f, p, me) && cnt[p] > 0) {
            m[n] = (struct comm_msg){.peer = p, .tag = xfer_tag(f),
                                     .buf = (void *)(base + (size_t)dsp[p] * f->rb),
                                     .n = cnt[p]};
            if (f->t->xs->mode == EMB_XF_DIRECT && f->t->be->mpi_expose)
                f->t->be->mpi_expose(m[n].buf, (size_t)cnt[p] * f->rb, 1);
            n++;
        }
    if (comm_trace_on()) {
        static const char *const kinds[EMB_NX] = {"ids",    "rows0", "rows1", "grads0",
                                                  "grads1", "mask",  "pf",    "late"};
        comm_trace_kinds(kinds, EMB_NX);
        comm_trace_label(f->t->index, f->kind);
    }
    comm_post_rows(f->c, COMM_EMB, f->type, f->width, m, n, send, f->ph, out);
    free(m);
}

/* the MPI messages of one side are over: close what was exposed to MPI */
static void unexpose(struct emb_xfer *f, int send)
{
    const struct backend_ops *be = f->t->be;
    if (f->t->xs->mode != EMB_XF_DIRECT || !be->mpi_expose)
        return;
    const int G = f->t->G, me = f->c->g[COMM_EMB].rank;
    const int64_t *cnt = send ? sc_of(f) : rc_of(f), *dsp = send ? sd_of(f) : rd_of(f);
    const char *base = send ? f->send : f->recv;
    for (int p = 0; p < G; p++)
        if (by_mpi(f, p, me) && cnt[p] > 0)
            be->mpi_expose(base + (size_t)dsp[p] * f->rb, (size_t)cnt[p] * f->rb, 0);
}

static void send_now(struct emb_xfer *f)
{
    struct emb_xstate *xs = f->t->xs;
    const char *base = xs->mode == EMB_XF_STAGED ? xs->pin_s[f->kind].p : f->send;
    post(f, 1, base, &f->sq);
    if (xs->ipc)
        emb_ipc_send(f);
    f->sends_posted = 1;
}

/* the received segments (other ranks') into the receive buffer */
static void land(struct emb_xfer *f)
{
    struct emb_xstate *xs = f->t->xs;
    f->recvd = 1;
    if (xs->mode == EMB_XF_DIRECT) {
        unexpose(f, 0);
        return;
    }
    const struct backend_ops *be = f->t->be;
    const int G = f->t->G, me = f->c->g[COMM_EMB].rank;
    const int64_t *rc = rc_of(f), *rd = rd_of(f);
    const char *pin = xs->pin_r[f->kind].p;
    int any = 0;
    if (f->reuse) /* the uploads into the pooled recv after its last use (no host wait) */
        be->stream_wait(BACKEND_COMM, f->reuse);
    for (int p = 0; p < G; p++)
        if (by_mpi(f, p, me) && rc[p] > 0) {
            be->to_device_async(f->recv + (size_t)rd[p] * f->rb, pin + (size_t)rd[p] * f->rb,
                                (size_t)rc[p] * f->rb);
            any = 1;
        }
    if (any) { /* the next transfer of this kind may overwrite pin once these ran */
        be->event_record(xs->landed[f->kind], BACKEND_COMM);
        xs->landing[f->kind] = 1;
    }
}

static void finish(struct emb_xfer *f)
{
    unexpose(f, 1);
    f->active = 0;
}

void emb_xfer_post(struct emb_table *t, struct comm *c, struct emb_xfer *f, int kind,
                   enum comm_dtype type, int64_t width, const void *send, const int64_t *sc,
                   const int64_t *sd, void *recv, const int64_t *rc, const int64_t *rd,
                   enum comm_phase ph)
{
    struct emb_xstate *xs = emb_xstate(t);
    const struct backend_ops *be = t->be;
    const int G = t->G, me = c->g[COMM_EMB].rank;
    if (f->active)
        fatal("embedding table '%s': transfer %d posted twice", t->conf.name, kind);
    f->active = 1;
    f->kind = kind;
    f->t = t;
    f->c = c;
    f->type = type;
    f->width = width;
    f->rb = (size_t)width * (type == COMM_F32 ? 4 : type == COMM_BYTE ? 1 : 8);
    f->ph = ph;
    f->send = send;
    f->recv = recv;
    f->sends_posted = f->recvd = 0;
    memcpy(f->lay.send.counts, sc, (size_t)G * sizeof *sc);
    memcpy(f->lay.send.displs, sd, (size_t)G * sizeof *sd);
    memcpy(f->lay.recv.counts, rc, (size_t)G * sizeof *rc);
    memcpy(f->lay.recv.displs, rd, (size_t)G * sizeof *rd);
    f->p2p = 0;
    if (xs->mode == EMB_XF_HOST && (comm_trace_on() || f->p2p_asked)) { /* per peer */
        f->p2p = 1;
        post(f, 0, recv, &f->rq);
        if (sc[me] != rc[me])
            fatal("embedding table '%s': transfer %d: %lld rows to itself, %lld expected",
                  t->conf.name, kind, (long long)sc[me], (long long)rc[me]);
        if (sc[me] > 0)
            memcpy((char *)recv + (size_t)rd[me] * f->rb,
                   (const char *)send + (size_t)sd[me] * f->rb, (size_t)sc[me] * f->rb);
        post(f, 1, send, &f->sq);
        f->sends_posted = 1;
        return;
    }
    if (xs->mode == EMB_XF_HOST) {
        comm_ialltoallv(c, COMM_EMB, type, width, send, sc, sd, recv, rc, rd, ph, &f->req);
        return;
    }
    int remote_sends = 0;
    for (int p = 0; p < G; p++)
        remote_sends += by_mpi(f, p, me) && sc[p] > 0;
    /* within the node: the segments into this rank's window (comm stream) */
    const int ipc_sends = xs->ipc ? emb_ipc_post(f) : 0;
    if (xs->mode == EMB_XF_STAGED) {
        char *pin_s = pinned(be, &xs->pin_s[kind], (size_t)extent(sc, sd, G) * f->rb);
        char *pin_r = pinned(be, &xs->pin_r[kind], (size_t)extent(rc, rd, G) * f->rb);
        /* MPI may overwrite pin_r once the last landing out of it has run */
        if (xs->landing[kind] && !be->event_query(xs->landed[kind])) {
            blocking(1);
            be->event_sync(xs->landed[kind]);
            blocking(0);
        }
        xs->landing[kind] = 0;
        post(f, 0, pin_r, &f->rq);
        for (int p = 0; p < G; p++) /* down, one copy per peer, on the comm stream */
            if (by_mpi(f, p, me) && sc[p] > 0)
                be->to_host_async(pin_s + (size_t)sd[p] * f->rb,
                                  (const char *)send + (size_t)sd[p] * f->rb,
                                  (size_t)sc[p] * f->rb);
        if (remote_sends || ipc_sends)
            be->event_record(xs->ready[kind], BACKEND_COMM);
    } else { /* direct: MPI reads the segments once the compute stream made them */
        /* and writes recv, a pooled buffer: not before the compute stream's
         * last use of it (recorded at its release: long done, as a rule) */
        if (f->reuse && !be->event_query(f->reuse)) {
            blocking(1);
            be->event_sync(f->reuse);
            blocking(0);
        }
        post(f, 0, recv, &f->rq);
        if (remote_sends || ipc_sends) /* the window copies follow the compute stream's work */
            be->event_record(xs->ready[kind], ipc_sends ? BACKEND_COMM : BACKEND_COMPUTE);
    }
    if (sc[me] != rc[me])
        fatal("embedding table '%s': transfer %d: %lld rows to itself, %lld expected",
              t->conf.name, kind, (long long)sc[me], (long long)rc[me]);
    if (sc[me] > 0)
        be->copy((char *)recv + (size_t)rd[me] * f->rb,
                 (const char *)send + (size_t)sd[me] * f->rb, (size_t)sc[me] * f->rb);
    /* the sends leave once their segments are ready: at a later test (an
     * event query) or the wait; a rank posts them before it waits for its
     * peers', and every rank posts and waits in the same order */
    if (!remote_sends && !ipc_sends)
        send_now(f); /* no segment to make ready: nothing to wait for */
}

int emb_xfer_test(struct emb_xfer *f)
{
    if (!f->active)
        return 1;
    if (f->p2p) {
        if (!f->recvd && comm_test_msgs(&f->rq))
            f->recvd = 1;
        if (!f->recvd || !comm_test_msgs(&f->sq))
            return 0;
        f->active = 0;
        return 1;
    }
    if (f->t->xs->mode == EMB_XF_HOST) {
        if (!comm_test(&f->req))
            return 0;
        f->active = 0;
        return 1;
    }
    if (!f->sends_posted && f->t->be->event_query(f->t->xs->ready[f->kind]))
        send_now(f);
    if (!f->recvd && comm_test_msgs(&f->rq))
        land(f);
    const int ipc_done = !f->t->xs->ipc || emb_ipc_test(f, 0);
    if (f->sends_posted && f->recvd && ipc_done && comm_test_msgs(&f->sq)) {
        finish(f);
        return 1;
    }
    return 0;
}

void emb_xfer_wait(struct emb_xfer *f)
{
    if (!f->active)
        return;
    if (f->p2p) {
        blocking(1);
        comm_wait_msgs(&f->rq);
        comm_wait_msgs(&f->sq);
        blocking(0);
        f->recvd = 1;
        f->active = 0;
        return;
    }
    if (f->t->xs->mode == EMB_XF_HOST) {
        blocking(1);
        comm_wait(&f->req);
        blocking(0);
        f->active = 0;
        return;
    }
    if (!f->sends_posted) { /* this rank's segments must be out before it waits for others' */
        const struct backend_ops *be = f->t->be;
        struct backend_event *e = f->t->xs->ready[f->kind];
        if (!be->event_query(e)) {
            blocking(1);
            be->event_sync(e);
            blocking(0);
        }
        send_now(f);
    }
    if (!f->recvd) {
        blocking(1);
        comm_wait_msgs(&f->rq);
        blocking(0);
        land(f); /* device work: outside the wait */
    }
    blocking(1);
    if (f->t->xs->ipc)
        emb_ipc_test(f, 1);
    comm_wait_msgs(&f->sq);
    blocking(0);
    finish(f);
}
