/* ctx_split: the key/value exchange of split sequences; see ctx_split.h. */
#include "train/ctx_split.h"

#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/check.h"
#include "comm/comm_tags.h"

/* tags (comm/comm_tags.h): forward keys/values from COMM_TAG_KV, their
 * gradients from COMM_TAG_KV_BACK */
_Static_assert(2 * SPLIT_MAX_CHUNKS * SPLIT_MAX_CHUNKS <= COMM_TAG_KV_BACK - COMM_TAG_KV &&
                   2 * SPLIT_MAX_CHUNKS * SPLIT_MAX_CHUNKS <= COMM_TAG_XFER - COMM_TAG_KV_BACK,
               "tags overlap");

/* One chunk of the sequence of a local segment. */
struct chunk {
    int64_t p0, p1;
    int owner;
};

struct ctx_split {
    struct comm *c;
    struct steptime *st;    /* or NULL */
    struct model_split ms;
    int64_t B;
    const int64_t *offsets; /* the batch's (valid for the step; pos0, key_off in ms) */
    int *chunk, *nchunks;   /* [B] of each local segment */
    int64_t *first;         /* [B] its sequence's chunks: chunks[first[b] ..] */
    struct chunk *chunks;
    struct comm_msg *send, *recv;
    int nmsg;               /* capacity of send and recv */
    float *tmp;             /* backward: received gradients */
    int64_t tmp_n;
    struct comm_msgs rq, sq; /* receives, and the backward's sends, in flight */
    struct comm_msgs *pending; /* the forward's sends of each layer */
    int npending, maxpending;
    /* a device computing (ctx_split_device): the buffers the model hands
     * over are its memory, staged through host copies, or (direct) handed
     * to CUDA-aware MPI */
    const struct backend_ops *be; /* NULL: host memory */
    int direct;
    struct comm_msg **pend_msgs; /* direct: [layers] the forward's sends of each layer, exposed
                                    to MPI until they complete */
    int *pend_n;
    int nrecv, nsend;       /* direct: the messages of recv, send in flight */
    struct ctx_stage *stage; /* staged: the pinned buffers per layer (kept across steps) */
    float *hkv;             /* the layer's received rows (forward) or gradients sent
                               (backward): [2, keys, w] as kb, vb, in its stage buffer */
    float *dtmp;            /* backward: the received gradients, device copy */
    int64_t dtmp_n;
    int nfwd, nbwd;         /* staged: the forward's layers; the backward's so far */
    int64_t w;              /* floats per key row (post_kv's) */
    int64_t tmp_used;       /* floats of tmp the backward received */
    float *kb, *vb;         /* the forward's key buffers (device) */
};

static void post_kv(void *ctx, int64_t w, const float *k, const float *v, float *kb, float *vb);
static void wait_kv(void *ctx);
static void post_dkv(void *ctx, int64_t w, const float *dkb, const float *dvb);
static void wait_dkv(void *ctx, int64_t w, const float *dkb, const float *dvb, float *dk,
                     float *dv);

static int tag(int from, int to, int nchunks, int value, int back)
{
    return (back ? COMM_TAG_KV_BACK : COMM_TAG_KV) + (from * nchunks + to) * 2 + value;
}

