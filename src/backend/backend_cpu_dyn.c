/* backend_cpu_dyn: the CPU reference of the dynamic tables' operations
 * (backend.h, "Dynamic tables in the backend's memory"): the steps of the
 * host table's lookup (embedding/emb_dyn.c: emb_dyn_map) one by one, on
 * arrays of the backend's memory, with the per-element arithmetic of
 * emb_dyn_row.h that the device kernels (cuda/dyn.cu) share. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_cpu.h"
#include "backend/emb_dyn_row.h"
#include "base/check.h"

int64_t cpu_emb_dyn_dedup(int64_t n, const int64_t *ids, int64_t n_first, int G, int64_t *uniq,
                          int64_t *inverse, int64_t *counts)
{
    /* the distinct ids of each chunk ascending (one owner), then regrouped
     * by owner, stably */
    int64_t c1[2];
    const int64_t nu = cpu_emb_dedup(n, ids, n_first, 1, uniq, inverse, c1, 0);
    const int64_t n0 = c1[1]; /* uniq[0 .. n0): chunk 0 */
    memset(counts, 0, (size_t)2 * (size_t)G * sizeof *counts);
    int *own = xmalloc((size_t)(nu > 0 ? nu : 1) * sizeof *own);
    for (int64_t u = 0; u < nu; u++) {
        own[u] = edr_owner(uniq[u], G);
        counts[own[u]]++;
        counts[G + own[u]] += u < n0;
    }
    int64_t *next = xmalloc((size_t)G * 2 * sizeof *next);
    for (int64_t p = 0, at = 0; p < G; at += counts[p], p++) {
        next[p] = at;
        next[G + p] = at + counts[G + p];
    }
    int64_t *to = xmalloc((size_t)(nu > 0 ? nu : 1) * sizeof *to);
    int64_t *out = xmalloc((size_t)(nu > 0 ? nu : 1) * sizeof *out);
    for (int64_t u = 0; u < nu; u++) {
        to[u] = next[(u < n0 ? 0 : G) + own[u]]++;
        out[to[u]] = uniq[u];
    }
    memcpy(uniq, out, (size_t)nu * sizeof *uniq);
    for (int64_t i = 0; i < n; i++)
        inverse[i] = to[inverse[i]];
    free(out);
    free(to);
    free(next);
    free(own);
    return nu;
}

void cpu_dyn_find(int64_t n, const int64_t *ids, const int64_t *keys, const int64_t *vals,
                  int64_t cap, int64_t *slot)
{
    for (int64_t i = 0; i < n; i++)
        slot[i] = edr_get(keys, vals, cap, ids[i]);
}

void cpu_dyn_stamp(int64_t n, const int64_t *slot, int64_t clock, int64_t *last, int64_t *freq)
{
    for (int64_t i = 0; i < n; i++)
        if (slot[i] >= 0 && last[slot[i]] != clock) {
            last[slot[i]] = clock;
            freq[slot[i]]++;
        }
}

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void cpu_dyn_missing(int64_t n, const int64_t *ids, const int64_t *slot, int64_t *out)
{
    int64_t m = 0, *miss = out + 1;
    for (int64_t i = 0; i < n; i++)
        if (slot[i] < 0)
            miss[m++] = ids[i];
    qsort(miss, (size_t)m, sizeof *miss, cmp_i64);
    int64_t d = 0;
    for (int64_t i = 0; i < m; i++)
        if (i == 0 || miss[i] != miss[i - 1])
            miss[d++] = miss[i];
    out[0] = d;
}

void cpu_dyn_insert(int64_t k, const int64_t *ids, const float *rows, int width, int64_t nfree,
                    const int64_t *freel, int64_t next, int64_t clock, int64_t *keys,
                    int64_t *vals, int64_t cap, int64_t *sid, int64_t *last, int64_t *freq,
                    float *w, float *state, int64_t state_floats, int64_t *steps)
{
    const uint64_t mask = (uint64_t)cap - 1;
    for (int64_t i = 0; i < k; i++) {
        const int64_t s = edr_slot(i, nfree, freel, next);
        memcpy(w + s * width, rows + i * width, (size_t)width * sizeof *w);
        if (state_floats)
            memset(state + s * state_floats, 0, (size_t)state_floats * sizeof *state);
        if (steps)
            steps[s] = 0;
        sid[s] = ids[i];
        last[s] = clock;
        freq[s] = 1;
        uint64_t h = edr_home(ids[i], cap);
        while (keys[h] != 0)
            h = (h + 1) & mask;
        keys[h] = ids[i];
        vals[h] = s;
    }
}

void cpu_dyn_rehash(const int64_t *okeys, const int64_t *ovals, int64_t ocap, int64_t *keys,
                    int64_t *vals, int64_t cap)
{
    const uint64_t mask = (uint64_t)cap - 1;
    for (int64_t j = 0; j < ocap; j++)
        if (okeys[j]) {
            uint64_t h = edr_home(okeys[j], cap);
            while (keys[h] != 0)
                h = (h + 1) & mask;
            keys[h] = okeys[j];
            vals[h] = ovals[j];
        }
}

void cpu_dyn_expire(int64_t ttl, int64_t clock, int64_t next, int64_t *sid, const int64_t *last,
                    int64_t *keys, int64_t *vals, int64_t cap, int64_t *freel, int64_t *gone,
                    int64_t *ctl)
{
    edr_expire(ttl, clock, next, sid, last, keys, vals, cap, freel, gone, ctl);
}

void cpu_dyn_admit(int64_t *out, int64_t admit, int64_t clock, int64_t *pkeys, int64_t *pvals,
                   int64_t pcap, int64_t prob_max, int64_t *scratch, int64_t *ctl)
{
    ctl[EDR_MISSING] = out[0];
    out[0] = edr_admit(out[0], out + 1, admit, clock, pkeys, pvals, pcap, &ctl[EDR_PROB],
                       prob_max, scratch);
}

void cpu_dyn_evict_full(int lfu, int64_t clock, int64_t next, int64_t top, const int64_t *out,
                        int64_t *sid, const int64_t *last, const int64_t *freq, int64_t *keys,
                        int64_t *vals, int64_t cap, int64_t *freel, int64_t *gone, int64_t *ctl,
                        int64_t *scratch)
{
    edr_evict_full(lfu, clock, next, top, out[0], sid, last, freq, keys, vals, cap, freel, gone,
                   ctl, scratch);
}

void cpu_dyn_virtual(int64_t n, int64_t *ids, const int64_t *slot, const int64_t *keys,
                     const int64_t *vals, int64_t cap, int G, int shard, int count, int64_t *acc)
{
    int64_t hits = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t s = slot[i] >= 0 ? slot[i] : edr_get(keys, vals, cap, ids[i]);
        if (s < 0) {
            s = 0;
            hits++;
        }
        ids[i] = s * G + shard;
    }
    if (count)
        acc[0] += hits;
}
