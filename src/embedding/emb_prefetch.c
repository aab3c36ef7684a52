/* emb_prefetch: parallel.overlap = prefetch (emb_exchange.h, doc/overlap.md).
 *
 * The rows of the next lookup y are served while the current lookup x is
 * still in its backward, except those x's sparse update will change:
 *
 *   plan   owner: the ids x's update touches are the ids it served to x
 *          (every served row gets a gradient and is updated), over the
 *          replicas of its shard too (their served ids, gathered over
 *          emb_replica); each id y asks it for is marked colliding or not
 *          (a bitmap over the shard's slots, cleared after use); the marks
 *          go back to the requesters (EMB_X_MASK, one byte per requested
 *          row, along the ids' layout).
 *   post   the marks arrived: every rank knows, per peer, how many rows
 *          come now and how many late; owners gather the non-colliding
 *          rows (compacted per requester) and post them (EMB_X_PF).
 *   late   after x's update (emb_grad_finish): owners gather the colliding
 *          rows and post them (EMB_X_LATE): a push, no request. A cached
 *          table (emb_cache.h) marks the rows its cache fetched for y too:
 *          their copies run until here (emb_cache_land).
 *   wait   (emb_output_wait of y) both parts in a compact buffer [clean of
 *          every owner, then late of every owner], decoded, then gathered
 *          into y's rows in emb_output_post's layout through a permutation
 *          (the requester's row u -> its place in the compact buffer).
 *
 * So every row is read by its owner after the last update that changes it:
 * the rows are bitwise those of emb_output_post after x's update. Host
 * arrays plan; on a device table the lists go to the table's memory and
 * the marks come back from it (small: ids and bytes, never rows). */
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/clock.h"
#include "embedding/emb_cache.h"
#include "embedding/emb_exchange_priv.h"
#include "embedding/emb_subspace.h"
#include "embedding/emb_table.h"

struct emb_pf {
    /* host arrays, grown as needed */
    uint8_t *mask;        /* owner: [nserve] 1 = colliding, in serve order */
    int64_t *ids;         /* owner: [nserve] clean ids (by requester), then late ones */
    int64_t *perm;        /* requester: [nuniq] row u -> its place in the compact buffer */
    const int64_t *ids_t; /* ids in the table's memory */
    const int64_t *want;  /* owner: y's served ids on the host (plan to post) */
    void *want_own;       /* ... the copy behind them on a device table, else NULL */
    int64_t *marked;      /* owner: the ids marked in the bitmap (to clear) */
    size_t cap_mask, cap_ids, cap_uniq, cap_marked;
    /* the layouts of the clean rows ([0]) and the late ones ([1]): what the
     * owner sends, what the requester receives (one allocation) */
    struct emb_side own[2], req[2];
    int G;
    int64_t clean_s, clean_r; /* clean rows served / received (late: the rest) */
    int posted, late;     /* the clean rows, the late ones posted */
    int held;             /* the clean rows gathered, posted with the late ones */
    /* the table's memory */
    struct emb_buf b_mask, b_rmask, b_ids, b_perm, b_served, b_recv, b_served_w, b_recv_w;
};

static size_t at_least1(int64_t n) { return (size_t)(n > 0 ? n : 1); }

void emb_prefetch_release(const struct backend_ops *be, struct emb_pf *pf)
{
    if (!pf)
        return;
    struct emb_buf *b[] = {&pf->b_mask,   &pf->b_rmask,  &pf->b_ids,        &pf->b_perm,
                           &pf->b_served, &pf->b_recv,   &pf->b_served_w,   &pf->b_recv_w};
    for (size_t i = 0; i < sizeof b / sizeof *b; i++)
        emb_buf_free(be, b[i]);
    free(pf->mask);
    free(pf->ids);
    free(pf->perm);
    free(pf->marked);
    free(pf->want_own);
    free(pf->own[0].counts);
    free(pf);
}

static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap && p)
        return p;
    free(p);
    *cap = n + n / 4 + 16;
    return xmalloc(*cap * size);
}

