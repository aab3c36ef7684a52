/* window: the time windows of the stream schedule; see window.h. */
#include "data/window.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/check.h"
#include "base/log.h"
#include "base/rng.h"

#define WINDOW_USERS 4096 /* users per read of a scan */

int window_duration(const char *name, const char *s, int positive, double *sec, char *err,
                    size_t errlen)
{
    char *end;
    errno = 0;
    const double v = strtod(s, &end);
    double unit = 1;
    if (end != s && *end && !end[1])
        switch (*end) {
        case 's': unit = 1; end++; break;
        case 'm': unit = 60; end++; break;
        case 'h': unit = 3600; end++; break;
        case 'd': unit = 86400; end++; break;
        case 'w': unit = 7 * 86400; end++; break;
        default: break;
        }
    if (end == s || *end || errno || isspace((unsigned char)*s) || !isfinite(v) ||
        !isfinite(v * unit))
        return errorf(err, errlen, "%s = '%s': not a duration: seconds (3600) or a number "
                      "with a unit s, m, h, d or w (30s, 10m, 6h, 1d, 2w)", name, s);
    if (positive ? !(v > 0) : v < 0)
        return errorf(err, errlen, "%s = '%s': must be a duration %s (such as 3600, 30m, 6h, "
                      "1d)", name, s, positive ? "> 0" : ">= 0");
    *sec = v * unit;
    return 0;
}

int window_parse_duration(const char *name, const char *s, int64_t *sec, char *err,
                          size_t errlen)
{
    double v;
    if (window_duration(name, s, 1, &v, err, errlen))
        return -1;
    if (v > (double)(INT64_MAX / 2))
        return errorf(err, errlen, "%s = '%s': too long", name, s);
    if (v != floor(v))
        return errorf(err, errlen, "%s = '%s': not a whole number of seconds (%.17g)", name, s,
                      v);
    *sec = (int64_t)v;
    return 0;
}

