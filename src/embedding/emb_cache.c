/* emb_cache: the device cache of hot rows over a host shard; see
 * emb_cache.h. */
#include "embedding/emb_cache.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"
#include "embedding/emb_cache_dyn.h"
#include "embedding/emb_cache_lfu.h"
#include "embedding/emb_exchange_priv.h"

struct emb_cache {
    int64_t C, k0;          /* slots k0 .. k0 + C - 1 of the device arrays */
    int pin;                /* a dynamic table: slot 0 holds its pool's slot 0 (emb_cache_dyn.h) */
    int64_t sf;             /* optimizer floats per row */
    /* the host shard, as a host table's (emb_table.c) */
    float *hw, *hstate;     /* [local_rows, width], [local_rows, sf] */
    int64_t *hsteps;        /* [local_rows] adam, else NULL */
    uint8_t *hready;        /* [local_rows / 8 + 1] row initialised */
    int64_t *where;         /* [local_rows] slot of local index k, or -1 */
    /* per slot [k0 + C] */
    int64_t *holds;         /* local index held, -1 free */
    int64_t *last;          /* tick of the last training lookup that used it */
    int64_t *got;           /* tick of the training lookup that fetched its row */
    int64_t *prev, *next;   /* the eviction order: head = least recent (ties: smaller id) */
    uint8_t *dirty;         /* updated since fetched or written back */
    int64_t head, tail;
    /* embedding.cache_policy = lfu: the candidates in a heap by (uses
     * since fetched, halved every LFU_HALVE lookups; id), the rows of a
     * lookup out of it until the lookup after next (lt[tick % 2]) */
    int lfu;
    int64_t *freq, *lt[2], nlt[2];
    struct lfu_heap q;
    int64_t *freel, nfree;  /* free slots, popped from the end (ascending order) */
    int64_t tick;           /* training lookups mapped */
    struct emb_cache_stats st, mark[2]; /* since the start; at the last takes */
    /* host staging (pinned: host_alloc) and the backend's buffers, kept */
    struct emb_buf d_idx, d_idx2, d_w, d_s, d_k, d_rt;
    float *sw, *ss;
    int64_t *sk, *ix, *iy, *sv, cap, svcap;
    /* the asynchronous copies up from the staging (rows_up, the served
     * ids) are on the copy stream, marked by up (the compute stream waits
     * for it before the scatters): the staging is written again only once
     * they have run (stage_idle); they wait for staged, the compute
     * stream's last read of the device staging (d_idx2, d_w, d_s, d_k) */
    struct backend_event *up, *staged;
    int up_pending;
    int up_fill;            /* up marks a training lookup's fills (stage_idle's wait counted) */
    /* the compute stream's wait for the last training fill: timing events
     * recorded before and after it (read at the next fill, or the take) */
    struct backend_event *stall0, *stall1;
    int stall_pending;
    /* a prefetch's fill (a lookup mapped ahead, parallel.overlap =
     * prefetch): its copies up enqueued, the compute stream's wait for
     * them and the scatters into the slots deferred (land_n rows) until
     * the rows are first read (emb_cache_land), so that the copies run
     * beside the compute work enqueued in between; land_sv: the compute
     * stream's wait for the served ids' upload (svup) likewise */
    int64_t land_n;
    int land_sv;
    struct backend_event *svup; /* the served ids' upload from sv */
    int sv_pending;
    /* the write-backs of evicted rows: gathered on the compute stream
     * (marked by gathered), copied down on the copy stream after it into
     * pinned buffers (wb: their local
     * indices wbk[nwb]), into the host shard once wb has run
     * (wb_apply: before the host shard is read, at the latest at the next
     * lookup) */
    struct emb_buf d_bi, d_bw, d_bs, d_bk;
    float *bw, *bs;
    int64_t *bk, *bi, *wbk, nwb, bcap;
    int wb_down;            /* gathered, not yet copied down */
    struct backend_event *wb, *gathered;
};

/* --- the host shard -------------------------------------------------------------- */

/* Row k (local index) of the host shard, initialised on first use. */
static float *host_row(struct emb_table *t, int64_t k)
{
    struct emb_cache *ca = t->cache;
    float *w = ca->hw + k * t->width;
    if (!ca->pin && !(ca->hready[k >> 3] & (1u << (k & 7)))) { /* a pool's rows: inserted */
        const int64_t id = k * t->G + t->shard;
        if (id >= 1 && id <= t->conf.rows)
            emb_init_row_n(&t->conf, id, w, t->width);
        ca->hready[k >> 3] |= (uint8_t)(1u << (k & 7));
    }
    return w;
}

/* The staging may be written: the copies up from it have run (an event
 * query; the host waits only when they have not, which a step's work in
 * between makes rare). */
static void stage_idle(const struct backend_ops *be, struct emb_cache *ca)
{
    if (!ca->up_pending)
        return;
    if (!be->event_query(ca->up)) {
        const double t0 = clock_seconds();
        be->event_sync(ca->up);
        if (ca->up_fill) /* the host held back by a training lookup's fills */
            ca->st.fill_host_us += (int64_t)(1e6 * (clock_seconds() - t0));
    }
    ca->up_pending = 0;
    ca->up_fill = 0;
}

/* The compute stream's wait for the last training fill into the figures
 * (block: the host waits for its events when they have not completed;
 * else they are read later). */
