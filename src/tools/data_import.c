/* data_import: 'freescale data import' — text interactions (movielens, csv,
 * sasrec, JSON lines; plain or gzip, a file or standard input) to the HDF5
 * sequence format of doc/data.md.
 *
 * Steps: read (import_read.c: events in file order, ids interned), drop rows
 * below --min-rating (while reading), the iterated (K_user, K_item)-core,
 * dense ids (users 0..U-1 and items 1..N, both in ascending original id:
 * numeric for integer ids, bytewise for string ids; import_ids.c),
 * group by user (stable counting sort), order each user's events by time
 * (stable: ties keep file order), join the side files (user and item
 * features; import_side.h), write through the dataset writer
 * (import_write.c), which renames the file into place only when everything
 * succeeded. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/check.h"
#include "base/clock.h"
#include "cli/cli.h"
#include "tools/data_tools.h"
#include "data/dataset.h"
#include "tools/import_raw.h"
#include "tools/import_read.h"
#include "tools/import_side.h"
#include "tools/import_write.h"
#include "base/log.h"

static void usage(FILE *out)
{
    fprintf(out,
        "usage: freescale data import --format movielens|csv|sasrec|jsonl|yambda INPUT -o OUT.h5\n"
        "       [options]\n"
        "\n"
        "Convert interactions to a freescale sequence dataset: users 0..U-1 and items\n"
        "1..N renumbered densely in ascending original id (/user_map, /item_map keep the\n"
        "original ids), each user's events in time order (ties keep file order).\n"
        "INPUT is a file or '-' (standard input); gzip data (a name ending in .gz, or\n"
        "any gzip stream) is decompressed while reading.\n"
        "\n"
        "formats:\n"
        "  movielens  ratings.dat lines user::item::rating::timestamp (ML-1M, ML-10M),\n"
        "             ratings.csv (ML-20M, 25M, latest), u.data (ML-100K); the rating is\n"
        "             kept as /events/rating (float) besides /actions\n"
        "  csv        delimited rows (RFC 4180 quoting); a header line and columns by\n"
        "             name below (defaults fit ml-latest-small and ML-20M/25M ratings.csv),\n"
        "             or columns by position with --columns\n"
        "  sasrec     'user item' per line, whitespace separated, already in time order\n"
        "  jsonl      one JSON object per line, fields by name below (Amazon reviews:\n"
        "             --user-col reviewerID --item-col asin --rating-col overall\n"
        "             --time-col unixReviewTime)\n"
        "  yambda     Yambda's multi_event table as csv with a header, or as JSON lines\n"
        "             (INPUT *.jsonl, *.json, *.ndjson): uid, item_id, timestamp (seconds),\n"
        "             event_type, is_organic (categorical, fixed ids), played_ratio_pct,\n"
        "             track_length_seconds (float, empty = 0); --ids raw by default;\n"
        "             --item-features FILE keyed by item_id (doc/importing.md)\n"
        "\n"
        "options:\n"
        "  -o, --output OUT.h5      output file (written as OUT.h5.tmp.PID, renamed at the end)\n"
        "  --split-days DIR         (also or instead) one file per day of the events' times,\n"
        "                           DIR/day-DDDD.h5 for the seconds [D x 86400, + 86400),\n"
        "                           as data gen --stream writes them (needs a time column)\n"
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
        "  --ids dense|raw          dense (default): items renumbered 1..N; raw: item ids\n"
        "                           kept as they are (positive int64; string ids as their\n"
        "                           FNV-1a 64 hash, top bit cleared), listed sorted in\n"
        "                           /items/ids (dataset version 3); users in ascending raw\n"
        "                           id with it in /user_map (doc/data.md)\n"
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
        "  --time-unit s|ms         the time column counts seconds (default) or\n"
        "                           milliseconds (stored as seconds)\n"
        "\n"
        "features (dataset version 2; doc/importing.md):\n"
        "  --event-cols LIST        columns kept per event as /events/NAME: NAME\n"
        "                           (categorical: values mapped to ids 1..K, empty =\n"
        "                           missing) or NAME:float; csv by position: the names of\n"
        "                           --columns (rating:float); movielens: rating or\n"
        "                           timestamp (default rating:float, the label of ranking\n"
        "                           tasks; --no-rating: none)\n"
        "  --items FILE             MovieLens movies.dat, movies.csv or u.item: /items/genres\n"
        "                           (multi-valued), /items/year (from the title)\n"
        "  --users FILE             MovieLens users.dat or u.user: /users/gender, age,\n"
        "                           occupation, zip_prefix\n"
        "  --item-features FILE     a csv file with a header, one row per item, joined by\n"
        "  --item-key COL           the item id in column COL; kept columns:\n"
        "  --item-cols LIST         NAME, NAME:multi or NAME:float (default: all but COL)\n"
        "  --user-features FILE, --user-key COL, --user-cols LIST: the same for users\n"
        "  --side-delimiter S       field separator of the feature files (default ,)\n"
        "  --multi-sep C            separator of the values of NAME:multi (default |)\n"
        "  -h, --help               this text\n"
        "\n"
        "stored: /offsets, /item_ids, /timestamps (int64 seconds) when the input has\n"
        "times, /actions (int32) = round(rating x 10) when it has ratings (3.5 -> 35),\n"
        "/item_map, /user_map (int64) for integer ids, /item_map_str, /user_map_str\n"
        "(UTF-8 strings) for string ids; features in /events, /users, /items with their\n"
        "value maps in /feature_maps.\n",
        10);
}

/* --- options ------------------------------------------------------------------ */

