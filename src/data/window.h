/* window: the time windows of train.schedule = stream (doc/training.md,
 * "Streaming"): the parameters' values (durations, times), the dataset's
 * time range, the windows [start + k len, start + (k + 1) len), and the
 * one source of a window's events and of each user's history before it
 * (window_split), which a source of window files can replace.
 *
 * A window's split is a ranking split (split_ranking.h, mode time): user
 * u's events [0, a) come before the window (its history), [a, b) are in
 * it, [b, L) after it. Nothing after the window's end is read for it but
 * the timestamps that find b. */
#ifndef FS_DATA_WINDOW_H
#define FS_DATA_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "base/params.h"
#include "data/dataset.h"
#include "data/split_ranking.h"

struct window_conf {
    int on;                 /* train.schedule = stream */
    int64_t len;            /* data.window, seconds (> 0 when on) */
    char len_text[64];      /* data.window as given ("1d") */
    int start_set, end_set; /* data.stream_start / stream_end given */
    int start_rel, end_rel; /* ... as +DURATION after the first event */
    int64_t start, end;     /* seconds (absolute, or the offset when _rel) */
    int64_t max_events;     /* eval.max_events (0 = all) */
};

/* The one parser of durations (data.window, data.stream_start's +DURATION,
 * train.follow_timeout): seconds (3600, 0.5) or a number with a unit s, m,
 * h, d or w (30s, 10m, 6h, 1d, 2w) into *sec; negative ones refused, and
 * zero when `positive`. 0, or -1 + err naming parameter `name`. */
int window_duration(const char *name, const char *s, int positive, double *sec, char *err,
                    size_t errlen);
/* A window's DURATION (window_duration, > 0) in whole seconds. */
int window_parse_duration(const char *name, const char *s, int64_t *sec, char *err,
                          size_t errlen);
/* A time: seconds since the epoch, an ISO date or date and time (UTC:
 * 2026-11-01, 2026-11-01T06:00[:SS]), or +DURATION (*rel = 1, *t the
 * offset). 0, or -1 + err naming `name`. */
int window_parse_time(const char *name, const char *s, int *rel, int64_t *t, char *err,
                      size_t errlen);
/* train.schedule, data.window, data.stream_start, data.stream_end,
 * eval.max_events: 0, or -1 + err naming the parameter (data.window
 * required by, and only meaningful with, the stream schedule). */
int window_conf_from_params(const struct params *p, struct window_conf *wc, char *err,
                            size_t errlen);

/* The first and last timestamps of ds (every one read); -1 + err naming
 * the file when it has no /timestamps or no event. */
int window_range(const struct dataset *ds, int64_t *first, int64_t *last, char *err,
                 size_t errlen);
/* The stream's start t0 and its number of windows n (windows starting
 * before the end: data.stream_end, else after the last event); -1 + err
 * when the end is not after the start. */
int window_resolve(const struct window_conf *wc, int64_t first, int64_t last, int64_t *t0,
                   int64_t *n, char *err, size_t errlen);

/* The window [t0, t1)'s split of every user (the history source): s->bound
 * [num_users, 2] = events before t0, events before t1. */
int window_split(const struct dataset *ds, int64_t t0, int64_t t1, struct rsplit *s, char *err,
                 size_t errlen);
/* The evaluated part of window k's split w (eval.max_events = max; 0 =
 * all): the users with events in it in an order keyed by (seed, k, user),
 * each with all of its window events, until max are taken (the last user
 * cut to fit); ev's bounds [a, b') with b' = a for the others. Returns the
 * events taken. The same on every rank. */
int64_t window_eval_sample(const struct rsplit *w, const struct dataset *ds, uint64_t seed,
                           int64_t k, int64_t max, struct rsplit *ev);
/* "2026-11-01 00:00" (UTC) */
void window_time_text(int64_t t, char *buf, size_t len);

#endif
