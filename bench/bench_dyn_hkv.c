/* bench_dyn_hkv: one shard of a dynamic table (embedding/emb_dyn.h) in
 * HierarchicalKV's benchmark format (its README's "Benchmark &
 * Performance" tables; doc/embedding.md, "The hash table against
 * HierarchicalKV"): uint64 keys, float32 x dim values, 1,048,576 keys per
 * call, the table of a fixed capacity filled first to the load factor
 * lambda = 0.50, 0.75, 1.00 with consecutive keys, then one call timed;
 * the call's keys hit at rate 0.6 (the last keys inserted, then new ones),
 * as HierarchicalKV's benchmark draws them; throughput in billions of keys
 * a second as it prints them (keys / seconds / 2^30). Host memory, one
 * thread (one core), the public functions of emb_dyn.h only:
 *
 *   insert_or_assign  emb_dyn_map (a training lookup: the present keys
 *                     stamped, the new ones given rows, the least recently
 *                     used evicted when the table is full: HierarchicalKV's
 *                     LRU table) and the call's values written into the rows
 *   find              emb_dyn_find and the rows' values copied out (a
 *                     default for a missing key), with found flags
 *   find*             emb_dyn_find alone: slots, as HierarchicalKV's find*
 *                     returns the values' addresses
 *   find_or_insert    emb_dyn_map alone (new rows drawn from the keyed
 *                     initialiser, as training makes them)
 *   evict             emb_dyn_remove of 1,048,576 present keys (a row's
 *                     removal, as ttl / lru eviction does it)
 *
 * Every cell on a table of its own, filled anew; the median of --runs runs.
 * --cpu-time: the call's time is the thread's CPU time instead of the wall
 * clock's (a figure per core that other jobs on a shared machine do not
 * stretch; their share of the caches and memory still counts).
 *   build: make bench/bench_dyn
 *   run:   bench/bench_dyn --hkv [--capacity C] [--dim D] [--runs R] [--cpu-time] */
#include "bench/bench_dyn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "comm/comm.h"
#include "embedding/emb_dyn.h"
#include "embedding/emb_table.h"

#define KEYS_PER_OP 1048576
#define HIT_RATE 0.6
#define MAX_RUNS 15

enum op { OP_INSERT_OR_ASSIGN, OP_FIND, OP_FIND_PTR, OP_FIND_OR_INSERT, OP_EVICT, N_OPS };
static const char *op_name[N_OPS] = {"insert_or_assign", "find", "find*", "find_or_insert",
                                     "evict"};

struct bench {
    int64_t capacity;
    int dim;
    int cpu_time;         /* --cpu-time: the thread's CPU time, not the wall clock */
    struct comm c;
    int64_t *keys, *work; /* [KEYS_PER_OP] */
    float *values;        /* [KEYS_PER_OP, dim] */
    unsigned char *found; /* [KEYS_PER_OP] */
};

/* Seconds since an arbitrary origin: the wall clock, or the thread's CPU
 * time. */