struct import_cli {
    struct import_options o;
    const char *input, *output;
    const char *split_dir;                    /* --split-days DIR */
    int64_t min_user, min_item;
    int raw_ids;                              /* --ids raw */
    const char *ml_items, *ml_users;          /* --items, --users */
    struct import_side item_side, user_side;  /* --item-features ..., --user-features ... */
};

/* --event-cols LIST: NAME or NAME:float, comma-separated. */
static void parse_event_cols(const char *list, struct import_options *o)
{
    static char buf[4096];
    if (strlen(list) >= sizeof buf)
        fatal("--event-cols: list too long");
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *type = strchr(tok, ':');
        int is_float = 0;
        if (type) {
            *type++ = 0;
            if (strcmp(type, "float"))
                fatal("--event-cols: '%s:%s': the type is float (or none: categorical)", tok,
                      type);
            is_float = 1;
        }
        if (!import_feat_name_ok(tok, strlen(tok)))
            fatal("--event-cols: '%s' cannot name a feature (1 to %d characters of A-Z a-z 0-9 "
                  "_ - .)", tok, DATASET_FEATURE_NAME - 1);
        for (int c = 0; c < o->nevcols; c++)
            if (!strcmp(o->evcol[c].name, tok))
                fatal("--event-cols: '%s' appears twice", tok);
        if (o->nevcols == IMPORT_MAX_EVCOLS)
            fatal("--event-cols: more than %d columns", IMPORT_MAX_EVCOLS);
        o->evcol[o->nevcols++] = (struct import_evcol){.name = tok, .is_float = is_float};
    }
    if (o->nevcols == 0)
        fatal("--event-cols: no column in '%s'", list);
}

/* The fields of the event columns of a fixed layout: MovieLens ratings
 * (user, item, rating, timestamp: rating or timestamp may be kept) or csv
 * by position (the names of --columns). */
static void event_positions(struct import_options *o, const char *columns)
{
    static const char *const ml[4] = {"user", "item", "rating", "timestamp"};
    static const char *const pos[IMPORT_NCOLS] = {"user", "item", "rating", "time"};
    const int movielens = o->format == IMPORT_MOVIELENS;
    for (int c = 0; c < o->nevcols; c++) {
        const char *name = o->evcol[c].name;
        int at = -1;
        for (int k = movielens ? 2 : 0; k < 4; k++)
            if (!strcmp(name, movielens ? ml[k] : pos[k]))
                at = movielens ? k : o->position[k];
        if (at < 0 && movielens)
            fatal("--event-cols: '%s': the MovieLens ratings have the columns user, item, "
                  "rating, timestamp; rating (kept by default as rating:float) or timestamp "
                  "may be an event column", name);
        if (at < 0)
            fatal("--event-cols: '%s' is not a column of --columns %s: by position, name a "
                  "column of it (user, item, rating or time; e.g. --event-cols rating:float)",
                  name, columns);
        o->evpos[c] = at;
    }
}

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

