/* emb_ipc: the rows and gradients of a device table between ranks of one
 * node through CUDA IPC (parallel.transport = copy-engine | kernel); see
 * emb_exchange_priv.h. No MPI here: the hand-offs are messages of the comm
 * layer.
 *
 * Per kind of transfer each rank keeps a window: a buffer of its device
 * memory that its node's peers map once (and again when it grows). A
 * transfer of that kind, sender side: the segments for this node's peers
 * are copied into the window (packed, on the comm stream, after the
 * compute stream made them); once that copy is done a hand-off message
 * tells each peer where its segment lies (window generation, handle,
 * offset, rows). Receiver side: on the hand-off it maps the window if it
 * is new, copies its segment from the mapping into the receive buffer
 * (the copy engines, or a copy kernel: use_kernel), and the compute
 * stream waits for that copy, not the host. Once the copy has run the
 * receiver acknowledges; a sender overwrites its window (next transfer of
 * the kind) only after every acknowledgement of the last one arrived.
 * Acknowledgements are sent as soon as a test finds the copy done, at the
 * latest when the receiver posts its next transfer of the kind: every rank
 * posts the kinds in the same order, so nothing waits on a rank that
 * waits for it. A window that grew is kept until no peer still maps the
 * old one (a peer maps the generation it was last sent). */
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "comm/comm_tags.h"
#include "comm/comm_trace.h"
#include "embedding/emb_exchange_priv.h"

#define REASON_BYTES 256

/* a hand-off: where the receiver's segment lies in the sender's window */
struct emb_ipc_ctl {
    uint64_t gen;  /* the window's generation (1, 2, ... as it grows) */
    int64_t off;   /* rows into the window */
    int64_t n;     /* rows */
    unsigned char handle[BACKEND_IPC_HANDLE_BYTES];
};

struct ipc_old { /* a window that grew, kept while a peer may map it */
    void *p;
    uint64_t gen;
};

struct ipc_kind {
    void *win;                   /* this rank's window */
    size_t cap;                  /* its bytes */
    uint64_t gen;                /* its generation (0: none yet) */
    unsigned char handle[BACKEND_IPC_HANDLE_BYTES];
    struct ipc_old *old;
    int nold;
    uint64_t *sent_gen;          /* [G] the generation peer p was last sent (0: never) */
    void **map;                  /* [G] peer p's window mapped here, or NULL */
    uint64_t *map_gen;           /* [G] its generation */
    struct emb_ipc_ctl *out, *in; /* [G] hand-offs sent, received */
    uint8_t *ack_out, *ack_in;   /* [G] acknowledgement payloads */
    uint8_t *owe;                /* [G] receiver: peer p is owed an acknowledgement */
    int owing;                   /* some peer is, once `copied` has run */
    struct comm_msgs cs, cr, as, ar; /* hand-offs sent / received, acks sent / received */
    int handoffs_in;             /* cr posted, segments not yet copied */
    struct backend_event *copied; /* the receiver's copies of the last transfer */
};

struct emb_ipc {
    struct comm *c;
    int use_kernel;
    int *local;                  /* [G] peer p's segments go through IPC */
    struct ipc_kind k[EMB_NX];
};

/* message tags: one per table and kind (comm/comm_tags.h) */
_Static_assert(EMB_MAX_TABLES * EMB_NX <= COMM_TAG_IPC_ACK - COMM_TAG_IPC_CTL &&
                   EMB_MAX_TABLES * EMB_NX <= COMM_TAG_END - COMM_TAG_IPC_ACK,
               "tags overlap");
static int ctl_tag(const struct emb_table *t, int k)
{
    return comm_tag_table(COMM_TAG_IPC_CTL, t->index, EMB_NX, k);
}
static int ack_tag(const struct emb_table *t, int k)
{
    return comm_tag_table(COMM_TAG_IPC_ACK, t->index, EMB_NX, k);
}

