/* emb_table: sharded tables, their lazy initialisation and shard slots;
 * see emb_table.h. */
#include "embedding/emb_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "base/rng.h"
#include "embedding/emb_cache.h"
#include "embedding/emb_exchange_priv.h"
#include "embedding/emb_subspace.h"

#define INIT_BLOCK ((int64_t)1 << 16) /* slots initialised per upload (device tables) */

uint64_t emb_name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

void emb_init_row(const struct emb_table_conf *conf, int64_t id, float *row)
{
    emb_init_row_n(conf, id, row, conf->dim);
}

void emb_init_row_n(const struct emb_table_conf *conf, int64_t id, float *row, int n)
{
    struct rng r;
    rng_init(&r, rng_key(conf->seed, emb_name_hash(conf->name), (uint64_t)id));
    for (int j = 0; j < n; j++)
        row[j] = conf->init == EMB_INIT_UNIFORM
                     ? (float)((2.0 * rng_uniform(&r) - 1.0) * conf->init_scale)
                     : (float)(rng_normal(&r) * conf->init_scale);
}

struct emb_table *emb_registry_add(struct emb_registry *r, const struct comm *c,
                                   const struct emb_table_conf *conf)
{
    if (r->n == EMB_MAX_TABLES)
        fatal("embedding: more than %d tables", EMB_MAX_TABLES);
    if (emb_registry_find(r, conf->name))
        fatal("embedding: table '%s' defined twice", conf->name);
    if ((conf->rows < 1 && !conf->dyn.on) || conf->dim < 1)
        fatal("embedding: table '%s' has %lld rows of dim %d", conf->name,
              (long long)conf->rows, conf->dim);
    struct emb_table *t = &r->tables[r->n++];
    memset(t, 0, sizeof *t);
    t->conf = *conf;
    t->index = r->n - 1;
    t->be = conf->placement ? conf->placement : &backend_cpu;
    t->G = conf->replicated ? 1 : c->g[COMM_EMB].size;
    t->shard = conf->replicated ? 0 : c->g[COMM_EMB].rank;
    t->local_rows = conf->rows / t->G + 1;
    t->width = conf->subspace_k > 0 ? conf->subspace_k : conf->dim;
    if (conf->subspace_k > 0) {
        if (!backend_is_host(t->be))
            fatal("embedding table '%s': subspace_k = %d needs host placement "
                  "(embedding.placement = host)", conf->name, conf->subspace_k);
        t->sub = xcalloc(1, sizeof *t->sub);
        emb_subspace_init(t->sub, conf);
    }
    t->state_floats = emb_optim_state_floats(conf->optim.kind, t->width);
    const size_t slots = (size_t)t->local_rows, dim = (size_t)t->width;
    if (conf->dyn.on) { /* a pool of slots behind a hash index (emb_dyn.h), in the
                           table's memory (emb_dyn_dev.c where that is a device's) */
        if (conf->subspace_k > 0)
            fatal("embedding table '%s': a dynamic table is a plain table (subspace_k = 0)",
                  conf->name);
        if (conf->cache > 0 && (backend_is_host(t->be) || conf->replicated))
            fatal("embedding table '%s': a cache needs a device backend and a sharded table",
                  conf->name);
        emb_dyn_init(t);
        return t;
    }
    if (conf->cache > 0) { /* a device cache over a host shard (emb_cache.h; what it
                              cannot cover is refused before: backend_check_cache) */
        emb_cache_init(t);
        return t;
    }
    if (backend_is_host(t->be)) {
        /* calloc: the kernel maps zero pages on first touch, so a shard
         * costs memory only for the rows used (initialisation is lazy) */
        t->w = xcalloc(slots, dim * sizeof(float));
        t->state = t->state_floats ? xcalloc(slots, (size_t)t->state_floats * sizeof(float)) : NULL;
        t->steps = conf->optim.kind == EMB_OPT_ADAM ? xcalloc(slots, sizeof(int64_t)) : NULL;
        t->ready = xcalloc(slots / 8 + 1, 1);
        return t;
    }
    /* device memory (zero-filled), every row initialised now */
    t->w = t->be->alloc(slots * dim * sizeof(float));
    t->state = t->state_floats ? t->be->alloc(slots * (size_t)t->state_floats * sizeof(float)) : NULL;
    t->steps = conf->optim.kind == EMB_OPT_ADAM ? t->be->alloc(slots * sizeof(int64_t)) : NULL;
    float *block = xmalloc((size_t)INIT_BLOCK * dim * sizeof *block);
    for (int64_t k0 = 0; k0 < t->local_rows; k0 += INIT_BLOCK) {
        const int64_t n = k0 + INIT_BLOCK < t->local_rows ? INIT_BLOCK : t->local_rows - k0;
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < n; k++) {
            const int64_t id = (k0 + k) * t->G + t->shard;
            if (id >= 1 && id <= conf->rows)
                emb_init_row(conf, id, block + k * (int64_t)dim);
            else
                memset(block + k * (int64_t)dim, 0, dim * sizeof *block);
        }
        t->be->to_device(t->w + k0 * (int64_t)dim, block, (size_t)n * dim * sizeof *block);
    }
    free(block);
    return t;
}