/* --format yambda: Yambda's multi_event columns (doc/importing.md), csv with
 * a header or JSON lines (INPUT named *.jsonl, *.json, *.ndjson, maybe .gz). */
static void yambda_preset(struct import_cli *c, struct import_options *o, const char *named,
                          int ids_set)
{
    static const char *const types[] = {"dislike", "like", "listen", "undislike", "unlike"};
    static const char *const flags[] = {"0", "1"};
    if (named)
        fatal("--format yambda names its columns itself (uid, item_id, timestamp, is_organic, "
              "played_ratio_pct, track_length_seconds, event_type): %s is not for it", named);
    const char *in = c->input;
    size_t n = strlen(in);
    if (n > 3 && !strcmp(in + n - 3, ".gz"))
        n -= 3;
    static const char *const json_ext[] = {".jsonl", ".json", ".ndjson"};
    for (int k = 0; k < 3; k++) {
        size_t e = strlen(json_ext[k]);
        if (n > e && !strncmp(in + n - e, json_ext[k], e))
            o->format = IMPORT_JSONL;
    }
    o->user_col = "uid";
    o->item_col = "item_id";
    o->time_col = "timestamp";
    o->rating_col = NULL;
    o->want_rating = 0;
    if (!ids_set)
        c->raw_ids = o->raw_items = 1;
    o->nevcols = 0;
    o->evcol[o->nevcols++] = (struct import_evcol){.name = "event_type", .values = types,
                                                   .nvalues = 5};
    o->evcol[o->nevcols++] = (struct import_evcol){.name = "is_organic", .values = flags,
                                                   .nvalues = 2};
    o->evcol[o->nevcols++] = (struct import_evcol){.name = "played_ratio_pct", .is_float = 1,
                                                   .empty_zero = 1};
    o->evcol[o->nevcols++] = (struct import_evcol){.name = "track_length_seconds",
                                                   .is_float = 1, .empty_zero = 1};
    if (c->item_side.path && !c->item_side.key)
        c->item_side.key = "item_id";
}