struct ctx_split *ctx_split_new(struct comm *c, const struct step_plan *pl,
                                const struct seq_batch *sb, int layers, struct steptime *st)
{
    const struct split_pieces *pc = &pl->pieces;
    int any = 0;
    for (int64_t b = 0; b < pl->n; b++)
        any |= pc->pc[pl->piece[b]].nchunks > 1;
    if (!any)
        return NULL;
    struct ctx_split *x = xcalloc(1, sizeof *x);
    const int64_t B = sb->B;
    x->c = c;
    x->st = st;
    x->B = B;
    x->maxpending = layers > 0 ? layers : 1;
    x->pending = xcalloc((size_t)x->maxpending, sizeof *x->pending);
    x->offsets = sb->offsets;
    x->chunk = xmalloc((size_t)B * sizeof *x->chunk);
    x->nchunks = xmalloc((size_t)B * sizeof *x->nchunks);
    x->first = xmalloc((size_t)B * sizeof *x->first);
    int64_t n = 0;
    for (int64_t b = 0; b < B; b++)
        n += pc->pc[pl->piece[b]].nchunks;
    x->chunks = xmalloc((size_t)n * sizeof *x->chunks);
    int64_t msgs = 0;
    n = 0;
    for (int64_t b = 0; b < B; b++) {
        const int64_t g = pl->piece[b];
        const struct piece *p = &pc->pc[g];
        x->chunk[b] = p->chunk;
        x->nchunks[b] = p->nchunks;
        x->first[b] = n;
        for (int j = 0; j < p->nchunks; j++) {
            const int64_t gj = g - p->chunk + j; /* a sequence's chunks are consecutive */
            x->chunks[n++] = (struct chunk){.p0 = pc->pc[gj].p0, .p1 = pc->pc[gj].p1,
                                            .owner = pl->owner[gj]};
        }
        msgs += 2 * (p->nchunks - 1);
        if (p->p0 != sb->pos0[b])
            fatal("ctx_split: segment %lld does not start at its piece [%lld, %lld)",
                  (long long)b, (long long)p->p0, (long long)p->p1);
    }
    if (msgs > 1 << 30)
        fatal("ctx_split: %lld messages in one step", (long long)msgs);
    x->nmsg = (int)(msgs ? msgs : 1);
    x->send = xmalloc((size_t)x->nmsg * sizeof *x->send);
    x->recv = xmalloc((size_t)x->nmsg * sizeof *x->recv);
    x->ms = (struct model_split){.pos0 = sb->pos0, .key_off = sb->key_off, .key_ts = sb->key_ts,
                                 .post_kv = post_kv, .wait_kv = wait_kv, .post_dkv = post_dkv,
                                 .wait_dkv = wait_dkv, .ctx = x};
    return x;
}

void ctx_split_rows(struct ctx_split *x, const int64_t *offsets)
{
    if (!x)
        return;
    x->offsets = offsets;
    for (int64_t b = 0; b < x->B; b++) {
        const struct chunk *p = &x->chunks[x->first[b] + x->chunk[b]];
        if (p->p1 - p->p0 != offsets[b + 1] - offsets[b])
            fatal("ctx_split: segment %lld of %lld model rows does not match its piece [%lld, "
                  "%lld)", (long long)b, (long long)(offsets[b + 1] - offsets[b]),
                  (long long)p->p0, (long long)p->p1);
    }
}

/* --- a device computing (ctx_split_device): staged through host copies --- */

void ctx_split_device(struct ctx_split *x, const struct backend_ops *be, int direct,
                      struct ctx_stage *stage)
{
    if (x && be && !backend_is_host(be)) {
        x->be = be;
        x->direct = direct;
        x->stage = stage;
        if (!direct && !stage)
            fatal("ctx_split: a staged exchange on %s without its pinned buffers", be->name);
        if (direct) {
            x->pend_msgs = xcalloc((size_t)x->maxpending, sizeof *x->pend_msgs);
            x->pend_n = xcalloc((size_t)x->maxpending, sizeof *x->pend_n);
        }
    }
}

/* direct: the device buffers of messages m[n] are (on = 1), or no longer
 * (0), in an MPI operation */
static void expose(const struct ctx_split *x, const struct comm_msg *m, int n, int on)
{
    if (!x->direct || !x->be->mpi_expose)
        return;
    for (int i = 0; i < n; i++)
        if (m[i].n > 0)
            x->be->mpi_expose(m[i].buf, (size_t)m[i].n * sizeof(float), on);
}

/* --- the staged exchange's pinned buffers ------------------------------------ */

/* Per layer one pinned buffer: [2, T, w] the layer's k, v rows sent in the
 * forward (kept until those sends complete, in the backward), then [2,
 * keys, w] the rows received (forward) and the gradients sent (backward);
 * up[l]: the comm stream's uploads out of it (recorded when upped[l]). */
struct ctx_stage {
    const struct backend_ops *be;
    int layers;
    float **buf;
    size_t *cap; /* bytes */
    struct backend_event **up;
    int *upped;
};

struct ctx_stage *ctx_stage_new(const struct backend_ops *be, int layers)
{
    if (!be || backend_is_host(be) || !be->host_alloc)
        return NULL;
    struct ctx_stage *g = xcalloc(1, sizeof *g);
    g->be = be;
    g->layers = layers > 0 ? layers : 1;
    g->buf = xcalloc((size_t)g->layers, sizeof *g->buf);
    g->cap = xcalloc((size_t)g->layers, sizeof *g->cap);
    g->up = xcalloc((size_t)g->layers, sizeof *g->up);
    g->upped = xcalloc((size_t)g->layers, sizeof *g->upped);
    for (int l = 0; l < g->layers; l++)
        g->up[l] = be->event_new(0);
    return g;
}

