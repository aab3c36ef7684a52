/* emb_dyn_dev: a dynamic table in device memory (embedding.placement =
 * device; doc/embedding.md, "Dynamic tables on the device"): the index,
 * the slot statistics, the free list and the pool's rows live in the
 * table's backend memory and a training lookup runs emb_dyn.c's steps as
 * backend operations (backend.h: dyn_find, dyn_stamp, dyn_missing,
 * dyn_insert, dyn_rehash, dyn_virtual). The host keeps the sizes (the
 * clock, the pool's next slot and free count, the index's entries) and
 * reads back, per training lookup, the distinct missing ids (one wait;
 * one for the dynamic tables of one exchange, emb_dyn_dev_map_many):
 * it decides how many get rows, grows the pool and the index, and draws
 * the new rows from (seed, table, id) as every host table does (uploaded
 * through the pinned stage, stage.h: no wait). The shared unadmitted
 * row's gradient is summed over the emb group on the host (one wait for
 * its row when G > 1; none at G = 1, where the sum is the row). The
 * checkpoints' accessors and the replicas' rebinding work on a host
 * mirror of the arrays (emb_dyn.c), read back when stale and written back
 * before the device's next use. */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/emb_dyn_row.h"
#include "backend/stage.h"
#include "base/check.h"
#include "base/log.h"
#include "comm/comm.h"
#include "embedding/emb_cache.h"
#include "embedding/emb_dyn.h"
#include "embedding/emb_dyn_priv.h"
#include "embedding/emb_exchange_priv.h"
#include "embedding/emb_table.h"

struct emb_dyn_dev {
    int64_t *keys, *vals, cap;         /* the index (cap = the mirror's) */
    int64_t *sid, *last, *freq, *freel; /* [t->local_rows] */
    int64_t *acc;                      /* [1] unadmitted hits since the last read */
    int64_t *slot, *miss, *cat;        /* a lookup's scratch: [n], [n + 1], [n] */
    size_t slot_b, miss_b, cat_b;
    float *rows;                       /* the new rows, uploaded */
    size_t rows_b;
    int64_t *hmiss;                    /* host: [n + 1] the missing ids read back */
    size_t hmiss_b;
    float *hrows;                      /* host: the new rows drawn */
    size_t hrows_b;
    struct stage *up;                  /* uploads without a host wait (the new rows, the sum) */
    int64_t *pkeys, *pvals, pcap;      /* admit > 1: the probation list (cap = the mirror's) */
    int64_t *gone;                     /* [gone_n] the ids evicted since the chain's checkpoint */
    size_t gone_n;
    int64_t *scr;                      /* the sequential steps' scratch */
    size_t scr_b;
    char *joint, *hjoint;              /* emb_dyn_dev_map_many: the tables' read-backs */
    size_t joint_b, hjoint_b;
};

static size_t at_least1(int64_t n) { return (size_t)(n > 0 ? n : 1); }

/* A device buffer of at least `bytes` (contents not kept). */
static void *dgrow(const struct backend_ops *be, void *p, size_t *have, size_t bytes)
{
    if (bytes <= *have)
        return p;
    be->free(p);
    *have = bytes > 2 * *have ? bytes : 2 * *have;
    return be->alloc(*have);
}

/* A host buffer likewise. */
static void *hgrow(void *p, size_t *have, size_t bytes)
{
    if (bytes <= *have)
        return p;
    *have = bytes > 2 * *have ? bytes : 2 * *have;
    free(p);
    return xmalloc(*have);
}

/* p[old] -> a new zero-filled buffer [new], the old contents kept. */
static void *dresize(const struct backend_ops *be, void *p, size_t old, size_t new)
{
    void *q = be->alloc(new ? new : 1);
    if (p) {
        if (old)
            be->copy(q, p, old < new ? old : new);
        be->free(p);
    }
    return q;
}