static struct emb_pf *pf_of(struct emb_exchange *x)
{
    if (!x->pf) {
        x->pf = xcalloc(1, sizeof *x->pf);
        x->pf->G = x->G;
        int64_t *a = xmalloc((size_t)x->G * 8 * sizeof(int64_t));
        struct emb_side *s[] = {&x->pf->own[0], &x->pf->own[1], &x->pf->req[0], &x->pf->req[1]};
        for (int i = 0; i < 4; i++)
            *s[i] = (struct emb_side){a + 2 * i * x->G, a + (2 * i + 1) * x->G};
    }
    struct emb_pf *pf = x->pf;
    pf->mask = grow(pf->mask, &pf->cap_mask, at_least1(x->nserve), 1);
    pf->ids = grow(pf->ids, &pf->cap_ids, at_least1(x->nserve), sizeof(int64_t));
    pf->perm = grow(pf->perm, &pf->cap_uniq, at_least1(x->nuniq), sizeof(int64_t));
    pf->posted = pf->late = 0;
    free(pf->want_own); /* a plan whose post never came (the run drained) */
    pf->want_own = NULL;
    return pf;
}

/* Host arrays as the table's memory: themselves on a host table, else
 * copied into b (kept). */
static void *in_table(const struct backend_ops *be, struct emb_buf *b, void *host, size_t bytes)
{
    if (backend_is_host(be))
        return host;
    void *d = emb_buf_get(be, b, at_least1((int64_t)bytes));
    be->to_device(d, host, bytes);
    return d;
}

static int bit(const uint8_t *m, int64_t s) { return m[s >> 3] >> (s & 7) & 1; }

/* Mark ids[n] of this shard (slot id / G) in the bitmap; the newly marked
 * ones are appended to pf->marked (count *nm; room for n more), to be
 * cleared. */
static void mark(struct emb_table *t, struct emb_pf *pf, const int64_t *ids, int64_t n,
                 int64_t *nm)
{
    uint8_t *m = emb_xstate(t)->touched;
    for (int64_t i = 0; i < n; i++) {
        const int64_t s = ids[i] / t->G;
        if (!bit(m, s)) {
            m[s >> 3] |= (uint8_t)(1u << (s & 7));
            pf->marked[(*nm)++] = ids[i];
        }
    }
}

/* The ids x's update touches on this shard: x's served ids, and with
 * replicas those of the other replicas (all-gathered, collective over
 * emb_replica): marked in the table's bitmap; returns how many. */
static int64_t mark_updated(struct emb_table *t, struct comm *c, struct emb_pf *pf,
                            const struct emb_exchange *x)
{
    struct emb_xstate *xs = emb_xstate(t);
    if (!xs->touched) /* the shard's slots (a cached pool's: the cache's, maybe more) */
        xs->touched = xcalloc((size_t)(emb_table_vslots(t) / 8 + 1), 1);
    void *own;
    const int64_t *served = backend_download(t->be, x->serve, at_least1(x->nserve) * 8, &own);
    pf->marked = grow(pf->marked, &pf->cap_marked, at_least1(x->nserve), sizeof(int64_t));
    int64_t nm = 0;
    mark(t, pf, served, x->nserve, &nm);
    free(own);
    if (t->dyn) { /* the shared unadmitted row may be updated by other shards' gradients */
        const int64_t shared = t->shard;
        mark(t, pf, &shared, 1, &nm);
    }
    const int R = c->g[COMM_EMB_REPLICA].size;
    if (R > 1) { /* the other replicas update these rows too (emb_grad_finish) */
        int64_t *counts = xmalloc((size_t)R * sizeof *counts), total = 0;
        comm_allgather_i64(c, COMM_EMB_REPLICA, nm, counts);
        for (int r = 0; r < R; r++)
            total += counts[r];
        int64_t *all = xmalloc(at_least1(total) * sizeof *all);
        int64_t *raw = NULL;
        if (t->dyn) { /* the replicas' slots differ: ids travel (emb_dyn.h) */
            raw = xmalloc(at_least1(nm) * sizeof *raw);
            memcpy(raw, pf->marked, (size_t)nm * sizeof *raw);
            emb_dyn_unmap(t, raw, nm);
        }
        comm_allgatherv(c, COMM_EMB_REPLICA, COMM_I64, raw ? raw : pf->marked, nm, all, counts,
                        COMM_PH_REPLICA);
        free(raw);
        if (t->dyn) { /* to this replica's slots; rows it does not hold are in no lookup here */
            int64_t m = 0;
            emb_dyn_find(t, all, total);
            for (int64_t i = 0; i < total; i++)
                if (all[i] >= 0)
                    all[m++] = all[i];
            total = m;
        }
        if ((size_t)(nm + total) > pf->cap_marked) { /* keeping the nm marked so far */
            pf->cap_marked = (size_t)(nm + total);
            pf->marked = xrealloc(pf->marked, pf->cap_marked * sizeof(int64_t));
        }
        mark(t, pf, all, total, &nm);
        free(all);
        free(counts);
    }
    return nm;
}

