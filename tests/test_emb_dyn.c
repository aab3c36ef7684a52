/* test_emb_dyn: a dynamic table's shard (embedding/emb_dyn.h) against
 * plain references.
 *
 * - the index: random puts, gets and deletions (ids of every size, those
 *   whose homes collide) against a sorted reference, with doubling and
 *   backward-shift deletion (no lost key, no stale one);
 * - the owner: a mix, not id mod G (ids k G all land on every shard), spread
 *   evenly;
 * - the requester's grouping (emb_dyn_dedup) against its definition:
 *   owner groups, chunk 0 before chunk 1, ascending, inverse exact;
 * - the parameters: evict parsing and the capacity / group checks;
 * - a table of one shard (G = 1, no MPI): rows drawn by (seed, table, id)
 *   whatever the order of insertion, the pool growing by doubling up to the
 *   capacity, ttl, lru (ties by id), admission after N lookups, the
 *   unadmitted row for what has no row, read-only lookups changing nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/rng.h"
#include "comm/comm.h"
#include "embedding/emb_dyn.h"
#include "embedding/emb_table.h"

static int cmp64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void test_index(void **state)
{
    (void)state;
    struct emb_dyn_index ix;
    emb_dyn_index_init(&ix, 4);
    enum { N = 20000 };
    int64_t *key = malloc(N * sizeof *key), *val = malloc(N * sizeof *val);
    char *live = calloc(N, 1);
    struct rng r;
    rng_init(&r, 7);
    for (int i = 0; i < N; i++) { /* distinct keys of every size, some negative */
        key[i] = (int64_t)(rng_u64(&r) >> (rng_u64(&r) % 60));
        if (i % 7 == 0)
            key[i] = -key[i];
        if (key[i] == 0)
            key[i] = 1 + i;
        for (int j = 0; j < i; j++)
            if (key[j] == key[i]) {
                key[i] = (int64_t)0x7000000000000000ll + i;
                break;
            }
    }
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < N; i++) {
            const uint64_t u = rng_u64(&r) % 3;
            if (u < 2) {
                val[i] = (int64_t)rng_u64(&r) >> 1;
                emb_dyn_index_put(&ix, key[i], val[i]);
                live[i] = 1;
            } else {
                assert_int_equal(emb_dyn_index_del(&ix, key[i]), live[i]);
                live[i] = 0;
            }
        }
        int64_t n = 0;
        for (int i = 0; i < N; i++) {
            n += live[i];
            assert_int_equal(emb_dyn_index_get(&ix, key[i]), live[i] ? val[i] : -1);
        }
        assert_int_equal(ix.n, n);
        assert_true(2 * ix.n <= ix.cap); /* at most half full */
        assert_true((ix.cap & (ix.cap - 1)) == 0);
    }
    assert_int_equal(emb_dyn_index_get(&ix, 123456789), -1);
    emb_dyn_index_free(&ix);
    free(key);
    free(val);
    free(live);
}

static void test_owner(void **state)
{
    (void)state;
    enum { G = 4 };
    int64_t count[G] = {0};
    for (int64_t k = 1; k <= 40000; k++) /* ids that are all 0 mod G */
        count[emb_dyn_owner(k * G, G)]++;
    for (int p = 0; p < G; p++)
        assert_true(count[p] > 9400 && count[p] < 10600);
    assert_int_equal(emb_dyn_owner(12345, 1), 0);
}