void emb_dyn_dev_init(struct emb_table *t)
{
    struct emb_dyn *d = t->dyn;
    struct emb_dyn_dev *v = xcalloc(1, sizeof *v);
    d->dv = v;
    v->cap = d->ix.cap;
    v->keys = t->be->alloc((size_t)v->cap * sizeof *v->keys);
    v->vals = t->be->alloc((size_t)v->cap * sizeof *v->vals);
    v->acc = t->be->alloc(sizeof *v->acc);
    v->up = stage_new(t->be);
    if (d->prob.keys) {
        v->pcap = d->prob.cap;
        v->pkeys = t->be->alloc((size_t)v->pcap * sizeof *v->pkeys);
        v->pvals = t->be->alloc((size_t)v->pcap * sizeof *v->pvals);
    }
}

void emb_dyn_dev_free(struct emb_table *t)
{
    struct emb_dyn_dev *v = t->dyn->dv;
    if (!v)
        return;
    const struct backend_ops *be = t->be;
    void *dev[] = {v->keys, v->vals, v->sid, v->last, v->freq, v->freel, v->acc,
                   v->slot, v->miss, v->cat, v->rows,
                   v->pkeys, v->pvals, v->gone, v->scr, v->joint};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        be->free(dev[i]);
    stage_free(v->up);
    free(v->hmiss);
    free(v->hrows);
    free(v->hjoint);
    free(v);
    t->dyn->dv = NULL;
}

void emb_dyn_dev_resize(struct emb_table *t, int64_t slots)
{
    struct emb_dyn_dev *v = t->dyn->dv;
    const struct backend_ops *be = t->be;
    const size_t o = (size_t)t->local_rows, n = (size_t)slots, w = (size_t)t->width;
    const size_t sf = (size_t)t->state_floats;
    t->w = dresize(be, t->w, o * w * sizeof(float), n * w * sizeof(float));
    if (sf)
        t->state = dresize(be, t->state, o * sf * sizeof(float), n * sf * sizeof(float));
    if (t->conf.optim.kind == EMB_OPT_ADAM)
        t->steps = dresize(be, t->steps, o * sizeof(int64_t), n * sizeof(int64_t));
    v->sid = dresize(be, v->sid, o * sizeof(int64_t), n * sizeof(int64_t));
    v->last = dresize(be, v->last, o * sizeof(int64_t), n * sizeof(int64_t));
    v->freq = dresize(be, v->freq, o * sizeof(int64_t), n * sizeof(int64_t));
    v->freel = dresize(be, v->freel, o * sizeof(int64_t), n * sizeof(int64_t));
}

void emb_dyn_dev_row_init(struct emb_table *t, int64_t slot, int64_t id)
{
    const struct backend_ops *be = t->be;
    float *row = xmalloc((size_t)t->width * sizeof *row);
    emb_init_row_n(&t->conf, id, row, t->width);
    be->to_device(t->w + slot * t->width, row, (size_t)t->width * sizeof *row);
    free(row);
    if (t->state_floats)
        be->zero(t->state + slot * t->state_floats, (size_t)t->state_floats * sizeof(float));
    if (t->steps)
        be->zero(t->steps + slot, sizeof(int64_t));
}

void emb_dyn_dev_pull(struct emb_table *t)
{
    struct emb_dyn *d = t->dyn;
    struct emb_dyn_dev *v = d->dv;
    if (!d->stale)
        return;
    const struct backend_ops *be = t->be;
    const size_t n = (size_t)t->local_rows * sizeof(int64_t);
    be->to_host(d->ix.keys, v->keys, (size_t)d->ix.cap * sizeof(int64_t));
    be->to_host(d->ix.vals, v->vals, (size_t)d->ix.cap * sizeof(int64_t));
    be->to_host(d->ids, v->sid, n);
    be->to_host(d->last, v->last, n);
    be->to_host(d->freq, v->freq, n);
    be->to_host(d->freel, v->freel, n);
    if (v->pkeys) {
        be->to_host(d->prob.keys, v->pkeys, (size_t)d->prob.cap * sizeof(int64_t));
        be->to_host(d->prob.vals, v->pvals, (size_t)d->prob.cap * sizeof(int64_t));
    }
    if (d->ngone > d->capgone) {
        d->capgone = d->ngone;
        d->gone = xrealloc(d->gone, (size_t)d->capgone * sizeof *d->gone);
    }
    if (d->ngone)
        be->to_host(d->gone, v->gone, (size_t)d->ngone * sizeof *d->gone);
    d->stale = 0;
}

