/* data_import: 'freescale data import' — text interactions (movielens, csv,
 * sasrec) to the HDF5 sequence format of DESIGN.md §4.
 *
 * Steps: read (import_read.c: events in file order, ids interned), drop rows
 * below --min-rating (while reading), the iterated (K_user, K_item)-core,
 * dense ids (users 0..U-1 and items 1..N, both in ascending original id),
 * group by user (stable counting sort), order each user's events by time
 * (stable: ties keep file order), write through the dataset writer, which
 * renames the file into place only when everything succeeded. */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/clock.h"
#include "cli/cli.h"
#include "tools/data_tools.h"
#include "data/dataset.h"
#include "tools/import_read.h"
#include "base/log.h"

#define WRITE_BATCH ((int64_t)1 << 20) /* events per dataset_writer_append */

static void usage(FILE *out)
{
    fprintf(out,
        "usage: freescale data import --format movielens|csv|sasrec INPUT -o OUT.h5 [options]\n"
        "\n"
        "Convert interactions to a freescale sequence dataset: users 0..U-1 and items\n"
        "1..N renumbered densely in ascending original id (/user_map, /item_map keep the\n"
        "original ids), each user's events in time order (ties keep file order).\n"
        "\n"
        "formats:\n"
        "  movielens  ratings.dat lines user::item::rating::timestamp (ML-1M, ML-10M)\n"
        "  csv        header line, then rows (RFC 4180 quoting); columns by name below\n"
        "             (defaults fit ml-latest-small and ML-20M/25M ratings.csv)\n"
        "  sasrec     'user item' per line, whitespace separated, already in time order\n"
        "\n"
        "options:\n"
        "  -o, --output OUT.h5      output file (written as OUT.h5.tmp.PID, renamed at the end)\n"
        "  --user-col NAME          csv: user id column (default userId)\n"
        "  --item-col NAME          csv: item id column (default movieId)\n"
        "  --rating-col NAME        csv: rating column (default rating; '' = none)\n"
        "  --time-col NAME          csv: timestamp column, integer seconds (default\n"
        "                           timestamp; '' = none: events keep file order)\n"
        "  --no-rating              store no /actions (csv: do not read a rating column)\n"
        "  --no-time                store no /timestamps (csv: do not read a time column)\n"
        "  --delimiter C            csv: field separator, one character or 'tab' (default ,)\n"
        "  --min-rating R           drop events with rating < R (applied first)\n"
        "  --min-user-events K      then keep the iterated k-core: every user has >= K\n"
        "  --min-item-events K      events and every item >= K events (default 1: all)\n"
        "  --skip-bad               skip malformed lines (first %d reported, total at the\n"
        "                           end) instead of stopping at the first\n"
        "  -h, --help               this text\n"
        "\n"
        "stored: /offsets, /item_ids, /timestamps (int64 seconds) when the input has\n"
        "times, /actions (int32) = round(rating x 10) when it has ratings (3.5 -> 35),\n"
        "/item_map, /user_map. Ids must be integers.\n",
        10);
}

/* --- options ------------------------------------------------------------------ */

struct import_cli {
    struct import_options o;
    const char *input, *output;
    int64_t min_user, min_item;
};

static char parse_delimiter(const char *s)
{
    if (!strcmp(s, "tab") || !strcmp(s, "\\t"))
        return '\t';
    if (strlen(s) != 1 || s[0] == '"' || s[0] == '\n' || s[0] == '\r')
        fatal("--delimiter: '%s' is not one character other than a quote or line end "
              "(or 'tab')", s);
    return s[0];
}