void ctx_stage_free(struct ctx_stage *g)
{
    if (!g)
        return;
    g->be->comm_sync(); /* no copy still reads or writes the buffers */
    for (int l = 0; l < g->layers; l++) {
        if (g->buf[l])
            g->be->host_free(g->buf[l]);
        g->be->event_free(g->up[l]);
    }
    free(g->buf);
    free(g->cap);
    free(g->up);
    free(g->upped);
    free(g);
}

/* Layer l's buffer of at least n floats, once the comm stream's uploads
 * out of it have run (MPI may write it; usually long done: no wait). */
static float *stage_buf(struct ctx_split *x, int l, int64_t n)
{
    struct ctx_stage *g = x->stage;
    if (l >= g->layers)
        fatal("ctx_split: layer %d of the %d the staging was set up for", l + 1, g->layers);
    if (g->upped[l] && !g->be->event_query(g->up[l]))
        g->be->event_sync(g->up[l]);
    g->upped[l] = 0;
    const size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
    if (bytes > g->cap[l]) {
        if (g->buf[l]) {
            g->be->comm_sync(); /* a download into it may be in flight */
            g->be->host_free(g->buf[l]);
        }
        g->cap[l] = bytes + bytes / 4;
        g->buf[l] = g->be->host_alloc(g->cap[l]);
    }
    return g->buf[l];
}

/* Forward: k, v [T, w] of this layer into its pinned buffer (the sends'
 * source; async copies on the comm stream, after the compute stream's
 * work, then one host wait), room for the received rows after them. */
static void dev_stage_kv(struct ctx_split *x, int64_t w, const float *k, const float *v,
                         float *kb, float *vb)
{
    const struct backend_ops *be = x->be;
    const int64_t T = x->offsets[x->B], K = x->ms.key_off[x->B];
    if (x->npending == x->maxpending)
        fatal("ctx_split: more layers than the %d the exchange was set up for", x->maxpending);
    float *hs = stage_buf(x, x->npending, 2 * T * w + 2 * K * w);
    int sends = 0;
    for (int64_t b = 0; b < x->B; b++)
        sends |= x->chunk[b] < x->nchunks[b] - 1;
    if (sends && T > 0) { /* one host wait for this layer's k, v */
        be->to_host_async(hs, k, (size_t)(T * w) * sizeof(float));
        be->to_host_async(hs + T * w, v, (size_t)(T * w) * sizeof(float));
        be->comm_sync();
    }
    x->hkv = hs + 2 * T * w;
    x->kb = kb;
    x->vb = vb;
    for (int64_t b = 0; b < x->B; b++) { /* the segments' own rows, on the device */
        const int64_t s0 = x->offsets[b], L = x->offsets[b + 1] - s0;
        const int64_t own = (x->ms.key_off[b] + x->ms.pos0[b]) * w;
        be->copy(kb + own, k + s0 * w, (size_t)(L * w) * sizeof *kb);
        be->copy(vb + own, v + s0 * w, (size_t)(L * w) * sizeof *vb);
    }
}

/* After the receives: the earlier chunks' rows into the device's kb, vb
 * [keys, w], async on the comm stream (the compute stream's later work
 * waits for them: to_device_async); no host wait. */
static void dev_put_rows(struct ctx_split *x, float *kb, float *vb)
{
    const struct backend_ops *be = x->be;
    const int64_t w = x->w, K = x->ms.key_off[x->B];
    int any = 0;
    for (int64_t b = 0; b < x->B; b++) {
        const struct chunk *ch = x->chunks + x->first[b];
        for (int j = 0; j < x->chunk[b]; j++) {
            const int64_t at = (x->ms.key_off[b] + ch[j].p0) * w, n = (ch[j].p1 - ch[j].p0) * w;
            be->to_device_async(kb + at, x->hkv + at, (size_t)n * sizeof(float));
            be->to_device_async(vb + at, x->hkv + K * w + at, (size_t)n * sizeof(float));
            any = 1;
        }
    }
    if (any) { /* the buffer is read until these ran (stage_buf) */
        const int l = x->npending - 1;
        be->event_record(x->stage->up[l], BACKEND_COMM);
        x->stage->upped[l] = 1;
    }
}

/* Backward: the gradients of the earlier chunks' rows (of dkb, dvb on the
 * device) into the layer's pinned buffer the sends read: async copies on
 * the comm stream, then one host wait. */