void emb_dyn_dev_push(struct emb_table *t)
{
    t->dyn->dirty = 1;
}

/* The device's arrays from the mirror, when the host changed it. */
static void flush(struct emb_table *t)
{
    struct emb_dyn *d = t->dyn;
    struct emb_dyn_dev *v = d->dv;
    if (!d->dirty)
        return;
    const struct backend_ops *be = t->be;
    if (v->cap != d->ix.cap) { /* the host's put doubled the index */
        be->free(v->keys);
        be->free(v->vals);
        v->cap = d->ix.cap;
        v->keys = be->alloc((size_t)v->cap * sizeof *v->keys);
        v->vals = be->alloc((size_t)v->cap * sizeof *v->vals);
    }
    const size_t n = (size_t)t->local_rows * sizeof(int64_t);
    be->to_device(v->keys, d->ix.keys, (size_t)v->cap * sizeof(int64_t));
    be->to_device(v->vals, d->ix.vals, (size_t)v->cap * sizeof(int64_t));
    be->to_device(v->sid, d->ids, n);
    be->to_device(v->last, d->last, n);
    be->to_device(v->freq, d->freq, n);
    be->to_device(v->freel, d->freel, n);
    if (v->pkeys) { /* the host's put doubled it, or a clear made it anew */
        if (v->pcap != d->prob.cap) {
            be->free(v->pkeys);
            be->free(v->pvals);
            v->pcap = d->prob.cap;
            v->pkeys = be->alloc((size_t)v->pcap * sizeof *v->pkeys);
            v->pvals = be->alloc((size_t)v->pcap * sizeof *v->pvals);
        }
        be->to_device(v->pkeys, d->prob.keys, (size_t)v->pcap * sizeof(int64_t));
        be->to_device(v->pvals, d->prob.vals, (size_t)v->pcap * sizeof(int64_t));
    }
    d->dirty = 0; /* the evicted list is never changed by the host but emptied (ngone = 0) */
}

/* A device index (keys, vals of *cap entries, backend memory) and its
 * host mirror m grown to hold `more` more keys at most half full (the
 * capacity doubled as emb_dyn_index_put doubles past half), rehashed on
 * the device; the mirror sized alike (stale). */
static void room(const struct backend_ops *be, struct emb_dyn_index *m, int64_t **keys,
                 int64_t **vals, int64_t *cap, int64_t more)
{
    int64_t c = m->cap;
    while (2 * (m->n + more) > c)
        c *= 2;
    if (c == m->cap)
        return;
    int64_t *k = be->alloc((size_t)c * sizeof *k);
    int64_t *v = be->alloc((size_t)c * sizeof *v);
    be->dyn_rehash(*keys, *vals, *cap, k, v, c);
    be->free(*keys);
    be->free(*vals);
    *keys = k;
    *vals = v;
    *cap = c;
    const int64_t n = m->n;
    emb_dyn_index_free(m);
    emb_dyn_index_init(m, c);
    m->n = n;
}

/* The probation list to take `more` more entries at most half full (the
 * host's doubles at each put; this one is sized for the tick's ids at
 * once: the same entries, another capacity). */
static void prob_room(struct emb_table *t, int64_t more)
{
    struct emb_dyn_dev *v = t->dyn->dv;
    room(t->be, &t->dyn->prob, &v->pkeys, &v->pvals, &v->pcap, more);
}

/* The index to hold `more` more keys at most half full (emb_dyn_index_put
 * doubles at each put that would pass half: the same final size). */
static void index_room(struct emb_table *t, int64_t more)
{
    struct emb_dyn_dev *v = t->dyn->dv;
    room(t->be, &t->dyn->ix, &v->keys, &v->vals, &v->cap, more);
}

