/* stream_files: window datasets as one stream; see stream_files.h. */
#include "data/stream_files.h"

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hdf5.h>

#include "base/check.h"
#include "base/log.h"

#define TS_BLOCK ((int64_t)1 << 20) /* timestamps read per block on open */

int stream_files_is_list(const char *path)
{
    return strpbrk(path, ",*?[") != NULL;
}

/* "2026-11-01 00:00:00 UTC (1793491200)" into buf. */
static const char *when(int64_t t, char *buf, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    char day[32];
    if (gmtime_r(&tt, &tm) && strftime(day, sizeof day, "%Y-%m-%d %H:%M:%S UTC", &tm))
        snprintf(buf, len, "%s (%lld)", day, (long long)t);
    else
        snprintf(buf, len, "%lld", (long long)t);
    return buf;
}

/* Close the file and drop its index (kept: path, times, flags). */
static void file_unload(struct stream_file *f)
{
    if (!f->is_open)
        return;
    dataset_close(&f->ds);
    free(f->uid);
    free(f->uidx);
    f->uid = f->uidx = NULL;
    f->is_open = 0;
}

/* Sort (id, user) pairs by id, then user. */
static int pair_cmp(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* The user index: /user_map, sorted (with the permutation when the file's
 * order is not). */
static int file_index(struct stream_file *f, char *err, size_t errlen)
{
    const struct dataset *ds = &f->ds;
    if (!ds->has_user_map)
        return errorf(err, errlen, "%s: has no /user_map (each user's raw id): users cannot be "
                      "matched across window files (import with data import, which records it)",
                      ds->path);
    f->uid = dataset_read_map(ds, "user_map", err, errlen);
    if (!f->uid)
        return -1;
    int64_t nu = ds->num_users;
    int sorted = 1;
    for (int64_t u = 1; sorted && u < nu; u++)
        sorted = f->uid[u] >= f->uid[u - 1];
    if (sorted)
        return 0;
    int64_t *pair = xmalloc((size_t)nu * 2 * sizeof *pair);
    for (int64_t u = 0; u < nu; u++) {
        pair[2 * u] = f->uid[u];
        pair[2 * u + 1] = u;
    }
    qsort(pair, (size_t)nu, 2 * sizeof *pair, pair_cmp);
    f->uidx = xmalloc((size_t)nu * sizeof *f->uidx);
    for (int64_t u = 0; u < nu; u++) {
        f->uid[u] = pair[2 * u];
        f->uidx[u] = pair[2 * u + 1];
    }
    free(pair);
    return 0;
}

/* Open path and build its index: f->ds, uid, uidx. */
static int file_load(struct stream_file *f, const char *path, char *err, size_t errlen)
{
    if (dataset_open(&f->ds, path, err, errlen))
        return -1;
    f->is_open = 1;
    if (file_index(f, err, errlen)) {
        file_unload(f);
        return -1;
    }
    return 0;
}

/* The first and last event time of the file: one pass over /timestamps. */
static int file_times(struct stream_file *f, char *err, size_t errlen)
{
    const struct dataset *ds = &f->ds;
    if (!ds->has_timestamps)
        return errorf(err, errlen, "%s: has no /timestamps: a window file needs each event's "
                      "time (import with a time column)", ds->path);
    if (ds->num_events == 0)
        return errorf(err, errlen, "%s: holds no events", ds->path);
    int64_t m = ds->num_events < TS_BLOCK ? ds->num_events : TS_BLOCK;
    int64_t *t = xmalloc((size_t)m * sizeof *t);
    f->t_first = INT64_MAX;
    f->t_last = INT64_MIN;
    int rc = 0;
    for (int64_t e = 0; rc == 0 && e < ds->num_events; e += m) {
        int64_t k = ds->num_events - e < m ? ds->num_events - e : m;
        if (h5io_read_rows(NULL, (hid_t)ds->d_ts, H5T_NATIVE_INT64, e, 1, k, 0, t)) {
            rc = errorf(err, errlen, "%s: cannot read /timestamps[%lld..%lld) (truncated or "
                        "corrupt file?)", ds->path, (long long)e, (long long)(e + k));
            break;
        }
        for (int64_t i = 0; i < k; i++) {
            if (t[i] < f->t_first)
                f->t_first = t[i];
            if (t[i] > f->t_last)
                f->t_last = t[i];
        }
    }
    free(t);
    return rc;
}

int stream_files_add(struct stream_files *s, const char *path, char *err, size_t errlen)
{
    struct stream_file f;
    memset(&f, 0, sizeof f);
    if (file_load(&f, path, err, errlen))
        return -1;
    char a[64], b[64];
    f.num_events = f.ds.num_events;
    f.raw_ids = f.ds.raw_ids;
    f.has_actions = f.ds.has_actions;
    f.has_complete = h5io_has_attr((hid_t)f.ds.file, DATASET_COMPLETE_ATTR) > 0;
    int rc = file_times(&f, err, errlen);
    file_unload(&f); /* opened again when used */
    if (rc == 0 && s->n > 0) {
        const struct stream_file *p = &s->f[s->n - 1];
        const struct stream_file *q0 = &s->f[0];
        if (!f.raw_ids || !q0->raw_ids)
            rc = errorf(err, errlen, "%s: window files need raw item ids (data import --ids raw: "
                        "dense ids are numbered per file and mean nothing across files), and "
                        "%s has dense ones", path, f.raw_ids ? q0->path : "it");
        else if (f.has_actions != q0->has_actions)
            rc = errorf(err, errlen, "%s: %s /actions and %s %s: window files all have them or "
                        "none does", path, f.has_actions ? "has" : "has no", q0->path,
                        q0->has_actions ? "has" : "has none");
        else if (f.t_first < p->t_first)
            rc = errorf(err, errlen, "%s is older than the file before it, %s: its events start "
                        "at %s, %s's at %s (window files must be listed in time order)",
                        path, p->path, when(f.t_first, a, sizeof a), p->path,
                        when(p->t_first, b, sizeof b));
        else if (f.t_first <= p->t_last)
            rc = errorf(err, errlen, "%s overlaps the file before it, %s: its first event, at "
                        "%s, is not after %s's last, at %s (window files must not overlap)",
                        path, p->path, when(f.t_first, a, sizeof a), p->path,
                        when(p->t_last, b, sizeof b));
    }
    if (rc)
        return -1;
    f.path = xmalloc(strlen(path) + 1);
    strcpy(f.path, path);
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->f = xrealloc(s->f, (size_t)s->cap * sizeof *s->f);
    }
    s->f[s->n++] = f;
    return 0;
}

