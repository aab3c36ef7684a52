/* window_files: a window's dataset from a stream of window files
 * (data.path as a list or a glob, data/stream_files.h), for the stream
 * schedule (doc/training.md "Streaming", "Window files").
 *
 * The window [t0, t1)'s dataset holds the users with events in it (in any
 * file), in ascending raw id (/user_map), each with its newest `hist`
 * events before t0 (stream_files_history: the earlier files, newest first,
 * bounded by data.history_files) followed by its events in [t0, t1) from
 * every file that holds some; timestamps, actions (when the files have
 * them) and the first file's event columns (/events/NAME: labels, event
 * features) with them. Its items are raw ids; its item list (/items/ids)
 * is the sorted union of the item lists of the files whose first event is
 * before t1: the files opened so far, which only grows (the candidate set
 * of a window's evaluation "against the whole item table", the same on
 * every rank), with the first file's item and user features that
 * want_items and want_users name (data/window_feats.h).
 * The window's split of this dataset (window_split) is the
 * split the one-file dataset of the same events gives the window, cut to
 * the users active in it and to their newest hist events before it: with
 * hist = data.max_seq_len - 1 a window trains and evaluates the same
 * sequences. Old files are read, never written; the dataset is a scratch
 * file of its own, written whole (a temporary renamed into place). */
#ifndef FS_DATA_WINDOW_FILES_H
#define FS_DATA_WINDOW_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "data/stream_files.h"
#include "data/window_feats.h"

/* The union of the files' item lists (grown as files are reached). */
struct window_items {
    int64_t *ids, n;
    int upto; /* files 0 .. upto-1 merged */
    const char *want_items, *want_users; /* the features to carry (the run's features.item,
                                            .user: comma-separated names), or NULL: none */
    struct window_feats feats; /* the first file's item features, each item's values (val) */
    struct window_feats ufeats; /* its user features, and with them: */
    int64_t *uids, nu;          /* the files' users so far, ascending (values: ufeats.val) */
};

/* Write window [t0, t1)'s dataset to path (above). *users, *events: its
 * users and its events in [t0, t1). 0, or -1 + err naming the file. */
int window_files_write(struct stream_files *s, struct window_items *wi, int64_t t0, int64_t t1,
                       int64_t hist, const char *path, int64_t *users, int64_t *events,
                       char *err, size_t errlen);
void window_items_free(struct window_items *wi);
/* The distinct items of every file of s (their item lists' union; the
 * files opened for it are released again), or -1 + err naming the file:
 * what a dynamic table over them holds at most (a checkpoint's size). */
int64_t window_files_distinct_items(struct stream_files *s, char *err, size_t errlen);

#endif