static void stall_take(const struct backend_ops *be, struct emb_cache *ca, int block)
{
    if (!ca->stall_pending)
        return;
    if (!be->event_query(ca->stall1)) {
        if (!block)
            return;
        be->event_sync(ca->stall1);
    }
    be->event_query(ca->stall0); /* (completed before stall1) */
    ca->st.fill_stall_us += (int64_t)(1e3 * be->event_ms(ca->stall0, ca->stall1));
    ca->stall_pending = 0;
}

/* pinned host memory of bytes for *p (its contents not kept) */
static void *pinned_grow(const struct backend_ops *be, void *p, size_t bytes)
{
    if (p)
        be->host_free(p);
    return be->host_alloc(bytes ? bytes : 1);
}

static void stage_grow(const struct backend_ops *be, struct emb_cache *ca, int64_t n, int width)
{
    stage_idle(be, ca);
    if (n <= ca->cap)
        return;
    ca->cap = n > 2 * ca->cap ? n : 2 * ca->cap;
    const size_t c = (size_t)ca->cap;
    ca->sw = pinned_grow(be, ca->sw, c * (size_t)width * sizeof *ca->sw);
    ca->ss = ca->sf ? pinned_grow(be, ca->ss, c * (size_t)ca->sf * sizeof *ca->ss) : NULL;
    ca->sk = pinned_grow(be, ca->sk, c * sizeof *ca->sk);
    ca->ix = pinned_grow(be, ca->ix, c * sizeof *ca->ix);
    ca->iy = pinned_grow(be, ca->iy, c * sizeof *ca->iy);
}

/* The pending write-backs into the host shard (the host waits only when
 * their copies have not run yet). */
static void wb_apply(struct emb_table *t)
{
    struct emb_cache *ca = t->cache;
    if (!ca->nwb)
        return;
    if (!t->be->event_query(ca->wb))
        t->be->event_sync(ca->wb);
    for (int64_t i = 0; i < ca->nwb; i++) {
        const int64_t k = ca->wbk[i];
        memcpy(ca->hw + k * t->width, ca->bw + i * t->width, (size_t)t->width * sizeof(float));
        if (ca->sf)
            memcpy(ca->hstate + k * ca->sf, ca->bs + i * ca->sf, (size_t)ca->sf * sizeof(float));
        if (ca->hsteps)
            ca->hsteps[k] = ca->bk[i];
    }
    ca->nwb = 0;
}

/* Write back the slots ix[n] (dirty, evicted) holding the local indices
 * iy[n]: their rows gathered on the compute stream before anything
 * enqueued later (the fills that overwrite them), copied down on the copy
 * stream by wb_down once gathered, enqueued after the lookup's copies up
 * (which do not wait for the gathers); the host does not wait
 * (wb_apply). */
static void wb_start(struct emb_table *t, int64_t n)
{
    struct emb_cache *ca = t->cache;
    const struct backend_ops *be = t->be;
    wb_apply(t);
    if (n > ca->bcap) {
        ca->bcap = n > 2 * ca->bcap ? n : 2 * ca->bcap;
        const size_t c = (size_t)ca->bcap;
        ca->bw = pinned_grow(be, ca->bw, c * (size_t)t->width * sizeof *ca->bw);
        ca->bs = ca->sf ? pinned_grow(be, ca->bs, c * (size_t)ca->sf * sizeof *ca->bs) : NULL;
        ca->bk = pinned_grow(be, ca->bk, c * sizeof *ca->bk);
        ca->bi = pinned_grow(be, ca->bi, c * sizeof *ca->bi);
        ca->wbk = xrealloc(ca->wbk, c * sizeof *ca->wbk);
    }
    memcpy(ca->bi, ca->ix, (size_t)n * sizeof *ca->bi);
    memcpy(ca->wbk, ca->iy, (size_t)n * sizeof *ca->wbk);
    int64_t *di = emb_buf_get(be, &ca->d_bi, (size_t)n * sizeof(int64_t));
    float *dw = emb_buf_get(be, &ca->d_bw, (size_t)n * t->width * sizeof(float));
    float *ds = ca->sf ? emb_buf_get(be, &ca->d_bs, (size_t)n * ca->sf * sizeof(float)) : NULL;
    float *dk = t->steps ? emb_buf_get(be, &ca->d_bk, (size_t)n * sizeof(int64_t)) : NULL;
    /* (the copy stream follows the last write-back's gathers already: d_bi
     * is free) */
    be->copy_up(di, ca->bi, (size_t)n * sizeof(int64_t));
    be->event_record(ca->wb, BACKEND_COPY);
    be->stream_wait(BACKEND_COMPUTE, ca->wb);
    be->index_rows(n, t->width, t->w, di, dw, NULL, 0);
    if (ds)
        be->index_rows(n, (int)ca->sf, t->state, di, ds, NULL, 0);
    if (dk) /* int64 as two floats' bits */
        be->index_rows(n, 2, (const float *)t->steps, di, dk, NULL, 0);
    be->event_record(ca->gathered, BACKEND_COMPUTE);
    ca->nwb = n;
    ca->wb_down = 1;
}

/* The gathered write-backs down into the pinned buffers, on the copy
 * stream after the gathers (marked by wb). */
static void wb_down(struct emb_table *t)
{
    struct emb_cache *ca = t->cache;
    const struct backend_ops *be = t->be;
    const int64_t n = ca->nwb;
    ca->wb_down = 0;
    be->stream_wait(BACKEND_COPY, ca->gathered);
    be->copy_down(ca->bw, ca->d_bw.p, (size_t)n * t->width * sizeof(float));
    if (ca->sf)
        be->copy_down(ca->bs, ca->d_bs.p, (size_t)n * ca->sf * sizeof(float));
    if (t->steps)
        be->copy_down(ca->bk, ca->d_bk.p, (size_t)n * sizeof(int64_t));
    be->event_record(ca->wb, BACKEND_COPY);
}