/* k of the missing ids hm[k] (ascending, on the device at miss) get rows
 * at this tick: the pool grown first (as slot_take grows it), the rows
 * drawn here and uploaded. */
static void insert_rows(struct emb_table *t, int64_t k, const int64_t *hm, const int64_t *miss)
{
    struct emb_dyn *d = t->dyn;
    struct emb_dyn_dev *v = d->dv;
    const struct backend_ops *be = t->be;
    const int64_t from_free = k < d->nfree ? k : d->nfree, from_next = k - from_free;
    if (d->next + from_next > t->local_rows) {
        int64_t n = t->local_rows;
        while (n < d->next + from_next) {
            n *= 2;
            if (d->max_slots && n > d->max_slots)
                n = d->max_slots;
        }
        emb_dyn_pool_resize(t, n);
    }
    index_room(t, k);
    const int W = t->width;
    const size_t rb = (size_t)k * (size_t)W * sizeof(float);
    v->hrows = hgrow(v->hrows, &v->hrows_b, rb);
#pragma omp parallel for schedule(static) if (k >= 256)
    for (int64_t i = 0; i < k; i++)
        emb_init_row_n(&t->conf, hm[i], v->hrows + i * W, W);
    v->rows = dgrow(be, v->rows, &v->rows_b, rb);
    stage_up(v->up, v->rows, v->hrows, rb);
    be->dyn_insert(k, miss, v->rows, W, d->nfree, v->freel, d->next, d->clock, v->keys, v->vals,
                   v->cap, v->sid, v->last, v->freq, t->w, t->state, t->state_floats, t->steps);
    d->nfree -= from_free;
    d->next += from_next;
    d->ix.n += k;
    d->rows += k;
    d->st.inserted += k;
}

/* emb_dyn_dev_map's first half: the lookup enqueued up to a training
 * lookup's read-back of its counters and missing ids (v->miss; v->hmiss
 * grown to hold them); returns the bytes to read back (0: not a training
 * lookup). */
static size_t map_begin(struct emb_table *t, int nseg, int64_t *const *seg, const int64_t *n,
                        int train)
{
    struct emb_dyn *d = t->dyn;
    struct emb_dyn_dev *v = d->dv;
    const struct backend_ops *be = t->be;
    const struct emb_dyn_conf *dc = &t->conf.dyn;
    flush(t);
    int64_t total = 0;
    for (int s = 0; s < nseg; s++)
        total += n[s];
    int64_t *all = seg[0];
    if (nseg > 1) { /* the segments end to end */
        v->cat = dgrow(be, v->cat, &v->cat_b, at_least1(total) * sizeof *all);
        all = v->cat;
        for (int s = 0, at = 0; s < nseg; at += (int)n[s], s++)
            be->copy(all + at, seg[s], (size_t)n[s] * sizeof *all);
    }
    v->slot = dgrow(be, v->slot, &v->slot_b, at_least1(total) * sizeof *v->slot);
    be->dyn_find(total, all, v->keys, v->vals, v->cap, v->slot);
    if (train) {
        d->clock++;
        const int full = dc->evict == EMB_EVICT_LRU || dc->evict == EMB_EVICT_LFU;
        /* 1. stamps */
        be->dyn_stamp(total, v->slot, d->clock, v->last, v->freq);
        /* the tick's counters (the host's), then the missing ids behind them */
        v->miss = dgrow(be, v->miss, &v->miss_b, (size_t)(EDR_CTL + total + 1) * sizeof *v->miss);
        int64_t *ctl = v->miss, *out = v->miss + EDR_CTL;
        const int64_t c0[EDR_CTL] = {[EDR_NFREE] = d->nfree, [EDR_NGONE] = d->ngone,
                                     [EDR_PROB] = d->prob.n, [EDR_EVICTED] = 0};
        stage_up(v->up, ctl, c0, sizeof c0);
        if (dc->evict != EMB_EVICT_NONE && (int64_t)v->gone_n < d->ngone + t->local_rows) {
            const size_t n = (size_t)(d->ngone + t->local_rows) * 2;
            v->gone = dresize(be, v->gone, (size_t)d->ngone * sizeof *v->gone, n * sizeof *v->gone);
            v->gone_n = n;
        }
        const size_t scr = (size_t)3 * (size_t)(full ? t->local_rows : 0) +
                           (dc->admit > 1 ? (size_t)3 * (size_t)(d->prob.n + total + 1) : 0);
        if (scr)
            v->scr = dgrow(be, v->scr, &v->scr_b, scr * sizeof *v->scr);
        /* 2. ttl */
        if (dc->evict == EMB_EVICT_TTL)
            be->dyn_expire(dc->ttl, d->clock, d->next, v->sid, v->last, v->keys, v->vals, v->cap,
                           v->freel, v->gone, ctl);
        /* 3. the missing ids ascending, once each; admission */
        be->dyn_missing(total, all, v->slot, out);
        if (dc->admit > 1) {
            prob_room(t, total);
            be->dyn_admit(out, dc->admit, d->clock, v->pkeys, v->pvals, v->pcap, d->prob_max,
                          v->scr, ctl);
        }
        /* 4. room: lru / lfu when full (not called when the tick's ids fit
         * whatever admission leaves: its test, na > nfree + top - next,
         * cannot hold) */
        if (full && total > d->nfree + (d->max_slots - d->next))
            be->dyn_evict_full(dc->evict == EMB_EVICT_LFU, d->clock, d->next, d->max_slots, out,
                               v->sid, v->last, v->freq, v->keys, v->vals, v->cap, v->freel,
                               v->gone, ctl, v->scr);
        const size_t back = (size_t)(EDR_CTL + total + 1) * sizeof *v->hmiss;
        v->hmiss = hgrow(v->hmiss, &v->hmiss_b, back);
        return back;
    }
    return 0;
}

