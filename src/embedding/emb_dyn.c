/* emb_dyn: a dynamic table's shard: its row pool, the owner's side of a
 * lookup (stamps, eviction, admission, insertion, virtual ids), the shared
 * unadmitted row and the counters; see emb_dyn.h. */
#include "embedding/emb_dyn.h"
#include "embedding/emb_dyn_priv.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/exact.h"
#include "base/log.h"
#include "backend/backend.h"
#include "comm/comm.h"
#include "embedding/emb_cache.h"
#include "embedding/emb_cache_dyn.h"
#include "embedding/emb_exchange_priv.h"
#include "embedding/emb_table.h"

static void *grow0(void *p, size_t old, size_t new)
{
    p = xrealloc(p, new ? new : 1);
    if (new > old)
        memset((char *)p + old, 0, new - old);
    return p;
}

void emb_dyn_pool_resize(struct emb_table *t, int64_t slots)
{
    struct emb_dyn *d = t->dyn;
    const size_t o = (size_t)t->local_rows, n = (size_t)slots, w = (size_t)t->width;
    if (d->dv) /* the rows and statistics in device memory; below: the host's mirror */
        emb_dyn_dev_resize(t, slots);
    else if (t->cache) /* the rows in the cache's host shard (emb_cache_dyn.h) */
        emb_cache_grow(t, slots);
    else {
        t->w = grow0(t->w, o * w * sizeof(float), n * w * sizeof(float));
        if (t->state_floats)
            t->state = grow0(t->state, o * (size_t)t->state_floats * sizeof(float),
                             n * (size_t)t->state_floats * sizeof(float));
        if (t->conf.optim.kind == EMB_OPT_ADAM)
            t->steps = grow0(t->steps, o * sizeof(int64_t), n * sizeof(int64_t));
        t->ready = grow0(t->ready, o ? o / 8 + 1 : 0, n / 8 + 1);
    }
    d->ids = grow0(d->ids, o * sizeof(int64_t), n * sizeof(int64_t));
    d->last = grow0(d->last, o * sizeof(int64_t), n * sizeof(int64_t));
    d->freq = grow0(d->freq, o * sizeof(int64_t), n * sizeof(int64_t));
    d->freel = grow0(d->freel, o * sizeof(int64_t), n * sizeof(int64_t));
    t->local_rows = slots;
    if (t->xs) { /* prefetch's bitmap of slots: remade at its size on next use */
        free(t->xs->touched);
        t->xs->touched = NULL;
    }
}

/* Row `slot` := the initial row of id (0: the unadmitted row), zero state. */
static void row_init(struct emb_table *t, int64_t slot, int64_t id)
{
    if (t->dyn->dv) {
        emb_dyn_dev_row_init(t, slot, id);
        return;
    }
    if (t->cache) {
        emb_cache_dyn_row_init(t, slot, id);
        return;
    }
    emb_init_row_n(&t->conf, id, t->w + slot * t->width, t->width);
    if (t->state_floats)
        memset(t->state + slot * t->state_floats, 0, (size_t)t->state_floats * sizeof(float));
    if (t->steps)
        t->steps[slot] = 0;
    t->ready[slot >> 3] |= (uint8_t)(1u << (slot & 7));
}

void emb_dyn_init(struct emb_table *t)
{
    struct emb_dyn *d = xcalloc(1, sizeof *d);
    const struct emb_dyn_conf *dc = &t->conf.dyn;
    t->dyn = d;
    d->max_slots = dc->capacity > 0 ? (dc->capacity + t->G - 1) / t->G + 1 : 0;
    const int64_t s0 = d->max_slots && d->max_slots < POOL0 ? d->max_slots : POOL0;
    emb_dyn_index_init(&d->ix, 2 * s0);
    if (dc->admit > 1) {
        emb_dyn_index_init(&d->prob, 64);
        d->prob_max = d->max_slots ? 4 * d->max_slots + 1024 : 0;
    }
    t->local_rows = 0;
    if (t->conf.cache > 0) /* the pool in host memory, a cache of it on the device */
        emb_cache_init(t);
    else if (!backend_is_host(t->be))
        emb_dyn_dev_init(t); /* the arrays in device memory (emb_dyn_dev.c) */
    emb_dyn_pool_resize(t, s0);
    row_init(t, 0, 0);
    d->next = 1;
}