void emb_prefetch_plan(struct emb_table *t, struct comm *c, struct emb_exchange *y,
                       const struct emb_exchange *x)
{
    const int G = t->G;
    y->pf_on = 1; /* (before the serve: a cached table's fills are ahead of the lookup) */
    emb_input_serve(c, y); /* y's served ids are here */
    struct emb_pf *pf = pf_of(y);
    const int64_t nm = mark_updated(t, c, pf, x);
    /* y's served ids on the host, kept for emb_prefetch_post (a cached
     * table's from its map: the device's wait for the fills later) */
    if (t->cache) {
        pf->want_own = xmalloc(at_least1(y->nserve) * sizeof(int64_t));
        if (y->nserve)
            memcpy(pf->want_own, emb_cache_served(t), (size_t)y->nserve * sizeof(int64_t));
        pf->want = pf->want_own;
    } else
        pf->want = backend_download(t->be, y->serve, at_least1(y->nserve) * 8, &pf->want_own);
    uint8_t *m = emb_xstate(t)->touched;
    for (int64_t i = 0; i < y->nserve; i++) /* a cached table's fetched rows go late too */
        pf->mask[i] = (uint8_t)(bit(m, pf->want[i] / G) ||
                                (t->cache && emb_cache_fetched(t, pf->want[i])));
    for (int64_t i = 0; i < nm; i++) { /* cleared for the next use */
        const int64_t s = pf->marked[i] / G;
        m[s >> 3] &= (uint8_t)~(1u << (s & 7));
    }
    /* the marks go back the way the ids came (owner -> requester, one
     * byte per requested row) */
    const uint8_t *mk = in_table(t->be, &pf->b_mask, pf->mask, (size_t)y->nserve);
    uint8_t *rm = emb_buf_get(t->be, &pf->b_rmask, at_least1(y->nuniq));
    emb_xfer_post(t, c, &y->xf[EMB_X_MASK], EMB_X_MASK, COMM_BYTE, 1, mk, y->rcounts,
                  y->rdispls, rm, y->scounts, y->sdispls, COMM_PH_IDS);
}

/* Per peer p: of block [d[p], d[p] + n[p]) of mask, the clean rows (count
 * cc[p], displacement cd[p]) and the late ones (lc, ld: after every clean
 * row); returns the clean rows' total. */
static int64_t split_counts(int G, const uint8_t *mask, const int64_t *n, const int64_t *d,
                            int64_t *cc, int64_t *cd, int64_t *lc, int64_t *ld)
{
    int64_t clean = 0, late = 0;
    for (int p = 0; p < G; p++) {
        int64_t k = 0;
        for (int64_t i = 0; i < n[p]; i++)
            k += mask[d[p] + i];
        cc[p] = n[p] - k;
        lc[p] = k;
        cd[p] = clean;
        ld[p] = late;
        clean += cc[p];
        late += k;
    }
    for (int p = 0; p < G; p++)
        ld[p] += clean;
    return clean;
}