/* The second half, v->hmiss read back (a training lookup): the host's
 * counters, the new rows, then the virtual ids. */
static void map_end(struct emb_table *t, int nseg, int64_t *const *seg, const int64_t *n,
                    int train)
{
    struct emb_dyn *d = t->dyn;
    struct emb_dyn_dev *v = d->dv;
    const struct backend_ops *be = t->be;
    const struct emb_dyn_conf *dc = &t->conf.dyn;
    int64_t total = 0;
    for (int s = 0; s < nseg; s++)
        total += n[s];
    int64_t *all = nseg > 1 ? v->cat : seg[0];
    if (train) {
        const int64_t *hc = v->hmiss, *ho = v->hmiss + EDR_CTL, ev = hc[EDR_EVICTED];
        d->nfree = hc[EDR_NFREE];
        d->ngone = hc[EDR_NGONE];
        d->prob.n = hc[EDR_PROB];
        d->rows -= ev;
        d->ix.n -= ev;
        d->st.evicted += ev;
        /* the rows, while the shard has room (a full shard without lru /
         * lfu: the unadmitted row) */
        const int64_t m = ho[0], missing = dc->admit > 1 ? hc[EDR_MISSING] : m;
        const int64_t avail = d->nfree + (d->max_slots ? d->max_slots - d->next : INT64_MAX - d->next);
        const int64_t k = m < avail ? m : avail;
        if (k > 0)
            insert_rows(t, k, ho + 1, v->miss + EDR_CTL + 1);
        d->shared_served = missing > k; /* an id missing and not inserted: the shared row */
        d->stale = 1;
    }
    if (!train)
        d->shared_served = 1;
    /* 5. virtual ids; no row: the unadmitted row */
    be->dyn_virtual(total, all, v->slot, v->keys, v->vals, v->cap, t->G, t->shard, train, v->acc);
    if (nseg > 1)
        for (int s = 0, at = 0; s < nseg; at += (int)n[s], s++)
            be->copy(seg[s], all + at, (size_t)n[s] * sizeof *all);
}