void emb_dyn_free(struct emb_table *t)
{
    struct emb_dyn *d = t->dyn;
    if (!d)
        return;
    emb_dyn_dev_free(t);
    emb_dyn_dev_sg_free(t);
    emb_dyn_index_free(&d->ix);
    if (d->prob.keys)
        emb_dyn_index_free(&d->prob);
    free(d->ids);
    free(d->last);
    free(d->freq);
    free(d->freel);
    free(d->sid);
    free(d->sg);
    free(d->gone);
    free(d);
    t->dyn = NULL;
}

static void evict_slot(struct emb_table *t, int64_t s)
{
    struct emb_dyn *d = t->dyn;
    if (d->ngone == d->capgone) {
        d->capgone = d->capgone ? 2 * d->capgone : 1024;
        d->gone = xrealloc(d->gone, (size_t)d->capgone * sizeof *d->gone);
    }
    d->gone[d->ngone++] = d->ids[s];
    if (t->cache) /* its cached row goes with it */
        emb_cache_drop(t, s);
    emb_dyn_index_del(&d->ix, d->ids[s]);
    d->ids[s] = 0;
    if (t->ready)
        t->ready[s >> 3] &= (uint8_t)~(1u << (s & 7));
    d->freel[d->nfree++] = s;
    d->rows--;
    d->st.evicted++;
}

/* Slots free now or by growing the pool. */
static int64_t slots_available(const struct emb_table *t)
{
    const struct emb_dyn *d = t->dyn;
    const int64_t top = d->max_slots ? d->max_slots : INT64_MAX;
    return d->nfree + (top - d->next);
}

/* A free slot (growing the pool by doubling up to its bound), or 0. */
static int64_t slot_take(struct emb_table *t)
{
    struct emb_dyn *d = t->dyn;
    if (d->nfree)
        return d->freel[--d->nfree];
    if (d->next == t->local_rows) {
        if (d->max_slots && t->local_rows >= d->max_slots)
            return 0;
        int64_t n = 2 * t->local_rows;
        if (d->max_slots && n > d->max_slots)
            n = d->max_slots;
        emb_dyn_pool_resize(t, n);
    }
    return d->next++;
}

/* A row for id (slot 0 when the shard is full); init = 0: its row not
 * written (the caller writes it: a device table's restore). */
static int64_t insert_row(struct emb_table *t, int64_t id, int init)
{
    struct emb_dyn *d = t->dyn;
    const int64_t s = slot_take(t);
    if (s == 0)
        return 0;
    if (init)
        row_init(t, s, id);
    d->ids[s] = id;
    d->last[s] = d->clock;
    d->freq[s] = 1;
    emb_dyn_index_put(&d->ix, id, s);
    d->rows++;
    d->st.inserted++;
    return s;
}

