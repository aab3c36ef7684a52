/* stream_files: data.path as an ordered list of window datasets (streaming
 * training, doc/data.md "Window files").
 *
 * data.path = "a.h5,b.h5,c.h5" (in that order) or a glob ("logs/day-*.h5",
 * glob(3), sorted by name); each comma-separated element that holds a glob
 * character (* ? [) is expanded in place, and a pattern that matches nothing
 * is refused naming it. Every file is a dataset of its own (one day of logs
 * imported with `data import --ids raw`, or `data gen --stream --split-days`)
 * with /timestamps and /user_map (each user's raw id); with more than one
 * file, raw item ids (version 3: dense ids are numbered per file and mean
 * nothing across files). Files are in time order and do not overlap: each
 * file's first event is after the previous file's last one (strictly); the
 * refusals name both files and their times. Old files are never rewritten.
 *
 * Adding a file opens it, scans its /timestamps once for its time range,
 * checks it, and closes it: a stream of thousands of files holds no file
 * open and no index until used. A file is opened again when a history
 * reads it (or stream_files_dataset asks for it), reading its offsets and
 * /user_map (8 bytes a user each), and stays open until
 * stream_files_release closes it: a schedule that releases the files
 * older than data.history_files windows keeps at most that many open. The
 * per-file index by user is the user_map sorted (a file written by the
 * importers or the generator is already sorted: no copy) with each user's
 * event range in the offsets, so
 * a user's history is a binary search and one read of its events per file.
 * stream_files_history reads the files newest first and stops at max_len
 * events or after history_files files (0 = all) that hold events before the
 * time asked: per lookup at most min(F, history_files) binary searches of
 * log2(users) and as many reads of one user's events.
 *
 * Errors are returned as text naming the file(s); nothing here calls fatal(). */
#ifndef FS_STREAM_FILES_H
#define FS_STREAM_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"

struct stream_file {
    char *path;
    int64_t t_first, t_last; /* its first and last event time (seconds) */
    int64_t num_events;
    int raw_ids, has_actions;
    int has_complete;      /* root attribute complete (data/stream_follow.h) */
    /* open on use (stream_files_dataset, history), closed by release: */
    int is_open;
    struct dataset ds;
    int64_t *uid;          /* the users' raw ids, ascending [ds.num_users] */
    int64_t *uidx;         /* uid[i] is user uidx[i]; NULL: the file's order (sorted) */
};

struct stream_files {
    int n, cap;
    struct stream_file *f; /* [n], in time order */
    int history_files;     /* data.history_files: files read back; 0 = all */
};

/* One event of a history: where it is (file index, event index in that
 * file: for reading other per-event columns such as /events/NAME). */
struct stream_where {
    int32_t file;
    int64_t event;
};

/* Does data.path name a list or a glob (a comma or a glob character)? */
int stream_files_is_list(const char *path);
/* Open every file of spec, in order, checking each as stream_files_add.
 * history_files >= 0. 0, or -1 + err (s is then empty, nothing open). */
int stream_files_open(struct stream_files *s, const char *spec, int history_files, char *err,
                      size_t errlen);
/* Open one more file after the last (a file that appeared while following a
 * stream): it needs /timestamps and /user_map, raw ids when there is more
 * than one file, the other files' /actions or not, and its first event after
 * the previous file's last. 0, or -1 + err naming the file(s); s unchanged. */
int stream_files_add(struct stream_files *s, const char *path, char *err, size_t errlen);
void stream_files_close(struct stream_files *s);

/* The user's newest events before time `before` (ts < before), newest
 * first across files, at most max_len, reading at most history_files files
 * (those with events before `before`; 0 = all). items, ts [max_len]; actions
 * [max_len] or NULL (needs the files' /actions); where [max_len] or NULL.
 * *n = the events written. A user absent from every file has none. 0, or
 * -1 + err naming the file. */
int stream_files_history(struct stream_files *s, int64_t user_raw_id, int64_t before,
                         int64_t max_len, int64_t *items, int64_t *ts, int32_t *actions,
                         struct stream_where *where, int64_t *n, char *err, size_t errlen);

/* The values of event column /events/name (a label such as like or
 * rating, or a categorical event feature, as floats) of n history events
 * (where[n], as stream_files_history gives them): out[n]. A user's
 * consecutive events in one file are one read. 0, or -1 + err naming the
 * file and the column. */
int stream_files_event_values(struct stream_files *s, const char *name,
                              const struct stream_where *where, int64_t n, float *out, char *err,
                              size_t errlen);

/* File k's dataset, opened if it is not (checked: the same number of
 * events as when it was added, else refused as changed); valid until
 * stream_files_release or close. NULL + err naming the file. */
const struct dataset *stream_files_dataset(struct stream_files *s, int k, char *err,
                                           size_t errlen);
/* Close files 0 .. k-1 (their index too); they open again when used. */
void stream_files_release(struct stream_files *s, int k);

/* Resume after a run whose last trained file ended at last_end (its last
 * event's time): *next = the first file whose events all come after
 * last_end (s->n if none: nothing new). A file holding events both at or
 * before last_end and after it is refused by name (the stream's files
 * changed since). 0 or -1 + err. */
int stream_files_resume(const struct stream_files *s, int64_t last_end, int *next, char *err,
                        size_t errlen);
/* Is file k later than the last one trained (its first event after
 * last_end)? 0, or -1 + err naming the file and both times. */
int stream_files_later(const struct stream_files *s, int k, int64_t last_end, char *err,
                       size_t errlen);

#endif