static void parse_args(int argc, char **argv, struct import_cli *c)
{
    enum { O_USER = 256, O_ITEM, O_RATING, O_TIME, O_NORATING, O_NOTIME, O_DELIM, O_MINR,
           O_MINU, O_MINI, O_SKIP, O_NOHEADER, O_COLUMNS, O_USERIDS, O_ITEMIDS, O_STRIDS,
           O_EVCOLS, O_ITEMS, O_USERS, O_IFEAT, O_IKEY, O_ICOLS, O_UFEAT, O_UKEY, O_UCOLS,
           O_SIDEDELIM, O_MULTISEP, O_TUNIT, O_IDS, O_SPLIT };
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
        {"event-cols", required_argument, NULL, O_EVCOLS},
        {"items", required_argument, NULL, O_ITEMS}, {"users", required_argument, NULL, O_USERS},
        {"item-features", required_argument, NULL, O_IFEAT},
        {"item-key", required_argument, NULL, O_IKEY},
        {"item-cols", required_argument, NULL, O_ICOLS},
        {"user-features", required_argument, NULL, O_UFEAT},
        {"user-key", required_argument, NULL, O_UKEY},
        {"user-cols", required_argument, NULL, O_UCOLS},
        {"side-delimiter", required_argument, NULL, O_SIDEDELIM},
        {"multi-sep", required_argument, NULL, O_MULTISEP},
        {"time-unit", required_argument, NULL, O_TUNIT},
        {"ids", required_argument, NULL, O_IDS},
        {"split-days", required_argument, NULL, O_SPLIT},
        {NULL, 0, NULL, 0}};
    struct import_options *o = &c->o;
    *c = (struct import_cli){.min_user = 1, .min_item = 1};
    c->item_side = c->user_side = (struct import_side){.delimiter = ",", .multi_sep = '|'};
    const char *evcols = NULL;
    *o = (struct import_options){.format = (enum import_format)-1, .user_col = "userId",
                                 .item_col = "movieId", .rating_col = "rating",
                                 .time_col = "timestamp", .delimiter = ",",
                                 .want_rating = 1, .want_time = 1};
    const char *named = NULL, *csv_only = NULL, *columns = NULL;
    int yambda = 0, ids_set = 0;
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
            else if (!strcmp(optarg, "yambda")) o->format = IMPORT_CSV, yambda = 1;
            else fatal("--format: '%s' is not one of movielens, csv, sasrec, jsonl, yambda",
                       optarg);
            break;
        case 'o': c->output = optarg; break;
        case O_SPLIT: c->split_dir = optarg; break;
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
        case O_EVCOLS: evcols = optarg; break;
        case O_ITEMS: c->ml_items = optarg; break;
        case O_USERS: c->ml_users = optarg; break;
        case O_IFEAT: c->item_side.path = optarg; break;
        case O_IKEY: c->item_side.key = optarg; break;
        case O_ICOLS: c->item_side.cols = optarg; break;
        case O_UFEAT: c->user_side.path = optarg; break;
        case O_UKEY: c->user_side.key = optarg; break;
        case O_UCOLS: c->user_side.cols = optarg; break;
        case O_SIDEDELIM:
            c->item_side.delimiter = c->user_side.delimiter = parse_delimiter(optarg);
            break;
        case O_MULTISEP:
            if (strlen(optarg) != 1 || strchr("\"\n\r", optarg[0]))
                fatal("--multi-sep: '%s' is not one character", optarg);
            c->item_side.multi_sep = c->user_side.multi_sep = optarg[0];
            break;
        case O_TUNIT:
            if (strcmp(optarg, "s") && strcmp(optarg, "ms"))
                fatal("--time-unit: '%s' is not s or ms", optarg);
            o->time_ms = !strcmp(optarg, "ms");
            break;
        case O_IDS:
            if (strcmp(optarg, "dense") && strcmp(optarg, "raw"))
                fatal("--ids: '%s' is not dense or raw", optarg);
            c->raw_ids = o->raw_items = !strcmp(optarg, "raw");
            ids_set = 1;
            break;
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
        fatal("data import: missing --format movielens|csv|sasrec|jsonl|yambda");
    if (!c->output && !c->split_dir)
        fatal("data import: missing -o OUT.h5 (or --split-days DIR)");
    if (c->split_dir && !c->split_dir[0])
        fatal("--split-days: an empty directory name");
    if (yambda)
        yambda_preset(c, o, named ? named : columns ? "--columns" : evcols ? "--event-cols"
                                          : o->no_header ? "--no-header" : NULL, ids_set);
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
    if (evcols && !yambda) {
        if (o->format == IMPORT_SASREC)
            fatal("--event-cols: --format sasrec has no columns but user and item");
        parse_event_cols(evcols, o);
    } else if (o->format == IMPORT_MOVIELENS && o->want_rating) {
        /* the rating as a float event column (a ranking task's label), beside /actions */
        o->evcol[o->nevcols++] = (struct import_evcol){.name = "rating", .is_float = 1};
    }
    if (o->nevcols && (o->format == IMPORT_MOVIELENS || o->by_position))
        event_positions(o, columns);
    struct import_side *sides[2] = {&c->item_side, &c->user_side};
    static const char *const side_opt[2] = {"--item", "--user"};
    for (int k = 0; k < 2; k++) {
        if (!sides[k]->path && (sides[k]->key || sides[k]->cols))
            fatal("%s-key and %s-cols need %s-features FILE", side_opt[k], side_opt[k],
                  side_opt[k]);
        if (sides[k]->path && !sides[k]->key)
            fatal("%s-features %s: name its key column with %s-key COL", side_opt[k],
                  sides[k]->path, side_opt[k]);
    }
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

/* --- main --------------------------------------------------------------------- */

/* What one output holds, for the log. */
struct import_out {
    int64_t nu, ni, events, iraw0, iraw1, ucoll, icoll;
    struct import_features feat;
};

/* Write the events with alive[i] (NULL: all) and their counts ucnt, icnt
 * to path: dense or raw ids, each user's events in time order, the side
 * files joined to the users and items of this output. */
