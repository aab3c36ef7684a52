/* test_emb_engine: the CPU reference of the embedding engine's operations
 * (backend.h: emb_dedup, emb_gather_shard, emb_sum_by_id,
 * emb_sparse_update) against their definitions, written out naively here:
 * random ids, empty inputs, all-duplicate ids, ids owned by one rank,
 * chunk boundaries at 0, inside and at the end. (CUDA against these: in
 * test_backend_ops.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/check.h"
#include "base/rng.h"
#include "backend/emb_optim.h"
#include "expect.h"


/* The bucket of a unique id: (owner, chunk); chunk 0 iff it occurs among
 * the first n_first tokens. */
static int64_t bucket(const int64_t *ids, int64_t n_first, int G, int64_t id)
{
    int chunk = 1;
    for (int64_t i = 0; i < n_first; i++)
        if (ids[i] == id)
            chunk = 0;
    return (id % G) * 2 + chunk;
}

static void check_dedup(const int64_t *ids, int64_t n, int64_t n_first, int G, const char *cas)
{
    int64_t *uniq = xmalloc((size_t)(n + 1) * 8), *inv = xmalloc((size_t)(n + 1) * 8);
    int64_t *counts = xmalloc((size_t)2 * G * 8);
    int64_t nu = backend_cpu.emb_dedup(n, ids, n_first, G, uniq, inv, counts, 0);
    /* every token maps to its id */
    for (int64_t i = 0; i < n; i++)
        EXPECT(inv[i] >= 0 && inv[i] < nu && uniq[inv[i]] == ids[i], "%s: token %lld", cas,
               (long long)i);
    /* distinct, and in (owner, chunk, id) order */
    for (int64_t u = 1; u < nu; u++) {
        int64_t b0 = bucket(ids, n_first, G, uniq[u - 1]), b1 = bucket(ids, n_first, G, uniq[u]);
        EXPECT(b0 < b1 || (b0 == b1 && uniq[u - 1] < uniq[u]), "%s: order at %lld", cas,
               (long long)u);
    }
    /* every id present: count the distinct ids naively */
    int64_t distinct = 0;
    for (int64_t i = 0; i < n; i++) {
        int seen = 0;
        for (int64_t j = 0; j < i && !seen; j++)
            seen = ids[j] == ids[i];
        distinct += !seen;
    }
    EXPECT(nu == distinct, "%s: %lld unique ids, want %lld", cas, (long long)nu,
           (long long)distinct);
    for (int p = 0; p < G; p++) {
        int64_t all = 0, first = 0;
        for (int64_t u = 0; u < nu; u++)
            if (uniq[u] % G == p) {
                all++;
                first += bucket(ids, n_first, G, uniq[u]) % 2 == 0;
            }
        EXPECT(counts[p] == all && counts[G + p] == first, "%s: counts of owner %d", cas, p);
    }
    free(uniq);
    free(inv);
    free(counts);
}

static void check_sums(const int64_t *keys, int64_t n, int dim, struct rng *r, const char *cas)
{
    float *g = xmalloc((size_t)(n * dim + 1) * 4), *out = xmalloc((size_t)(n * dim + 1) * 4);
    int64_t *uid = xmalloc((size_t)(n + 1) * 8);
    for (int64_t i = 0; i < n * dim; i++)
        g[i] = (float)(rng_uniform(r) - 0.5);
    backend_cpu.emb_sum_by_id(n, dim, keys, g, uid, out, 0);
    int64_t k = 0, distinct = 0; /* the distinct keys, then -1 to n */
    while (k < n && uid[k] >= 0)
        k++;
    for (int64_t i = k; i < n; i++)
        EXPECT(uid[i] == -1, "%s: uid[%lld] = %lld past the distinct keys", cas, (long long)i,
               (long long)uid[i]);
    for (int64_t i = 0; i < n; i++) {
        int64_t j = 0;
        while (j < i && keys[j] != keys[i])
            j++;
        distinct += j == i;
    }
    EXPECT(k == distinct, "%s: %lld keys, %lld distinct", cas, (long long)k, (long long)distinct);
    for (int64_t u = 0; u < k; u++) {
        EXPECT(u == 0 || uid[u - 1] < uid[u], "%s: keys not ascending at %lld", cas,
               (long long)u);
        for (int j = 0; j < dim; j++) {
            double want = 0;
            for (int64_t i = 0; i < n; i++)
                if (keys[i] == uid[u])
                    want += g[i * dim + j];
            EXPECT(out[u * dim + j] == (float)want, "%s: sum of key %lld", cas,
                   (long long)uid[u]);
        }
    }
    free(g);
    free(out);
    free(uid);
}

