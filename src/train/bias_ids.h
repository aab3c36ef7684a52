/* bias_ids: model.bias's rows over window files (doc/training.md
 * "Window files"). A window's dataset numbers its items by their place in
 * the union of the files reached so far (which grows: a new item moves
 * the numbers after it) and its users by their place among the window's
 * active users, so neither may number the bias rows, which live for the
 * run. Here the rows are keyed by raw id instead: every item and user of
 * the files present at the start has a row, numbered in the order the
 * files bring them (file 0's items ascending, then file 1's new ones
 * ascending, ...; users likewise), so a later file only appends; each
 * window maps its item numbers and user indexes to those rows
 * (bias_rows_map). Items never seen get the rows of items without
 * training labels (the smoothed mean's prior), as every item of one
 * dataset does. */
#ifndef FS_TRAIN_BIAS_IDS_H
#define FS_TRAIN_BIAS_IDS_H

#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"
#include "data/stream_files.h"

struct bias_ids {
    int64_t ni, nu;         /* items (rows 1 .. ni; 0 the padding's), users (rows 0 .. nu-1) */
    int64_t *iid, *irow;    /* [ni] raw item ids ascending, their rows */
    int64_t *uid, *urow;    /* [nu] raw user ids ascending, their rows */
    int64_t *imap, nimap;   /* the window dataset's item number -> row [nimap] */
    int64_t *umap, numap;   /* its user index -> row [numap] */
};

/* The rows of every item and user of the files of s (the files opened for
 * it are released again). 0, or -1 + err naming the file. */
int bias_ids_open(struct bias_ids *b, struct stream_files *s, char *err, size_t errlen);
/* The maps of a window's dataset ds (raw item ids, /user_map read as
 * ds->user_keys). 0, or -1 + err naming the id absent from the files the
 * rows were made from. */
int bias_ids_window(struct bias_ids *b, const struct dataset *ds, char *err, size_t errlen);
void bias_ids_free(struct bias_ids *b);

#endif