/* Add the files of one list element (a name, or a glob pattern). */
static int add_element(struct stream_files *s, const char *name, char *err, size_t errlen)
{
    if (!strpbrk(name, "*?["))
        return stream_files_add(s, name, err, errlen);
    glob_t g;
    int rc = glob(name, GLOB_ERR, NULL, &g);
    if (rc == GLOB_NOMATCH)
        return errorf(err, errlen, "data.path: the pattern '%s' matches no file", name);
    if (rc)
        return errorf(err, errlen, "data.path: cannot expand the pattern '%s' (%s)", name,
                      rc == GLOB_NOSPACE ? "out of memory" : "a directory cannot be read");
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++)
        rc = stream_files_add(s, g.gl_pathv[i], err, errlen);
    globfree(&g);
    return rc;
}

int stream_files_open(struct stream_files *s, const char *spec, int history_files, char *err,
                      size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (history_files < 0)
        return errorf(err, errlen, "data.history_files = %d: must be >= 0 (0 = all)",
                      history_files);
    s->history_files = history_files;
    char *copy = xmalloc(strlen(spec) + 1);
    strcpy(copy, spec);
    int rc = 0;
    char *p = copy;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = 0;
        if (!*p) {
            rc = errorf(err, errlen, "data.path '%s': an empty file name in the list", spec);
            break;
        }
        if ((rc = add_element(s, p, err, errlen)))
            break;
        if (!comma)
            break;
        p = comma + 1;
    }
    free(copy);
    if (rc)
        stream_files_close(s);
    return rc;
}