int emb_ipc_peer(const struct emb_table *t, int p)
{
    return t->xs && t->xs->ipc && t->xs->ipc->local[p];
}

int emb_ipc_init(struct emb_table *t, struct comm *c, int use_kernel, char *err, size_t errlen)
{
    const struct backend_ops *be = t->be;
    const int G = t->G, me = c->g[COMM_EMB].rank;
    if (G != c->g[COMM_EMB].size)
        return errorf(err, errlen, "embedding table '%s' is not sharded over the emb group",
                      t->conf.name);
    struct emb_xstate *xs = emb_xstate(t);
    struct emb_ipc *ip = xcalloc(1, sizeof *ip);
    ip->c = c;
    ip->use_kernel = use_kernel;
    ip->local = xcalloc((size_t)G, sizeof *ip->local);
    for (int p = 0; p < G; p++)
        ip->local[p] = p != me && !comm_peer_remote(c, COMM_EMB, p);
    for (int k = 0; k < EMB_NX; k++) {
        struct ipc_kind *q = &ip->k[k];
        q->sent_gen = xcalloc((size_t)G, sizeof *q->sent_gen);
        q->map = xcalloc((size_t)G, sizeof *q->map);
        q->map_gen = xcalloc((size_t)G, sizeof *q->map_gen);
        q->out = xcalloc((size_t)G, sizeof *q->out);
        q->in = xcalloc((size_t)G, sizeof *q->in);
        q->ack_out = xcalloc((size_t)G, 1);
        q->ack_in = xcalloc((size_t)G, 1);
        q->owe = xcalloc((size_t)G, 1);
        q->copied = be->event_new(0);
    }
    xs->ipc = ip;
    return 0;
}

/* --- acknowledgements --------------------------------------------------------- */

/* Receiver: send the owed acknowledgements once the copies ran (block: wait
 * for them; else only if they have). */
static void acks_send(struct emb_table *t, int kind, int block)
{
    struct comm *c = t->xs->ipc->c;
    struct ipc_kind *q = &t->xs->ipc->k[kind];
    const struct backend_ops *be = t->be;
    if (!q->owing)
        return;
    if (!be->event_query(q->copied)) {
        if (!block)
            return;
        be->event_sync(q->copied);
    }
    comm_wait_msgs(&q->as); /* the last ones are out (long since, in practice) */
    const int G = t->G;
    struct comm_msg *m = xmalloc((size_t)G * sizeof *m);
    int n = 0;
    for (int p = 0; p < G; p++)
        if (q->owe[p]) {
            q->ack_out[p] = 1;
            m[n++] = (struct comm_msg){.peer = p, .tag = ack_tag(t, kind), .buf = &q->ack_out[p],
                                       .n = 1};
            q->owe[p] = 0;
        }
    comm_post_msgs(c, COMM_EMB, COMM_BYTE, m, n, 1, COMM_PH_OTHER, &q->as);
    free(m);
    q->owing = 0;
}

/* Sender: the window may be written once every peer acknowledged. */
static void acks_wait(struct ipc_kind *q) { comm_wait_msgs(&q->ar); }

/* Windows that grew and that no peer maps any more are freed. */
static void old_free(const struct backend_ops *be, struct ipc_kind *q, int G)
{
    int keep = 0;
    for (int i = 0; i < q->nold; i++) {
        int mapped = 0;
        for (int p = 0; p < G; p++)
            mapped |= q->sent_gen[p] == q->old[i].gen;
        if (mapped)
            q->old[keep++] = q->old[i];
        else
            be->free(q->old[i].p);
    }
    q->nold = keep;
}

/* --- one transfer -------------------------------------------------------------- */