int window_parse_time(const char *name, const char *s, int *rel, int64_t *t, char *err,
                      size_t errlen)
{
    *rel = 0;
    if (s[0] == '+') {
        *rel = 1;
        return window_parse_duration(name, s + 1, t, err, errlen);
    }
    char *end;
    errno = 0;
    const long long v = strtoll(s, &end, 10);
    if (end != s && !*end && !errno) {
        *t = (int64_t)v;
        return 0;
    }
    int Y, M, D, h = 0, m = 0, sec = 0, n = 0;
    const size_t len = strlen(s);
    int ok = sscanf(s, "%4d-%2d-%2d%n", &Y, &M, &D, &n) == 3 && (size_t)n == len;
    if (!ok && len > 10 && (s[10] == 'T' || s[10] == ' '))
        ok = (sscanf(s, "%4d-%2d-%2d%*c%2d:%2d%n", &Y, &M, &D, &h, &m, &n) == 5 &&
              (size_t)n == len) ||
             (sscanf(s, "%4d-%2d-%2d%*c%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &n) == 6 &&
              (size_t)n == len);
    if (ok) {
        struct tm tm = {.tm_year = Y - 1900, .tm_mon = M - 1, .tm_mday = D, .tm_hour = h,
                        .tm_min = m, .tm_sec = sec};
        const time_t tt = timegm(&tm);
        struct tm back;
        ok = tt != (time_t)-1 && gmtime_r(&tt, &back) && back.tm_year == Y - 1900 &&
             back.tm_mon == M - 1 && back.tm_mday == D && back.tm_hour == h &&
             back.tm_min == m && back.tm_sec == sec;
        if (ok) {
            *t = (int64_t)tt;
            return 0;
        }
    }
    return errorf(err, errlen, "%s = '%s': not a time (seconds since the epoch, an ISO date "
                  "or date and time in UTC such as 2026-11-01 or 2026-11-01T06:00, or "
                  "+DURATION after the first event such as +30d)", name, s);
}

int window_conf_from_params(const struct params *p, struct window_conf *wc, char *err,
                            size_t errlen)
{
    memset(wc, 0, sizeof *wc);
    wc->on = !strcmp(params_str(p, P_train_schedule), "stream");
    wc->max_events = params_i64(p, P_eval_max_events);
    const char *w = params_str(p, P_data_window), *a = params_str(p, P_data_stream_start),
               *z = params_str(p, P_data_stream_end);
    if (!wc->on) {
        const char *set = w[0] ? "data.window" : a[0] ? "data.stream_start"
                          : z[0] ? "data.stream_end" : NULL;
        if (set)
            return errorf(err, errlen, "%s is set but train.schedule = epochs: it is the "
                          "stream schedule's (train.schedule = stream)", set);
        return 0;
    }
    if (!w[0])
        return errorf(err, errlen, "train.schedule = stream needs data.window (the length of a "
                      "window, such as 1d, 6h or 3600)");
    if (window_parse_duration("data.window", w, &wc->len, err, errlen))
        return -1;
    if (strlen(w) >= sizeof wc->len_text)
        return errorf(err, errlen, "data.window = '%.40s...': too long", w);
    memcpy(wc->len_text, w, strlen(w) + 1);
    if (a[0]) {
        wc->start_set = 1;
        if (window_parse_time("data.stream_start", a, &wc->start_rel, &wc->start, err, errlen))
            return -1;
    }
    if (z[0]) {
        wc->end_set = 1;
        if (window_parse_time("data.stream_end", z, &wc->end_rel, &wc->end, err, errlen))
            return -1;
    }
    if (wc->start_set && wc->end_set && wc->start_rel == wc->end_rel && wc->end <= wc->start)
        return errorf(err, errlen, "data.stream_end = '%s' is not after data.stream_start = "
                      "'%s'", z, a);
    return 0;
}

int window_range(const struct dataset *ds, int64_t *first, int64_t *last, char *err,
                 size_t errlen)
{
    if (!ds->has_timestamps)
        return errorf(err, errlen, "train.schedule = stream: %s has no /timestamps (the windows "
                      "cut events by time; import the data with its timestamps)", ds->path);
    int64_t cap = 0, *items = NULL, *ts = NULL, lo = INT64_MAX, hi = INT64_MIN;
    int rc = 0;
    for (int64_t u0 = 0; u0 < ds->num_users && !rc; u0 += WINDOW_USERS) {
        const int64_t u1 = u0 + WINDOW_USERS < ds->num_users ? u0 + WINDOW_USERS : ds->num_users;
        const int64_t n = ds->offsets[u1] - ds->offsets[u0];
        if (n > cap) {
            cap = n;
            items = xrealloc(items, (size_t)cap * sizeof *items);
            ts = xrealloc(ts, (size_t)cap * sizeof *ts);
        }
        rc = dataset_read_users(ds, u0, u1, items, ts, NULL, err, errlen);
        for (int64_t e = 0; !rc && e < n; e++) {
            lo = ts[e] < lo ? ts[e] : lo;
            hi = ts[e] > hi ? ts[e] : hi;
        }
    }
    free(items);
    free(ts);
    if (rc)
        return -1;
    if (lo > hi)
        return errorf(err, errlen, "train.schedule = stream: %s has no event", ds->path);
    *first = lo;
    *last = hi;
    return 0;
}

int window_resolve(const struct window_conf *wc, int64_t first, int64_t last, int64_t *t0,
                   int64_t *n, char *err, size_t errlen)
{
    const int64_t start = !wc->start_set ? first : wc->start_rel ? first + wc->start : wc->start;
    const int64_t end = !wc->end_set ? last + 1 : wc->end_rel ? first + wc->end : wc->end;
    char a[64], z[64];
    window_time_text(start, a, sizeof a);
    window_time_text(end, z, sizeof z);
    if (end <= start)
        return errorf(err, errlen, "data.stream_end (%s, %lld) is not after data.stream_start "
                      "(%s, %lld)", z, (long long)end, a, (long long)start);
    *t0 = start;
    *n = (end - start + wc->len - 1) / wc->len;
    return 0;
}

int window_split(const struct dataset *ds, int64_t t0, int64_t t1, struct rsplit *s, char *err,
                 size_t errlen)
{
    struct rsplit_conf c = {.mode = RSPLIT_TIME, .t_val = t0, .t_test = t1};
    return rsplit_init(s, &c, ds, err, errlen);
}

struct keyed {
    uint64_t key;
    int64_t u;
};

static int cmp_keyed(const void *x, const void *y)
{
    const struct keyed *a = x, *b = y;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->u < b->u ? -1 : a->u > b->u;
}

int64_t window_eval_sample(const struct rsplit *w, const struct dataset *ds, uint64_t seed,
                           int64_t k, int64_t max, struct rsplit *ev)
{
    const int64_t U = ds->num_users;
    memset(ev, 0, sizeof *ev);
    ev->conf = w->conf;
    ev->bound = xmalloc((size_t)(U ? U : 1) * 2 * sizeof *ev->bound);
    memcpy(ev->bound, w->bound, (size_t)U * 2 * sizeof *ev->bound);
    int64_t total = 0, n = 0;
    for (int64_t u = 0; u < U; u++) {
        total += w->bound[2 * u + 1] - w->bound[2 * u];
        n += w->bound[2 * u + 1] > w->bound[2 * u];
    }
    if (max <= 0 || total <= max)
        return total;
    struct keyed *order = xmalloc((size_t)(n ? n : 1) * sizeof *order);
    n = 0;
    for (int64_t u = 0; u < U; u++)
        if (w->bound[2 * u + 1] > w->bound[2 * u])
            order[n++] = (struct keyed){rng_key(seed ^ 0x77696e646f77ull, (uint64_t)k,
                                                (uint64_t)(ds->user_keys ? ds->user_keys[u] : u)),
                                        u};
    qsort(order, (size_t)n, sizeof *order, cmp_keyed);
    for (int64_t u = 0; u < U; u++)
        ev->bound[2 * u + 1] = ev->bound[2 * u];
    int64_t taken = 0;
    for (int64_t i = 0; i < n && taken < max; i++) {
        const int64_t u = order[i].u, a = w->bound[2 * u], b = w->bound[2 * u + 1];
        const int64_t take = b - a < max - taken ? b - a : max - taken;
        ev->bound[2 * u + 1] = a + take;
        taken += take;
    }
    free(order);
    return taken;
}

void window_time_text(int64_t t, char *buf, size_t len)
{
    const time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M", &tm))
        snprintf(buf, len, "%lld", (long long)t);
}