void stream_files_close(struct stream_files *s)
{
    for (int i = 0; i < s->n; i++) {
        file_unload(&s->f[i]);
        free(s->f[i].path);
    }
    free(s->f);
    memset(s, 0, sizeof *s);
}

/* [*lo, *hi): the index positions holding raw id x. */
static void find_user(const struct stream_file *f, int64_t x, int64_t *lo, int64_t *hi)
{
    int64_t a = 0, b = f->ds.num_users;
    while (a < b) {
        int64_t m = a + (b - a) / 2;
        if (f->uid[m] < x)
            a = m + 1;
        else
            b = m;
    }
    *lo = a;
    b = f->ds.num_users;
    while (a < b) {
        int64_t m = a + (b - a) / 2;
        if (f->uid[m] <= x)
            a = m + 1;
        else
            b = m;
    }
    *hi = a;
}

/* One candidate event of a file: (time, event index) orders them. */
struct cand {
    int64_t ts, event, item;
    int32_t action;
};

static int cand_newest_first(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts > y->ts ? -1 : 1;
    return (x->event < y->event) - (x->event > y->event);
}

/* Append user u's newest events before `before` (at most want) of file f
 * to c[*nc]. */
static int user_events(const struct stream_file *f, int64_t u, int64_t before, int64_t want,
                       int with_actions, struct cand **c, int64_t *nc, int64_t *cap, char *err,
                       size_t errlen)
{
    const struct dataset *ds = &f->ds;
    int64_t e0 = ds->offsets[u], len = ds->offsets[u + 1] - e0;
    if (len == 0)
        return 0;
    int64_t *items = xmalloc((size_t)len * 2 * sizeof *items), *ts = items + len;
    int32_t *act = with_actions ? xmalloc((size_t)len * sizeof *act) : NULL;
    int rc = dataset_read_users(ds, u, u + 1, items, ts, act, err, errlen);
    if (rc == 0) {
        int64_t a = 0, b = len; /* cut: the first event at or after `before` */
        while (a < b) {
            int64_t m = a + (b - a) / 2;
            if (ts[m] < before)
                a = m + 1;
            else
                b = m;
        }
        int64_t take = a < want ? a : want;
        if (*nc + take > *cap) {
            *cap = 2 * (*nc + take);
            *c = xrealloc(*c, (size_t)*cap * sizeof **c);
        }
        for (int64_t i = a - 1; i >= a - take; i--)
            (*c)[(*nc)++] = (struct cand){ts[i], e0 + i, items[i], act ? act[i] : 0};
    }
    free(items);
    free(act);
    return rc;
}

const struct dataset *stream_files_dataset(struct stream_files *s, int k, char *err,
                                           size_t errlen)
{
    if (k < 0 || k >= s->n) {
        errorf(err, errlen, "stream_files_dataset: file %d of %d", k, s->n);
        return NULL;
    }
    struct stream_file *f = &s->f[k];
    if (f->is_open)
        return &f->ds;
    if (file_load(f, f->path, err, errlen))
        return NULL;
    if (f->ds.num_events != f->num_events || f->ds.raw_ids != f->raw_ids ||
        f->ds.has_actions != f->has_actions || !f->ds.has_timestamps) {
        errorf(err, errlen, "%s changed since it was opened (%lld events then, %lld now): window "
               "files are never rewritten", f->path, (long long)f->num_events,
               (long long)f->ds.num_events);
        file_unload(f);
        return NULL;
    }
    return &f->ds;
}

void stream_files_release(struct stream_files *s, int k)
{
    for (int i = 0; i < k && i < s->n; i++)
        file_unload(&s->f[i]);
}

