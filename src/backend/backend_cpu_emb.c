/* backend_cpu_emb: the CPU reference of the embedding engine's operations
 * (backend.h: emb_dedup, emb_gather_shard, emb_sum_by_id,
 * emb_sparse_update). Everything is built on one stable radix sort of
 * (key, position) pairs, the way the CUDA backend does it with CUB, so the
 * two give the same orders and the same sums. */
#include <stdlib.h>
#include <string.h>

#include "backend/backend_cpu.h"
#include "base/check.h"
#include "embedding/emb_optim.h"

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

int64_t cpu_emb_dedup(int64_t n, const int64_t *ids, int64_t n_first, int G, int64_t *uniq,
                      int64_t *inverse, int64_t *counts)
{
    /* tokens by id (stable: a group's first token is its first occurrence) */
    int64_t *pos = iota(n);
    radix_sort(n, ids, pos);
    int64_t nu = 0;
    int64_t *first = xmalloc((size_t)(n ? n : 1) * sizeof *first); /* [nu] */
    int64_t *group = xmalloc((size_t)(n ? n : 1) * sizeof *group); /* [nu] bucket key */
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || ids[pos[i]] != ids[pos[i - 1]]) {
            first[nu] = i;
            group[nu] = (ids[pos[i]] % G) * 2 + (pos[i] < n_first ? 0 : 1);
            nu++;
        }
        inverse[pos[i]] = nu - 1; /* index among the id-sorted uniques, for now */
    }
    /* unique ids by (owner, chunk), ascending id within each (stable) */
    int64_t *order = iota(nu), *rank = xmalloc((size_t)(nu ? nu : 1) * sizeof *rank);
    radix_sort(nu, group, order);
    memset(counts, 0, (size_t)2 * (size_t)G * sizeof *counts);
    for (int64_t u = 0; u < nu; u++) {
        int64_t s = order[u];
        uniq[u] = ids[pos[first[s]]];
        rank[s] = u;
        counts[group[s] / 2]++;
        if (group[s] % 2 == 0)
            counts[G + group[s] / 2]++;
    }
    for (int64_t i = 0; i < n; i++)
        inverse[i] = rank[inverse[i]];
    free(rank);
    free(order);
    free(group);
    free(first);
    free(pos);
    return nu;
}

void cpu_emb_gather_shard(int64_t n, int dim, const float *w, const int64_t *ids, int G,
                          float *out)
{
    for (int64_t i = 0; i < n; i++)
        memcpy(out + i * dim, w + ids[i] / G * dim, (size_t)dim * sizeof *out);
}

void cpu_emb_sum_by_id(int64_t n, int dim, const int64_t *keys, const float *g, int64_t *uid,
                       float *out)
{
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