/* The owner's rows of ids[first, first + n) (host ids; dev: the same in
 * the table's memory) into served, encoded for the wire when byte_wire. */
static void gather(struct emb_table *t, struct emb_exchange *y, const int64_t *host_ids, const int64_t *dev_ids, int64_t first, int64_t n,
                   float *served, uint8_t *served_w, int64_t rb)
{
    if (n == 0)
        return;
    emb_table_ready(t, host_ids + first, n); /* host tables: lazily initialised */
    t->be->emb_gather_shard(n, t->width, t->w, dev_ids + first, t->G,
                            served + first * t->width);
    if (served_w)
        emb_wire_encode(y, y->rcodec, n, t->width, served + first * t->width,
                        served_w + first * rb, 0);
}

/* Gather the rows of one part (0: clean, 1: late) into served. */
static void gather_part(struct emb_table *t, struct comm *c, struct emb_exchange *y, int late)
{
    struct emb_pf *pf = y->pf;
    const int G = t->G;
    const int64_t rb = emb_codec_row_bytes(y->rcodec, t->width);
    const int64_t *oc = pf->own[late].counts, *od = pf->own[late].displs;
    uint8_t *served_w = y->rcodec != EMB_CODEC_FP32 ? pf->b_served_w.p : NULL;
    for (int p = 0; p < G; p++) {
        gather(t, y, pf->ids, pf->ids_t, od[p], oc[p], pf->b_served.p, served_w, rb);
        if (y->counted && p != t->shard) {
            t->wire.rows += oc[p] * rb;
            if (comm_peer_remote(c, COMM_EMB, p))
                t->wire.rows_xnode += oc[p] * rb;
        }
    }
}

/* Post the gathered rows of one part owner -> requester. */
static void send_part(struct emb_table *t, struct comm *c, struct emb_exchange *y, int late)
{
    struct emb_pf *pf = y->pf;
    const int w = t->width;
    const int byte_wire = y->rcodec != EMB_CODEC_FP32;
    const int64_t rb = emb_codec_row_bytes(y->rcodec, w);
    const int kind = late ? EMB_X_LATE : EMB_X_PF;
    emb_xfer_post(t, c, &y->xf[kind], kind, byte_wire ? COMM_BYTE : COMM_F32, byte_wire ? rb : w,
                  byte_wire ? (const void *)pf->b_served_w.p : (const void *)pf->b_served.p,
                  pf->own[late].counts, pf->own[late].displs,
                  byte_wire ? pf->b_recv_w.p : pf->b_recv.p, pf->req[late].counts,
                  pf->req[late].displs, COMM_PH_ROWS);
}