int emb_ipc_post(struct emb_xfer *f)
{
    struct emb_table *t = f->t;
    struct emb_ipc *ip = t->xs->ipc;
    struct ipc_kind *q = &ip->k[f->kind];
    const struct backend_ops *be = t->be;
    const int G = t->G;
    const int64_t *sc = f->lay.send.counts, *sd = f->lay.send.displs, *rc = f->lay.recv.counts;
    /* the last transfer of this kind: this rank's acknowledgements out
     * first (its peers may be waiting for them), then its peers' in */
    acks_send(t, f->kind, 1);
    acks_wait(q);
    old_free(be, q, G);

    int64_t rows = 0;
    for (int p = 0; p < G; p++)
        if (ip->local[p])
            rows += sc[p];
    if (rows > 0 && (size_t)rows * f->rb > q->cap) {
        char why[REASON_BYTES];
        if (q->win) {
            q->old = xrealloc(q->old, (size_t)(q->nold + 1) * sizeof *q->old);
            q->old[q->nold++] = (struct ipc_old){.p = q->win, .gen = q->gen};
        }
        q->cap = (size_t)rows * f->rb + (size_t)rows * f->rb / 4 + 256;
        q->win = be->alloc(q->cap);
        q->gen++;
        if (be->ipc_export(q->win, q->handle, why, sizeof why))
            fatal("embedding table '%s': parallel.transport: exporting a window of %zu bytes "
                  "through CUDA IPC: %s", t->conf.name, q->cap, why);
        old_free(be, q, G);
    }
    /* the segments for this node's peers, packed into the window */
    struct comm_msg *m = xmalloc((size_t)G * sizeof *m);
    int64_t off = 0;
    int n = 0;
    for (int p = 0; p < G; p++)
        if (ip->local[p] && sc[p] > 0) {
            be->peer_copy((char *)q->win + (size_t)off * f->rb, f->send + (size_t)sd[p] * f->rb,
                          (size_t)sc[p] * f->rb, ip->use_kernel);
            q->out[p] = (struct emb_ipc_ctl){.gen = q->gen, .off = off, .n = sc[p]};
            memcpy(q->out[p].handle, q->handle, sizeof q->handle);
            m[n++] = (struct comm_msg){.peer = p, .tag = ack_tag(t, f->kind),
                                       .buf = &q->ack_in[p], .n = 1};
            off += sc[p];
        }
    comm_post_msgs(f->c, COMM_EMB, COMM_BYTE, m, n, 0, f->ph, &q->ar);
    /* the hand-offs this rank will receive */
    n = 0;
    for (int p = 0; p < G; p++)
        if (ip->local[p] && rc[p] > 0)
            m[n++] = (struct comm_msg){.peer = p, .tag = ctl_tag(t, f->kind), .buf = &q->in[p],
                                       .n = 1};
    q->handoffs_in = n > 0;
    if (n > 0) { /* (cr is waited for only then) */
        if (comm_trace_on()) /* the per-peer trace: the hand-offs */
            comm_trace_label(t->index, f->kind);
        comm_post_rows(f->c, COMM_EMB, COMM_BYTE, sizeof(struct emb_ipc_ctl), m, n, 0, f->ph,
                       &q->cr);
    }
    free(m);
    return rows > 0;
}

void emb_ipc_send(struct emb_xfer *f)
{
    struct emb_table *t = f->t;
    struct emb_ipc *ip = t->xs->ipc;
    struct ipc_kind *q = &ip->k[f->kind];
    const int G = t->G;
    const int64_t *sc = f->lay.send.counts;
    struct comm_msg *m = xmalloc((size_t)G * sizeof *m);
    int n = 0;
    for (int p = 0; p < G; p++)
        if (ip->local[p] && sc[p] > 0) {
            m[n++] = (struct comm_msg){.peer = p, .tag = ctl_tag(t, f->kind), .buf = &q->out[p],
                                       .n = 1};
            q->sent_gen[p] = q->gen;
            comm_count_ipc(f->c, COMM_EMB, p, sc[p] * (int64_t)f->rb, f->ph);
        }
    if (comm_trace_on())
        comm_trace_label(t->index, f->kind);
    comm_post_rows(f->c, COMM_EMB, COMM_BYTE, sizeof(struct emb_ipc_ctl), m, n, 1, f->ph, &q->cs);
    free(m);
}

