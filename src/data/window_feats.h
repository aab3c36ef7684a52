/* window_feats: the item and user features of window files in a window's
 * dataset (data/window_files.h; doc/training.md "Window files").
 *
 * Each single-valued item feature of the first file that the run uses (/items/NAME, row i
 * the item /items/ids[i]) is carried into every window dataset, for the
 * window's item list, and each user feature (/users/NAME, row u the user
 * /user_map[u]) for the window's users: an item's or user's value is the
 * one of the newest file reached that lists it (the files are merged in
 * order, a later file's value replacing an earlier one's). A categorical feature's values are
 * numbered per file by the importers and generators (their strings in
 * /feature_maps/items/NAME): they are renumbered stream-wide, code j the
 * j-th distinct string in the order the files bring them (file 0's
 * codes in order, then each later file's new strings), over every file
 * present at the start, so that a feature table's rows mean the same
 * value in every window and its cardinality is the run's. A feature
 * without a map in the first file is taken as stored (the same numbers in
 * every file; the cardinality the largest of the files'). Every file must
 * hold the feature, with a map when the first has one; a value absent
 * from the start's files (a file added later by train.follow) is refused
 * naming the file. */
#ifndef FS_DATA_WINDOW_FEATS_H
#define FS_DATA_WINDOW_FEATS_H

#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"
#include "data/stream_files.h"

struct wf_dict; /* a categorical feature's strings -> stream-wide codes */

struct window_feats {
    int n, ready;
    enum dataset_feat_kind kind;                  /* DS_ITEMS or DS_USERS */
    char name[DATASET_MAX_FEATURES][DATASET_FEATURE_NAME];
    int is_float[DATASET_MAX_FEATURES];
    int64_t card[DATASET_MAX_FEATURES];          /* stream-wide (0: float) */
    struct wf_dict *dict[DATASET_MAX_FEATURES];  /* NULL: the values as stored */
    double *val;                                  /* [entities, n] their values */
};

/* The item or user (kind) features of s's first file that want names
 * (comma-separated; NULL or "": none, and no file is read) and their
 * dictionaries over every file (the files opened for it are released).
 * 0, or -1 + err naming the file. */
int window_feats_open(struct window_feats *wf, enum dataset_feat_kind kind, const char *want,
                      struct stream_files *s, char *err, size_t errlen);
/* A file's values of its items [ds->num_items] or users [ds->num_users]
 * (translated to the stream-wide codes): out [entities, n]. 0, or -1 +
 * err. */
int window_feats_read(const struct window_feats *wf, const struct dataset *ds, double *out,
                      char *err, size_t errlen);
/* The features' values written into w for n items or users (values
 * [n, wf->n]), with their stream-wide maps. 0, or -1 + err. */
int window_feats_write(const struct window_feats *wf, struct dataset_writer *w, const double *val,
                       int64_t n, char *err, size_t errlen);
void window_feats_free(struct window_feats *wf);

#endif