void emb_dyn_dev_map(struct emb_table *t, int nseg, int64_t *const *seg, const int64_t *n,
                     int train)
{
    const size_t back = map_begin(t, nseg, seg, n, train);
    if (back) /* the wait */
        t->be->to_host(t->dyn->dv->hmiss, t->dyn->dv->miss, back);
    map_end(t, nseg, seg, n, train);
}

void emb_dyn_dev_map_many(int nt, struct emb_table *const *t, const int *nseg,
                          int64_t *const *const *seg, const int64_t *const *n, int train)
{
    const struct backend_ops *be = t[0]->be;
    struct emb_dyn_dev *v0 = t[0]->dyn->dv;
    size_t *back = xmalloc((size_t)nt * sizeof *back), sum = 0;
    for (int k = 0; k < nt; k++) {
        if (t[k]->be != be)
            fatal("emb_dyn_dev_map_many: table '%s' is in another memory", t[k]->conf.name);
        sum += back[k] = map_begin(t[k], nseg[k], seg[k], n[k], train);
    }
    if (sum) { /* the read-backs end to end, down at once (the one wait) */
        v0->joint = dgrow(be, v0->joint, &v0->joint_b, sum);
        v0->hjoint = hgrow(v0->hjoint, &v0->hjoint_b, sum);
        for (size_t k = 0, at = 0; k < (size_t)nt; at += back[k], k++)
            be->copy(v0->joint + at, t[k]->dyn->dv->miss, back[k]);
        be->to_host(v0->hjoint, v0->joint, sum);
        for (size_t k = 0, at = 0; k < (size_t)nt; at += back[k], k++)
            memcpy(t[k]->dyn->dv->hmiss, v0->hjoint + at, back[k]);
    }
    for (int k = 0; k < nt; k++)
        map_end(t[k], nseg[k], seg[k], n[k], train);
    free(back);
}

int64_t emb_dyn_dev_hits(struct emb_table *t)
{
    struct emb_dyn_dev *v = t->dyn->dv;
    int64_t h;
    t->be->to_host(&h, v->acc, sizeof h);
    t->be->zero(v->acc, sizeof h);
    return h;
}

/* emb_dyn_dev_shared_grad's buffers in the table's memory (a device
 * table's, or a cached one's: emb_cache_dyn.c) */
struct emb_dyn_sg {
    int64_t *lsid;                     /* the shared row's update lists (shard id in front) */
    float *lsg;
    int64_t lcap;
    char *pack, *hpack;                /* [8 + row bytes]: ids[0] and its row, down at once */
    size_t pack_b;
    struct stage *up;                  /* the sum up without a host wait */
};

void emb_dyn_dev_sg_free(struct emb_table *t)
{
    struct emb_dyn_sg *v = t->dyn->sgb;
    if (!v)
        return;
    t->be->free(v->lsid);
    t->be->free(v->lsg);
    t->be->free(v->pack);
    free(v->hpack);
    stage_free(v->up);
    free(v);
    t->dyn->sgb = NULL;
}

