/* import_read: the readers of 'freescale data import'. Each turns one text
 * file of interactions into an in-memory event table:
 *
 *   movielens  ratings.dat lines "user::item::rating::timestamp"
 *   csv        a header line, then rows; columns chosen by name (libcsv,
 *              RFC 4180 quoting, strict)
 *   sasrec     "user item" per line, whitespace separated, in time order
 *
 * Original user and item ids (int64) are interned while reading, in order of
 * first appearance; events hold the interned indexes. Malformed lines are
 * "PATH:LINE: what" errors through fatal(), or, with skip_bad, counted and
 * the first few reported as warnings. */
#ifndef FS_IMPORT_READ_H
#define FS_IMPORT_READ_H

#include <stdint.h>

enum import_format { IMPORT_MOVIELENS, IMPORT_CSV, IMPORT_SASREC };

struct import_options {
    enum import_format format;
    /* csv: column names; rating_col / time_col NULL = no such column */
    const char *user_col, *item_col, *rating_col, *time_col;
    char delimiter;                 /* csv field separator */
    int want_rating, want_time;     /* movielens: store the rating / time */
    int has_min_rating;
    double min_rating;              /* events with rating < min_rating are dropped */
    int skip_bad;                   /* skip malformed lines instead of failing */
};

/* Distinct original ids in order of first appearance: ids[k], k < n, with an
 * open-addressing hash (slots hold k + 1, 0 = empty; size mask + 1). */
struct import_ids {
    int64_t *ids;
    int64_t n, cap;
    int32_t *slots;
    uint64_t mask;
    int64_t last_id;                /* cache: consecutive lines of one user */
    int32_t last_k;
};

/* The events read, in file order. */
struct import_events {
    int64_t n, cap;
    int32_t *user, *item;           /* [n] indexes into users.ids / items.ids */
    int64_t *ts;                    /* [n] seconds; NULL when the input has none */
    int32_t *act;                   /* [n] rating x 10 rounded; NULL when none */
    struct import_ids users, items;
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
