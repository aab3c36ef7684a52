/* data_import: 'freescale data import' — text interactions (movielens, csv,
 * sasrec, JSON lines; plain or gzip, a file or standard input) to the HDF5
 * sequence format of DESIGN.md §4.
 *
 * Steps: read (import_read.c: events in file order, ids interned), drop rows
 * below --min-rating (while reading), the iterated (K_user, K_item)-core,
 * dense ids (users 0..U-1 and items 1..N, both in ascending original id:
 * numeric for integer ids, bytewise for string ids; import_ids.c),
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
        "usage: freescale data import --format movielens|csv|sasrec|jsonl INPUT -o OUT.h5 [options]\n"
        "\n"
        "Convert interactions to a freescale sequence dataset: users 0..U-1 and items\n"
        "1..N renumbered densely in ascending original id (/user_map, /item_map keep the\n"
        "original ids), each user's events in time order (ties keep file order).\n"
        "INPUT is a file or '-' (standard input); gzip data (a name ending in .gz, or\n"
        "any gzip stream) is decompressed while reading.\n"
        "\n"
        "formats:\n"
        "  movielens  ratings.dat lines user::item::rating::timestamp (ML-1M, ML-10M)\n"
        "  csv        delimited rows (RFC 4180 quoting); a header line and columns by\n"
        "             name below (defaults fit ml-latest-small and ML-20M/25M ratings.csv),\n"
        "             or columns by position with --columns\n"
        "  sasrec     'user item' per line, whitespace separated, already in time order\n"
        "  jsonl      one JSON object per line, fields by name below (Amazon reviews:\n"
        "             --user-col reviewerID --item-col asin --rating-col overall\n"
        "             --time-col unixReviewTime)\n"
        "\n"
        "options:\n"
        "  -o, --output OUT.h5      output file (written as OUT.h5.tmp.PID, renamed at the end)\n"
        "  --user-col NAME          csv, jsonl: user id column / field (default userId)\n"
        "  --item-col NAME          csv, jsonl: item id column / field (default movieId)\n"
        "  --rating-col NAME        csv, jsonl: rating (default rating; '' = none)\n"
        "  --time-col NAME          csv, jsonl: timestamp, integer seconds (default\n"
        "                           timestamp; '' = none: events keep file order)\n"
        "  --no-header              csv: the first line is data (columns: --columns)\n"
        "  --columns LIST           csv: the columns by position, e.g. user,item,rating,time\n"
        "                           or item,user,rating,time; '-' skips a column, trailing\n"
        "                           ones may be left out (default with --no-header:\n"
        "                           user,item,rating,time); a header line is skipped\n"
        "  --user-ids int|string    user ids are integers (default) or strings\n"
        "  --item-ids int|string    item ids are integers (default) or strings\n"
        "  --string-ids             both are strings (ordered bytewise; kept in\n"
        "                           /user_map_str, /item_map_str)\n"
        "  --no-rating              store no /actions (csv, jsonl: read no rating)\n"
        "  --no-time                store no /timestamps (csv, jsonl: read no time)\n"
        "  --delimiter S            csv: field separator: one character, 'tab', or several\n"
        "                           characters such as '::' (split literally, no quoting)\n"
        "                           (default ,)\n"
        "  --min-rating R           drop events with rating < R (applied first)\n"
        "  --min-user-events K      then keep the iterated k-core: every user has >= K\n"
        "  --min-item-events K      events and every item >= K events (default 1: all)\n"
        "  --skip-bad               skip malformed lines (first %d reported, total at the\n"
        "                           end) instead of stopping at the first\n"
        "  -h, --help               this text\n"
        "\n"
        "stored: /offsets, /item_ids, /timestamps (int64 seconds) when the input has\n"
        "times, /actions (int32) = round(rating x 10) when it has ratings (3.5 -> 35),\n"
        "/item_map, /user_map (int64) for integer ids, /item_map_str, /user_map_str\n"
        "(UTF-8 strings) for string ids.\n",
        10);
}

/* --- options ------------------------------------------------------------------ */

struct import_cli {
    struct import_options o;
    const char *input, *output;
    int64_t min_user, min_item;
};

static const char *parse_delimiter(const char *s)
{
    if (!strcmp(s, "tab") || !strcmp(s, "\\t"))
        return "\t";
    if (!s[0] || strpbrk(s, "\"\n\r"))
        fatal("--delimiter: '%s' is not one or more characters other than quotes and line "
              "ends (or 'tab')", s);
    return s;
}

