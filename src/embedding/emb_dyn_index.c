/* emb_dyn_index: the hash index of a dynamic table's shard (open
 * addressing, linear probing, backward-shift deletion), the owner's mix,
 * the requester's grouping by owner and the parameters' checks; see
 * emb_dyn.h. */
#include "embedding/emb_dyn.h"

#include <stdlib.h>
#include <string.h>

#include "backend/backend_cpu.h"
#include "backend/emb_dyn_row.h"
#include "base/check.h"
#include "base/log.h"

uint64_t emb_dyn_mix(int64_t id) { return edr_mix(id); }

/* The index's home of a key (emb_dyn_row.h: the device's too). */
static uint64_t home(int64_t key, int64_t cap) { return edr_home(key, cap); }

void emb_dyn_index_init(struct emb_dyn_index *ix, int64_t cap)
{
    int64_t c = 16;
    while (c < cap)
        c *= 2;
    ix->cap = c;
    ix->n = 0;
    ix->keys = xcalloc((size_t)c, sizeof *ix->keys);
    ix->vals = xmalloc((size_t)c * sizeof *ix->vals);
}

void emb_dyn_index_free(struct emb_dyn_index *ix)
{
    free(ix->keys);
    free(ix->vals);
    memset(ix, 0, sizeof *ix);
}

size_t emb_dyn_index_bytes(const struct emb_dyn_index *ix)
{
    return (size_t)ix->cap * 2 * sizeof(int64_t);
}

int64_t *emb_dyn_index_at(const struct emb_dyn_index *ix, int64_t key)
{
    const uint64_t mask = (uint64_t)ix->cap - 1;
    for (uint64_t h = home(key, ix->cap);; h = (h + 1) & mask) {
        if (ix->keys[h] == key)
            return &ix->vals[h];
        if (ix->keys[h] == 0)
            return NULL;
    }
}

int64_t emb_dyn_index_get(const struct emb_dyn_index *ix, int64_t key)
{
    const int64_t *v = emb_dyn_index_at(ix, key);
    return v ? *v : -1;
}

static void put(struct emb_dyn_index *ix, int64_t key, int64_t val)
{
    const uint64_t mask = (uint64_t)ix->cap - 1;
    for (uint64_t h = home(key, ix->cap);; h = (h + 1) & mask)
        if (ix->keys[h] == key || ix->keys[h] == 0) {
            ix->n += ix->keys[h] == 0;
            ix->keys[h] = key;
            ix->vals[h] = val;
            return;
        }
}

void emb_dyn_index_put(struct emb_dyn_index *ix, int64_t key, int64_t val)
{
    if (key == 0)
        fatal("emb_dyn_index_put: key 0 (the empty mark)");
    if (2 * (ix->n + 1) > ix->cap) { /* double and re-insert */
        struct emb_dyn_index old = *ix;
        emb_dyn_index_init(ix, old.cap * 2);
        for (int64_t h = 0; h < old.cap; h++)
            if (old.keys[h])
                put(ix, old.keys[h], old.vals[h]);
        emb_dyn_index_free(&old);
    }
    put(ix, key, val);
}

int emb_dyn_index_del(struct emb_dyn_index *ix, int64_t key)
{
    const uint64_t mask = (uint64_t)ix->cap - 1;
    uint64_t h = home(key, ix->cap);
    for (;; h = (h + 1) & mask) {
        if (ix->keys[h] == 0)
            return 0;
        if (ix->keys[h] == key)
            break;
    }
    /* backward shift: pull later entries of the run into the hole when
     * their home is not between the hole and them */
    uint64_t hole = h;
    for (uint64_t j = (h + 1) & mask; ix->keys[j] != 0; j = (j + 1) & mask) {
        const uint64_t k = home(ix->keys[j], ix->cap);
        const int movable = hole <= j ? (k <= hole || k > j) : (k <= hole && k > j);
        if (movable) {
            ix->keys[hole] = ix->keys[j];
            ix->vals[hole] = ix->vals[j];
            hole = j;
        }
    }
    ix->keys[hole] = 0;
    ix->n--;
    return 1;
}

int64_t emb_dyn_dedup(int64_t n, const int64_t *ids, int64_t n_first, int G, int64_t *uniq,
                      int64_t *inverse, int64_t *counts)
{
    return cpu_emb_dyn_dedup(n, ids, n_first, G, uniq, inverse, counts);
}

int emb_dyn_parse_evict(const char *s, struct emb_dyn_conf *dc, char *err, size_t errlen)
{
    dc->ttl = 0;
    if (!strcmp(s, "none"))
        dc->evict = EMB_EVICT_NONE;
    else if (!strcmp(s, "lru"))
        dc->evict = EMB_EVICT_LRU;
    else if (!strcmp(s, "lfu"))
        dc->evict = EMB_EVICT_LFU;
    else if (!strncmp(s, "ttl:", 4)) {
        char *end;
        const long long v = strtoll(s + 4, &end, 10);
        if (end == s + 4 || *end)
            return errorf(err, errlen, "embedding.evict = %s: ttl:S needs a whole number S of "
                          "steps, and '%s' is not a number", s, s + 4);
        if (v < 1)
            return errorf(err, errlen, "embedding.evict = %s: ttl:S needs S >= 1 steps (a row "
                          "not looked up for S steps is evicted)", s);
        dc->evict = EMB_EVICT_TTL;
        dc->ttl = v;
    } else
        return errorf(err, errlen, "embedding.evict = %s: expected none, ttl:S, lru or lfu", s);
    return 0;
}

int emb_dyn_check(const struct emb_dyn_conf *dc, const char *table, int G, int replicas,
                  char *err, size_t errlen)
{
    if (!dc->on)
        return 0;
    if (dc->capacity > 0 && dc->capacity < G)
        return errorf(err, errlen, "embedding.capacity = %lld: table '%s' needs at least one row "
                      "per shard (%d shards)", (long long)dc->capacity, table, G);
    if ((dc->evict == EMB_EVICT_LRU || dc->evict == EMB_EVICT_LFU) && dc->capacity == 0)
        return errorf(err, errlen, "embedding.evict = %s: table '%s' needs a capacity "
                      "(embedding.capacity > 0) to be full", dc->evict == EMB_EVICT_LRU ? "lru" : "lfu",
                      table);
    if (replicas > 1 && (dc->admit > 1 || dc->evict != EMB_EVICT_NONE || dc->capacity > 0))
        return errorf(err, errlen, "table '%s': a dynamic table with embedding groups (%d "
                      "replicas of each shard) takes only embedding.admit = 1, evict = none and "
                      "capacity = 0 (the replicas of a shard see different ids)", table, replicas);
    return 0;
}