void emb_prefetch_post(struct emb_table *t, struct comm *c, struct emb_exchange *y, int hold)
{
    struct emb_pf *pf = y->pf;
    const struct backend_ops *be = t->be;
    const int G = t->G, w = t->width;
    if (!y->pf_on || pf->posted)
        fatal("emb_prefetch_post: table '%s': not planned, or posted twice", t->conf.name);
    emb_xfer_wait(&y->xf[EMB_X_MASK]);
    /* owner: the clean ids per requester, then the late ones */
    pf->clean_s = split_counts(G, pf->mask, y->rcounts, y->rdispls, pf->own[0].counts,
                               pf->own[0].displs, pf->own[1].counts, pf->own[1].displs);
    for (int p = 0; p < G; p++) {
        int64_t ci = pf->own[0].displs[p], li = pf->own[1].displs[p];
        for (int64_t i = y->rdispls[p]; i < y->rdispls[p] + y->rcounts[p]; i++)
            pf->ids[pf->mask[i] ? li++ : ci++] = pf->want[i];
    }
    free(pf->want_own);
    pf->want_own = NULL;
    pf->ids_t = in_table(be, &pf->b_ids, pf->ids, at_least1(y->nserve) * sizeof(int64_t));
    /* requester: the marks of its rows, per owner; row u's place */
    void *own;
    const uint8_t *rm = backend_download(be, pf->b_rmask.p, at_least1(y->nuniq), &own);
    pf->clean_r = split_counts(G, rm, y->scounts, y->sdispls, pf->req[0].counts,
                               pf->req[0].displs, pf->req[1].counts, pf->req[1].displs);
    for (int p = 0; p < G; p++) {
        int64_t ci = pf->req[0].displs[p], li = pf->req[1].displs[p];
        for (int64_t u = y->sdispls[p]; u < y->sdispls[p] + y->scounts[p]; u++)
            pf->perm[u] = rm[u] ? li++ : ci++;
    }
    free(own);
    if (y->counted) { /* the requester's unique rows, now and late */
        t->wire.pf_rows += pf->clean_r;
        t->wire.pf_late += y->nuniq - pf->clean_r;
    }
    /* the buffers: served [nserve] (clean, then late), received [nuniq] */
    const int64_t rb = emb_codec_row_bytes(y->rcodec, w);
    emb_buf_get(be, &pf->b_served, at_least1(y->nserve) * w * sizeof(float));
    emb_buf_get(be, &pf->b_recv, at_least1(y->nuniq) * w * sizeof(float));
    if (y->rcodec != EMB_CODEC_FP32) {
        emb_buf_get(be, &pf->b_served_w, at_least1(y->nserve) * (size_t)rb);
        emb_buf_get(be, &pf->b_recv_w, at_least1(y->nuniq) * (size_t)rb);
    }
    /* y's rows, where emb_output_post puts them (callers bind them now) */
    y->rows = emb_buf_get(be, &y->b_rows, at_least1(y->nuniq) * t->conf.dim * sizeof(float));
    if (t->sub)
        y->cw = emb_buf_get(be, &y->b_cw, at_least1(y->nuniq) * w * sizeof(float));
    emb_count_lookup(t, y);
    gather_part(t, c, y, 0);
    if (!hold)
        send_part(t, c, y, 0);
    pf->held = hold;
    pf->posted = 1;
}

void emb_prefetch_late(struct emb_table *t, struct comm *c, struct emb_exchange *y)
{
    struct emb_pf *pf = y->pf;
    if (!y->pf_on || !pf->posted || pf->late)
        fatal("emb_prefetch_late: table '%s': the clean rows not posted, or late twice",
              t->conf.name);
    if (pf->held) /* the clean rows leave behind x's gradients */
        send_part(t, c, y, 0);
    pf->held = 0;
    if (t->cache) /* the fills into their slots (their copies ran beside the backward) */
        emb_cache_land(t);
    gather_part(t, c, y, 1);
    send_part(t, c, y, 1);
    pf->late = 1;
}

void emb_prefetch_wait(struct emb_exchange *y)
{
    struct emb_table *t = y->tab;
    const struct backend_ops *be = t->be;
    struct emb_pf *pf = y->pf;
    const int w = t->width;
    if (!pf->late)
        fatal("emb_output_wait: table '%s': the late rows of a prefetch were not posted",
              t->conf.name);
    emb_xfer_wait(&y->xf[EMB_X_PF]);
    emb_xfer_wait(&y->xf[EMB_X_LATE]);
    float *compact = pf->b_recv.p;
    if (y->rcodec != EMB_CODEC_FP32 && y->nuniq)
        be->emb_decode((int)y->rcodec, y->nuniq, w, pf->b_recv_w.p, compact);
    float *dst = t->sub ? y->cw : y->rows; /* a subspace table: c, rebuilt below */
    const int64_t *perm = in_table(be, &pf->b_perm, pf->perm, at_least1(y->nuniq) * 8);
    if (y->nuniq)
        be->gather_rows(y->nuniq, w, compact, perm, dst);
    if (t->sub) /* E = F(i) + U c[i]: host tables */
        emb_subspace_expand(t->sub, &t->conf, y->nuniq, y->uniq, y->cw, y->rows);
    y->rmade[0] = y->rmade[1] = 1;
}
