/* stream_follow: wait for the next window file; see stream_follow.h. */
#include "data/stream_follow.h"

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/log.h" /* errorf */
#include "data/window.h" /* window_duration */

#define STOP_SLICE 0.1 /* seconds: the longest sleep between looks at the stop flag */

int stream_follow_pattern(const char *spec, char *buf, size_t len, char *err, size_t errlen)
{
    const char *comma = strrchr(spec, ',');
    const char *last = comma ? comma + 1 : spec;
    if (!strpbrk(last, "*?["))
        return errorf(err, errlen, "data.path = '%s': train.follow needs its last element to be "
                      "a glob (such as logs/day-*.h5): the follower waits for the next name it "
                      "matches", spec);
    if (strlen(last) >= len)
        return errorf(err, errlen, "data.path = '%s': the pattern is too long", spec);
    memcpy(buf, last, strlen(last) + 1);
    return 0;
}

int stream_duration_parse(const char *name, const char *text, double *sec, char *err,
                          size_t errlen)
{
    return window_duration(name, text, 0, sec, err, errlen);
}

/* A writer's temporary: ".NAME", NAME.tmp, NAME.tmp.DIGITS. */
static int is_temporary(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (base[0] == '.')
        return 1;
    size_t n = strlen(base);
    while (n > 0 && base[n - 1] >= '0' && base[n - 1] <= '9')
        n--;
    if (n < strlen(base) && n > 0 && base[n - 1] == '.') /* NAME.tmp.DIGITS */
        n--;
    else
        n = strlen(base);
    return n >= 4 && !memcmp(base + n - 4, ".tmp", 4);
}

/* Does the dataset at path carry the completion attribute: *has, and its
 * value in *value; 0, or -1 + err when it cannot be read. */
static int marker(const struct dataset *ds, int *has, int64_t *value, char *err, size_t errlen)
{
    *has = h5io_has_attr((hid_t)ds->file, DATASET_COMPLETE_ATTR) > 0;
    *value = -1;
    return *has ? h5io_attr_read_i64((hid_t)ds->file, ds->path, DATASET_COMPLETE_ATTR, value, err,
                                     errlen)
                : 0;
}

int stream_follow_complete(const char *path, int need_attr, char *err, size_t errlen)
{
    struct dataset ds;
    if (dataset_open(&ds, path, err, errlen))
        return 0; /* err: why (truncated, being written, locked, not HDF5 yet) */
    int has, ok = 0;
    int64_t value;
    if (marker(&ds, &has, &value, err, errlen))
        ok = 0;
    else if (has && value != ds.num_events)
        errorf(err, errlen, "%s: its attribute %s = %lld, but it holds %lld events (being "
               "written, or damaged)", path, DATASET_COMPLETE_ATTR, (long long)value,
               (long long)ds.num_events);
    else if (!has && need_attr)
        errorf(err, errlen, "%s: has no root attribute %s yet (the stream's files have it: a "
               "file written in place sets it last)", path, DATASET_COMPLETE_ATTR);
    else
        ok = 1;
    dataset_close(&ds);
    return ok;
}

/* Sleep for sec seconds (an interrupted sleep ends early: the caller
 * looks again). */
static void nap(double sec)
{
    if (sec <= 0)
        return;
    struct timespec ts = {(time_t)sec, (long)((sec - (double)(time_t)sec) * 1e9)};
    nanosleep(&ts, NULL);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The next name (malloc'd) into *next, or NULL: the least name after the
 * last file (strcmp: glob's order in the C locale), whatever glob's order.
 * 0, or -1 + err (a late name, an unreadable directory). */
static int next_name(const struct stream_files *s, const char *pattern, char **next, char *err,
                     size_t errlen)
{
    *next = NULL;
    const char *last = s->n ? s->f[s->n - 1].path : NULL; /* none: the first file */
    glob_t g;
    int rc = glob(pattern, GLOB_ERR | GLOB_NOSORT, NULL, &g);
    if (rc == GLOB_NOMATCH)
        return 0;
    if (rc)
        return errorf(err, errlen, "train.follow: cannot expand the pattern '%s' (%s)", pattern,
                      rc == GLOB_NOSPACE ? "out of memory" : "a directory cannot be read");
    /* the stream's names, sorted: a name at or before the last one must be among them */
    const char **known = xmalloc((size_t)(s->n ? s->n : 1) * sizeof *known);
    for (int i = 0; i < s->n; i++)
        known[i] = s->f[i].path;
    qsort(known, (size_t)s->n, sizeof *known, str_cmp);
    const char *best = NULL;
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++) {
        const char *name = g.gl_pathv[i];
        if (is_temporary(name))
            continue;
        if (!last || strcmp(name, last) > 0) {
            if (!best || strcmp(name, best) < 0)
                best = name;
        } else if (!bsearch(&name, known, (size_t)s->n, sizeof *known, str_cmp)) {
            rc = errorf(err, errlen, "%s appeared while following the stream, but its name sorts "
                        "before the last file trained, %s: window files must arrive in name "
                        "order (name them by time, e.g. day-2026-11-01.h5)", name, last);
        }
    }
    if (rc == 0 && best)
        *next = xstrdup(best);
    free(known);
    globfree(&g);
    return rc;
}

int stream_follow_look(struct stream_files *s, const char *pattern, int *pending, char *why,
                       size_t whylen, char *err, size_t errlen)
{
    *pending = 0;
    char *next;
    if (next_name(s, pattern, &next, err, errlen))
        return FOLLOW_ERROR;
    if (!next)
        return FOLLOW_NONE;
    int rc = FOLLOW_NONE;
    if (stream_follow_complete(next, s->n ? s->f[s->n - 1].has_complete : 0, why, whylen))
        rc = stream_files_add(s, next, err, errlen) ? FOLLOW_ERROR : FOLLOW_NEW;
    else
        *pending = 1; /* why names it */
    free(next);
    return rc;
}

int stream_follow_next(struct stream_files *s, const struct stream_follow *o, double *waited,
                       char *err, size_t errlen)
{
    const double t0 = clock_seconds();
    const double poll = o->poll > 0 ? o->poll : STREAM_FOLLOW_POLL;
    char why[2048] = "";
    int rc;
    for (;;) {
        if (o->stop && *o->stop) {
            rc = FOLLOW_STOP;
            break;
        }
        int pending;
        rc = stream_follow_look(s, o->pattern, &pending, why, sizeof why, err, errlen);
        if (rc != FOLLOW_NONE)
            break;
        double t = clock_seconds() - t0;
        if (o->timeout > 0 && t >= o->timeout) {
            if (pending) {
                errorf(err, errlen, "%s; still not complete after waiting %.1f s "
                       "(train.follow_timeout)", why, t);
                rc = FOLLOW_ERROR;
            } else {
                rc = FOLLOW_TIMEOUT;
            }
            break;
        }
        /* sleep to the next look, waking at least every STOP_SLICE */
        const double until = t + poll;
        while ((t = clock_seconds() - t0) < until && !(o->stop && *o->stop) &&
               !(o->timeout > 0 && t >= o->timeout))
            nap(fmin(STOP_SLICE, until - t));
    }
    *waited = clock_seconds() - t0;
    return rc;
}