static double now(const struct bench *b)
{
    if (!b->cpu_time)
        return clock_seconds();
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
        perror("bench_dyn: clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
        exit(1);
    }
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A table of b->capacity rows (SGD: no optimizer state, the values alone,
 * as HierarchicalKV's), filled with keys 1 .. n by training lookups of
 * KEYS_PER_OP keys. */
static struct emb_table *filled(struct bench *b, struct emb_registry *reg, int64_t n)
{
    struct emb_table_conf conf = {.dim = b->dim, .init = EMB_INIT_NORMAL, .init_scale = 0.02f,
                                  .seed = 1, .optim = {.kind = EMB_OPT_SGD, .lr = 0.01f},
                                  .replicated = 1};
    strcpy(conf.name, "items");
    conf.dyn = (struct emb_dyn_conf){.on = 1, .admit = 1, .capacity = b->capacity,
                                     .evict = EMB_EVICT_LRU};
    struct emb_table *t = emb_registry_add(reg, &b->c, &conf);
    for (int64_t k0 = 0; k0 < n; k0 += KEYS_PER_OP) {
        int64_t m = n - k0 < KEYS_PER_OP ? n - k0 : KEYS_PER_OP, *seg = b->work;
        for (int64_t i = 0; i < m; i++)
            seg[i] = 1 + k0 + i;
        emb_dyn_map(t, 1, &seg, &m, 1);
    }
    return t;
}

/* The call's keys for a table holding keys 1 .. n: the last 60% of a call
 * inserted (HierarchicalKV's last_insert hits), then new keys n + 1 ...;
 * evict: KEYS_PER_OP present keys. */
static void call_keys(struct bench *b, int64_t n, enum op op)
{
    const int64_t hits = op == OP_EVICT ? KEYS_PER_OP : (int64_t)(HIT_RATE * KEYS_PER_OP);
    for (int64_t i = 0; i < KEYS_PER_OP; i++)
        b->keys[i] = i < hits ? n - hits + 1 + i : n + 1 + (i - hits);
}

/* One timed call of op on a table filled to load lf: seconds. */
static double one_call(struct bench *b, double lf, enum op op)
{
    struct emb_registry *reg = calloc(1, sizeof *reg);
    if (!reg) {
        fprintf(stderr, "bench_dyn: out of memory\n");
        exit(1);
    }
    const int64_t n = (int64_t)(lf * (double)b->capacity + 0.5);
    struct emb_table *t = filled(b, reg, n);
    call_keys(b, n, op);
    const int d = b->dim;
    int64_t m = KEYS_PER_OP, *seg = b->work, sum = 0;
    memcpy(b->work, b->keys, KEYS_PER_OP * sizeof *b->work);
    const double t0 = now(b);
    switch (op) {
    case OP_INSERT_OR_ASSIGN:
        emb_dyn_map(t, 1, &seg, &m, 1);
        for (int64_t i = 0; i < m; i++) { /* virtual id = slot G + shard */
            float *row = t->w + (seg[i] / t->G) * (int64_t)t->width;
            memcpy(row, b->values + i * d, (size_t)d * sizeof(float));
        }
        break;
    case OP_FIND:
        emb_dyn_find(t, seg, m);
        for (int64_t i = 0; i < m; i++) {
            b->found[i] = seg[i] >= 0;
            const float *row = seg[i] >= 0 ? t->w + (seg[i] / t->G) * (int64_t)t->width : NULL;
            if (row)
                memcpy(b->values + i * d, row, (size_t)d * sizeof(float));
            else
                memset(b->values + i * d, 0, (size_t)d * sizeof(float));
        }
        break;
    case OP_FIND_PTR:
        emb_dyn_find(t, seg, m);
        break;
    case OP_FIND_OR_INSERT:
        emb_dyn_map(t, 1, &seg, &m, 1);
        break;
    case OP_EVICT:
        for (int64_t i = 0; i < m; i++)
            emb_dyn_remove(t, seg[i]);
        break;
    default:
        break;
    }
    const double s = now(b) - t0;
    for (int64_t i = 0; i < m; i += 4096) /* the results are used */
        sum += seg[i];
    if (sum == 42)
        fprintf(stderr, " ");
    emb_registry_free(reg);
    free(reg);
    return s;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The processor's name (/proc/cpuinfo), or "unknown". */
static void cpu_name(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(buf, len, "%s", colon + 2);
            buf[strcspn(buf, "\n")] = 0;
            break;
        }
    }
    fclose(f);
}

/* flag's value v: a number in [lo, hi] into *out; 0, or -1 said. */
static int arg_i64(const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    const double x = v ? strtod(v, &end) : 0;
    if (!v || end == v || *end || x < (double)lo || x > (double)hi) {
        fprintf(stderr, "bench_dyn: %s '%s': expected a number from %lld to %lld\n", flag,
                v ? v : "", (long long)lo, (long long)hi);
        return -1;
    }
    *out = (int64_t)x;
    return 0;
}

int bench_dyn_hkv(int argc, char **argv)
{
    struct bench b = {.capacity = 4 * 1048576, .dim = 8};
    int64_t runs = 3, dim = 8;
    for (int i = 0; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(argv[i], "--cpu-time")) {
            b.cpu_time = 1;
            continue;
        }
        if (!strcmp(argv[i], "--capacity"))
            bad = arg_i64(argv[i], v, 2 * KEYS_PER_OP, (int64_t)1 << 34, &b.capacity);
        else if (!strcmp(argv[i], "--dim"))
            bad = arg_i64(argv[i], v, 1, 1024, &dim);
        else if (!strcmp(argv[i], "--runs"))
            bad = arg_i64(argv[i], v, 1, MAX_RUNS, &runs);
        else {
            fprintf(stderr, "bench_dyn --hkv: unknown option '%s' (--capacity C, --dim D, "
                    "--runs R, --cpu-time)\n", argv[i]);
            return 2;
        }
        if (bad)
            return 2;
        i++;
    }
    b.dim = (int)dim;
    b.keys = malloc(KEYS_PER_OP * sizeof *b.keys);
    b.work = malloc(KEYS_PER_OP * sizeof *b.work);
    b.values = malloc((size_t)KEYS_PER_OP * (size_t)b.dim * sizeof *b.values);
    b.found = malloc(KEYS_PER_OP);
    if (!b.keys || !b.work || !b.values || !b.found) {
        fprintf(stderr, "bench_dyn: out of memory\n");
        return 1;
    }
    for (int64_t i = 0; i < (int64_t)KEYS_PER_OP * b.dim; i++)
        b.values[i] = (float)(i % 7) * 0.125f;
    char cpu[256];
    cpu_name(cpu, sizeof cpu);
    printf("## Benchmark (bench/bench_dyn --hkv)\n\n"
           "* CPU: 1 core of %s (host memory, one thread)\n"
           "* Key Type = uint64_t (int64 ids >= 1)\n"
           "* Value Type = float32 * %d\n"
           "* Key-Values per OP = %d\n"
           "* capacity = %lld keys (embedding.capacity of one shard), evict strategy: LRU\n"
           "* Hit rate = %.2f; median of %lld runs, each cell on a table of its own\n"
           "* `find*` means emb_dyn_find alone (slots, not the values)\n"
           "* ***Throughput Unit: Billion-KV/second*** (keys / s / 2^30, as HierarchicalKV; "
           "s: %s)\n\n",
           cpu, b.dim, KEYS_PER_OP, (long long)b.capacity, HIT_RATE, (long long)runs,
           b.cpu_time ? "the thread's CPU time" : "wall clock");
    printf("|    λ |");
    for (int o = 0; o < N_OPS; o++)
        printf(" %*s |", o == 0 ? 16 : 14, op_name[o]);
    printf("\n|-----:|");
    for (int o = 0; o < N_OPS; o++)
        printf("%s|", o == 0 ? "-----------------:" : "---------------:");
    printf("\n");
    fflush(stdout);
    const double lfs[] = {0.50, 0.75, 1.00};
    for (int l = 0; l < 3; l++) {
        printf("| %.2f |", lfs[l]);
        for (int o = 0; o < N_OPS; o++) {
            double s[MAX_RUNS];
            for (int r = 0; r < runs; r++)
                s[r] = one_call(&b, lfs[l], (enum op)o);
            qsort(s, (size_t)runs, sizeof *s, cmp_double);
            const double med = runs % 2 ? s[runs / 2] : 0.5 * (s[runs / 2 - 1] + s[runs / 2]);
            printf(" %*.4f |", o == 0 ? 16 : 14, KEYS_PER_OP / med / 1073741824.0);
            fflush(stdout);
        }
        printf("\n");
    }
    free(b.keys);
    free(b.work);
    free(b.values);
    free(b.found);
    return 0;
}