static size_t row_bytes(const struct emb_table *t)
{
    return (size_t)(t->width + t->cache->sf) * sizeof(float) + (t->steps ? sizeof(int64_t) : 0);
}

/* --- device copies ----------------------------------------------------------------- */

/* Device rows of the slots ix[n] (w, state, steps) to the host staging
 * (sw, ss, sk), rows in order. */
static void slots_down(struct emb_table *t, int64_t n)
{
    struct emb_cache *ca = t->cache;
    const struct backend_ops *be = t->be;
    if (n == 0)
        return;
    int64_t *di = emb_buf_get(be, &ca->d_idx, (size_t)n * sizeof(int64_t));
    be->to_device(di, ca->ix, (size_t)n * sizeof(int64_t));
    float *dw = emb_buf_get(be, &ca->d_w, (size_t)n * t->width * sizeof(float));
    be->index_rows(n, t->width, t->w, di, dw, NULL, 0);
    be->to_host(ca->sw, dw, (size_t)n * t->width * sizeof(float));
    if (ca->sf) {
        float *ds = emb_buf_get(be, &ca->d_s, (size_t)n * ca->sf * sizeof(float));
        be->index_rows(n, (int)ca->sf, t->state, di, ds, NULL, 0);
        be->to_host(ca->ss, ds, (size_t)n * ca->sf * sizeof(float));
    }
    if (t->steps) { /* int64 as two floats' bits: copied, never computed on */
        float *dk = emb_buf_get(be, &ca->d_k, (size_t)n * sizeof(int64_t));
        be->index_rows(n, 2, (const float *)t->steps, di, dk, NULL, 0);
        be->to_host(ca->sk, dk, (size_t)n * sizeof(int64_t));
    }
}

/* The staged rows [n] (sw, ss, sk) up into the device staging (d_idx2:
 * the rows iy[n] of the destination; d_w, and d_s, d_k with state, steps):
 * copies on the copy stream once the compute stream no longer reads the
 * device staging (staged; the host does not wait), marked by up; fill: a
 * training lookup's (a host wait for them counted, stage_idle). */
static void rows_copy(struct emb_table *t, int64_t n, int state, int steps, int fill)
{
    struct emb_cache *ca = t->cache;
    const struct backend_ops *be = t->be;
    int64_t *di = emb_buf_get(be, &ca->d_idx2, (size_t)n * sizeof(int64_t));
    float *dw = emb_buf_get(be, &ca->d_w, (size_t)n * t->width * sizeof(float));
    float *ds = ca->sf && state ? emb_buf_get(be, &ca->d_s, (size_t)n * ca->sf * sizeof(float))
                                : NULL;
    float *dk = steps ? emb_buf_get(be, &ca->d_k, (size_t)n * sizeof(int64_t)) : NULL;
    be->stream_wait(BACKEND_COPY, ca->staged);
    be->copy_up(di, ca->iy, (size_t)n * sizeof(int64_t));
    be->copy_up(dw, ca->sw, (size_t)n * t->width * sizeof(float));
    if (ds)
        be->copy_up(ds, ca->ss, (size_t)n * ca->sf * sizeof(float));
    if (dk)
        be->copy_up(dk, ca->sk, (size_t)n * sizeof(int64_t));
    be->event_record(ca->up, BACKEND_COPY);
    ca->up_pending = 1;
    ca->up_fill = fill;
}

/* The device staging of rows_copy's n rows into the rows of dst (w, state,
 * steps arrays of the table's memory): the scatters on the compute stream
 * after the copies (up); fill: a training lookup's, its wait timed. */
static void rows_land(struct emb_table *t, int64_t n, float *dst_w, float *dst_s,
                      int64_t *dst_k, int fill)
{
    struct emb_cache *ca = t->cache;
    const struct backend_ops *be = t->be;
    const int64_t *di = ca->d_idx2.p;
    const float *dw = ca->d_w.p;
    const float *ds = ca->sf && dst_s ? ca->d_s.p : NULL;
    const float *dk = dst_k ? ca->d_k.p : NULL;
    if (fill) { /* the compute stream's wait for a training fill, timed */
        stall_take(be, ca, 1);
        be->event_record(ca->stall0, BACKEND_COMPUTE);
    }
    be->stream_wait(BACKEND_COMPUTE, ca->up);
    if (fill) {
        be->event_record(ca->stall1, BACKEND_COMPUTE);
        ca->stall_pending = 1;
    }
    be->index_rows(n, t->width, dw, NULL, dst_w, di, 0);
    if (ds)
        be->index_rows(n, (int)ca->sf, ds, NULL, dst_s, di, 0);
    if (dk) /* int64 as two floats' bits: copied, never computed on */
        be->index_rows(n, 2, dk, NULL, (float *)dst_k, di, 0);
    be->event_record(ca->staged, BACKEND_COMPUTE);
}

/* rows_copy, then rows_land */
static void rows_up(struct emb_table *t, int64_t n, float *dst_w, float *dst_s, int64_t *dst_k,
                    int fill)
{
    if (n == 0)
        return;
    rows_copy(t, n, dst_s != NULL, dst_k != NULL, fill);
    rows_land(t, n, dst_w, dst_s, dst_k, fill);
}