static void check_update(int G, int dim, struct rng *r)
{
    const int64_t slots = 50, k = 20;
    int64_t ids[20];
    for (int64_t i = 0; i < k; i++)
        ids[i] = (2 * i + 1) * G; /* distinct rows of shard 0 */
    for (int o = 0; o < 3; o++) {
        struct emb_optim_conf oc = {.kind = (enum emb_optimizer)o, .lr = 0.05f,
                                    .weight_decay = 0.01f, .eps = 1e-8f, .beta1 = 0.9f,
                                    .beta2 = 0.98f};
        int64_t sf = emb_optim_state_floats(oc.kind, dim);
        float *w = xcalloc((size_t)(slots * dim), 4), *want = xcalloc((size_t)(slots * dim), 4);
        float *st = xcalloc((size_t)(slots * (sf + 1)), 4), *st2 = xcalloc((size_t)(slots * (sf + 1)), 4);
        int64_t *steps = xcalloc((size_t)slots, 8), *steps2 = xcalloc((size_t)slots, 8);
        float *g = xmalloc((size_t)(k * dim) * 4);
        for (int64_t i = 0; i < slots * dim; i++)
            w[i] = want[i] = (float)(rng_uniform(r) - 0.5);
        for (int64_t i = 0; i < k * dim; i++)
            g[i] = (float)(rng_uniform(r) - 0.5);
        backend_cpu.emb_sparse_update(&oc, k, dim, ids, G, g, w, sf ? st : NULL, sf,
                                      o == 2 ? steps : NULL);
        for (int64_t i = 0; i < k; i++) {
            int64_t s = ids[i] / G;
            emb_optim_row(&oc, dim, want + s * dim, sf ? st2 + s * sf : NULL,
                          o == 2 ? steps2 + s : NULL, g + i * dim);
        }
        int same = !memcmp(w, want, (size_t)(slots * dim) * 4);
        free(w);
        free(want);
        free(st);
        free(st2);
        free(steps);
        free(steps2);
        free(g);
        EXPECT(same, "emb_sparse_update %s G=%d dim=%d: rows differ from emb_optim_row",
               emb_optim_name(oc.kind), G, dim);
    }
}

static void check_gather(int G, struct rng *r)
{
    const int dim = 5;
    const int64_t slots = 30, n = 40;
    float *w = xmalloc((size_t)(slots * dim) * 4), *out = xmalloc((size_t)(n * dim) * 4);
    int64_t ids[40];
    for (int64_t i = 0; i < slots * dim; i++)
        w[i] = (float)rng_uniform(r);
    for (int64_t i = 0; i < n; i++)
        ids[i] = (int64_t)rng_below(r, (uint64_t)slots) * G + (G > 1 ? 1 : 0);
    backend_cpu.emb_gather_shard(n, dim, w, ids, G, out);
    int ok = 1;
    for (int64_t i = 0; i < n; i++)
        ok &= !memcmp(out + i * dim, w + ids[i] / G * dim, (size_t)dim * 4);
    free(w);
    free(out);
    EXPECT(ok, "emb_gather_shard G=%d", G);
}

int main(void)
{
    struct rng r;
    rng_init(&r, rng_key(7, 8, 9));
    static const int64_t ns[] = {0, 1, 2, 9, 300, 3000};
    static const int Gs[] = {1, 2, 3, 5};
    char cas[128];
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
        for (size_t b = 0; b < sizeof Gs / sizeof *Gs; b++)
            for (int kind = 0; kind < 5; kind++) {
                const int64_t n = ns[a];
                const int G = Gs[b];
                int64_t *ids = xmalloc((size_t)(n + 1) * 8);
                for (int64_t i = 0; i < n; i++) {
                    uint64_t v = rng_below(&r, kind == 1 ? 7 : 100000);
                    /* 0: all duplicates, 1: few (the dense slot table, scanned), 2: wide
                     * (above 2^16: two radix passes over the distinct ids), 3: one owner,
                     * 4: sparse up to ~2^47 (the hashed slots, six radix passes) */
                    ids[i] = kind == 0   ? 9
                             : kind == 3 ? (int64_t)(v + 1) * G
                             : kind == 4 ? (int64_t)v * 1234567891 + 1
                                         : (int64_t)v + 1;
                }
                const int64_t firsts[] = {0, n / 2, n};
                for (int f = 0; f < 3; f++) {
                    snprintf(cas, sizeof cas, "n=%lld n_first=%lld G=%d kind=%d", (long long)n,
                             (long long)firsts[f], G, kind);
                    check_dedup(ids, n, firsts[f], G, cas);
                }
                check_sums(ids, n, kind == 2 ? 3 : 1, &r, cas);
                free(ids);
            }
    for (size_t b = 0; b < sizeof Gs / sizeof *Gs; b++) {
        check_update(Gs[b], 1, &r);
        check_update(Gs[b], 33, &r);
        check_gather(Gs[b], &r);
    }
    if (failures) {
        printf("%d check(s) failed\n", failures);
        return 1;
    }
    printf("embedding engine: dedup, sums, gathers and updates as defined\n");
    return 0;
}