static void test_dedup(void **state)
{
    (void)state;
    enum { n = 3000, G = 3 };
    int64_t *ids = malloc(n * sizeof *ids), *uniq = malloc(n * sizeof *uniq);
    int64_t *inv = malloc(n * sizeof *inv), counts[2 * G];
    struct rng r;
    rng_init(&r, 11);
    for (int i = 0; i < n; i++)
        ids[i] = 1 + (int64_t)(rng_u64(&r) % 900) * 1000003;
    const int64_t n_first = 1200;
    const int64_t nu = emb_dyn_dedup(n, ids, n_first, G, uniq, inv, counts);
    /* the distinct ids, each once */
    int64_t *s = malloc(n * sizeof *s), *su = malloc(n * sizeof *su), d = 0;
    memcpy(s, ids, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp64);
    for (int i = 0; i < n; i++)
        if (i == 0 || s[i] != s[i - 1])
            s[d++] = s[i];
    assert_int_equal(nu, d);
    memcpy(su, uniq, (size_t)nu * sizeof *su);
    qsort(su, (size_t)nu, sizeof *su, cmp64);
    assert_memory_equal(su, s, (size_t)nu * sizeof *su);
    for (int i = 0; i < n; i++)
        assert_int_equal(uniq[inv[i]], ids[i]);
    /* groups: owner p's counts[p] ids, the counts[G + p] of chunk 0 first,
     * each part ascending */
    int64_t at = 0;
    for (int p = 0; p < G; p++) {
        for (int64_t u = at; u < at + counts[p]; u++) {
            assert_int_equal(emb_dyn_owner(uniq[u], G), p);
            int in0 = 0;
            for (int i = 0; i < n_first; i++)
                in0 |= ids[i] == uniq[u];
            assert_int_equal(in0, u < at + counts[G + p]);
            if (u > at && u != at + counts[G + p])
                assert_true(uniq[u] > uniq[u - 1]);
        }
        at += counts[p];
    }
    assert_int_equal(at, nu);
    free(ids), free(uniq), free(inv), free(s), free(su);
}

static void test_params(void **state)
{
    (void)state;
    struct emb_dyn_conf dc = {.on = 1, .admit = 1};
    char err[512];
    assert_int_equal(emb_dyn_parse_evict("ttl:5", &dc, err, sizeof err), 0);
    assert_int_equal(dc.evict, EMB_EVICT_TTL);
    assert_int_equal(dc.ttl, 5);
    assert_int_equal(emb_dyn_parse_evict("lfu", &dc, err, sizeof err), 0);
    assert_int_equal(dc.evict, EMB_EVICT_LFU);
    assert_int_equal(emb_dyn_parse_evict("ttl:0", &dc, err, sizeof err), -1);
    assert_non_null(strstr(err, "embedding.evict = ttl:0"));
    assert_int_equal(emb_dyn_parse_evict("ttl:x", &dc, err, sizeof err), -1);
    assert_int_equal(emb_dyn_parse_evict("random", &dc, err, sizeof err), -1);
    dc.evict = EMB_EVICT_NONE;
    dc.capacity = 3;
    assert_int_equal(emb_dyn_check(&dc, "items", 4, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "at least one row per shard"));
    dc.capacity = 4;
    assert_int_equal(emb_dyn_check(&dc, "items", 4, 1, err, sizeof err), 0);
    assert_int_equal(emb_dyn_check(&dc, "items", 2, 2, err, sizeof err), -1);
    dc.capacity = 0;
    dc.evict = EMB_EVICT_LRU;
    assert_int_equal(emb_dyn_check(&dc, "items", 2, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "needs a capacity"));
}

/* A table of one shard (G = 1: the comm's emb group of one rank). */
static struct emb_table *table(struct emb_registry *reg, struct comm *c, int64_t capacity,
                               int64_t admit, enum emb_evict ev, int64_t ttl)
{
    memset(reg, 0, sizeof *reg);
    struct emb_table_conf conf = {.rows = 0, .dim = 4, .init = EMB_INIT_NORMAL,
                                  .init_scale = 0.1f, .seed = 5,
                                  .optim = {.kind = EMB_OPT_ADAGRAD, .lr = 0.1f}};
    strcpy(conf.name, "items");
    conf.dyn = (struct emb_dyn_conf){.on = 1, .capacity = capacity, .admit = admit,
                                     .evict = ev, .ttl = ttl};
    conf.replicated = 1; /* G = 1 without an emb group */
    (void)c;
    return emb_registry_add(reg, c, &conf);
}

/* One training lookup of ids[n] (copied); the virtual ids into out. */
static void look(struct emb_table *t, const int64_t *ids, int64_t n, int train, int64_t *out)
{
    memcpy(out, ids, (size_t)n * sizeof *out);
    int64_t *seg = out;
    emb_dyn_map(t, 1, &seg, &n, train);
}