void emb_cache_land(struct emb_table *t)
{
    struct emb_cache *ca = t->cache;
    if (ca->land_n) {
        const int64_t n = ca->land_n;
        ca->land_n = 0;
        rows_land(t, n, t->w, t->state, t->steps, 1);
    }
    if (ca->land_sv) {
        ca->land_sv = 0;
        t->be->stream_wait(BACKEND_COMPUTE, ca->svup);
    }
}

const int64_t *emb_cache_served(const struct emb_table *t) { return t->cache->sv; }

int emb_cache_fetched(const struct emb_table *t, int64_t vid)
{
    const struct emb_cache *ca = t->cache;
    const int64_t s = vid / t->G;
    return s >= ca->k0 && s < ca->k0 + ca->C && ca->got[s] == ca->tick;
}

/* Host rows of the local indices ks[n] (the host shard's values) into the
 * staging, rows in order. */
static void host_stage(struct emb_table *t, const int64_t *ks, int64_t n)
{
    struct emb_cache *ca = t->cache;
    const int W = t->width;
    for (int64_t i = 0; i < n; i++) {
        memcpy(ca->sw + i * W, host_row(t, ks[i]), (size_t)W * sizeof(float));
        if (ca->sf)
            memcpy(ca->ss + i * ca->sf, ca->hstate + ks[i] * ca->sf,
                   (size_t)ca->sf * sizeof(float));
        if (ca->hsteps)
            ca->sk[i] = ca->hsteps[ks[i]];
    }
}

/* --- set-up ----------------------------------------------------------------------- */

void emb_cache_init(struct emb_table *t)
{
    struct emb_cache *ca = xcalloc(1, sizeof *ca);
    t->cache = ca;
    const int64_t L = t->local_rows;
    ca->pin = t->dyn != NULL;
    ca->k0 = t->shard == 0 || ca->pin ? 1 : 0;
    /* the shard's ids: k G + shard in 1..rows for k in k0 .. (a pool: any) */
    const int64_t ids = ca->pin ? t->conf.cache
                        : t->shard <= t->conf.rows ? (t->conf.rows - t->shard) / t->G + 1 - ca->k0
                                                   : 0;
    ca->C = t->conf.cache < ids ? t->conf.cache : ids;
    if (ca->C < 1)
        ca->C = 1; /* a shard with no id: one slot, never used */
    ca->sf = t->state_floats;
    ca->hw = xcalloc((size_t)L, (size_t)t->width * sizeof(float));
    ca->hstate = ca->sf ? xcalloc((size_t)L, (size_t)ca->sf * sizeof(float)) : NULL;
    ca->hsteps = t->conf.optim.kind == EMB_OPT_ADAM ? xcalloc((size_t)L, sizeof(int64_t)) : NULL;
    ca->hready = xcalloc((size_t)L / 8 + 1, 1);
    ca->where = xmalloc((size_t)L * sizeof(int64_t));
    for (int64_t k = 0; k < L; k++)
        ca->where[k] = -1;
    const int64_t S = ca->k0 + ca->C;
    ca->holds = xmalloc((size_t)S * sizeof(int64_t));
    ca->last = xcalloc((size_t)S, sizeof(int64_t));
    ca->got = xcalloc((size_t)S, sizeof(int64_t));
    ca->prev = xmalloc((size_t)S * sizeof(int64_t));
    ca->next = xmalloc((size_t)S * sizeof(int64_t));
    ca->dirty = xcalloc((size_t)S, 1);
    ca->freel = xmalloc((size_t)S * sizeof(int64_t));
    for (int64_t s = 0; s < S; s++)
        ca->holds[s] = -1;
    if (ca->pin)
        ca->holds[0] = 0; /* resident for good, in no order (its row: emb_cache_grow) */
    for (int64_t s = S - 1; s >= ca->k0; s--) /* popped from the end: ascending */
        ca->freel[ca->nfree++] = s;
    ca->head = ca->tail = -1;
    /* the device's slots (zero-filled); their rows come with their ids */
    const struct backend_ops *be = t->be;
    t->w = be->alloc((size_t)S * (size_t)t->width * sizeof(float));
    t->state = ca->sf ? be->alloc((size_t)S * (size_t)ca->sf * sizeof(float)) : NULL;
    t->steps = ca->hsteps ? be->alloc((size_t)S * sizeof(int64_t)) : NULL;
    ca->up = be->event_new(0);
    ca->wb = be->event_new(0);
    ca->staged = be->event_new(0);
    ca->gathered = be->event_new(0);
    ca->stall0 = be->event_new(1);
    ca->stall1 = be->event_new(1);
    ca->svup = be->event_new(0);
    ca->lfu = t->conf.cache_lfu;
    if (ca->lfu) {
        ca->freq = xcalloc((size_t)S, sizeof *ca->freq);
        lfu_init(&ca->q, S, ca->freq, ca->holds);
    }
}