struct emb_table *emb_registry_find(struct emb_registry *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->tables[i].conf.name, name))
            return &r->tables[i];
    return NULL;
}

void emb_registry_free(struct emb_registry *r)
{
    for (int i = 0; i < r->n; i++) {
        struct emb_table *t = &r->tables[i];
        if (t->cache) {
            emb_cache_free(t);
        } else if (t->ready) { /* host */
            free(t->w);
            free(t->state);
            free(t->steps);
            free(t->ready);
        } else {
            t->be->free(t->w);
            t->be->free(t->state);
            t->be->free(t->steps);
        }
        emb_xstate_free(t);
        emb_dyn_free(t);
        if (t->sub)
            emb_subspace_free(t->sub);
        free(t->sub);
    }
    r->n = 0;
}

float *emb_shard_slot(struct emb_table *t, int64_t id)
{
    if (!t->ready)
        fatal("embedding: table '%s' lives in %s memory: no host access to its rows",
              t->conf.name, t->be->name);
    int64_t k = id / t->G;
    float *w = t->w + k * t->width;
    /* threads may initialise different rows whose bits share a byte (the
     * sparse update runs in parallel over distinct ids): atomic bit ops */
    const uint8_t bit = (uint8_t)(1u << (k & 7));
    if (!(__atomic_load_n(&t->ready[k >> 3], __ATOMIC_RELAXED) & bit)) {
        emb_init_row_n(&t->conf, id, w, t->width);
        __atomic_fetch_or(&t->ready[k >> 3], bit, __ATOMIC_RELAXED);
    }
    return w;
}

void emb_table_ready(struct emb_table *t, const int64_t *ids, int64_t n)
{
    if (!t->ready)
        return; /* a device table is initialised at creation */
#pragma omp parallel for schedule(static) if (n >= 256)
    for (int64_t i = 0; i < n; i++)
        emb_shard_slot(t, ids[i]);
}

int64_t emb_table_vslots(const struct emb_table *t)
{
    const int64_t c = t->cache ? emb_cache_slots(t) : 0;
    return c > t->local_rows ? c : t->local_rows;
}

int64_t emb_table_key_max(const struct emb_table *t)
{
    return t->dyn ? emb_table_vslots(t) * t->G : t->conf.rows;
}

void emb_shard_row(struct emb_table *t, int64_t id, float *row)
{
    if (t->dyn)
        fatal("embedding: table '%s' is dynamic: its rows are reached by id through its index",
              t->conf.name);
    if (id < 1 || id > t->conf.rows || id % t->G != t->shard)
        fatal("embedding: table '%s': id %lld is not in shard %d", t->conf.name, (long long)id,
              t->shard);
    emb_table_get_slots(t, id / t->G, 1, row, NULL, NULL);
}

static void slots_check(const struct emb_table *t, int64_t slot0, int64_t n)
{
    if (slot0 < 0 || n < 0 || slot0 + n > t->local_rows)
        fatal("embedding: table '%s': slots [%lld, %lld) outside the shard's %lld", t->conf.name,
              (long long)slot0, (long long)(slot0 + n), (long long)t->local_rows);
}

/* A subspace table's rows F(i) + U c[i] of slots [slot0, slot0 + n): w [n, dim] */
static void subspace_rows(struct emb_table *t, int64_t slot0, int64_t n, float *w)
{
    const int d = t->conf.dim, k = t->width;
    float *c = xmalloc((size_t)k * sizeof *c);
    for (int64_t s = 0; s < n; s++) {
        const int64_t id = (slot0 + s) * t->G + t->shard;
        if (id < 1 || id > t->conf.rows) {
            memset(w + s * d, 0, (size_t)d * sizeof *w);
            continue;
        }
        memcpy(c, t->w + (slot0 + s) * k, (size_t)k * sizeof *c);
        emb_subspace_expand(t->sub, &t->conf, 1, &id, c, w + s * d);
    }
    free(c);
}

/* get_slots (rows: the rows themselves) and get_stored (the stored values) */
static void get_slots(struct emb_table *t, int64_t slot0, int64_t n, float *w, float *state,
                      int64_t *steps, int rows)
{
    slots_check(t, slot0, n);
    if (t->cache) { /* the host shard, resident rows from their slots */
        emb_cache_get(t, slot0, n, w, state, steps);
        return;
    }
    const int64_t dim = t->width, sf = t->state_floats;
    if (t->ready && !t->dyn) /* host: initialise the rows not used yet (a dynamic pool's are) */
        for (int64_t k = 0; k < n; k++) {
            const int64_t id = (slot0 + k) * t->G + t->shard;
            if (id >= 1 && id <= t->conf.rows)
                emb_shard_slot(t, id);
        }
    if (w && n && t->sub && rows)
        subspace_rows(t, slot0, n, w);
    else if (w && n)
        t->be->to_host(w, t->w + slot0 * dim, (size_t)(n * dim) * sizeof *w);
    if (state && n && sf)
        t->be->to_host(state, t->state + slot0 * sf, (size_t)(n * sf) * sizeof *state);
    if (steps && n) {
        if (t->steps)
            t->be->to_host(steps, t->steps + slot0, (size_t)n * sizeof *steps);
        else
            memset(steps, 0, (size_t)n * sizeof *steps);
    }
}

