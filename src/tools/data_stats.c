/* data_stats: 'freescale data stats' and 'freescale data check'.
 *
 *   freescale data stats FILE.h5 [--dim D] [--no-validate]
 *   freescale data check FILE.h5 [FILE.h5 ...]
 *
 * stats prints one 'key: value' line per figure (tests grep them): sizes,
 * the length distribution (nearest-rank percentiles, log2 histogram), the
 * share of the attention cost sum(L^2) carried by the longest 1% of users,
 * the embedding table's memory, and, from one streaming pass over the events
 * (which checks every id and timestamp, as dataset_validate does), the items
 * actually used, the most popular item and the timestamp range.
 * check opens and validates, and prints one line per good file. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/check.h"
#include "base/clock.h"
#include "cli/cli.h"
#include "tools/data_tools.h"
#include "data/dataset.h"
#include "base/log.h"

#define STATS_BLOCK_EVENTS ((int64_t)1 << 22) /* events per read in the event pass */
#define STATS_MAX_COUNTED ((int64_t)1 << 26)  /* per-item counts up to 64 Mi items (256 MiB) */
#define STATS_BAR 40                          /* width of the longest histogram bar */

/* --- lengths ------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted[n], q in percent: sorted[ceil(q n / 100) - 1]. */
static int64_t percentile(const int64_t *sorted, int64_t n, int64_t q)
{
    int64_t i = (q * n + 99) / 100 - 1;
    return sorted[i < 0 ? 0 : i];
}

/* Human-readable byte count: "12.3 MiB". */
static void human_bytes(double bytes, char *buf, size_t len)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 5) {
        bytes /= 1024.0;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
}

/* Length lines of the users' lengths, from offsets[num_users + 1]. */
static void stats_lengths(const struct dataset *ds)
{
    int64_t n = ds->num_users;
    if (n == 0) {
        printf("length min: n/a (no users)\n");
        return;
    }
    int64_t *len = xmalloc((size_t)n * sizeof *len);
    double sum = 0, sum_sq = 0;
    for (int64_t u = 0; u < n; u++) {
        len[u] = dataset_length(ds, u);
        sum += (double)len[u];
        sum_sq += (double)len[u] * (double)len[u];
    }
    qsort(len, (size_t)n, sizeof *len, cmp_i64);
    printf("length min: %lld\n", (long long)len[0]);
    printf("length p50: %lld\n", (long long)percentile(len, n, 50));
    printf("length p90: %lld\n", (long long)percentile(len, n, 90));
    printf("length p99: %lld\n", (long long)percentile(len, n, 99));
    printf("length max: %lld\n", (long long)len[n - 1]);
    printf("length mean: %.3f\n", sum / (double)n);

    /* attention cost: the longest ceil(n / 100) users' share of sum(L^2) */
    int64_t k = (n + 99) / 100;
    double top_sq = 0;
    for (int64_t i = n - k; i < n; i++)
        top_sq += (double)len[i] * (double)len[i];
    printf("sum L^2: %.0f\n", sum_sq);
    printf("sum L^2 share of longest 1%%: %.4f (%lld user%s)\n",
           sum_sq > 0 ? top_sq / sum_sq : 0.0, (long long)k, k > 1 ? "s" : "");

    /* log2 histogram: bucket 0 holds L = 0, bucket b + 1 holds [2^b, 2^(b+1)) */
    int64_t hist[65] = {0}, top = 0;
    int lo = 64, hi = 0;
    for (int64_t u = 0; u < n; u++) {
        int b = len[u] == 0 ? 0 : 64 - __builtin_clzll((unsigned long long)len[u]);
        hist[b]++;
    }
    for (int b = 0; b < 65; b++)
        if (hist[b]) {
            lo = b < lo ? b : lo;
            hi = b;
            top = hist[b] > top ? hist[b] : top;
        }
    printf("length histogram: %d log2 buckets\n", hi - lo + 1);
    for (int b = lo; b <= hi; b++) {
        long long b0 = b == 0 ? 0 : 1LL << (b - 1);
        long long b1 = b == 0 ? 0 : (long long)((2ULL << (b - 1)) - 1);
        char bar[STATS_BAR + 1];
        int w = (int)((hist[b] * STATS_BAR + top - 1) / top);
        memset(bar, '#', (size_t)w);
        bar[w] = 0;
        printf("  length %lld..%lld: %lld (%.1f%%) %s\n", b0, b1, (long long)hist[b],
               100.0 * (double)hist[b] / (double)n, bar);
    }
    free(len);
}