void emb_cache_free(struct emb_table *t)
{
    struct emb_cache *ca = t->cache;
    if (!ca)
        return;
    const struct backend_ops *be = t->be;
    emb_cache_land(t);
    stage_idle(be, ca); /* the copies in flight run first */
    if (ca->sv_pending)
        be->event_sync(ca->svup);
    wb_apply(t);
    be->free(t->w);
    be->free(t->state);
    be->free(t->steps);
    t->w = t->state = NULL;
    t->steps = NULL;
    struct emb_buf *b[] = {&ca->d_idx, &ca->d_idx2, &ca->d_w, &ca->d_s, &ca->d_k, &ca->d_rt,
                           &ca->d_bi, &ca->d_bw, &ca->d_bs, &ca->d_bk};
    for (size_t i = 0; i < sizeof b / sizeof *b; i++)
        emb_buf_free(be, b[i]);
    free(ca->hw);
    free(ca->hstate);
    free(ca->hsteps);
    free(ca->hready);
    free(ca->where);
    free(ca->holds);
    free(ca->last);
    free(ca->got);
    free(ca->prev);
    free(ca->next);
    free(ca->dirty);
    free(ca->freel);
    free(ca->freq);
    free(ca->lt[0]);
    free(ca->lt[1]);
    if (ca->lfu)
        lfu_free(&ca->q);
    void *pin[] = {ca->sw, ca->ss, ca->sk, ca->ix, ca->iy, ca->sv, ca->bw, ca->bs, ca->bk, ca->bi};
    for (size_t i = 0; i < sizeof pin / sizeof *pin; i++)
        if (pin[i])
            be->host_free(pin[i]);
    be->event_free(ca->up);
    be->event_free(ca->wb);
    be->event_free(ca->staged);
    be->event_free(ca->gathered);
    be->event_free(ca->stall0);
    be->event_free(ca->stall1);
    be->event_free(ca->svup);
    free(ca->wbk);
    free(ca);
    t->cache = NULL;
}

/* --- the eviction order ------------------------------------------------------------- */

static void unlink_slot(struct emb_cache *ca, int64_t s)
{
    const int64_t p = ca->prev[s], n = ca->next[s];
    if (p >= 0)
        ca->next[p] = n;
    else
        ca->head = n;
    if (n >= 0)
        ca->prev[n] = p;
    else
        ca->tail = p;
}

static void append_slot(struct emb_cache *ca, int64_t s)
{
    ca->prev[s] = ca->tail;
    ca->next[s] = -1;
    if (ca->tail >= 0)
        ca->next[ca->tail] = s;
    else
        ca->head = s;
    ca->tail = s;
}

/* The LFU counts halve every LFU_HALVE training lookups: in-cache counts
 * only grow, so without it a row hot long ago (a stream's past weeks)
 * would keep its slot for good. */
#define LFU_HALVE 64

/* slot s's row is used by the lookup at tick T: out of the candidates */
static void order_use(struct emb_cache *ca, int64_t s, int64_t T, int fetched)
{
    if (ca->lfu) {
        lfu_remove(&ca->q, s);
        ca->freq[s] = fetched ? 1 : ca->freq[s] + 1;
    } else if (!fetched)
        unlink_slot(ca, s);
    ca->last[s] = T;
}

/* the next row to evict at tick T, out of the order; -1 when every
 * resident row is the lookup's or the one's before */
static int64_t order_victim(struct emb_cache *ca, int64_t T)
{
    if (ca->lfu)
        return lfu_pop(&ca->q);
    const int64_t s = ca->head;
    if (s < 0 || ca->last[s] >= T - 1)
        return -1;
    unlink_slot(ca, s);
    return s;
}

/* the lookup at tick T used the slots of u[n] (distinct local indices,
 * ascending): LRU appends them in id order (ties of a tick by id); LFU
 * keeps them out until tick T + 2 and makes the rows of tick T - 1 that
 * T did not use candidates again */
static void order_done(struct emb_cache *ca, const int64_t *u, int64_t n, int64_t T)
{
    if (!ca->lfu) {
        for (int64_t i = 0; i < n; i++)
            if (ca->where[u[i]] >= ca->k0) /* not the pinned slot */
                append_slot(ca, ca->where[u[i]]);
        return;
    }
    int64_t *pl = ca->lt[(T - 1) & 1];
    for (int64_t i = 0; i < ca->nlt[(T - 1) & 1]; i++)
        if (ca->holds[pl[i]] >= 0 && ca->last[pl[i]] == T - 1)
            lfu_push(&ca->q, pl[i]);
    int64_t **l = &ca->lt[T & 1];
    *l = xrealloc(*l, (size_t)(n ? n : 1) * sizeof **l);
    int64_t nl = 0;
    for (int64_t i = 0; i < n; i++)
        if (ca->where[u[i]] >= ca->k0) /* not the pinned slot */
            (*l)[nl++] = ca->where[u[i]];
    ca->nlt[T & 1] = nl;
    if (T % LFU_HALVE == 0) { /* the decay; the order rebuilt */
        for (int64_t s = ca->k0; s < ca->k0 + ca->C; s++)
            ca->freq[s] >>= 1;
        lfu_rebuild(&ca->q);
    }
}

/* slot s freed (its row set from the host) */
static void order_drop(struct emb_cache *ca, int64_t s)
{
    if (ca->lfu)
        lfu_remove(&ca->q, s);
    else
        unlink_slot(ca, s);
}

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* --- a training lookup --------------------------------------------------------------- */

/* Resolve the local indices u[n] (distinct, ascending) to slots: hits
 * stamped, misses fetched (evicting the least recent rows, written back
 * when dirty), every row appended to the order at tick T, dirty. */