static void parse_args(int argc, char **argv, struct import_cli *c)
{
    enum { O_USER = 256, O_ITEM, O_RATING, O_TIME, O_NORATING, O_NOTIME, O_DELIM, O_MINR,
           O_MINU, O_MINI, O_SKIP };
    static const struct option longs[] = {
        {"format", required_argument, NULL, 'f'}, {"output", required_argument, NULL, 'o'},
        {"user-col", required_argument, NULL, O_USER},
        {"item-col", required_argument, NULL, O_ITEM},
        {"rating-col", required_argument, NULL, O_RATING},
        {"time-col", required_argument, NULL, O_TIME},
        {"no-rating", no_argument, NULL, O_NORATING}, {"no-time", no_argument, NULL, O_NOTIME},
        {"delimiter", required_argument, NULL, O_DELIM},
        {"min-rating", required_argument, NULL, O_MINR},
        {"min-user-events", required_argument, NULL, O_MINU},
        {"min-item-events", required_argument, NULL, O_MINI},
        {"skip-bad", no_argument, NULL, O_SKIP}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct import_options *o = &c->o;
    *c = (struct import_cli){.min_user = 1, .min_item = 1};
    *o = (struct import_options){.format = (enum import_format)-1, .user_col = "userId",
                                 .item_col = "movieId", .rating_col = "rating",
                                 .time_col = "timestamp", .delimiter = ',',
                                 .want_rating = 1, .want_time = 1};
    const char *csv_only = NULL;
    opterr = 0;
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, ":f:o:h", longs, NULL)) != -1) {
        switch (ch) {
        case 'f':
            if (!strcmp(optarg, "movielens")) o->format = IMPORT_MOVIELENS;
            else if (!strcmp(optarg, "csv")) o->format = IMPORT_CSV;
            else if (!strcmp(optarg, "sasrec")) o->format = IMPORT_SASREC;
            else fatal("--format: '%s' is not one of movielens, csv, sasrec", optarg);
            break;
        case 'o': c->output = optarg; break;
        case O_USER: o->user_col = optarg; csv_only = "--user-col"; break;
        case O_ITEM: o->item_col = optarg; csv_only = "--item-col"; break;
        case O_RATING: o->rating_col = optarg; csv_only = "--rating-col"; break;
        case O_TIME: o->time_col = optarg; csv_only = "--time-col"; break;
        case O_NORATING: o->want_rating = 0; break;
        case O_NOTIME: o->want_time = 0; break;
        case O_DELIM: o->delimiter = parse_delimiter(optarg); csv_only = "--delimiter"; break;
        case O_MINR:
            o->has_min_rating = 1;
            o->min_rating = cli_number("--min-rating", optarg, -1e9, 1e9);
            break;
        case O_MINU: c->min_user = cli_count("--min-user-events", optarg, 0, INT64_MAX / 2); break;
        case O_MINI: c->min_item = cli_count("--min-item-events", optarg, 0, INT64_MAX / 2); break;
        case O_SKIP: o->skip_bad = 1; break;
        case 'h': usage(stdout); exit(0);
        case ':': fatal("option '%s' needs a value", argv[optind - 1]);
        default: fatal("unknown option '%s' (see 'freescale data import --help')", argv[optind - 1]);
        }
    }
    if (optind == argc)
        fatal("data import: missing INPUT (see 'freescale data import --help')");
    if (argc - optind > 1)
        fatal("data import: one INPUT expected, got %d ('%s', '%s'%s)", argc - optind,
              argv[optind], argv[optind + 1], argc - optind > 2 ? ", ..." : "");
    c->input = argv[optind];
    if ((int)o->format < 0)
        fatal("data import: missing --format movielens|csv|sasrec");
    if (!c->output)
        fatal("data import: missing -o OUT.h5");
    if (csv_only && o->format != IMPORT_CSV)
        fatal("%s applies to --format csv only", csv_only);
    if (!o->user_col[0] || !o->item_col[0])
        fatal("--user-col and --item-col must name a column");
    if (!o->want_rating || !o->rating_col[0])
        o->rating_col = NULL, o->want_rating = 0;
    if (!o->want_time || !o->time_col[0])
        o->time_col = NULL, o->want_time = 0;
    if (o->has_min_rating && (o->format == IMPORT_SASREC || (o->format == IMPORT_CSV &&
                                                             !o->rating_col)))
        fatal("--min-rating needs ratings, and this input has none (%s)",
              o->format == IMPORT_SASREC ? "--format sasrec" : "no rating column");
}

/* --- filters, dense ids ------------------------------------------------------- */

/* Counts of the alive events per interned user / item: ucnt [users.n],
 * icnt [items.n]; alive [n] (NULL = all). */
