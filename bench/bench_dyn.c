/* bench_dyn: one shard of a dynamic table (embedding/emb_dyn.h), on one
 * thread: the hash index alone (inserts of N distinct random ids, then N
 * lookups of them, then N lookups of absent ids), and the owner's side of
 * training lookups (emb_dyn_map: stamps, admission, insertion with the
 * row's initialisation, 8 floats a row, adagrad) over a stream of batches
 * of B ids drawn uniformly from 2N ids, until N rows exist: ids per second.
 * Prints one line per N. --index-only leaves out the training lookups (a
 * table's pool of N rows: ~68 bytes a row, doubled while it grows), so that
 * the index can be measured at sizes whose pool would not fit. --hkv: the
 * table in HierarchicalKV's benchmark format instead (bench_dyn_hkv.c).
 *   build: make bench/bench_dyn
 *   run:   bench/bench_dyn [--index-only] [N ...]
 *          bench/bench_dyn --hkv [--capacity C] [--dim D] [--runs R] [--cpu-time] */
#include "bench/bench_dyn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/rng.h"
#include "comm/comm.h"
#include "embedding/emb_dyn.h"
#include "embedding/emb_table.h"

#define B 65536

int main(int argc, char **argv)
{
    int64_t sizes[8] = {1000000, 10000000};
    int ns = 2, first = 1, index_only = 0;
    if (argc > 1 && strcmp(argv[1], "--hkv") == 0)
        return bench_dyn_hkv(argc - 2, argv + 2);
    if (argc > 1 && strcmp(argv[1], "--index-only") == 0) {
        index_only = 1;
        first = 2;
    }
    if (argc > first) {
        ns = 0;
        for (int i = first; i < argc && ns < 8; i++) {
            char *end;
            sizes[ns] = (int64_t)strtod(argv[i], &end);
            if (*end || sizes[ns] < 1) {
                fprintf(stderr, "bench_dyn: '%s' is not a row count (try 1e6)\n", argv[i]);
                return 2;
            }
            ns++;
        }
    }
    printf("%12s %12s %12s %12s %14s %10s\n", "rows", "insert/s", "hit/s", "miss/s",
           "map ids/s", "MiB");
    for (int s = 0; s < ns; s++) {
        const int64_t N = sizes[s];
        int64_t *ids = malloc((size_t)N * sizeof *ids);
        struct rng r;
        rng_init(&r, 1);
        for (int64_t i = 0; i < N; i++)
            ids[i] = (int64_t)(rng_u64(&r) >> 1) | 1;
        struct emb_dyn_index ix;
        emb_dyn_index_init(&ix, 16);
        double t0 = clock_seconds();
        for (int64_t i = 0; i < N; i++)
            emb_dyn_index_put(&ix, ids[i], i);
        double t1 = clock_seconds();
        int64_t sum = 0;
        for (int64_t i = 0; i < N; i++)
            sum += emb_dyn_index_get(&ix, ids[i]);
        double t2 = clock_seconds();
        for (int64_t i = 0; i < N; i++)
            sum += emb_dyn_index_get(&ix, ids[i] + 2); /* even: never inserted */
        double t3 = clock_seconds();
        const int64_t ix_bytes = ix.cap * (int64_t)(sizeof *ix.keys + sizeof *ix.vals);
        emb_dyn_index_free(&ix);
        if (index_only) {
            printf("%12lld %12.3g %12.3g %12.3g %14s %10.0f%s\n", (long long)N, N / (t1 - t0),
                   N / (t2 - t1), N / (t3 - t2), "-",
                   (double)ix_bytes / 1048576.0, sum == 42 ? " " : "");
            free(ids);
            continue;
        }
        /* training lookups of a table */
        struct comm c;
        memset(&c, 0, sizeof c);
        struct emb_registry *reg = calloc(1, sizeof *reg);
        struct emb_table_conf conf = {.dim = 8, .init = EMB_INIT_NORMAL, .init_scale = 0.02f,
                                      .seed = 1, .optim = {.kind = EMB_OPT_ADAGRAD, .lr = 0.01f},
                                      .replicated = 1};
        strcpy(conf.name, "items");
        conf.dyn = (struct emb_dyn_conf){.on = 1, .admit = 1};
        struct emb_table *t = emb_registry_add(reg, &c, &conf);
        int64_t *batch = malloc(B * sizeof *batch), mapped = 0;
        struct emb_dyn_stats st = {0};
        double t4 = clock_seconds();
        while (st.rows < N) {
            for (int i = 0; i < B; i++)
                batch[i] = 1 + (int64_t)(rng_u64(&r) % (uint64_t)(2 * N));
            int64_t n = B, *seg = batch;
            emb_dyn_map(t, 1, &seg, &n, 1);
            mapped += B;
            emb_dyn_take(t, &st);
        }
        double t5 = clock_seconds();
        printf("%12lld %12.3g %12.3g %12.3g %14.3g %10.0f%s\n", (long long)N, N / (t1 - t0),
               N / (t2 - t1), N / (t3 - t2), mapped / (t5 - t4), st.bytes / 1048576.0,
               sum == 42 ? " " : "");
        emb_registry_free(reg);
        free(reg);
        free(batch);
        free(ids);
    }
    return 0;
}