static void map_training(struct emb_table *t, const int64_t *u, int64_t n, int ahead)
{
    struct emb_cache *ca = t->cache;
    const int64_t T = ++ca->tick;
    wb_apply(t); /* the host shard is read below (the fills) */
    stage_grow(t->be, ca, n, t->width);
    int64_t nmiss = 0, nwb = 0;
    int64_t *miss = xmalloc((size_t)(n ? n : 1) * sizeof *miss);
    for (int64_t i = 0; i < n; i++) {
        const int64_t s = ca->where[u[i]];
        if (s >= 0 && s < ca->k0)
            continue; /* pinned: a hit, never evicted */
        if (s >= 0)
            order_use(ca, s, T, 0); /* out of the candidates */
        else
            miss[nmiss++] = u[i];
    }
    ca->st.hits += n - nmiss;
    if (ahead)
        ca->st.fills += nmiss;
    else
        ca->st.misses += nmiss;
    /* slots for the misses: free ones, then the least recent (LFU: least
     * used) rows not used by this lookup or the training lookup before it */
    for (int64_t i = 0; i < nmiss; i++) {
        int64_t s;
        if (ca->nfree > 0)
            s = ca->freel[--ca->nfree];
        else {
            s = order_victim(ca, T);
            if (s < 0)
                fatal("embedding.cache: table '%s': shard %d needs more rows resident at once "
                      "(this step's %lld unique rows and the previous step's) than its %lld "
                      "cache slots; raise embedding.cache",
                      t->conf.name, t->shard, (long long)n, (long long)ca->C);
            ca->where[ca->holds[s]] = -1;
            ca->st.evicted++;
            if (ca->dirty[s]) { /* written back below, before the fetches land */
                ca->ix[nwb] = s;
                ca->iy[nwb++] = ca->holds[s];
            }
        }
        ca->holds[s] = miss[i];
        ca->where[miss[i]] = s;
        ca->got[s] = T;
        order_use(ca, s, T, 1);
    }
    if (nwb) { /* the evicted rows' values down into the host shard, behind the step */
        wb_start(t, nwb);
        ca->st.written += nwb;
        ca->st.written_bytes += nwb * (int64_t)row_bytes(t);
    }
    if (nmiss) { /* the missing rows up into their slots */
        host_stage(t, miss, nmiss);
        for (int64_t i = 0; i < nmiss; i++)
            ca->iy[i] = ca->where[miss[i]];
        if (ahead) { /* the scatters when the rows are first read (emb_cache_land) */
            rows_copy(t, nmiss, 1, t->steps != NULL, 1);
            ca->land_n = nmiss;
        } else
            rows_up(t, nmiss, t->w, t->state, t->steps, 1);
        ca->st.fetched_bytes += nmiss * (int64_t)row_bytes(t);
    }
    for (int64_t i = 0; i < n; i++) {
        const int64_t s = ca->where[u[i]];
        if (s >= ca->k0) /* not pinned */
            ca->dirty[s] = 1; /* the update of this lookup changes it */
    }
    order_done(ca, u, n, T);
    ca->st.lookups++;
    free(miss);
}

/* A lookup that is not training: its rows sv[n] (local indices) into the
 * read-through buffer, row i + 1 for served row i. */
static float *read_through(struct emb_table *t, const int64_t *sv, int64_t n)
{
    struct emb_cache *ca = t->cache;
    wb_apply(t);
    const struct backend_ops *be = t->be;
    float *rt = emb_buf_get(be, &ca->d_rt, (size_t)(n + 1) * t->width * sizeof(float));
    stage_grow(t->be, ca, n, t->width);
    int64_t nres = 0, nhost = 0;
    int64_t *ks = xmalloc((size_t)(n ? n : 1) * sizeof *ks);
    for (int64_t i = 0; i < n; i++) /* the host's rows first */
        if (ca->where[sv[i]] < 0) {
            ks[nhost] = sv[i];
            ca->iy[nhost++] = i + 1;
        }
    if (nhost) {
        host_stage(t, ks, nhost);
        rows_up(t, nhost, rt, NULL, NULL, 0);
    }
    stage_idle(be, ca); /* ix, iy written again */
    for (int64_t i = 0; i < n; i++) /* then the resident ones, copied on the device */
        if (ca->where[sv[i]] >= 0) {
            ca->ix[nres] = ca->where[sv[i]];
            ca->iy[nres++] = i + 1;
        }
    if (nres) {
        int64_t *di = emb_buf_get(be, &ca->d_idx, (size_t)nres * sizeof(int64_t));
        int64_t *dj = emb_buf_get(be, &ca->d_idx2, (size_t)nres * sizeof(int64_t));
        be->to_device(di, ca->ix, (size_t)nres * sizeof(int64_t));
        be->to_device(dj, ca->iy, (size_t)nres * sizeof(int64_t));
        be->index_rows(nres, t->width, t->w, di, rt, dj, 0);
        be->event_record(ca->staged, BACKEND_COMPUTE); /* dj read */
    }
    free(ks);
    return rt;
}

float *emb_cache_resolve(struct emb_table *t, int64_t *ids, int64_t n, int train, int ahead)
{
    struct emb_cache *ca = t->cache;
    const int64_t G = t->G;
    float *rt = NULL;
    emb_cache_land(t); /* a prefetch's fill first: the device staging is reused */
    if (t->dyn) /* raw ids: to the pool's slots first (emb_cache_dyn.c) */
        emb_cache_dyn_slots(t, ids, n, train);
    else
        for (int64_t i = 0; i < n; i++)
            ids[i] /= G; /* local indices */
    if (train) {
        int64_t *u = xmalloc((size_t)(n ? n : 1) * sizeof *u);
        memcpy(u, ids, (size_t)n * sizeof *u);
        qsort(u, (size_t)n, sizeof *u, cmp_i64);
        int64_t m = 0;
        for (int64_t i = 0; i < n; i++) /* several requesters may ask for one id */
            if (m == 0 || u[i] != u[m - 1])
                u[m++] = u[i];
        map_training(t, u, m, ahead);
        free(u);
        for (int64_t i = 0; i < n; i++)
            ids[i] = ca->where[ids[i]] * G + t->shard;
    } else {
        rt = read_through(t, ids, n);
        for (int64_t i = 0; i < n; i++)
            ids[i] = (i + 1) * G + t->shard;
    }
    return rt;
}