void emb_table_get_slots(struct emb_table *t, int64_t slot0, int64_t n, float *w, float *state,
                         int64_t *steps)
{
    get_slots(t, slot0, n, w, state, steps, 1);
}

void emb_table_get_stored(struct emb_table *t, int64_t slot0, int64_t n, float *w, float *state,
                          int64_t *steps)
{
    get_slots(t, slot0, n, w, state, steps, 0);
}

void emb_table_get_rows(struct emb_table *t, int64_t n, const int64_t *slot, float *w,
                        float *state, int64_t *steps)
{
    for (int64_t i = 0; i < n; i++)
        slots_check(t, slot[i], 1);
    if (t->cache) {
        emb_cache_get_rows(t, n, slot, w, state, steps);
        return;
    }
    const int64_t W = t->width, S = t->state_floats;
    for (int64_t i = 0; i < n; i++)
        get_slots(t, slot[i], 1, w ? w + i * W : NULL, state ? state + i * S : NULL,
                  steps ? steps + i : NULL, 0);
}

void emb_table_set_slots(struct emb_table *t, int64_t slot0, int64_t n, const float *w,
                         const float *state, const int64_t *steps)
{
    slots_check(t, slot0, n);
    if (t->cache) {
        emb_cache_set(t, slot0, n, w, state, steps);
        return;
    }
    const int64_t dim = t->width, sf = t->state_floats;
    if (w && n)
        t->be->to_device(t->w + slot0 * dim, w, (size_t)(n * dim) * sizeof *w);
    if (state && n && sf)
        t->be->to_device(t->state + slot0 * sf, state, (size_t)(n * sf) * sizeof *state);
    if (steps && n && t->steps)
        t->be->to_device(t->steps + slot0, steps, (size_t)n * sizeof *steps);
    if (t->ready && w) /* host: these rows are set */
        for (int64_t k = slot0; k < slot0 + n; k++)
            __atomic_fetch_or(&t->ready[k >> 3], (uint8_t)(1u << (k & 7)), __ATOMIC_RELAXED);
}

int emb_check_ids(const struct emb_table_conf *conf, const int64_t *ids, int64_t n, int rank,
                  char *err, size_t errlen)
{
    if (conf->dyn.on) { /* raw ids: 1 .. 2^63 - 1 (0 is padding; the engine's sorts take
                           non-negative keys), below a known bound */
        for (int64_t i = 0; i < n; i++)
            if (ids[i] < 1 || (conf->rows > 0 && ids[i] > conf->rows))
                return errorf(err, errlen,
                              "embedding table '%s' (dynamic): id %lld (token %lld, requested by "
                              "rank %d) is not positive or above the dataset's %lld",
                              conf->name, (long long)ids[i], (long long)i, rank,
                              (long long)conf->rows);
        return 0;
    }
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 1 || ids[i] > conf->rows)
            return errorf(err, errlen,
                          "embedding table '%s': id %lld (token %lld, requested by rank %d) is "
                          "outside 1..%lld",
                          conf->name, (long long)ids[i], (long long)i, rank,
                          (long long)conf->rows);
    return 0;
}

double emb_shard_bytes(double slots, int width, enum emb_optimizer kind, int dyn)
{
    const double sf = (double)emb_optim_state_floats(kind, width);
    const double row = ((double)width + sf) * 4.0 + (kind == EMB_OPT_ADAM ? 8.0 : 0.0);
    if (!dyn)
        return slots * row;
    double ix = 16;
    while (ix < 2 * slots)
        ix *= 2;
    return slots * (row + 32.0) + ix * 16.0;
}

void emb_table_wire_take(struct emb_table *t, struct comm *c, struct emb_wire_stats *out)
{
    struct emb_wire_stats *w = &t->wire;
    emb_xstate_wire(t); /* the figures counted in the table's memory */
    int64_t v[9] = {w->lookups,     w->rows, w->grads,   w->rows_xnode,
                    w->grads_xnode, w->fp32, w->pf_rows, w->pf_late, w->backwards};
    comm_allreduce_sum_i64v(c, COMM_WORLD, v, 9);
    *out = (struct emb_wire_stats){.lookups = v[0] / c->size, .rows = v[1], .grads = v[2],
                                   .rows_xnode = v[3], .grads_xnode = v[4], .fp32 = v[5],
                                   .pf_rows = v[6], .pf_late = v[7],
                                   .backwards = v[8] / c->size};
    memset(w, 0, sizeof *w);
}