static int64_t insert(struct emb_table *t, int64_t id) { return insert_row(t, id, 1); }

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* lru / lfu victims: (key, id, slot) triples ordered by key, then id */
static int cmp_victim(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* Free `need` slots by lru / lfu among the rows not used by this tick or
 * the one before (their update may still come). */
static void evict_full(struct emb_table *t, int64_t need)
{
    struct emb_dyn *d = t->dyn;
    const int lfu = t->conf.dyn.evict == EMB_EVICT_LFU;
    int64_t *c = xmalloc((size_t)(d->next > 0 ? d->next : 1) * 3 * sizeof *c), nc = 0;
    for (int64_t s = 1; s < d->next; s++)
        if (d->ids[s] && d->last[s] < d->clock - 1) {
            c[3 * nc] = lfu ? d->freq[s] : d->last[s];
            c[3 * nc + 1] = d->ids[s];
            c[3 * nc + 2] = s;
            nc++;
        }
    qsort(c, (size_t)nc, 3 * sizeof *c, cmp_victim);
    for (int64_t i = 0; i < nc && i < need; i++)
        evict_slot(t, c[3 * i + 2]);
    free(c);
}

/* admit > 1: the probation list past its bound drops its entries last
 * seen before the median tick (all of them at the median if none is
 * older). */
static void prob_trim(struct emb_dyn *d)
{
    struct emb_dyn_index *p = &d->prob;
    int64_t *st = xmalloc((size_t)p->n * sizeof *st), *k = xmalloc((size_t)p->n * sizeof *k), m = 0;
    for (int64_t h = 0; h < p->cap; h++)
        if (p->keys[h]) {
            k[m] = p->keys[h];
            st[m++] = p->vals[h] >> 16;
        }
    int64_t *sorted = xmalloc((size_t)m * sizeof *sorted);
    memcpy(sorted, st, (size_t)m * sizeof *st);
    qsort(sorted, (size_t)m, sizeof *sorted, cmp_i64);
    const int64_t cut = sorted[m / 2];
    int64_t gone = 0;
    for (int pass = 0; pass < 2 && !gone; pass++)
        for (int64_t i = 0; i < m; i++)
            if (st[i] < cut || (pass && st[i] == cut))
                gone += emb_dyn_index_del(p, k[i]);
    free(sorted);
    free(st);
    free(k);
}

/* admit > 1: one more sighting of id (missing from the index) at this
 * tick; 1 once it is admitted (and off the list). */
static int admitted(struct emb_table *t, int64_t id)
{
    struct emb_dyn *d = t->dyn;
    const int64_t admit = t->conf.dyn.admit;
    if (admit <= 1)
        return 1;
    int64_t *v = emb_dyn_index_at(&d->prob, id);
    const int64_t seen = (v ? (*v & 0xffff) : 0) + 1;
    if (seen >= admit) {
        if (v)
            emb_dyn_index_del(&d->prob, id);
        return 1;
    }
    if (v)
        *v = (d->clock << 16) | seen;
    else {
        if (d->prob_max && d->prob.n >= d->prob_max)
            prob_trim(d);
        emb_dyn_index_put(&d->prob, id, (d->clock << 16) | seen);
    }
    return 0;
}

void emb_dyn_map(struct emb_table *t, int nseg, int64_t *const *seg, const int64_t *n, int train)
{
    struct emb_dyn *d = t->dyn;
    if (d->dv) { /* the same steps as backend operations on the device */
        emb_dyn_dev_map(t, nseg, seg, n, train);
        return;
    }
    const struct emb_dyn_conf *dc = &t->conf.dyn;
    const int64_t G = t->G, sh = t->shard;
    int64_t total = 0;
    for (int s = 0; s < nseg; s++)
        total += n[s];
    /* the slot of every id present (-1: missing); the rows stamped this
     * tick are never evicted by it, so these stay valid */
    int64_t *slot = xmalloc((size_t)(total > 0 ? total : 1) * sizeof *slot), at = 0;
    for (int s = 0; s < nseg; s++)
        for (int64_t i = 0; i < n[s]; i++)
            slot[at++] = emb_dyn_index_get(&d->ix, seg[s][i]);
    if (train) {
        d->clock++;
        /* 1. stamp the rows present; list the ids missing */
        int64_t nm = 0;
        int64_t *miss = xmalloc((size_t)(total > 0 ? total : 1) * sizeof *miss);
        at = 0;
        for (int s = 0; s < nseg; s++)
            for (int64_t i = 0; i < n[s]; i++, at++) {
                if (slot[at] < 0)
                    miss[nm++] = seg[s][i];
                else if (d->last[slot[at]] != d->clock) {
                    d->last[slot[at]] = d->clock;
                    d->freq[slot[at]]++;
                }
            }
        /* 2. ttl: the rows not used in the last S ticks (this one's and
         * the one before's are not: S >= 1) */
        if (dc->evict == EMB_EVICT_TTL)
            for (int64_t s = 1; s < d->next; s++)
                if (d->ids[s] && d->clock - d->last[s] > dc->ttl)
                    evict_slot(t, s);
        /* 3. the missing ids ascending, once each; admission */
        qsort(miss, (size_t)nm, sizeof *miss, cmp_i64);
        int64_t na = 0;
        for (int64_t i = 0; i < nm; i++)
            if ((i == 0 || miss[i] != miss[i - 1]) && admitted(t, miss[i]))
                miss[na++] = miss[i];
        /* 4. room (lru / lfu when full), then the rows */
        const int64_t avail = slots_available(t);
        if (na > avail && (dc->evict == EMB_EVICT_LRU || dc->evict == EMB_EVICT_LFU))
            evict_full(t, na - avail);
        for (int64_t i = 0; i < na; i++)
            insert(t, miss[i]);
        free(miss);
    }
    /* 5. virtual ids; no row: the unadmitted row */
    at = 0;
    d->shared_served = 0;
    for (int s = 0; s < nseg; s++)
        for (int64_t i = 0; i < n[s]; i++, at++) {
            int64_t sl = slot[at] >= 0 ? slot[at] : emb_dyn_index_get(&d->ix, seg[s][i]);
            if (sl < 0) {
                sl = 0;
                d->st.unadmitted_hits += train;
            }
            d->shared_served |= sl == 0;
            seg[s][i] = sl * G + sh;
        }
    free(slot);
}

void emb_dyn_map_tables(int nt, struct emb_table *const *t, const int *nseg,
                        int64_t *const *const *seg, const int64_t *const *n, int train)
{
    int dev = nt > 1;
    for (int k = 0; k < nt; k++)
        dev &= t[k]->dyn->dv != NULL;
    if (dev) { /* one read-back for all */
        emb_dyn_dev_map_many(nt, t, nseg, seg, n, train);
        return;
    }
    for (int k = 0; k < nt; k++)
        emb_dyn_map(t[k], nseg[k], seg[k], n[k], train);
}

/* The host's mirror of a device table current (emb_dyn_dev.c); const:
 * the table's contents do not change. */
static void pull(const struct emb_table *t)
{
    if (t->dyn->dv)
        emb_dyn_dev_pull((struct emb_table *)t);
}

/* The host changed the mirror: the device follows (before its next use). */
static void changed(struct emb_table *t)
{
    if (t->dyn->dv)
        emb_dyn_dev_push(t);
}

void emb_dyn_unmap(const struct emb_table *t, int64_t *ids, int64_t n)
{
    pull(t);
    for (int64_t i = 0; i < n; i++)
        if (ids[i] >= 0)
            ids[i] = t->dyn->ids[ids[i] / t->G];
}

void emb_dyn_rebind(struct emb_table *t, int64_t *ids, int64_t n)
{
    pull(t);
    for (int64_t i = 0; i < n; i++) {
        if (ids[i] < 0)
            continue;
        int64_t slot = ids[i] == 0 ? 0 : emb_dyn_index_get(&t->dyn->ix, ids[i]);
        if (slot < 0 && (slot = insert(t, ids[i])) == 0)
            fatal("embedding table '%s': shard %d is full (embedding.capacity)", t->conf.name,
                  t->shard);
        ids[i] = slot * t->G + t->shard;
    }
    changed(t);
}

void emb_dyn_find(const struct emb_table *t, int64_t *ids, int64_t n)
{
    pull(t);
    for (int64_t i = 0; i < n; i++) {
        const int64_t slot = ids[i] == 0 ? 0 : emb_dyn_index_get(&t->dyn->ix, ids[i]);
        ids[i] = slot < 0 ? -1 : slot * t->G + t->shard;
    }
}

/* The shared row's summed gradient sum[width] into the update's lists:
 * in place when this shard had it (ids[0]), else in front of a copy. */
static void shared_put(struct emb_table *t, int has, const float *sum, int64_t **ids, float **g,
                       int64_t *k)
{
    struct emb_dyn *d = t->dyn;
    const int w = t->width;
    if (!has) { /* the shared row in front of a copy */
        d->sid = xrealloc(d->sid, (size_t)(*k + 1) * sizeof *d->sid);
        d->sg = xrealloc(d->sg, (size_t)(*k + 1) * (size_t)w * sizeof *d->sg);
        memcpy(d->sid + 1, *ids, (size_t)*k * sizeof *d->sid);
        memcpy(d->sg + w, *g, (size_t)*k * (size_t)w * sizeof *d->sg);
        d->sid[0] = t->shard;
        *ids = d->sid;
        *g = d->sg;
        (*k)++;
    }
    memcpy(*g, sum, (size_t)w * sizeof *sum);
}

int emb_dyn_shared_sum(struct emb_table *t, struct comm *c, int has, int exact,
                       const float *g0, const int64_t *x0, float *sum)
{
    const int w = t->width;
    int any = 0;
    if (exact) { /* the limbs as integers (any order) */
        const int64_t nl = (int64_t)w * EXACT_LIMBS;
        int64_t *buf = xcalloc((size_t)nl + 1, sizeof *buf); /* limbs, then the shards that had it */
        if (has) {
            memcpy(buf, x0, (size_t)nl * sizeof *buf);
            buf[nl] = 1;
        }
        comm_allreduce_sum_i64v(c, COMM_EMB, buf, nl + 1);
        if ((any = buf[nl] > 0))
            exact_to_float(buf, w, 0, sum);
        free(buf);
        return any;
    }
    const int G = c->g[COMM_EMB].size;
    float *mine = xcalloc((size_t)w + 1, sizeof *mine);
    float *all = xmalloc((size_t)G * ((size_t)w + 1) * sizeof *all);
    mine[0] = (float)has;
    if (has)
        memcpy(mine + 1, g0, (size_t)w * sizeof *mine);
    comm_allgather_bytes(c, COMM_EMB, mine, ((size_t)w + 1) * sizeof *mine, all);
    double *acc = xcalloc((size_t)w, sizeof *acc);
    for (int p = 0; p < G; p++) /* shard order: the same sum on every rank */
        if (all[p * (w + 1)] != 0) {
            any = 1;
            for (int j = 0; j < w; j++)
                acc[j] += all[p * (w + 1) + 1 + j];
        }
    if (any)
        for (int j = 0; j < w; j++)
            sum[j] = (float)acc[j];
    free(acc);
    free(all);
    free(mine);
    return any;
}

void emb_dyn_shared_grad(struct emb_table *t, struct comm *c, int64_t **ids, float **g,
                         int64_t *k)
{
    emb_dyn_shared_grad_in(t, c, ids, g, k, 1);
}

int emb_dyn_map_shared(const struct emb_table *t)
{
    return t->dyn->dv || t->cache ? t->dyn->shared_served : 1;
}

void emb_dyn_shared_grad_in(struct emb_table *t, struct comm *c, int64_t **ids, float **g,
                            int64_t *k, int maybe)
{
    if (t->dyn->dv || t->cache) { /* lists in device memory */
        emb_dyn_dev_shared_grad(t, c, ids, g, k, NULL, maybe);
        return;
    }
    emb_dyn_shared_grad_host(t, c, ids, g, k);
}

void emb_dyn_shared_grad_host(struct emb_table *t, struct comm *c, int64_t **ids, float **g,
                              int64_t *k)
{
    const int has = *k > 0 && (*ids)[0] == t->shard;
    float *sum = xmalloc((size_t)t->width * sizeof *sum);
    if (emb_dyn_shared_sum(t, c, has, 0, *g, NULL, sum))
        shared_put(t, has, sum, ids, g, k);
    free(sum);
}

void emb_dyn_shared_grad_exact(struct emb_table *t, struct comm *c, int64_t **ids, float **g,
                               int64_t *k, const int64_t *x0)
{
    if (t->dyn->dv) {
        emb_dyn_dev_shared_grad(t, c, ids, g, k, x0, 1);
        return;
    }
    const int has = *k > 0 && (*ids)[0] == t->shard;
    float *sum = xmalloc((size_t)t->width * sizeof *sum);
    if (emb_dyn_shared_sum(t, c, has, 1, NULL, x0, sum))
        shared_put(t, has, sum, ids, g, k);
    free(sum);
}

void emb_dyn_take(struct emb_table *t, struct emb_dyn_stats *out)
{
    struct emb_dyn *d = t->dyn;
    if (d->dv) /* counted on the device */
        d->st.unadmitted_hits += emb_dyn_dev_hits(t);
    *out = d->st;
    out->rows = d->rows;
    out->slots = t->local_rows;
    out->index_cap = d->ix.cap;
    out->bytes = t->local_rows * ((t->width + t->state_floats) * 4 + (t->steps ? 8 : 0) + 4 * 8) +
                 (int64_t)emb_dyn_index_bytes(&d->ix) +
                 (d->prob.keys ? (int64_t)emb_dyn_index_bytes(&d->prob) : 0);
    memset(&d->st, 0, sizeof d->st);
}

int64_t emb_dyn_rows(const struct emb_table *t, int64_t **ids, int64_t **slots)
{
    pull(t);
    const struct emb_dyn *d = t->dyn;
    int64_t *p = xmalloc((size_t)(d->rows > 0 ? d->rows : 1) * 2 * sizeof *p), m = 0;
    for (int64_t s = 1; s < d->next; s++)
        if (d->ids[s]) {
            p[2 * m] = d->ids[s];
            p[2 * m + 1] = s;
            m++;
        }
    qsort(p, (size_t)m, 2 * sizeof *p, cmp_i64); /* by id (the first of each pair) */
    *ids = xmalloc((size_t)(m > 0 ? m : 1) * sizeof **ids);
    *slots = xmalloc((size_t)(m > 0 ? m : 1) * sizeof **slots);
    for (int64_t i = 0; i < m; i++) {
        (*ids)[i] = p[2 * i];
        (*slots)[i] = p[2 * i + 1];
    }
    free(p);
    return m;
}

int64_t emb_dyn_clock(const struct emb_table *t) { return t->dyn->clock; }
void emb_dyn_set_clock(struct emb_table *t, int64_t clock) { t->dyn->clock = clock; }

void emb_dyn_row_stats(const struct emb_table *t, int64_t slot, int64_t *last, int64_t *freq)
{
    pull(t);
    *last = t->dyn->last[slot];
    *freq = t->dyn->freq[slot];
}

int64_t emb_dyn_restore(struct emb_table *t, int64_t id, int64_t last, int64_t freq)
{
    struct emb_dyn *d = t->dyn;
    pull(t);
    if (id == 0 || emb_dyn_index_get(&d->ix, id) >= 0)
        return -1;
    /* a device table's rows come in a batch (emb_dyn_put_rows): not one upload a row */
    const int64_t s = insert_row(t, id, !d->dv && !t->cache);
    if (s == 0)
        fatal("embedding table '%s': shard %d is full (embedding.capacity = %lld, %lld rows per "
              "shard) restoring a checkpoint's rows: raise embedding.capacity", t->conf.name,
              t->shard, (long long)t->conf.dyn.capacity, (long long)(d->max_slots - 1));
    d->st.inserted--; /* restored, not inserted */
    d->last[s] = last;
    d->freq[s] = freq;
    changed(t);
    return s;
}

int64_t emb_dyn_probation(const struct emb_table *t, int64_t **pairs)
{
    pull(t);
    const struct emb_dyn_index *p = &t->dyn->prob;
    int64_t m = 0;
    *pairs = xmalloc((size_t)(p->n > 0 ? p->n : 1) * 2 * sizeof **pairs);
    for (int64_t h = 0; h < p->cap; h++)
        if (p->keys && p->keys[h]) {
            (*pairs)[2 * m] = p->keys[h];
            (*pairs)[2 * m + 1] = p->vals[h];
            m++;
        }
    qsort(*pairs, (size_t)m, 2 * sizeof **pairs, cmp_i64);
    return m;
}

void emb_dyn_probation_put(struct emb_table *t, int64_t id, int64_t value)
{
    pull(t);
    changed(t);
    if (!t->dyn->prob.keys)
        fatal("embedding table '%s': a probation list in the checkpoint, but embedding.admit = "
              "%lld here (resume with the admit it was written with)", t->conf.name,
              (long long)t->conf.dyn.admit);
    emb_dyn_index_put(&t->dyn->prob, id, value);
}

int64_t emb_dyn_delta(const struct emb_table *t, const int64_t **gone, int64_t *since)
{
    pull(t);
    *gone = t->dyn->gone;
    *since = t->dyn->ck_clock;
    return t->dyn->ngone;
}

void emb_dyn_delta_mark(struct emb_table *t)
{
    t->dyn->ck_clock = t->dyn->clock;
    t->dyn->ngone = 0;
}

int64_t emb_dyn_upsert(struct emb_table *t, int64_t id, int64_t last, int64_t freq)
{
    struct emb_dyn *d = t->dyn;
    pull(t);
    const int64_t s = id == 0 ? 0 : emb_dyn_index_get(&d->ix, id);
    if (s < 0)
        return emb_dyn_restore(t, id, last, freq);
    if (s > 0) {
        d->last[s] = last;
        d->freq[s] = freq;
        changed(t);
    }
    return s;
}

void emb_dyn_remove(struct emb_table *t, int64_t id)
{
    struct emb_dyn *d = t->dyn;
    pull(t);
    const int64_t s = emb_dyn_index_get(&d->ix, id);
    if (s <= 0)
        return;
    changed(t);
    if (t->cache)
        emb_cache_drop(t, s);
    emb_dyn_index_del(&d->ix, id);
    d->ids[s] = 0;
    if (t->ready)
        t->ready[s >> 3] &= (uint8_t)~(1u << (s & 7));
    d->freel[d->nfree++] = s;
    d->rows--;
}

void emb_dyn_clear(struct emb_table *t)
{
    struct emb_dyn *d = t->dyn;
    pull(t);
    changed(t);
    for (int64_t s = 1; s < d->next; s++)
        if (d->ids[s])
            emb_dyn_remove(t, d->ids[s]);
    d->nfree = 0; /* every slot but 0 unused, as in a new pool */
    d->next = 1;
    d->ngone = 0;
    emb_dyn_probation_clear(t);
}

void emb_dyn_probation_clear(struct emb_table *t)
{
    struct emb_dyn *d = t->dyn;
    if (!d->prob.keys)
        return;
    pull(t);
    changed(t);
    const int64_t cap = d->prob.cap;
    emb_dyn_index_free(&d->prob);
    emb_dyn_index_init(&d->prob, cap);
}