static void dev_take_rows(struct ctx_split *x, int64_t w, const float *dkb, const float *dvb)
{
    const struct backend_ops *be = x->be;
    const int64_t T = x->offsets[x->B], K = x->ms.key_off[x->B];
    const int l = x->nfwd - 1 - x->nbwd++; /* the layers in reverse */
    x->hkv = stage_buf(x, l > 0 ? l : 0, 2 * T * w + 2 * K * w) + 2 * T * w;
    int any = 0;
    for (int64_t b = 0; b < x->B; b++) {
        const struct chunk *ch = x->chunks + x->first[b];
        for (int j = 0; j < x->chunk[b]; j++) {
            const int64_t at = (x->ms.key_off[b] + ch[j].p0) * w, n = (ch[j].p1 - ch[j].p0) * w;
            be->to_host_async(x->hkv + at, dkb + at, (size_t)n * sizeof(float));
            be->to_host_async(x->hkv + K * w + at, dvb + at, (size_t)n * sizeof(float));
            any = 1;
        }
    }
    if (any)
        be->comm_sync();
}

/* wait_dkv on the device: dk, dv = the own rows of dkb, dvb, plus the
 * received gradients (uploaded once) in chunk order: the CPU's sums. */
static void dev_add_grads(struct ctx_split *x, int64_t w, const float *dkb, const float *dvb,
                          float *dk, float *dv)
{
    const struct backend_ops *be = x->be;
    if (x->tmp_used > x->dtmp_n) {
        if (x->dtmp)
            be->free(x->dtmp);
        x->dtmp_n = x->tmp_used;
        x->dtmp = be->alloc((size_t)x->dtmp_n * sizeof(float));
    }
    if (x->tmp_used > 0 && !x->direct) /* direct: received there */
        be->to_device(x->dtmp, x->tmp, (size_t)x->tmp_used * sizeof(float));
    const float *t = x->dtmp;
    for (int64_t b = 0; b < x->B; b++) {
        const int64_t s0 = x->offsets[b], L = x->offsets[b + 1] - s0;
        const int64_t own = (x->ms.key_off[b] + x->ms.pos0[b]) * w;
        be->copy(dk + s0 * w, dkb + own, (size_t)(L * w) * sizeof *dk);
        be->copy(dv + s0 * w, dvb + own, (size_t)(L * w) * sizeof *dv);
        for (int j = x->chunk[b] + 1; j < x->nchunks[b]; j++, t += 2 * L * w) {
            be->axpy(L * w, 1.0f, t, dk + s0 * w);
            be->axpy(L * w, 1.0f, t + L * w, dv + s0 * w);
        }
    }
}

/* Forward: kb, vb [keys, w] get the segments' own rows; the earlier
 * chunks' rows are received into them and ours leave for the later chunks
 * (those sends complete in the backward: the sender does not wait for the
 * receivers here). */