static void test_table(void **state)
{
    (void)state;
    struct comm c;
    memset(&c, 0, sizeof c);
    struct emb_registry reg;
    struct emb_table *t = table(&reg, &c, 0, 1, EMB_EVICT_NONE, 0);
    /* rows by (seed, table, id), in any order; the pool grows */
    enum { n = 500 };
    int64_t ids[n], v[n];
    for (int i = 0; i < n; i++)
        ids[i] = (int64_t)(n - i) * 7919 + 3;
    look(t, ids, n, 1, v);
    float want[4];
    for (int i = 0; i < n; i++) {
        assert_true(v[i] > 0);
        emb_init_row(&t->conf, ids[i], want);
        assert_memory_equal(t->w + v[i] * 4, want, sizeof want);
    }
    assert_true(t->local_rows >= n + 1 && t->local_rows <= 2 * (n + 1) + 64);
    struct emb_dyn_stats st;
    emb_dyn_take(t, &st);
    assert_int_equal(st.rows, n);
    assert_int_equal(st.inserted, n);
    /* read only: an unknown id gets the unadmitted row (slot 0), nothing made */
    const int64_t unknown = 42;
    int64_t u;
    look(t, &unknown, 1, 0, &u);
    assert_int_equal(u, 0);
    emb_dyn_take(t, &st);
    assert_int_equal(st.rows, n);
    assert_int_equal(st.inserted, 0);
    emb_registry_free(&reg);

    /* ttl:2: rows not used for 2 lookups go */
    t = table(&reg, &c, 0, 1, EMB_EVICT_TTL, 2);
    const int64_t a[2] = {10, 20}, b[1] = {30};
    int64_t o[4];
    look(t, a, 2, 1, o); /* tick 1 */
    look(t, b, 1, 1, o); /* 2 */
    look(t, b, 1, 1, o); /* 3: 10, 20 last used 2 ticks ago: kept */
    emb_dyn_take(t, &st);
    assert_int_equal(st.evicted, 0);
    look(t, b, 1, 1, o); /* 4: gone */
    emb_dyn_take(t, &st);
    assert_int_equal(st.evicted, 2);
    assert_int_equal(st.rows, 1);
    emb_registry_free(&reg);

    /* lru, capacity 3: the least recently used, ties by id, never this or
     * the last lookup's */
    t = table(&reg, &c, 3, 1, EMB_EVICT_LRU, 0);
    const int64_t x3[3] = {7, 5, 9}, y1[1] = {11}, z1[1] = {13};
    look(t, x3, 3, 1, o); /* tick 1: 5, 7, 9 */
    look(t, y1, 1, 1, o); /* 2: full, 5 7 9 were used by the last lookup: no row */
    assert_int_equal(o[0], 0);
    look(t, z1, 1, 1, o); /* 3: 5 goes (tick 1, smallest id) */
    assert_true(o[0] > 0);
    int64_t five = 5;
    emb_dyn_find(t, &five, 1);
    assert_int_equal(five, -1);
    emb_dyn_take(t, &st);
    assert_int_equal(st.rows, 3);
    assert_int_equal(st.evicted, 1);
    assert_int_equal(st.unadmitted_hits, 1);
    emb_registry_free(&reg);

    /* admit = 3: a row at the third lookup that has the id */
    t = table(&reg, &c, 0, 3, EMB_EVICT_NONE, 0);
    const int64_t q[2] = {100, 100};
    look(t, q, 2, 1, o); /* one sighting per lookup, however many tokens */
    assert_int_equal(o[0], 0);
    look(t, q, 1, 1, o);
    assert_int_equal(o[0], 0);
    look(t, q, 1, 1, o);
    assert_true(o[0] > 0);
    emb_init_row(&t->conf, 100, want);
    assert_memory_equal(t->w + o[0] * 4, want, sizeof want);
    emb_registry_free(&reg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index),  cmocka_unit_test(test_owner),
        cmocka_unit_test(test_dedup),  cmocka_unit_test(test_params),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