static void count_events(const struct import_events *ev, const uint8_t *alive, int64_t *ucnt,
                         int64_t *icnt)
{
    memset(ucnt, 0, (size_t)ev->users.n * sizeof *ucnt);
    memset(icnt, 0, (size_t)ev->items.n * sizeof *icnt);
    for (int64_t i = 0; i < ev->n; i++)
        if (!alive || alive[i])
            ucnt[ev->user[i]]++, icnt[ev->item[i]]++;
}

/* The (ku, ki)-core: drop events of users with < ku or items with < ki
 * events until none is dropped (the result does not depend on the order).
 * alive [n] starts all 1; counts are kept current. Returns the rounds. */
static int kcore(const struct import_events *ev, int64_t ku, int64_t ki, uint8_t *alive,
                 int64_t *ucnt, int64_t *icnt)
{
    int rounds = 0;
    for (int64_t dropped = 1; dropped; rounds++) {
        dropped = 0;
        for (int64_t i = 0; i < ev->n; i++) {
            int32_t u = ev->user[i], it = ev->item[i];
            if (alive[i] && (ucnt[u] < ku || icnt[it] < ki)) {
                alive[i] = 0, ucnt[u]--, icnt[it]--, dropped++;
            }
        }
    }
    return rounds;
}

/* LSD radix sort of key [n] ascending, val carried along; stable. Bytes
 * where all keys agree are skipped. ktmp, vtmp: scratch of n. */
static void radix_sort(uint64_t *key, int32_t *val, int64_t n, uint64_t *ktmp, int32_t *vtmp)
{
    static int64_t hist[8][256];
    memset(hist, 0, sizeof hist);
    for (int64_t i = 0; i < n; i++)
        for (int d = 0; d < 8; d++)
            hist[d][(key[i] >> (8 * d)) & 255]++;
    uint64_t *ks = key, *kd = ktmp;
    int32_t *vs = val, *vd = vtmp;
    for (int d = 0; d < 8 && n > 0; d++) {
        int64_t *h = hist[d], sum = 0;
        if (h[(key[0] >> (8 * d)) & 255] == n)
            continue;
        for (int b = 0; b < 256; b++) {
            int64_t c = h[b];
            h[b] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t at = h[(ks[i] >> (8 * d)) & 255]++;
            kd[at] = ks[i], vd[at] = vs[i];
        }
        uint64_t *kt = ks; ks = kd; kd = kt;
        int32_t *vt = vs; vs = vd; vd = vt;
    }
    if (ks != key) {
        memcpy(key, ks, (size_t)n * sizeof *key);
        memcpy(val, vs, (size_t)n * sizeof *val);
    }
}

/* Dense ranks of the ids with count > 0: rank [t->n] = place in ascending
 * order of original id, or -1; map [result] = the original ids in order. */
static int64_t rank_ids(const struct import_ids *t, const int64_t *count, int32_t *rank,
                        int64_t **map)
{
    uint64_t *key = xmalloc((size_t)(t->n + 1) * 2 * sizeof *key);
    int32_t *val = xmalloc((size_t)(t->n + 1) * 2 * sizeof *val);
    int64_t m = 0;
    for (int64_t k = 0; k < t->n; k++) {
        rank[k] = -1;
        if (count[k] > 0)
            key[m] = (uint64_t)t->ids[k] ^ ((uint64_t)1 << 63), val[m++] = (int32_t)k;
    }
    radix_sort(key, val, m, key + m, val + m);
    *map = xmalloc((size_t)(m ? m : 1) * sizeof **map);
    for (int64_t r = 0; r < m; r++) {
        rank[val[r]] = (int32_t)r;
        (*map)[r] = t->ids[val[r]];
    }
    free(key);
    free(val);
    return m;
}

/* --- order ------------------------------------------------------------------ */

struct tpair {
    int64_t ts, i;
};

/* Stable sort of a [n] by ts (insertion runs of 16, then bottom-up merges
 * between a and tmp [n]). */