static void post_kv(void *ctx, int64_t w, const float *k, const float *v, float *kb, float *vb)
{
    struct ctx_split *x = ctx;
    int ns = 0, nr = 0;
    x->w = w;
    if (x->direct) { /* device memory to MPI: the segments' own rows, then k, v final */
        for (int64_t b = 0; b < x->B; b++) {
            const int64_t s0 = x->offsets[b], L = x->offsets[b + 1] - s0;
            const int64_t own = (x->ms.key_off[b] + x->ms.pos0[b]) * w;
            x->be->copy(kb + own, k + s0 * w, (size_t)(L * w) * sizeof *kb);
            x->be->copy(vb + own, v + s0 * w, (size_t)(L * w) * sizeof *vb);
        }
        x->be->synchronize(); /* and nothing still reads kb, vb when MPI writes them */
    } else if (x->be) { /* device memory: the rows to send, and those received, in host copies */
        dev_stage_kv(x, w, k, v, kb, vb);
        k = x->hkv - 2 * x->offsets[x->B] * w; /* the layer's buffer: k, v, then received */
        v = k + x->offsets[x->B] * w;
        kb = x->hkv;
        vb = x->hkv + x->ms.key_off[x->B] * w;
    }
    for (int64_t b = 0; b < x->B; b++) {
        const int64_t s0 = x->offsets[b], L = x->offsets[b + 1] - s0;
        const int64_t own = (x->ms.key_off[b] + x->ms.pos0[b]) * w;
        if (!x->be) {
            memcpy(kb + own, k + s0 * w, (size_t)(L * w) * sizeof *kb);
            memcpy(vb + own, v + s0 * w, (size_t)(L * w) * sizeof *vb);
        }
        const int me = x->chunk[b], nk = x->nchunks[b];
        const struct chunk *ch = x->chunks + x->first[b];
        for (int j = 0; j < nk; j++) {
            if (j < me) { /* the earlier chunk j's rows, from its rank */
                const int64_t at = (x->ms.key_off[b] + ch[j].p0) * w, n = (ch[j].p1 - ch[j].p0) * w;
                x->recv[nr++] = (struct comm_msg){ch[j].owner, tag(j, me, nk, 0, 0), kb + at, n};
                x->recv[nr++] = (struct comm_msg){ch[j].owner, tag(j, me, nk, 1, 0), vb + at, n};
            } else if (j > me) { /* ours to the later chunk j */
                x->send[ns++] = (struct comm_msg){ch[j].owner, tag(me, j, nk, 0, 0),
                                                  (float *)k + s0 * w, L * w};
                x->send[ns++] = (struct comm_msg){ch[j].owner, tag(me, j, nk, 1, 0),
                                                  (float *)v + s0 * w, L * w};
            }
        }
    }
    comm_compute_end();
    expose(x, x->recv, nr, 1);
    x->nrecv = nr;
    comm_post_msgs(x->c, COMM_WORLD, COMM_F32, x->recv, nr, 0, COMM_PH_KV, &x->rq);
    if (x->npending == x->maxpending)
        fatal("ctx_split: more layers than the %d the exchange was set up for", x->maxpending);
    if (x->direct) { /* kept to close when they complete, in the backward */
        free(x->pend_msgs[x->npending]);
        x->pend_msgs[x->npending] = xmalloc((size_t)(ns ? ns : 1) * sizeof *x->send);
        memcpy(x->pend_msgs[x->npending], x->send, (size_t)ns * sizeof *x->send);
        x->pend_n[x->npending] = ns;
        expose(x, x->send, ns, 1);
    }
    comm_post_msgs(x->c, COMM_WORLD, COMM_F32, x->send, ns, 1, COMM_PH_KV,
                   &x->pending[x->npending++]);
    comm_compute_begin();
}

/* The phase so far is `ph`; from now on kv_wait. */
static void wait_begin(struct ctx_split *x, enum phase ph)
{
    comm_compute_end();
    if (x->st)
        steptime_phase(x->st, ph);
}

static void wait_end(struct ctx_split *x)
{
    if (x->st)
        steptime_phase(x->st, PH_KV);
    comm_compute_begin();
}

static void wait_kv(void *ctx)
{
    struct ctx_split *x = ctx;
    wait_begin(x, PH_FORWARD);
    comm_wait_msgs(&x->rq);
    wait_end(x);
    expose(x, x->recv, x->nrecv, 0);
    if (x->be && !x->direct)
        dev_put_rows(x, x->kb, x->vb);
}

/* The forward's sends, completed (every rank is past its forward). */
static void finish_forward(struct ctx_split *x)
{
    for (int i = 0; i < x->npending; i++) {
        comm_wait_msgs(&x->pending[i]);
        if (x->direct)
            expose(x, x->pend_msgs[i], x->pend_n[i], 0);
    }
    x->npending = 0;
}

/* Backward: the gradients of the earlier chunks' rows (dkb, dvb) go back
 * to their ranks; what the later chunks computed for ours is received. */