static void import_output(const struct import_cli *c, const struct import_events *ev,
                          const uint8_t *alive, const int64_t *ucnt, const int64_t *icnt,
                          const char *path, struct import_out *out)
{
    int32_t *urank = xmalloc((size_t)ev->users.n * sizeof *urank);
    int32_t *irank = xmalloc((size_t)ev->items.n * sizeof *irank);
    int32_t *uorder, *iorder;
    int64_t *uraw = NULL, *iraw = NULL;
    memset(out, 0, sizeof *out);
    int64_t nu = c->raw_ids ? import_raw_rank(&ev->users, ucnt, 0, urank, &uorder, &uraw,
                                              &out->ucoll)
                            : import_ids_rank(&ev->users, ucnt, urank, &uorder);
    int64_t ni = c->raw_ids ? import_raw_rank(&ev->items, icnt, 1, irank, &iorder, &iraw,
                                              &out->icoll)
                            : import_ids_rank(&ev->items, icnt, irank, &iorder);
    int64_t *off = xmalloc((size_t)(nu + 1) * sizeof *off);
    off[0] = 0;
    for (int64_t k = 0; k < ev->users.n; k++)
        if (urank[k] >= 0)
            off[urank[k] + 1] = ucnt[k];
    for (int64_t u = 0; u < nu; u++)
        off[u + 1] += off[u];
    int64_t *perm = order_events(ev, alive, urank, nu, off);

    /* side files, before anything is written: a bad one leaves no output */
    struct import_join ju, ji;
    import_join_init(&ju, DS_USERS, &ev->users, urank, nu);
    import_join_init(&ji, DS_ITEMS, &ev->items, irank, ni);
    if (c->ml_items)
        import_ml_items(c->ml_items, &ji, &out->feat);
    if (c->item_side.path)
        import_side_read(&c->item_side, &ji, &out->feat);
    if (c->ml_users)
        import_ml_users(c->ml_users, &ju, &out->feat);
    if (c->user_side.path)
        import_side_read(&c->user_side, &ju, &out->feat);
    import_join_free(&ju);
    import_join_free(&ji);

    import_write(path, ev, perm, off, nu, irank, uorder, iorder, ni, &out->feat, iraw, uraw);
    out->nu = nu;
    out->ni = ni;
    out->events = off[nu];
    out->iraw0 = iraw ? iraw[0] : 0;
    out->iraw1 = iraw ? iraw[ni - 1] : 0;
    free(perm);
    free(off);
    free(uorder);
    free(iorder);
    free(uraw);
    free(iraw);
    free(urank);
    free(irank);
}

/* --split-days DIR: one output per day of the events' times (day d:
 * [d x 86400, (d + 1) x 86400) seconds), DIR/day-DDDD.h5, as data gen
 * --stream and --yambda name them. Returns the files written. */