/* The hand-offs arrived: map new windows, copy the segments, make the
 * compute stream wait for the copies. */
static void copy_in(struct emb_xfer *f, struct ipc_kind *q)
{
    struct emb_table *t = f->t;
    struct emb_ipc *ip = t->xs->ipc;
    const struct backend_ops *be = t->be;
    const int G = t->G;
    const int64_t *rc = f->lay.recv.counts, *rd = f->lay.recv.displs;
    for (int p = 0; p < G; p++) {
        if (!ip->local[p] || rc[p] == 0)
            continue;
        const struct emb_ipc_ctl *h = &q->in[p];
        if (h->n != rc[p] || h->off < 0 || h->gen == 0)
            fatal("embedding table '%s': transfer %d: emb rank %d handed off %lld rows "
                  "(window %llu), %lld expected", t->conf.name, f->kind, p, (long long)h->n,
                  (unsigned long long)h->gen, (long long)rc[p]);
        if (q->map_gen[p] != h->gen) { /* the peer's window is new, or grew */
            char why[REASON_BYTES];
            if (q->map[p])
                be->ipc_close(q->map[p]);
            q->map[p] = be->ipc_open(h->handle, why, sizeof why);
            if (!q->map[p])
                fatal("embedding table '%s': parallel.transport: mapping emb rank %d's window "
                      "through CUDA IPC: %s", t->conf.name, p, why);
            q->map_gen[p] = h->gen;
        }
        const char *src = (const char *)q->map[p] + (size_t)h->off * f->rb;
        be->peer_copy(f->recv + (size_t)rd[p] * f->rb, src, (size_t)rc[p] * f->rb,
                      ip->use_kernel);
        q->owe[p] = 1;
    }
    be->event_record(q->copied, BACKEND_COMM);
    be->stream_wait(BACKEND_COMPUTE, q->copied);
    q->owing = 1;
    q->handoffs_in = 0;
}

int emb_ipc_test(struct emb_xfer *f, int block)
{
    struct ipc_kind *q = &f->t->xs->ipc->k[f->kind];
    if (q->handoffs_in) {
        if (block)
            comm_wait_msgs(&q->cr);
        else if (!comm_test_msgs(&q->cr))
            return 0;
        copy_in(f, q);
    }
    acks_send(f->t, f->kind, 0); /* if the copies already ran */
    if (!f->sends_posted)
        return 0;
    if (block) {
        comm_wait_msgs(&q->cs);
        return 1;
    }
    return comm_test_msgs(&q->cs);
}

void emb_ipc_free(struct emb_table *t)
{
    struct emb_ipc *ip = t->xs ? t->xs->ipc : NULL;
    if (!ip)
        return;
    struct comm *c = ip->c;
    const struct backend_ops *be = t->be;
    const int G = t->G;
    for (int k = 0; k < EMB_NX; k++) { /* the last transfers' acknowledgements */
        acks_send(t, k, 1);
        acks_wait(&ip->k[k]);
        comm_wait_msgs(&ip->k[k].as);
    }
    be->comm_sync();
    for (int k = 0; k < EMB_NX; k++)
        for (int p = 0; p < G; p++)
            if (ip->k[k].map[p])
                be->ipc_close(ip->k[k].map[p]);
    comm_barrier_group(c, COMM_EMB); /* nobody maps a window any more */
    for (int k = 0; k < EMB_NX; k++) {
        struct ipc_kind *q = &ip->k[k];
        for (int i = 0; i < q->nold; i++)
            be->free(q->old[i].p);
        if (q->win)
            be->free(q->win);
        be->event_free(q->copied);
        free(q->old);
        free(q->sent_gen);
        free(q->map);
        free(q->map_gen);
        free(q->out);
        free(q->in);
        free(q->ack_out);
        free(q->ack_in);
        free(q->owe);
    }
    free(ip->local);
    free(ip);
    t->xs->ipc = NULL;
}