void emb_dyn_dev_shared_grad(struct emb_table *t, struct comm *c, int64_t **ids, float **g,
                             int64_t *k, const int64_t *x0, int maybe)
{
    if (!t->dyn->sgb) {
        t->dyn->sgb = xcalloc(1, sizeof *t->dyn->sgb);
        t->dyn->sgb->up = stage_new(t->be);
    }
    struct emb_dyn_sg *v = t->dyn->sgb;
    const struct backend_ops *be = t->be;
    const int w = t->width;
    const size_t row_b = (size_t)w * sizeof(float);
    if (x0) /* train_conf refuses exact sums off the CPU backend */
        fatal("embedding table '%s': exact sums over a table in device memory", t->conf.name);
    if (c->g[COMM_EMB].size == 1) /* the sum over one shard is its own row: nothing to do */
        return;
    int has = 0;
    float *sum = xmalloc(row_b), *g0 = xmalloc(row_b);
    if (*k > 0 && maybe) { /* ids[0] and its gradient: one copy down */
        if (!v->pack) {
            v->pack_b = 8 + row_b;
            v->pack = be->alloc(v->pack_b);
            v->hpack = xmalloc(v->pack_b);
        }
        be->copy(v->pack, *ids, 8);
        be->copy(v->pack + 8, *g, row_b);
        be->to_host(v->hpack, v->pack, v->pack_b);
        int64_t id0;
        memcpy(&id0, v->hpack, 8);
        memcpy(g0, v->hpack + 8, row_b);
        has = id0 == t->shard;
    }
    if (emb_dyn_shared_sum(t, c, has, 0, g0, NULL, sum)) {
        if (has) /* in place */
            stage_up(v->up, *g, sum, row_b);
        else { /* in front of a copy; lsid[0] = the shard's id of the shared row */
            if (v->lcap < *k + 1) {
                be->free(v->lsid);
                be->free(v->lsg);
                v->lcap = 2 * (*k + 1);
                v->lsid = be->alloc((size_t)v->lcap * sizeof *v->lsid);
                v->lsg = be->alloc((size_t)v->lcap * row_b);
                const int64_t sh = t->shard;
                be->to_device(v->lsid, &sh, sizeof sh);
            }
            be->copy(v->lsid + 1, *ids, (size_t)*k * sizeof *v->lsid);
            be->copy(v->lsg + w, *g, (size_t)*k * row_b);
            stage_up(v->up, v->lsg, sum, row_b);
            *ids = v->lsid;
            *g = v->lsg;
            (*k)++;
        }
    }
    free(g0);
    free(sum);
}

/* A device table's restored rows (emb_dyn.h: emb_dyn_put_rows): packed on
 * the host as slot [n], steps [n], w [n, W], state [n, S], up in one copy
 * (one host wait, a block of a checkpoint's rows) into the insert rows'
 * scratch, then index_rows into the slots (steps as pairs of 32-bit
 * words: a copy moves bits). */
static void put_rows_dev(struct emb_table *t, int64_t n, const int64_t *slot, const float *w,
                         const float *state, const int64_t *steps)
{
    struct emb_dyn_dev *v = t->dyn->dv;
    const struct backend_ops *be = t->be;
    const int64_t W = t->width, S = state ? t->state_floats : 0;
    const size_t ib = (size_t)n * sizeof(int64_t), wb = (size_t)(n * W) * sizeof(float);
    const size_t bytes = 2 * ib + wb + (size_t)(n * S) * sizeof(float);
    v->hrows = hgrow(v->hrows, &v->hrows_b, bytes);
    char *h = (char *)v->hrows;
    memcpy(h, slot, ib);
    if (steps && t->steps)
        memcpy(h + ib, steps, ib);
    memcpy(h + 2 * ib, w, wb);
    if (S)
        memcpy(h + 2 * ib + wb, state, (size_t)(n * S) * sizeof(float));
    v->rows = dgrow(be, v->rows, &v->rows_b, bytes);
    char *d = (char *)v->rows;
    be->to_device(d, h, bytes);
    const int64_t *ds = (const int64_t *)d;
    be->index_rows(n, (int)W, (const float *)(d + 2 * ib), NULL, t->w, ds, 0);
    if (S)
        be->index_rows(n, (int)S, (const float *)(d + 2 * ib + wb), NULL, t->state, ds, 0);
    if (steps && t->steps)
        be->index_rows(n, 2, (const float *)(d + ib), NULL, (float *)t->steps, ds, 0);
}

void emb_dyn_put_rows(struct emb_table *t, int64_t n, const int64_t *slot, const float *w,
                      const float *state, const int64_t *steps)
{
    if (t->cache) { /* into the cache's host shard, in one pass (emb_cache.h) */
        emb_cache_set_rows(t, n, slot, w, state, steps);
        return;
    }
    if (!t->dyn->dv) /* a host table's rows are written in place (ckpt_dyn.c) */
        fatal("embedding table '%s': emb_dyn_put_rows on a host table", t->conf.name);
    if (n > 0)
        put_rows_dev(t, n, slot, w, state, steps);
}