static int64_t import_split_days(const struct import_cli *c, const struct import_events *ev,
                                 const uint8_t *alive, int64_t *ucnt, int64_t *icnt)
{
    int64_t d0 = INT64_MAX, d1 = INT64_MIN;
    for (int64_t i = 0; i < ev->n; i++)
        if (!alive || alive[i]) {
            const int64_t d = ev->ts[i] >= 0 ? ev->ts[i] / 86400 : -((-ev->ts[i] - 1) / 86400) - 1;
            d0 = d < d0 ? d : d0;
            d1 = d > d1 ? d : d1;
        }
    if (d0 < 0 || d1 > 9999)
        fatal("%s: --split-days: the events' days run from %lld to %lld (day d: seconds [d x "
              "86400, (d + 1) x 86400)); the files day-0000.h5 .. day-9999.h5 hold days 0 .. "
              "9999 (times from 1970-01-01 to 1997-05-18, or relative to a start, as Yambda's)",
              ev->path, (long long)d0, (long long)d1);
    uint8_t *day = xmalloc((size_t)ev->n);
    int64_t files = 0;
    char path[4200];
    for (int64_t d = d0; d <= d1; d++) {
        int64_t n = 0;
        for (int64_t i = 0; i < ev->n; i++)
            n += day[i] = (!alive || alive[i]) && ev->ts[i] >= d * 86400 &&
                          ev->ts[i] < (d + 1) * 86400;
        if (n == 0)
            continue;
        count_events(ev, day, ucnt, icnt);
        snprintf(path, sizeof path, "%s/day-%04lld.h5", c->split_dir, (long long)d);
        struct import_out out;
        import_output(c, ev, day, ucnt, icnt, path, &out);
        log_info("data import: wrote %s: %lld users, %lld items, %lld events", path,
                 (long long)out.nu, (long long)out.ni, (long long)out.events);
        import_features_free(&out.feat);
        files++;
    }
    free(day);
    return files;
}

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
    if (c.split_dir && !ev.ts)
        fatal("%s: --split-days needs the events' times (a time column)", ev.path);
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
    int64_t events = 0;
    for (int64_t k = 0; k < ev.users.n; k++)
        events += ucnt[k];
    if (events == 0)
        fatal("%s: nothing left after the k-core filter (--min-user-events %lld, "
              "--min-item-events %lld) of %lld events", ev.path, (long long)c.min_user,
              (long long)c.min_item, (long long)ev.n);
    /* the event columns' categorical ids: the whole input's (every day file's) */
    for (int k = 0; k < ev.nevf; k++)
        if (!ev.evf[k].is_float)
            import_vocab_finish(&ev.evf[k].vocab);
    double t_sort = clock_seconds();

    struct import_out out = {0};
    int64_t files = 0;
    if (c.split_dir) {
        if (mkdir(c.split_dir, 0777) && errno != EEXIST)
            fatal("data import: cannot create the directory %s: %s", c.split_dir,
                  strerror(errno));
        files = import_split_days(&c, &ev, alive, ucnt, icnt);
        count_events(&ev, alive, ucnt, icnt); /* the whole input's again, for -o */
    }
    if (c.output)
        import_output(&c, &ev, alive, ucnt, icnt, c.output, &out);
    double t_end = clock_seconds();
    const struct import_features *feat = &out.feat;

    log_info("data import: read %s (%s%s): %lld lines, %lld rows, %lld bad lines skipped, "
             "%lld below --min-rating", ev.path, format_name[c.o.format],
             ev.gzip ? ", gzip" : "", (long long)ev.lines,
             (long long)ev.rows, (long long)ev.bad, (long long)ev.below_min);
    if (alive)
        log_info("data import: k-core (--min-user-events %lld, --min-item-events %lld): "
                 "%lld events dropped in %d passes", (long long)c.min_user,
                 (long long)c.min_item, (long long)(ev.n - events), rounds);
    if (files)
        log_info("data import: %lld day files in %s", (long long)files, c.split_dir);
    if (c.output)
        log_info("data import: wrote %s: %lld users, %lld items, %lld events (%s%s)", c.output,
                 (long long)out.nu, (long long)out.ni, (long long)out.events,
                 ev.ts ? "timestamps" : "no timestamps",
                 ev.act ? ", actions = rating x 10" : ", no actions");
    if (c.raw_ids && c.output)
        log_info("data import: raw ids (version 3): item ids %lld .. %lld in /items/ids, users "
                 "in ascending raw id in /user_map; hash collisions (distinct string ids, one "
                 "raw id): %lld of items%s, %lld of users%s", (long long)out.iraw0,
                 (long long)out.iraw1, (long long)out.icoll,
                 ev.items.strings ? " (merged into one item)" : " (integer ids: none)",
                 (long long)out.ucoll, ev.users.strings ? " (kept apart)" : " (integer ids: none)");
    if (out.icoll || out.ucoll)
        log_warn("data import: %lld item and %lld user string ids share their 64-bit hash with "
                 "another: colliding items are one item, colliding users share a raw id",
                 (long long)out.icoll, (long long)out.ucoll);
    double dt = t_end - t0 > 1e-9 ? t_end - t0 : 1e-9;
    if (feat->n || ev.nevf) {
        char list[2048] = "";
        size_t at = 0;
        for (int k = 0; k < ev.nevf && at + 64 < sizeof list; k++)
            at += (size_t)snprintf(list + at, sizeof list - at, "%sevents/%s", at ? ", " : "",
                                   ev.evf[k].name);
        for (int k = 0; k < feat->n && at + 64 < sizeof list; k++)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%s/%s", at ? ", " : "",
                                   dataset_feat_kind_name(feat->f[k].kind), feat->f[k].name);
        log_info("data import: features: %s", list);
    }
    log_info("data import: %.2f s (read %.2f, filter %.2f, sort, side files and write %.2f), "
             "%.3g rows/s", dt, t_read - t0, t_sort - t_read, t_end - t_sort,
             (double)ev.rows / dt);
    import_features_free(&out.feat);
    free(alive);
    free(ucnt);
    free(icnt);
    import_events_free(&ev);
    return 0;
}