/* --columns LIST: position[c] = the 0-based field of column c, or -1. */
static void parse_columns(const char *list, int position[IMPORT_NCOLS])
{
    static const char *names[IMPORT_NCOLS] = {"user", "item", "rating", "time"};
    for (int c = 0; c < IMPORT_NCOLS; c++)
        position[c] = -1;
    int field = 0;
    for (const char *p = list;; field++) {
        size_t n = strcspn(p, ",");
        int c;
        for (c = 0; c < IMPORT_NCOLS; c++)
            if (strlen(names[c]) == n && !strncmp(p, names[c], n))
                break;
        if (c == IMPORT_NCOLS && !(n == 1 && p[0] == '-'))
            fatal("--columns: '%.*s' (column %d of '%s') is not one of user, item, rating, "
                  "time, -", (int)n, p, field + 1, list);
        if (c < IMPORT_NCOLS && position[c] >= 0)
            fatal("--columns: '%s' appears twice in '%s'", names[c], list);
        if (c < IMPORT_NCOLS)
            position[c] = field;
        if (!p[n])
            break;
        p += n + 1;
    }
    if (position[IMPORT_USER] < 0 || position[IMPORT_ITEM] < 0)
        fatal("--columns: '%s' lacks %s (user and item are needed)", list,
              position[IMPORT_USER] < 0 ? "user" : "item");
}

static int parse_id_kind(const char *opt, const char *s)
{
    if (!strcmp(s, "int"))
        return 0;
    if (!strcmp(s, "string"))
        return 1;
    fatal("%s: '%s' is not int or string", opt, s);
}

