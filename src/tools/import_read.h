/* import_read: the readers of 'freescale data import'. Each turns one text
 * input of interactions into an in-memory event table:
 *
 *   movielens  ratings.dat lines "user::item::rating::timestamp", ratings.csv,
 *              u.data (the rating kept as the event column rating by default)
 *   csv        rows of delimited fields, columns chosen by header name or by
 *              position (--no-header --columns); a one-character delimiter
 *              goes through libcsv (RFC 4180 quoting, strict), a longer one
 *              ("::") splits lines literally, without quoting
 *   sasrec     "user item" per line, whitespace separated, in time order
 *   jsonl      one JSON object per line (json-c), fields chosen by name
 *
 * The input is a file or "-" (standard input), plain or gzip (import_input).
 * Original user and item ids, int64 or strings, are interned while reading
 * (import_ids); events hold the interned indexes. Malformed lines are
 * "PATH:LINE: what" errors through fatal(), or, with skip_bad, counted and
 * the first few reported as warnings. */
#ifndef FS_IMPORT_READ_H
#define FS_IMPORT_READ_H

#include <stdint.h>

#include "tools/import_feat.h"
#include "tools/import_ids.h"

enum import_format { IMPORT_MOVIELENS, IMPORT_CSV, IMPORT_SASREC, IMPORT_JSONL };

#define IMPORT_MAX_EVCOLS 32

/* A column of the events kept as an event feature (--event-cols NAME or
 * NAME:float). */
struct import_evcol {
    const char *name;
    int is_float;
    /* presets (--format yambda): a categorical column of these values only
     * (ids 1 .. nvalues in their sorted order whether or not they occur;
     * another value is a bad line), a float column whose empty field is 0 */
    const char *const *values;
    int nvalues;
    int empty_zero;
};
enum import_column { IMPORT_USER, IMPORT_ITEM, IMPORT_RATING, IMPORT_TIME, IMPORT_NCOLS };

struct import_options {
    enum import_format format;
    /* csv with a header and jsonl: column / field names; rating_col and
     * time_col NULL = no such column */
    const char *user_col, *item_col, *rating_col, *time_col;
    /* csv by position (by_position): 0-based field of each column, -1 = none */
    int by_position;
    int position[IMPORT_NCOLS];
    int no_header;                  /* csv: the first line is data */
    const char *delimiter;          /* csv field separator, 1 or more bytes */
    int string_users, string_items; /* ids are strings, not integers */
    int raw_items;                  /* --ids raw: integer item ids must be positive */
    int want_rating, want_time;     /* movielens: store the rating / time */
    int has_min_rating;
    double min_rating;              /* events with rating < min_rating are dropped */
    int skip_bad;                   /* skip malformed lines instead of failing */
    int time_ms;                    /* the time column counts milliseconds */
    int nevcols;                    /* columns kept as event features */
    struct import_evcol evcol[IMPORT_MAX_EVCOLS];
    /* movielens and csv by position: the 0-based field of each event
     * column (named as the layout's columns: data_import.c) */
    int evpos[IMPORT_MAX_EVCOLS];
};

/* The events read, in file order. */
struct import_events {
    int64_t n, cap;
    int32_t *user, *item;           /* [n] indexes into users / items */
    int64_t *ts;                    /* [n] seconds; NULL when the input has none */
    int32_t *act;                   /* [n] rating x 10 rounded; NULL when none */
    int nevf;                       /* event features (options' evcol) */
    struct import_evfeat *evf;      /* [nevf] their values [n] */
    struct import_ids users, items;
    const char *path;               /* the input's name in messages ("<stdin>" for "-") */
    int gzip;                       /* the input was gzip-compressed */
    int64_t lines;                  /* lines read (header included) */
    int64_t rows;                   /* data rows seen (blank lines excluded) */
    int64_t bad;                    /* malformed rows skipped (skip_bad) */
    int64_t below_min;              /* rows dropped by min_rating */
};

/* Read PATH into ev (zeroed here). Ends with fatal() on I/O errors, empty
 * input and, without skip_bad, on the first malformed line. */
void import_read(const char *path, const struct import_options *o, struct import_events *ev);
void import_events_free(struct import_events *ev);

#endif
