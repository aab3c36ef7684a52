/* backend_cpu_emb: the CPU reference of the embedding engine's operations
 * (backend.h: emb_dedup, emb_gather_shard, emb_sum_by_id,
 * emb_sparse_update). The orders and sums are the ones backend.h defines
 * (ascending ids within each owner and chunk, sums in input order), which
 * the CUDA backend reaches with CUB's sorts: the same bits on both. The
 * sums go through one stable radix sort of (key, position) pairs; the
 * de-duplication, on the critical path of every step, marks first
 * occurrences in a slot table and sorts only the distinct ids. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_cpu.h"
#include "base/check.h"
#include "base/simd.h"
#include "backend/emb_optim.h"

/* Sort pos[n] (initially 0..n-1, or any order) stably by key[pos[i]]
 * (keys >= 0), least significant byte first: 256 buckets a pass (cheap
 * for the small calls of small steps), as many passes as the largest key
 * has bytes. */
static void radix_sort(int64_t n, const int64_t *key, int64_t *pos)
{
    int64_t kmax = 0;
    for (int64_t i = 0; i < n; i++)
        kmax = key[i] > kmax ? key[i] : kmax;
    int64_t *tmp = xmalloc((size_t)(n ? n : 1) * sizeof *tmp);
    size_t count[257];
    for (int shift = 0; shift < 64 && (kmax >> shift) != 0; shift += 8) {
        memset(count, 0, sizeof count);
        for (int64_t i = 0; i < n; i++)
            count[((uint64_t)key[pos[i]] >> shift & 0xff) + 1]++;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (int64_t i = 0; i < n; i++)
            tmp[count[(uint64_t)key[pos[i]] >> shift & 0xff]++] = pos[i];
        memcpy(pos, tmp, (size_t)n * sizeof *pos);
    }
    free(tmp);
}