int stream_files_history(struct stream_files *s, int64_t user_raw_id, int64_t before,
                         int64_t max_len, int64_t *items, int64_t *ts, int32_t *actions,
                         struct stream_where *where, int64_t *n, char *err, size_t errlen)
{
    *n = 0;
    if (max_len <= 0)
        return 0;
    if (actions && s->n > 0 && !s->f[0].has_actions)
        return errorf(err, errlen, "%s: has no /actions", s->f[0].path);
    struct cand *c = NULL;
    int64_t cap = 0, have = 0;
    int used = 0, rc = 0;
    for (int k = s->n - 1; k >= 0 && have < max_len; k--) {
        const struct stream_file *f = &s->f[k];
        if (f->t_first >= before)
            continue; /* nothing before the time asked */
        if (s->history_files && used == s->history_files)
            break;
        used++;
        if (!stream_files_dataset(s, k, err, errlen)) {
            rc = -1;
            break;
        }
        int64_t lo, hi, nc = 0;
        find_user(f, user_raw_id, &lo, &hi);
        for (int64_t i = lo; rc == 0 && i < hi; i++)
            rc = user_events(f, f->uidx ? f->uidx[i] : i, before, max_len - have, actions != NULL,
                             &c, &nc, &cap, err, errlen);
        if (rc)
            break;
        if (hi - lo > 1) /* users sharing the raw id (hash collisions): merged by time */
            qsort(c, (size_t)nc, sizeof *c, cand_newest_first);
        for (int64_t i = 0; i < nc && have < max_len; i++, have++) {
            items[have] = c[i].item;
            ts[have] = c[i].ts;
            if (actions)
                actions[have] = c[i].action;
            if (where)
                where[have] = (struct stream_where){k, c[i].event};
        }
    }
    free(c);
    *n = have;
    return rc;
}

int stream_files_event_values(struct stream_files *s, const char *name,
                              const struct stream_where *where, int64_t n, float *out, char *err,
                              size_t errlen)
{
    float *fv = NULL;
    int32_t *iv = NULL;
    int64_t cap = 0;
    int rc = 0;
    for (int64_t i = 0, j; rc == 0 && i < n; i = j) {
        const struct dataset *ds = stream_files_dataset(s, where[i].file, err, errlen);
        if (!ds) {
            rc = -1;
            break;
        }
        const struct dataset_feature *f = dataset_feat_find(ds, DS_EVENTS, name);
        if (!f) {
            rc = errorf(err, errlen, "%s: has no event column /events/%s", ds->path, name);
            break;
        }
        /* the run where[i .. j): one file, events descending by one */
        for (j = i + 1; j < n && where[j].file == where[i].file &&
                        where[j].event == where[j - 1].event - 1; j++)
            ;
        const int64_t m = j - i, e0 = where[j - 1].event;
        if (m > cap) {
            cap = m;
            fv = xrealloc(fv, (size_t)cap * sizeof *fv);
            iv = xrealloc(iv, (size_t)cap * sizeof *iv);
        }
        rc = f->is_float ? dataset_feat_floats(ds, f, e0, m, fv, err, errlen)
                         : dataset_feat_ints(ds, f, e0, m, iv, err, errlen);
        for (int64_t k = 0; rc == 0 && k < m; k++) /* newest first: the run reversed */
            out[i + k] = f->is_float ? fv[m - 1 - k] : (float)iv[m - 1 - k];
    }
    free(fv);
    free(iv);
    return rc;
}

int stream_files_later(const struct stream_files *s, int k, int64_t last_end, char *err,
                       size_t errlen)
{
    const struct stream_file *f = &s->f[k];
    char a[64], b[64];
    if (f->t_first <= last_end)
        return errorf(err, errlen, "%s is not later than the last window trained: its first "
                      "event, at %s, is not after the end of that window, %s",
                      f->path, when(f->t_first, a, sizeof a), when(last_end, b, sizeof b));
    return 0;
}

int stream_files_resume(const struct stream_files *s, int64_t last_end, int *next, char *err,
                        size_t errlen)
{
    int k = 0;
    while (k < s->n && s->f[k].t_last <= last_end)
        k++;
    *next = k;
    return k < s->n ? stream_files_later(s, k, last_end, err, errlen) : 0;
}
