/* stream_follow: wait for the next window file of a stream (train.follow,
 * doc/data.md "Following a stream of files").
 *
 * The stream's data.path ends in a glob ("logs/day-*.h5"); its files are
 * open (stream_files_open). stream_follow_next looks at the glob every
 * poll interval for the next file: the first name, in name order, that
 * sorts after the stream's last file, is not a temporary (a name starting
 * with '.' or ending in ".tmp" or ".tmp.DIGITS", as the project's writers
 * name theirs before the rename), and is complete. Complete means:
 *   - it opens as a dataset and passes every check (a truncated or
 *     half-written file fails the open or its structure checks; HDF5 also
 *     refuses a file another process holds open for writing where the file
 *     system supports its locks), and
 *   - its root attribute `complete` (int64), if present, equals its
 *     number of events; when the stream's last file has that attribute
 *     (every file freescale writes has it, set last), the new one must
 *     have it too.
 * A file renamed into place (the writer writes NAME.tmp or to another
 * directory of the same file system, then renames) is complete when it
 * appears; a file written in place must set `complete` last. A name that
 * is not complete yet is looked at again each poll, and the follower
 * waits for it (later names are not taken before it); when the timeout
 * ends the wait with it still incomplete, the error names it and why.
 * A complete file is added with stream_files_add, which refuses by name a
 * file older than the last one or overlapping it; a new name that sorts
 * before the stream's last file (delivered late) is refused by name too.
 *
 * Polling, not inotify(7): inotify does not see files written by other
 * nodes on NFS or Lustre, where streams of logs arrive; a look is one
 * glob(3) of the directory, and the poll interval is the latency.
 *
 * Errors are returned as text naming the file; nothing here calls fatal(). */
#ifndef FS_STREAM_FOLLOW_H
#define FS_STREAM_FOLLOW_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "data/stream_files.h"

#define STREAM_FOLLOW_POLL 1.0 /* seconds between looks, by default */

enum stream_follow_result {
    FOLLOW_ERROR = -1, /* err names the file */
    FOLLOW_NEW = 0,    /* a file was added: s->f[s->n - 1] */
    FOLLOW_TIMEOUT = 1,
    FOLLOW_STOP = 2,   /* *stop became nonzero */
    FOLLOW_NONE = 3,   /* stream_follow_look: no complete next file yet */
};

struct stream_follow {
    const char *pattern;         /* the glob to follow (stream_follow_pattern) */
    double timeout;              /* seconds; 0 = wait forever */
    double poll;                 /* seconds between looks; 0 = STREAM_FOLLOW_POLL */
    volatile sig_atomic_t *stop; /* set by the caller's signal handler; NULL: none */
};

/* The glob to follow in data.path (its last comma-separated element, which
 * must hold a glob character) into buf[len]. 0, or -1 + err. */
int stream_follow_pattern(const char *spec, char *buf, size_t len, char *err, size_t errlen);

/* Wait for the next file of the glob and add it to s. *waited = the
 * seconds waited (at least o->timeout on FOLLOW_TIMEOUT). Returns
 * FOLLOW_NEW, FOLLOW_TIMEOUT, FOLLOW_STOP (within a poll slice of the
 * flag being set: at most 0.1 s) or FOLLOW_ERROR + err naming the file:
 * a file refused by stream_files_add, a late name, a file still incomplete
 * when the timeout ends, a glob that cannot be read. */
int stream_follow_next(struct stream_files *s, const struct stream_follow *o, double *waited,
                       char *err, size_t errlen);

/* One look, without waiting (what stream_follow_next repeats; s may be
 * empty: the first file of the glob, a follower started before it; a job of
 * several ranks has one rank look, agrees on the result and the stop
 * flag, and the others stream_files_add the new file s->f[s->n - 1].path):
 * FOLLOW_NEW (added to s), FOLLOW_NONE (no next name, or *pending = 1 and
 * why[whylen] says why the next one is not complete yet) or FOLLOW_ERROR
 * + err naming the file (a refusal, a late name, an unreadable glob). */
int stream_follow_look(struct stream_files *s, const char *pattern, int *pending, char *why,
                       size_t whylen, char *err, size_t errlen);

/* Is path complete (above)? 1, or 0 + err saying why not. need_attr: the
 * attribute is required. */
int stream_follow_complete(const char *path, int need_attr, char *err, size_t errlen);

/* DURATION >= 0 (window_duration in data/window.h, the parser of
 * data.window too: 3600, 0.5, 30s, 10m, 6h, 1d, 2w) into *sec; name = the
 * parameter, for the error. 0 or -1 + err. */
int stream_duration_parse(const char *name, const char *text, double *sec, char *err,
                          size_t errlen);

#endif