static void sort_by_time(struct tpair *a, struct tpair *tmp, int64_t n)
{
    for (int64_t s = 0; s < n; s += 16) {
        int64_t e = s + 16 < n ? s + 16 : n;
        for (int64_t j = s + 1; j < e; j++) {
            struct tpair x = a[j];
            int64_t k = j;
            for (; k > s && a[k - 1].ts > x.ts; k--)
                a[k] = a[k - 1];
            a[k] = x;
        }
    }
    struct tpair *src = a, *dst = tmp;
    for (int64_t w = 16; w < n; w *= 2) {
        for (int64_t s = 0; s < n; s += 2 * w) {
            int64_t m = s + w < n ? s + w : n, e = s + 2 * w < n ? s + 2 * w : n;
            int64_t i = s, j = m, k = s;
            while (i < m && j < e)
                dst[k++] = src[j].ts < src[i].ts ? src[j++] : src[i++];
            while (i < m) dst[k++] = src[i++];
            while (j < e) dst[k++] = src[j++];
        }
        struct tpair *t = src; src = dst; dst = t;
    }
    if (src != a)
        memcpy(a, src, (size_t)n * sizeof *a);
}

/* Events grouped by dense user (stable), then each user's ordered by time:
 * perm [off[U]] = event indexes; off [U + 1]. urank [users.n] from rank_ids. */
static int64_t *order_events(const struct import_events *ev, const uint8_t *alive,
                             const int32_t *urank, int64_t nu, const int64_t *off)
{
    int64_t *perm = xmalloc((size_t)(off[nu] ? off[nu] : 1) * sizeof *perm);
    int64_t *pos = xmalloc((size_t)nu * sizeof *pos);
    memcpy(pos, off, (size_t)nu * sizeof *pos);
    for (int64_t i = 0; i < ev->n; i++)
        if (!alive || alive[i])
            perm[pos[urank[ev->user[i]]]++] = i;
    free(pos);
    if (!ev->ts)
        return perm;
    int64_t maxlen = 0;
    for (int64_t u = 0; u < nu; u++)
        if (off[u + 1] - off[u] > maxlen)
            maxlen = off[u + 1] - off[u];
    struct tpair *a = xmalloc((size_t)(2 * maxlen + 1) * sizeof *a);
    for (int64_t u = 0; u < nu; u++) {
        int64_t *p = perm + off[u], len = off[u + 1] - off[u], j = 1;
        while (j < len && ev->ts[p[j]] >= ev->ts[p[j - 1]])
            j++;
        if (j >= len)
            continue; /* already in time order */
        for (j = 0; j < len; j++)
            a[j] = (struct tpair){ev->ts[p[j]], p[j]};
        sort_by_time(a, a + len, len);
        for (j = 0; j < len; j++)
            p[j] = a[j].i;
    }
    free(a);
    return perm;
}

/* --- write ------------------------------------------------------------------- */

/* Write users in batches of about WRITE_BATCH events; the file appears at
 * path only when everything succeeded. */
static void write_dataset(const char *path, const struct import_events *ev, const int64_t *perm,
                          const int64_t *off, int64_t nu, const int32_t *irank,
                          const int64_t *user_map, const int64_t *item_map, int64_t ni)
{
    int64_t cap = WRITE_BATCH;
    for (int64_t u = 0; u < nu; u++)
        if (off[u + 1] - off[u] > cap)
            cap = off[u + 1] - off[u];
    int64_t *items = xmalloc((size_t)cap * sizeof *items);
    int64_t *ts = ev->ts ? xmalloc((size_t)cap * sizeof *ts) : NULL;
    int32_t *act = ev->act ? xmalloc((size_t)cap * sizeof *act) : NULL;
    int64_t *lens = xmalloc((size_t)nu * sizeof *lens);
    char err[1024];
    struct dataset_writer *w = dataset_writer_open(path, ts != NULL, act != NULL, err, sizeof err);
    if (!w)
        fatal("%s", err);
    for (int64_t u0 = 0, u1; u0 < nu; u0 = u1) {
        for (u1 = u0; u1 < nu && (u1 == u0 || off[u1 + 1] - off[u0] <= cap); u1++)
            lens[u1 - u0] = off[u1 + 1] - off[u1];
        int64_t n = off[u1] - off[u0];
        const int64_t *p = perm + off[u0];
        for (int64_t j = 0; j < n; j++) {
            items[j] = (int64_t)irank[ev->item[p[j]]] + 1;
            if (ts) ts[j] = ev->ts[p[j]];
            if (act) act[j] = ev->act[p[j]];
        }
        if (dataset_writer_append(w, u1 - u0, lens, items, ts, act, err, sizeof err)) {
            dataset_writer_abort(w);
            fatal("%s", err);
        }
    }
    if (dataset_writer_map(w, "item_map", item_map, ni, err, sizeof err) ||
        dataset_writer_map(w, "user_map", user_map, nu, err, sizeof err)) {
        dataset_writer_abort(w);
        fatal("%s", err);
    }
    if (dataset_writer_close(w, ni, err, sizeof err))
        fatal("%s", err);
    free(items);
    free(ts);
    free(act);
    free(lens);
}