static void parse_args(int argc, char **argv, struct import_cli *c)
{
    enum { O_USER = 256, O_ITEM, O_RATING, O_TIME, O_NORATING, O_NOTIME, O_DELIM, O_MINR,
           O_MINU, O_MINI, O_SKIP, O_NOHEADER, O_COLUMNS, O_USERIDS, O_ITEMIDS, O_STRIDS };
    static const struct option longs[] = {
        {"format", required_argument, NULL, 'f'}, {"output", required_argument, NULL, 'o'},
        {"user-col", required_argument, NULL, O_USER},
        {"item-col", required_argument, NULL, O_ITEM},
        {"rating-col", required_argument, NULL, O_RATING},
        {"time-col", required_argument, NULL, O_TIME},
        {"no-rating", no_argument, NULL, O_NORATING}, {"no-time", no_argument, NULL, O_NOTIME},
        {"delimiter", required_argument, NULL, O_DELIM},
        {"no-header", no_argument, NULL, O_NOHEADER},
        {"columns", required_argument, NULL, O_COLUMNS},
        {"user-ids", required_argument, NULL, O_USERIDS},
        {"item-ids", required_argument, NULL, O_ITEMIDS},
        {"string-ids", no_argument, NULL, O_STRIDS},
        {"min-rating", required_argument, NULL, O_MINR},
        {"min-user-events", required_argument, NULL, O_MINU},
        {"min-item-events", required_argument, NULL, O_MINI},
        {"skip-bad", no_argument, NULL, O_SKIP}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct import_options *o = &c->o;
    *c = (struct import_cli){.min_user = 1, .min_item = 1};
    *o = (struct import_options){.format = (enum import_format)-1, .user_col = "userId",
                                 .item_col = "movieId", .rating_col = "rating",
                                 .time_col = "timestamp", .delimiter = ",",
                                 .want_rating = 1, .want_time = 1};
    const char *named = NULL, *csv_only = NULL, *columns = NULL;
    opterr = 0;
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, ":f:o:h", longs, NULL)) != -1) {
        switch (ch) {
        case 'f':
            if (!strcmp(optarg, "movielens")) o->format = IMPORT_MOVIELENS;
            else if (!strcmp(optarg, "csv")) o->format = IMPORT_CSV;
            else if (!strcmp(optarg, "sasrec")) o->format = IMPORT_SASREC;
            else if (!strcmp(optarg, "jsonl")) o->format = IMPORT_JSONL;
            else fatal("--format: '%s' is not one of movielens, csv, sasrec, jsonl", optarg);
            break;
        case 'o': c->output = optarg; break;
        case O_USER: o->user_col = optarg; named = "--user-col"; break;
        case O_ITEM: o->item_col = optarg; named = "--item-col"; break;
        case O_RATING: o->rating_col = optarg; named = "--rating-col"; break;
        case O_TIME: o->time_col = optarg; named = "--time-col"; break;
        case O_NORATING: o->want_rating = 0; break;
        case O_NOTIME: o->want_time = 0; break;
        case O_DELIM: o->delimiter = parse_delimiter(optarg); csv_only = "--delimiter"; break;
        case O_NOHEADER: o->no_header = 1; csv_only = "--no-header"; break;
        case O_COLUMNS: columns = optarg; csv_only = "--columns"; break;
        case O_USERIDS: o->string_users = parse_id_kind("--user-ids", optarg); break;
        case O_ITEMIDS: o->string_items = parse_id_kind("--item-ids", optarg); break;
        case O_STRIDS: o->string_users = o->string_items = 1; break;
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
        fatal("data import: missing --format movielens|csv|sasrec|jsonl");
    if (!c->output)
        fatal("data import: missing -o OUT.h5");
    if (csv_only && o->format != IMPORT_CSV)
        fatal("%s applies to --format csv only", csv_only);
    if (named && o->format != IMPORT_CSV && o->format != IMPORT_JSONL)
        fatal("%s applies to --format csv and jsonl only", named);
    if (named && columns)
        fatal("%s and --columns: choose the columns by name or by position, not both", named);
    if (o->no_header && !columns)
        columns = "user,item,rating,time";
    if (columns) {
        o->by_position = 1;
        parse_columns(columns, o->position);
        if (!o->want_rating)
            o->position[IMPORT_RATING] = -1;
        if (!o->want_time)
            o->position[IMPORT_TIME] = -1;
        o->user_col = o->item_col = o->rating_col = o->time_col = NULL;
    } else {
        if (!o->user_col[0] || !o->item_col[0])
            fatal("--user-col and --item-col must name a column");
        if (!o->want_rating || !o->rating_col[0])
            o->rating_col = NULL, o->want_rating = 0;
        if (!o->want_time || !o->time_col[0])
            o->time_col = NULL, o->want_time = 0;
    }
    int has_rating = o->format == IMPORT_MOVIELENS ||
                     ((o->format == IMPORT_CSV || o->format == IMPORT_JSONL) &&
                      (o->by_position ? o->position[IMPORT_RATING] >= 0 : o->rating_col != NULL));
    if (o->has_min_rating && !has_rating)
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

/* The original ids of t in dense order (order [m] from import_ids_rank) as
 * /NAME (int64) or, for string ids, /NAME_str (strings). */
static int write_map(struct dataset_writer *w, const char *name, const struct import_ids *t,
                     const int32_t *order, int64_t m, char *err, size_t errlen)
{
    int rc;
    if (!t->strings) {
        int64_t *ids = xmalloc((size_t)(m ? m : 1) * sizeof *ids);
        for (int64_t r = 0; r < m; r++)
            ids[r] = t->ids[order[r]];
        rc = dataset_writer_map(w, name, ids, m, err, errlen);
        free(ids);
        return rc;
    }
    const char **s = xmalloc((size_t)(m ? m : 1) * sizeof *s);
    size_t *len = xmalloc((size_t)(m ? m : 1) * sizeof *len);
    for (int64_t r = 0; r < m; r++)
        s[r] = import_ids_str(t, order[r], &len[r]);
    char sname[64];
    snprintf(sname, sizeof sname, "%s_str", name);
    rc = dataset_writer_map_str(w, sname, s, len, m, err, errlen);
    free(s);
    free(len);
    return rc;
}

/* Write users in batches of about WRITE_BATCH events; the file appears at
 * path only when everything succeeded. uorder [nu], iorder [ni]: the
 * interned indexes in dense order. */
static void write_dataset(const char *path, const struct import_events *ev, const int64_t *perm,
                          const int64_t *off, int64_t nu, const int32_t *irank,
                          const int32_t *uorder, const int32_t *iorder, int64_t ni)
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
    if (write_map(w, "item_map", &ev->items, iorder, ni, err, sizeof err) ||
        write_map(w, "user_map", &ev->users, uorder, nu, err, sizeof err)) {
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
    static const char *format_name[] = {"movielens", "csv", "sasrec", "jsonl"};
    struct import_cli c;
    parse_args(argc, argv, &c);
    double t0 = clock_seconds();

    struct import_events ev;
    import_read(c.input, &c.o, &ev);
    if (ev.n == 0)
        fatal("%s: no events left: %lld rows, %lld bad lines skipped, %lld below --min-rating",
              ev.path, (long long)ev.rows, (long long)ev.bad, (long long)ev.below_min);
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
    int32_t *uorder, *iorder;
    int64_t nu = import_ids_rank(&ev.users, ucnt, urank, &uorder);
    int64_t ni = import_ids_rank(&ev.items, icnt, irank, &iorder);
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
              "--min-item-events %lld) of %lld events", ev.path, (long long)c.min_user,
              (long long)c.min_item, (long long)ev.n);
    int64_t *perm = order_events(&ev, alive, urank, nu, off);
    double t_sort = clock_seconds();

    write_dataset(c.output, &ev, perm, off, nu, irank, uorder, iorder, ni);
    double t_end = clock_seconds();

    log_info("data import: read %s (%s%s): %lld lines, %lld rows, %lld bad lines skipped, "
             "%lld below --min-rating", ev.path, format_name[c.o.format],
             ev.gzip ? ", gzip" : "", (long long)ev.lines,
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
    free(uorder);
    free(iorder);
    free(urank);
    free(irank);
    free(alive);
    free(ucnt);
    free(icnt);
    import_events_free(&ev);
    return 0;
}