static void post_dkv(void *ctx, int64_t w, const float *dkb, const float *dvb)
{
    struct ctx_split *x = ctx;
    int64_t need = 0;
    for (int64_t b = 0; b < x->B; b++)
        need += 2 * (x->nchunks[b] - 1 - x->chunk[b]) * (x->offsets[b + 1] - x->offsets[b]) * w;
    if (need > x->tmp_n) {
        free(x->tmp);
        x->tmp_n = need;
        x->tmp = xmalloc((size_t)need * sizeof *x->tmp);
    }
    int ns = 0, nr = 0;
    float *t = x->tmp;
    x->tmp_used = need;
    if (x->npending > 0) { /* the first layer back: the staged layers count down from here */
        x->nfwd = x->npending;
        x->nbwd = 0;
    }
    if (x->direct) { /* device memory to MPI: received into the device's tmp */
        if (need > x->dtmp_n) {
            if (x->dtmp)
                x->be->free(x->dtmp);
            x->dtmp_n = need;
            x->dtmp = x->be->alloc((size_t)need * sizeof(float));
        }
        t = x->dtmp;
        x->be->synchronize(); /* dkb, dvb final */
    } else if (x->be) { /* the gradients to send, in a host copy */
        dev_take_rows(x, w, dkb, dvb);
        dkb = x->hkv;
        dvb = x->hkv + x->ms.key_off[x->B] * w;
    }
    for (int64_t b = 0; b < x->B; b++) {
        const int64_t L = x->offsets[b + 1] - x->offsets[b];
        const int me = x->chunk[b], nk = x->nchunks[b];
        const struct chunk *ch = x->chunks + x->first[b];
        for (int j = 0; j < nk; j++) {
            if (j < me) { /* the gradient of chunk j's rows, back to its rank */
                const int64_t at = (x->ms.key_off[b] + ch[j].p0) * w, n = (ch[j].p1 - ch[j].p0) * w;
                x->send[ns++] = (struct comm_msg){ch[j].owner, tag(j, me, nk, 0, 1),
                                                  (float *)dkb + at, n};
                x->send[ns++] = (struct comm_msg){ch[j].owner, tag(j, me, nk, 1, 1),
                                                  (float *)dvb + at, n};
            } else if (j > me) { /* what chunk j computed for ours */
                x->recv[nr++] = (struct comm_msg){ch[j].owner, tag(me, j, nk, 0, 1), t, L * w};
                x->recv[nr++] = (struct comm_msg){ch[j].owner, tag(me, j, nk, 1, 1), t + L * w,
                                                  L * w};
                t += 2 * L * w;
            }
        }
    }
    wait_begin(x, PH_BACKWARD);
    finish_forward(x);
    expose(x, x->recv, nr, 1);
    expose(x, x->send, ns, 1);
    x->nrecv = nr;
    comm_post_msgs(x->c, COMM_WORLD, COMM_F32, x->recv, nr, 0, COMM_PH_KV, &x->rq);
    comm_post_msgs(x->c, COMM_WORLD, COMM_F32, x->send, ns, 1, COMM_PH_KV, &x->sq);
    x->nsend = ns;
    wait_end(x);
}

/* dk, dv [T, w] <- the own rows of dkb, dvb plus the received gradients,
 * added in chunk order (the same sums on every run). The sends complete
 * too: the model reuses dkb, dvb at the next layer. */
static void wait_dkv(void *ctx, int64_t w, const float *dkb, const float *dvb, float *dk,
                     float *dv)
{
    struct ctx_split *x = ctx;
    wait_begin(x, PH_BACKWARD);
    comm_wait_msgs(&x->rq);
    comm_wait_msgs(&x->sq);
    wait_end(x);
    expose(x, x->recv, x->nrecv, 0);
    expose(x, x->send, x->nsend, 0);
    x->nrecv = x->nsend = 0;
    if (x->be) {
        dev_add_grads(x, w, dkb, dvb, dk, dv);
        return;
    }
    const float *t = x->tmp;
    for (int64_t b = 0; b < x->B; b++) {
        const int64_t s0 = x->offsets[b], L = x->offsets[b + 1] - s0;
        const int64_t own = (x->ms.key_off[b] + x->ms.pos0[b]) * w;
        memcpy(dk + s0 * w, dkb + own, (size_t)(L * w) * sizeof *dk);
        memcpy(dv + s0 * w, dvb + own, (size_t)(L * w) * sizeof *dv);
        for (int j = x->chunk[b] + 1; j < x->nchunks[b]; j++, t += 2 * L * w)
            for (int64_t i = 0; i < L * w; i++) {
                dk[s0 * w + i] += t[i];
                dv[s0 * w + i] += t[L * w + i];
            }
    }
}

const struct model_split *ctx_split_model(const struct ctx_split *x) { return &x->ms; }

void ctx_split_free(struct ctx_split *x)
{
    if (!x)
        return;
    finish_forward(x); /* a forward without backward: its sends still complete */
    comm_wait_msgs(&x->rq);
    comm_wait_msgs(&x->sq);
    expose(x, x->recv, x->nrecv, 0);
    expose(x, x->send, x->nsend, 0);
    for (int i = 0; x->pend_msgs && i < x->maxpending; i++)
        free(x->pend_msgs[i]);
    free(x->pend_msgs);
    free(x->pend_n);
    free(x->pending);
    free(x->chunk);
    free(x->nchunks);
    free(x->first);
    free(x->chunks);
    free(x->send);
    free(x->recv);
    free(x->tmp);
    if (x->dtmp)
        x->be->free(x->dtmp);
    free(x);
}