void emb_cache_map(struct emb_table *t, struct emb_exchange *x)
{
    struct emb_cache *ca = t->cache;
    const struct backend_ops *be = t->be;
    const int64_t n = x->nserve;
    void *own = NULL;
    const int64_t *got =
        backend_download(be, x->serve, (size_t)(n ? n : 1) * sizeof(int64_t), &own);
    int64_t *sv = xmalloc((size_t)(n ? n : 1) * sizeof *sv);
    memcpy(sv, got, (size_t)n * sizeof *sv);
    free(own);
    float *rt = emb_cache_resolve(t, sv, n, x->counted, x->pf_on);
    if (!x->counted)
        x->crows = rt;
    if (n) { /* the virtual ids up, on the copy stream (x->serve's readers ran:
              * the download above waited for them): the host does not wait,
              * unless the last upload from sv has not run yet (not the fill's) */
        if (ca->sv_pending && !be->event_query(ca->svup))
            be->event_sync(ca->svup);
        ca->sv_pending = 0;
        if (n > ca->svcap) {
            ca->svcap = n > 2 * ca->svcap ? n : 2 * ca->svcap;
            ca->sv = pinned_grow(be, ca->sv, (size_t)ca->svcap * sizeof *ca->sv);
        }
        memcpy(ca->sv, sv, (size_t)n * sizeof *sv);
        be->copy_up(x->serve, ca->sv, (size_t)n * sizeof *sv);
        be->event_record(ca->svup, BACKEND_COPY);
        ca->sv_pending = 1;
        if (x->counted && x->pf_on) /* read on the device from the next step on */
            ca->land_sv = 1;
        else
            be->stream_wait(BACKEND_COMPUTE, ca->svup);
    }
    emb_cache_post(t); /* behind the copies up, which the gathers would hold back */
    free(sv);
}

void emb_cache_post(struct emb_table *t)
{
    if (t->cache->wb_down)
        wb_down(t);
}

/* --- host access ------------------------------------------------------------------- */

/* emb_cache_get of the local indices at(i) = ks ? ks[i] : first + i, i < n:
 * the host shard's values, then the resident rows' in one pass down. */
static void get_list(struct emb_table *t, int64_t first, const int64_t *ks, int64_t n, float *w,
                     float *state, int64_t *steps)
{
    struct emb_cache *ca = t->cache;
    emb_cache_land(t);
    wb_apply(t);
    const int W = t->width;
    int64_t nres = 0;
    for (int64_t k = 0; k < n; k++) { /* the host shard's values */
        const int64_t at = ks ? ks[k] : first + k;
        nres += ca->where[at] >= 0;
        if (w)
            memcpy(w + k * W, host_row(t, at), (size_t)W * sizeof(float));
        if (state && ca->sf)
            memcpy(state + k * ca->sf, ca->hstate + at * ca->sf, (size_t)ca->sf * sizeof(float));
        if (steps)
            steps[k] = ca->hsteps ? ca->hsteps[at] : 0;
    }
    /* then the resident rows' current values, from their slots */
    stage_grow(t->be, ca, nres, W);
    nres = 0;
    for (int64_t k = 0; k < n; k++) {
        const int64_t s = ca->where[ks ? ks[k] : first + k];
        if (s >= 0) {
            ca->ix[nres] = s;
            ca->iy[nres++] = k;
        }
    }
    slots_down(t, nres);
    for (int64_t i = 0; i < nres; i++) {
        const int64_t k = ca->iy[i];
        if (w)
            memcpy(w + k * W, ca->sw + i * W, (size_t)W * sizeof(float));
        if (state && ca->sf)
            memcpy(state + k * ca->sf, ca->ss + i * ca->sf, (size_t)ca->sf * sizeof(float));
        if (steps && ca->hsteps)
            steps[k] = ca->sk[i];
    }
}

void emb_cache_get(struct emb_table *t, int64_t slot0, int64_t n, float *w, float *state,
                   int64_t *steps)
{
    get_list(t, slot0, NULL, n, w, state, steps);
}

void emb_cache_get_rows(struct emb_table *t, int64_t n, const int64_t *ks, float *w,
                        float *state, int64_t *steps)
{
    get_list(t, 0, ks, n, w, state, steps);
}

/* Local index k's row out of the cache (not written back). */
static void leave(struct emb_cache *ca, int64_t k)
{
    const int64_t s = ca->where[k];
    order_drop(ca, s);
    ca->holds[s] = -1;
    ca->dirty[s] = 0;
    ca->where[k] = -1;
    ca->freel[ca->nfree++] = s;
}

/* A pinned slot's row, state and steps (those given) := the values. */
static void pin_set(struct emb_table *t, int64_t s, const float *w, const float *state,
                    const int64_t *steps)
{
    const struct backend_ops *be = t->be;
    struct emb_cache *ca = t->cache;
    stage_idle(be, ca); /* the slot's pending uploads first (their order) */
    if (w)
        be->to_device(t->w + s * t->width, w, (size_t)t->width * sizeof *w);
    if (state && ca->sf)
        be->to_device(t->state + s * ca->sf, state, (size_t)ca->sf * sizeof *state);
    if (steps && t->steps)
        be->to_device(t->steps + s, steps, sizeof *steps);
}