/* --- main --------------------------------------------------------------------- */

int data_import_main(int argc, char **argv)
{
    static const char *format_name[] = {"movielens", "csv", "sasrec"};
    struct import_cli c;
    parse_args(argc, argv, &c);
    double t0 = clock_seconds();

    struct import_events ev;
    import_read(c.input, &c.o, &ev);
    if (ev.n == 0)
        fatal("%s: no events left: %lld rows, %lld bad lines skipped, %lld below --min-rating",
              c.input, (long long)ev.rows, (long long)ev.bad, (long long)ev.below_min);
    double t_read = clock_seconds();

    int64_t *ucnt = xmalloc((size_t)ev.users.n * sizeof *ucnt);
    int64_t *icnt = xmalloc((size_t)ev.items.n * sizeof *icnt);
    uint8_t *alive = NULL;
    int rounds = 0;
    count_events(&ev, NULL, ucnt, icnt);
    if (c.min_user > 1 || c.min_item > 1) {
        alive = xmalloc((size_t)ev.n);
        memset(alive, 1, (size_t)ev.n);
        rounds = kcore(&ev, c.min_user, c.min_item, alive, ucnt, icnt);
    }
    int32_t *urank = xmalloc((size_t)ev.users.n * sizeof *urank);
    int32_t *irank = xmalloc((size_t)ev.items.n * sizeof *irank);
    int64_t *user_map, *item_map;
    int64_t nu = rank_ids(&ev.users, ucnt, urank, &user_map);
    int64_t ni = rank_ids(&ev.items, icnt, irank, &item_map);
    int64_t *off = xmalloc((size_t)(nu + 1) * sizeof *off);
    off[0] = 0;
    for (int64_t k = 0; k < ev.users.n; k++)
        if (urank[k] >= 0)
            off[urank[k] + 1] = ucnt[k];
    for (int64_t u = 0; u < nu; u++)
        off[u + 1] += off[u];
    int64_t events = off[nu];
    if (events == 0)
        fatal("%s: nothing left after the k-core filter (--min-user-events %lld, "
              "--min-item-events %lld) of %lld events", c.input, (long long)c.min_user,
              (long long)c.min_item, (long long)ev.n);
    int64_t *perm = order_events(&ev, alive, urank, nu, off);
    double t_sort = clock_seconds();

    write_dataset(c.output, &ev, perm, off, nu, irank, user_map, item_map, ni);
    double t_end = clock_seconds();

    log_info("data import: read %s (%s): %lld lines, %lld rows, %lld bad lines skipped, "
             "%lld below --min-rating", c.input, format_name[c.o.format], (long long)ev.lines,
             (long long)ev.rows, (long long)ev.bad, (long long)ev.below_min);
    if (alive)
        log_info("data import: k-core (--min-user-events %lld, --min-item-events %lld): "
                 "%lld events dropped in %d passes", (long long)c.min_user,
                 (long long)c.min_item, (long long)(ev.n - events), rounds);
    log_info("data import: wrote %s: %lld users, %lld items, %lld events (%s%s)", c.output,
             (long long)nu, (long long)ni, (long long)events,
             ev.ts ? "timestamps" : "no timestamps",
             ev.act ? ", actions = rating x 10" : ", no actions");
    double dt = t_end - t0 > 1e-9 ? t_end - t0 : 1e-9;
    log_info("data import: %.2f s (read %.2f, filter+sort %.2f, write %.2f), %.3g rows/s", dt,
             t_read - t0, t_sort - t_read, t_end - t_sort, (double)ev.rows / dt);

    free(perm);
    free(off);
    free(user_map);
    free(item_map);
    free(urank);
    free(irank);
    free(alive);
    free(ucnt);
    free(icnt);
    import_events_free(&ev);
    return 0;
}