/* --- events ------------------------------------------------------------- */

static void print_time(const char *key, int64_t t)
{
    char iso[64] = "?";
    time_t tt = (time_t)t;
    struct tm tm;
    if (gmtime_r(&tt, &tm) && strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(iso, sizeof iso, "?");
    printf("%s: %lld (%s)\n", key, (long long)t, iso);
}

/* One pass over every event in blocks of whole users. dataset_read_users
 * checks every id range and timestamp order, so this validates the file. */
static void stats_events(const struct dataset *ds)
{
    char err[4400];
    int counted = ds->num_items <= STATS_MAX_COUNTED;
    uint32_t *count = counted ? xcalloc((size_t)ds->num_items + 1, sizeof *count) : NULL;
    int64_t cap = STATS_BLOCK_EVENTS;
    int64_t *items = xmalloc((size_t)cap * sizeof *items);
    int64_t *ts = ds->has_timestamps ? xmalloc((size_t)cap * sizeof *ts) : NULL;
    int64_t t_min = INT64_MAX, t_max = INT64_MIN, max_id = 0;
    for (int64_t u0 = 0; u0 < ds->num_users;) {
        int64_t u1 = u0 + 1; /* as many whole users as fit; a longer user alone */
        while (u1 < ds->num_users && ds->offsets[u1 + 1] - ds->offsets[u0] <= STATS_BLOCK_EVENTS)
            u1++;
        int64_t n = ds->offsets[u1] - ds->offsets[u0];
        if (n > cap) {
            cap = n;
            items = xrealloc(items, (size_t)cap * sizeof *items);
            if (ts)
                ts = xrealloc(ts, (size_t)cap * sizeof *ts);
        }
        if (dataset_read_users(ds, u0, u1, items, ts, NULL, err, sizeof err))
            fatal("%s", err);
        for (int64_t i = 0; count && i < n; i++) { /* raw ids: counted by row */
            const int64_t row = ds->raw_ids ? dataset_raw_index(ds, items[i]) + 1 : items[i];
            if (count[row] != UINT32_MAX)
                count[row]++;
        }
        for (int64_t i = 0; !ds->raw_ids && i < n; i++)
            max_id = items[i] > max_id ? items[i] : max_id;
        for (int64_t i = 0; ts && i < n; i++) {
            t_min = ts[i] < t_min ? ts[i] : t_min;
            t_max = ts[i] > t_max ? ts[i] : t_max;
        }
        u0 = u1;
    }
    free(items);
    free(ts);
    if (!ds->raw_ids && dataset_rows_absurd(ds->num_items, max_id))
        fatal("%s: attribute num_items = %lld is far beyond the largest item id used, %lld "
              "(set num_items to the largest id)", ds->path, (long long)ds->num_items,
              (long long)max_id);
    if (count) {
        int64_t used = 0, top_id = 0;
        for (int64_t i = 1; i <= ds->num_items; i++) {
            used += count[i] > 0;
            if (count[i] > count[top_id])
                top_id = i;
        }
        printf("items used: %lld (%.1f%% of num_items)\n", (long long)used,
               100.0 * (double)used / (double)ds->num_items);
        if (top_id)
            printf("top item: %lld (%lld events, share %.6f)\n",
                   (long long)(ds->raw_ids ? ds->item_list[top_id - 1] : top_id),
                   (long long)count[top_id], (double)count[top_id] / (double)ds->num_events);
        if (top_id && ds->has_item_map) {
            char err[1024];
            int64_t *map = dataset_read_map(ds, "item_map", err, sizeof err);
            if (!map)
                fatal("%s", err);
            printf("top item original id: %lld (/item_map)\n", (long long)map[top_id - 1]);
            free(map);
        }
        free(count);
    } else {
        printf("items used: not counted (num_items > %lld)\n", (long long)STATS_MAX_COUNTED);
    }
    if (ds->has_timestamps && t_min <= t_max) {
        print_time("timestamp min", t_min);
        print_time("timestamp max", t_max);
    }
}

/* --- commands ----------------------------------------------------------- */

static void stats_usage(FILE *f)
{
    fprintf(f, "usage: freescale data stats FILE.h5 [--dim D] [--no-validate]\n"
               "\n"
               "Print a dataset's figures as 'key: value' lines.\n"
               "  --dim D          embedding dimension for the table's memory (default 50)\n"
               "  --no-validate    read only /offsets: skip the pass over the events\n"
               "                   (validation, items used, timestamp range)\n");
}

int data_stats_main(int argc, char **argv)
{
    int64_t dim = 50;
    int validate = 1;
    static const struct option longopts[] = {
        {"dim", required_argument, NULL, 'd'},
        {"no-validate", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': dim = cli_count("--dim", optarg, 1, 1 << 20); break;
        case 'n': validate = 0; break;
        case 'h': stats_usage(stdout); return 0;
        case ':': fatal("data stats: option '%s' needs a value", argv[optind - 1]);
        default: fatal("data stats: unknown option '%s' (see 'freescale data stats --help')",
                       argv[optind - 1]);
        }
    }
    if (argc - optind != 1)
        fatal("data stats: expected one FILE.h5 (got %d arguments)", argc - optind);
    const char *path = argv[optind];

    struct dataset ds;
    char err[4400];
    double t0 = clock_seconds();
    if (dataset_open(&ds, path, err, sizeof err))
        fatal("%s", err);
    printf("file: %s\n", path);
    printf("users: %lld\n", (long long)ds.num_users);
    printf("items: %lld\n", (long long)ds.num_items);
    if (ds.raw_ids)
        printf("ids: raw (version 3: item ids %lld .. %lld as imported, listed in /items/%s; "
               "items = distinct ids)\n", (long long)ds.item_list[0],
               (long long)ds.item_list[ds.num_items - 1], DATASET_RAW_LIST);
    else
        printf("ids: dense (items 1 .. %lld)\n", (long long)ds.num_items);
    printf("events: %lld\n", (long long)ds.num_events);
    printf("timestamps: %s\n", ds.has_timestamps ? "yes" : "no");
    printf("actions: %s\n", ds.has_actions ? "yes" : "no");
    stats_lengths(&ds);

    double rows = (double)ds.num_items + 1; /* row 0 is padding */
    double bytes = rows * (double)dim * 4.0;
    char h1[32], h3[32];
    human_bytes(bytes, h1, sizeof h1);
    human_bytes(3.0 * bytes, h3, sizeof h3);
    printf("embedding fp32 weights (dim %lld): %.0f bytes (%s)\n", (long long)dim, bytes, h1);
    printf("embedding fp32 weights + Adam m, v (x3, dim %lld): %.0f bytes (%s)\n",
           (long long)dim, 3.0 * bytes, h3);

    if (validate) {
        stats_events(&ds);
        data_stats_features(&ds);
    } else
        printf("features: %d (values not read: --no-validate)\n", ds.nfeat);
    printf("validated: %s\n", validate ? "yes (every event and feature)" : "no (--no-validate)");
    printf("stats seconds: %.2f\n", clock_seconds() - t0);
    dataset_close(&ds);
    return 0;
}

int data_check_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h') {
            printf("usage: freescale data check FILE.h5 [FILE.h5 ...]\n"
                   "\nOpen and validate every event of each dataset.\n");
            return 0;
        }
        fatal("data check: unknown option '%s'", argv[optind - 1]);
    }
    if (optind >= argc)
        fatal("data check: expected FILE.h5");
    for (int i = optind; i < argc; i++) {
        struct dataset ds;
        char err[4400];
        if (dataset_open(&ds, argv[i], err, sizeof err))
            fatal("%s", err);
        if (dataset_validate(&ds, err, sizeof err)) {
            dataset_close(&ds);
            fatal("%s", err);
        }
        printf("%s: ok (%lld users, %lld items, %lld events, %d feature%s)\n", argv[i],
               (long long)ds.num_users, (long long)ds.num_items, (long long)ds.num_events,
               ds.nfeat, ds.nfeat == 1 ? "" : "s");
        for (int k = 0; k < ds.nfeat; k++) {
            const struct dataset_feature *f = &ds.feat[k];
            if (f->is_float)
                printf("  %s/%s: float\n", dataset_feat_kind_name(f->kind), f->name);
            else
                printf("  %s/%s: categorical%s, cardinality %lld\n",
                       dataset_feat_kind_name(f->kind), f->name, f->multi ? " multi-valued" : "",
                       (long long)f->cardinality);
        }
        dataset_close(&ds);
    }
    return 0;
}