void emb_cache_grow(struct emb_table *t, int64_t rows)
{
    struct emb_cache *ca = t->cache;
    const int64_t L = t->local_rows;
    if (rows <= L)
        return;
    wb_apply(t); /* its rows land in the arrays kept */
    const size_t n = (size_t)rows, o = (size_t)L;
    ca->hw = xrealloc(ca->hw, n * (size_t)t->width * sizeof *ca->hw);
    memset(ca->hw + o * (size_t)t->width, 0, (n - o) * (size_t)t->width * sizeof *ca->hw);
    if (ca->sf) {
        ca->hstate = xrealloc(ca->hstate, n * (size_t)ca->sf * sizeof *ca->hstate);
        memset(ca->hstate + o * (size_t)ca->sf, 0, (n - o) * (size_t)ca->sf * sizeof *ca->hstate);
    }
    if (ca->hsteps) {
        ca->hsteps = xrealloc(ca->hsteps, n * sizeof *ca->hsteps);
        memset(ca->hsteps + o, 0, (n - o) * sizeof *ca->hsteps);
    }
    ca->hready = xrealloc(ca->hready, n / 8 + 1);
    memset(ca->hready + (o ? o / 8 + 1 : 0), 0, n / 8 + 1 - (o ? o / 8 + 1 : 0));
    ca->where = xrealloc(ca->where, n * sizeof *ca->where);
    for (size_t k = o; k < n; k++)
        ca->where[k] = -1;
    if (ca->pin && o == 0)
        ca->where[0] = 0; /* the pool's slot 0 in the cache's */
}

void emb_cache_drop(struct emb_table *t, int64_t k)
{
    struct emb_cache *ca = t->cache;
    emb_cache_land(t);
    wb_apply(t); /* a pending write-back of k lands before k is made again */
    if (ca->where[k] >= ca->k0)
        leave(ca, k);
}

int64_t emb_cache_slots(const struct emb_table *t) { return t->cache->k0 + t->cache->C; }

/* emb_cache_set of the local indices at(i) = ks ? ks[i] : first + i, i < n
 * (distinct): one pass, the free list sorted once. */
static void set_list(struct emb_table *t, int64_t first, const int64_t *ks, int64_t n,
                     const float *w, const float *state, const int64_t *steps)
{
    struct emb_cache *ca = t->cache;
    emb_cache_land(t);
    wb_apply(t); /* a pending write-back would overwrite what is set */
    const int W = t->width;
    int left = 0;
    for (int64_t k = 0; k < n; k++) {
        const int64_t at = ks ? ks[k] : first + k, s = ca->where[at];
        if (s >= 0 && s < ca->k0) /* pinned: the value set into its slot too */
            pin_set(t, s, w ? w + k * W : NULL, state ? state + k * ca->sf : NULL,
                    steps ? steps + k : NULL);
        else if (s >= 0) { /* the host's value is the row's now: out of the cache */
            leave(ca, at);
            left = 1;
        }
        if (w) {
            memcpy(ca->hw + at * W, w + k * W, (size_t)W * sizeof(float));
            ca->hready[at >> 3] |= (uint8_t)(1u << (at & 7));
        }
        if (state && ca->sf)
            memcpy(ca->hstate + at * ca->sf, state + k * ca->sf, (size_t)ca->sf * sizeof(float));
        if (steps && ca->hsteps)
            ca->hsteps[at] = steps[k];
    }
    if (!left)
        return;
    /* the free list back in descending order: slots handed out ascending */
    qsort(ca->freel, (size_t)ca->nfree, sizeof *ca->freel, cmp_i64);
    for (int64_t i = 0, j = ca->nfree - 1; i < j; i++, j--) {
        const int64_t v = ca->freel[i];
        ca->freel[i] = ca->freel[j];
        ca->freel[j] = v;
    }
}

void emb_cache_set(struct emb_table *t, int64_t slot0, int64_t n, const float *w,
                   const float *state, const int64_t *steps)
{
    set_list(t, slot0, NULL, n, w, state, steps);
}

void emb_cache_set_rows(struct emb_table *t, int64_t n, const int64_t *ks, const float *w,
                        const float *state, const int64_t *steps)
{
    set_list(t, 0, ks, n, w, state, steps);
}

void emb_cache_take(struct emb_table *t, struct comm *c, int which, struct emb_cache_stats *out)
{
    struct emb_cache *ca = t->cache;
    stall_take(t->be, ca, 0); /* the last fill's, once the compute stream has passed it */
    const struct emb_cache_stats *s = &ca->st, *m = &ca->mark[which];
    int64_t v[12] = {s->hits - m->hits,
                     s->misses - m->misses,
                     s->fills - m->fills,
                     s->evicted - m->evicted,
                     s->written - m->written,
                     s->fetched_bytes - m->fetched_bytes,
                     s->written_bytes - m->written_bytes,
                     ca->C - ca->nfree,
                     ca->C,
                     s->lookups - m->lookups,
                     s->fill_host_us - m->fill_host_us,
                     s->fill_stall_us - m->fill_stall_us};
    ca->mark[which] = ca->st;
    comm_allreduce_sum_i64v(c, COMM_WORLD, v, 12);
    *out = (struct emb_cache_stats){.hits = v[0], .misses = v[1], .fills = v[2],
                                    .evicted = v[3], .written = v[4], .fetched_bytes = v[5],
                                    .written_bytes = v[6], .resident = v[7], .slots = v[8],
                                    .lookups = v[9] / c->size, .fill_host_us = v[10] / c->size,
                                    .fill_stall_us = v[11] / c->size};
}