static int64_t *iota(int64_t n)
{
    int64_t *p = xmalloc((size_t)(n ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        p[i] = i;
    return p;
}

/* --- de-duplication ------------------------------------------------------------
 *
 * One pass over the tokens finds the distinct ids in order of first
 * occurrence (an id is in chunk 0 iff its first occurrence is among the
 * first n_first tokens), marking each in a slot table: indexed by the id
 * itself when the ids are dense enough (the table's rows bound them), else
 * an open-addressing map. Only the distinct ids are then sorted (by scanning
 * the dense table in id order, or by a radix sort of their values), bucketed
 * by (owner, chunk) with a stable counting sort, and their final positions
 * written back into the slots, from which one more pass over the tokens
 * reads the inverse index. The result is the one the contract defines
 * (backend.h), whatever the path. The slot tables are kept between calls
 * (cleared slot by slot after each), so a call allocates nothing of the
 * tokens' size. */

struct dedup_slots {
    int32_t *dense;    /* [dense_n] by id; 0 = unseen */
    int64_t dense_n;
    int64_t *hkeys;    /* [hcap] open addressing; hvals 0 = empty */
    int64_t *hvals;
    uint64_t hcap;
};

/* The engine's scratch: calls come from one thread at a time (the trainer's
 * main thread); `busy` makes a concurrent or nested call use its own. */
static struct dedup_slots dedup_scratch;
static atomic_flag dedup_busy = ATOMIC_FLAG_INIT;

static void dedup_slots_free(struct dedup_slots *sl)
{
    free(sl->dense);
    free(sl->hkeys);
    free(sl->hvals);
    memset(sl, 0, sizeof *sl);
}

/* Dense when a table of kmax + 1 int32 is at most ~8 per token (or 4 MiB),
 * and the positions fit int32. */
static int dedup_dense(int64_t n, int64_t kmax)
{
    return n < INT32_MAX && kmax < INT32_MAX && kmax + 1 <= (n * 8 > (1 << 20) ? n * 8 : (1 << 20));
}

static void dedup_slots_reserve(struct dedup_slots *sl, int dense, int64_t n, int64_t kmax)
{
    if (dense && sl->dense_n < kmax + 1) {
        free(sl->dense);
        sl->dense_n = kmax + 1 + (kmax + 1) / 4;
        sl->dense = xcalloc((size_t)sl->dense_n, sizeof *sl->dense);
    }
    if (!dense && sl->hcap < 2 * (uint64_t)n) {
        uint64_t cap = 1024;
        while (cap < 2 * (uint64_t)n)
            cap <<= 1;
        free(sl->hkeys);
        free(sl->hvals);
        sl->hkeys = xmalloc(cap * sizeof *sl->hkeys);
        sl->hvals = xcalloc(cap, sizeof *sl->hvals);
        sl->hcap = cap;
    }
}

/* The map's slot of id (inserted empty if absent). */
static inline int64_t *dedup_hslot(struct dedup_slots *sl, int64_t id)
{
    const uint64_t mask = sl->hcap - 1;
    for (uint64_t h = ((uint64_t)id * 0x9e3779b97f4a7c15ull) >> 20;; h++) {
        uint64_t s = h & mask;
        if (sl->hvals[s] == 0) {
            sl->hkeys[s] = id;
            return &sl->hvals[s];
        }
        if (sl->hkeys[s] == id)
            return &sl->hvals[s];
    }
}

/* v[n] (distinct, >= 0) sorted ascending by LSD radix passes of 8 bits,
 * ping-ponging with tmp[n]; returns the buffer that holds the result. */
static int64_t *radix_sort_values(int64_t n, int64_t kmax, int64_t *v, int64_t *tmp)
{
    size_t count[257];
    for (int shift = 0; shift < 64 && (kmax >> shift) != 0; shift += 8) {
        memset(count, 0, sizeof count);
        for (int64_t i = 0; i < n; i++)
            count[((uint64_t)v[i] >> shift & 0xff) + 1]++;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (int64_t i = 0; i < n; i++)
            tmp[count[(uint64_t)v[i] >> shift & 0xff]++] = v[i];
        int64_t *t = v;
        v = tmp;
        tmp = t;
    }
    return v;
}

/* The slot of an id: 1 + its chunk while marking, then 1 + its position in
 * uniq (0 = unseen). */
static inline int64_t dedup_get(struct dedup_slots *sl, int dense, int64_t id)
{
    return dense ? sl->dense[id] : *dedup_hslot(sl, id);
}

static inline void dedup_set(struct dedup_slots *sl, int dense, int64_t id, int64_t v)
{
    if (dense)
        sl->dense[id] = (int32_t)v;
    else
        *dedup_hslot(sl, id) = v;
}

int64_t cpu_emb_dedup(int64_t n, const int64_t *ids, int64_t n_first, int G, int64_t *uniq,
                      int64_t *inverse, int64_t *counts, int64_t key_max)
{
    (void)key_max; /* a device's sort bound; the host finds its own */
    int64_t kmax = 0;
    for (int64_t i = 0; i < n; i++)
        kmax = ids[i] > kmax ? ids[i] : kmax;
    const int dense = dedup_dense(n, kmax);
    struct dedup_slots own = {0}, *sl = &own;
    const int shared = !atomic_flag_test_and_set(&dedup_busy);
    if (shared)
        sl = &dedup_scratch;
    dedup_slots_reserve(sl, dense, n, kmax);

    /* 1. the distinct ids in order of first occurrence into uniq, marked */
    int64_t nu = 0;
    if (dense) {
        int32_t *tab = sl->dense;
        for (int64_t i = 0; i < n; i++)
            if (tab[ids[i]] == 0) {
                tab[ids[i]] = i < n_first ? 1 : 2;
                uniq[nu++] = ids[i];
            }
    } else {
        for (int64_t i = 0; i < n; i++) {
            int64_t *v = dedup_hslot(sl, ids[i]);
            if (*v == 0) {
                *v = i < n_first ? 1 : 2;
                uniq[nu++] = ids[i];
            }
        }
    }

    /* 2. the distinct ids ascending, in inverse (free until step 5): a scan
     * of the dense table where it is not much longer than the list */
    int64_t *sorted = inverse;
    if (dense && kmax + 1 <= 4 * nu + 4096) {
        int64_t k = 0;
        for (int64_t id = 0; id <= kmax; id++)
            if (sl->dense[id])
                sorted[k++] = id;
    } else {
        memcpy(sorted, uniq, (size_t)nu * sizeof *uniq);
        sorted = radix_sort_values(nu, kmax, sorted, uniq);
    }

    /* 3. counts per owner and per (owner, chunk 0); the groups' starts */
    memset(counts, 0, (size_t)2 * (size_t)G * sizeof *counts);
    for (int64_t u = 0; u < nu; u++) {
        const int64_t id = sorted[u];
        counts[id % G]++;
        counts[G + id % G] += dedup_get(sl, dense, id) == 1;
    }
    int64_t *next = xmalloc((size_t)G * 2 * sizeof *next); /* [G] chunk 0, [G] chunk 1 */
    for (int64_t p = 0, at = 0; p < G; at += counts[p], p++) {
        next[p] = at;
        next[G + p] = at + counts[G + p];
    }
    /* 4. stable scatter into (owner, chunk) groups; the slot takes the position */
    int64_t *out = sorted == uniq ? inverse : uniq; /* not the buffer being read */
    for (int64_t u = 0; u < nu; u++) {
        const int64_t id = sorted[u];
        const int64_t at = next[(dedup_get(sl, dense, id) == 2 ? G : 0) + id % G]++;
        out[at] = id;
        dedup_set(sl, dense, id, at + 1);
    }
    free(next);
    if (out != uniq)
        memcpy(uniq, out, (size_t)nu * sizeof *uniq);

    /* 5. the inverse index, then the slots cleared for the next call */
    if (dense) {
        const int32_t *tab = sl->dense;
        for (int64_t i = 0; i < n; i++)
            inverse[i] = tab[ids[i]] - 1;
        for (int64_t u = 0; u < nu; u++)
            sl->dense[uniq[u]] = 0;
    } else {
        for (int64_t i = 0; i < n; i++)
            inverse[i] = *dedup_hslot(sl, ids[i]) - 1;
        const uint64_t mask = sl->hcap - 1;
        for (int64_t u = 0; u < nu; u++) /* every key goes, so no probe chain is cut short */
            for (uint64_t h = ((uint64_t)uniq[u] * 0x9e3779b97f4a7c15ull) >> 20;; h++)
                if (sl->hvals[h & mask] != 0 && sl->hkeys[h & mask] == uniq[u]) {
                    sl->hvals[h & mask] = 0;
                    break;
                }
    }
    if (shared)
        atomic_flag_clear(&dedup_busy);
    else
        dedup_slots_free(&own);
    return nu;
}

FS_SIMD
void cpu_emb_gather_shard(int64_t n, int dim, const float *w, const int64_t *ids, int G,
                          float *out)
{
    for (int64_t i = 0; i < n; i++) /* rows of dim floats: a loop, not a call each */
        for (int j = 0; j < dim; j++)
            out[i * dim + j] = w[ids[i] / G * dim + j];
}

void cpu_emb_sum_by_id(int64_t n, int dim, const int64_t *keys, const float *g, int64_t *uid,
                       float *out, int64_t key_max)
{
    (void)key_max;
    int64_t *pos = iota(n);
    radix_sort(n, keys, pos);
    double *acc = xmalloc((size_t)dim * sizeof *acc);
    int64_t k = 0;
    for (int64_t i = 0; i < n;) {
        int64_t key = keys[pos[i]];
        memset(acc, 0, (size_t)dim * sizeof *acc);
        for (; i < n && keys[pos[i]] == key; i++)
            for (int j = 0; j < dim; j++)
                acc[j] += g[pos[i] * dim + j];
        uid[k] = key;
        for (int j = 0; j < dim; j++)
            out[k * dim + j] = (float)acc[j];
        k++;
    }
    for (int64_t u = k; u < n; u++)
        uid[u] = -1; /* k stays with the data: the update skips these */
    free(acc);
    free(pos);
}

void cpu_emb_sparse_update(const struct emb_optim_conf *opt, int64_t k, int dim,
                           const int64_t *ids, int G, const float *g, float *w, float *state,
                           int64_t state_floats, int64_t *steps)
{
    /* distinct rows: in parallel, bitwise the same as in order */
#pragma omp parallel for schedule(static) if (k >= 256)
    for (int64_t i = 0; i < k; i++) {
        if (ids[i] < 0)
            continue; /* past the distinct ids of emb_sum_by_id */
        int64_t slot = ids[i] / G;
        emb_optim_row(opt, dim, w + slot * dim, state ? state + slot * state_floats : NULL,
                      steps ? steps + slot : NULL, g + i * dim);
    }
}
