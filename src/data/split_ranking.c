/* split_ranking: the ranking splits; see split_ranking.h. */
#include "data/split_ranking.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"

#define TS_BLOCK ((int64_t)1 << 16) /* users per timestamp read (time split) */

/* A whole decimal integer in [lo, hi]. */
static int parse_i64(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *v)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    if (errno || *end || x < lo || x > hi)
        return -1;
    *v = x;
    return 0;
}

int rsplit_parse(const char *text, struct rsplit_conf *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    if (!strcmp(text, "loo")) {
        c->mode = RSPLIT_LOO;
        return 0;
    }
    if (!strcmp(text, "hstu"))
        return errorf(err, errlen, "data.split = hstu: validation and test share the last event "
                      "(the retrieval protocol); ranking takes loo, last:K, last:P%% or "
                      "time:T");
    if (!strncmp(text, "last:", 5)) {
        const char *v = text + 5;
        size_t n = strlen(v);
        if (n > 1 && v[n - 1] == '%') {
            char *end;
            errno = 0;
            double p = strtod(v, &end);
            if (errno || end != v + n - 1 || !(p > 0 && p < 50))
                return errorf(err, errlen, "data.split = %s: P of last:P%% must be a number "
                              "above 0 and below 50", text);
            c->mode = RSPLIT_LAST_PCT;
            c->pct = p;
            return 0;
        }
        if (parse_i64(v, n, 1, (int64_t)1 << 40, &c->k))
            return errorf(err, errlen, "data.split = %s: K of last:K must be an integer >= 1 "
                          "(the events each user holds out for test, and as many for "
                          "validation)", text);
        c->mode = RSPLIT_LAST;
        return 0;
    }
    if (!strncmp(text, "time:", 5)) {
        const char *v = text + 5, *comma = strchr(v, ',');
        c->mode = RSPLIT_TIME;
        const int64_t big = (int64_t)1 << 62;
        if (!comma) {
            if (parse_i64(v, strlen(v), -big, big, &c->t_test))
                return errorf(err, errlen, "data.split = %s: T of time:T must be an integer "
                              "time in seconds (the dataset's /timestamps)", text);
            c->mirrored = 1;
            return 0;
        }
        if (parse_i64(v, (size_t)(comma - v), -big, big, &c->t_val) ||
            parse_i64(comma + 1, strlen(comma + 1), -big, big, &c->t_test))
            return errorf(err, errlen, "data.split = %s: time:V,T takes two integer times in "
                          "seconds", text);
        if (c->t_val >= c->t_test)
            return errorf(err, errlen, "data.split = %s: the validation start V must come "
                          "before the test start T", text);
        return 0;
    }
    return errorf(err, errlen, "data.split = '%s': expected loo, last:K, last:P%% or time:T "
                  "(or hstu for retrieval)", text);
}

/* The first index of ts[0 .. L) at or after t (ts non-decreasing). */
static int64_t first_at(const int64_t *ts, int64_t L, int64_t t)
{
    int64_t lo = 0, hi = L;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (ts[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Read every timestamp in blocks of users: fn(ctx, u0, u1, ts) per block. */
static int scan_ts(const struct dataset *ds, void (*fn)(void *, int64_t, int64_t, const int64_t *),
                   void *ctx, char *err, size_t errlen)
{
    int64_t cap = 0, *items = NULL, *ts = NULL;
    int rc = 0;
    for (int64_t u0 = 0; u0 < ds->num_users && !rc; u0 += TS_BLOCK) {
        int64_t u1 = u0 + TS_BLOCK < ds->num_users ? u0 + TS_BLOCK : ds->num_users;
        int64_t n = ds->offsets[u1] - ds->offsets[u0];
        if (n > cap) {
            cap = n;
            items = xrealloc(items, (size_t)cap * sizeof *items);
            ts = xrealloc(ts, (size_t)cap * sizeof *ts);
        }
        rc = dataset_read_users(ds, u0, u1, items, ts, NULL, err, errlen);
        if (!rc)
            fn(ctx, u0, u1, ts);
    }
    free(items);
    free(ts);
    return rc;
}

struct ts_ctx {
    const struct dataset *ds;
    int64_t tmax;
    struct rsplit *s;
};

static void max_ts(void *p, int64_t u0, int64_t u1, const int64_t *ts)
{
    struct ts_ctx *c = p;
    for (int64_t u = u0; u < u1; u++) {
        int64_t L = dataset_length(c->ds, u);
        if (L > 0) {
            int64_t t = ts[c->ds->offsets[u] - c->ds->offsets[u0] + L - 1];
            c->tmax = t > c->tmax ? t : c->tmax;
        }
    }
}

static void bounds_ts(void *p, int64_t u0, int64_t u1, const int64_t *ts)
{
    struct ts_ctx *c = p;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t *t = ts + c->ds->offsets[u] - c->ds->offsets[u0];
        int64_t L = dataset_length(c->ds, u);
        c->s->bound[2 * u] = first_at(t, L, c->s->conf.t_val);
        c->s->bound[2 * u + 1] = first_at(t, L, c->s->conf.t_test);
    }
}

int rsplit_init(struct rsplit *s, const struct rsplit_conf *c, const struct dataset *ds,
                char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->conf = *c;
    if (c->mode != RSPLIT_TIME)
        return 0;
    if (!ds->has_timestamps)
        return errorf(err, errlen, "data.split = time:...: %s has no /timestamps", ds->path);
    struct ts_ctx ctx = {.ds = ds, .tmax = INT64_MIN, .s = s};
    if (c->mirrored) {
        if (scan_ts(ds, max_ts, &ctx, err, errlen))
            return -1;
        if (ctx.tmax < c->t_test)
            return errorf(err, errlen, "data.split = time:%lld: no event of %s is at or after "
                          "it (the last is at %lld): nothing to test",
                          (long long)c->t_test, ds->path, (long long)ctx.tmax);
        s->conf.t_val = c->t_test - (ctx.tmax - c->t_test) - 1;
        if (s->conf.t_val >= c->t_test)
            s->conf.t_val = c->t_test - 1;
    }
    s->bound = xmalloc((size_t)(ds->num_users ? ds->num_users : 1) * 2 * sizeof *s->bound);
    if (scan_ts(ds, bounds_ts, &ctx, err, errlen)) {
        rsplit_free(s);
        return -1;
    }
    return 0;
}

void rsplit_free(struct rsplit *s)
{
    free(s->bound);
    free(s->from);
    s->bound = NULL;
    s->from = NULL;
}

void rsplit_bounds(const struct rsplit *s, const struct dataset *ds, int64_t u, int64_t *a,
                   int64_t *b)
{
    const int64_t L = dataset_length(ds, u);
    int64_t k = 1;
    switch (s->conf.mode) {
    case RSPLIT_TIME:
        *a = s->bound[2 * u];
        *b = s->bound[2 * u + 1];
        return;
    case RSPLIT_LAST:
        k = s->conf.k;
        break;
    case RSPLIT_LAST_PCT:
        /* P x L first: exact for P with few binary digits (an integer P
         * and L < 2^45), so floor(29% x 100) is 29, not the 28 of 0.29 x 100 */
        k = (int64_t)floor(s->conf.pct * (double)L / 100.0);
        k = k < 1 ? 1 : k;
        break;
    case RSPLIT_LOO:
        break;
    }
    *b = L - k > 0 ? L - k : 0;
    *a = L - 2 * k > 0 ? L - 2 * k : 0;
}

void rsplit_candidates(const struct rsplit *s, const struct dataset *ds, int test, int64_t u,
                       int64_t *c0, int64_t *c1)
{
    int64_t a, b;
    rsplit_bounds(s, ds, u, &a, &b);
    *c0 = test ? b : a;
    *c1 = test ? dataset_length(ds, u) : b;
}

int64_t rsplit_train_users(const struct rsplit *s, const struct dataset *ds, int64_t **users)
{
    int64_t *list = xmalloc((size_t)(ds->num_users ? ds->num_users : 1) * sizeof *list), n = 0;
    for (int64_t u = 0; u < ds->num_users; u++) {
        int64_t a, b;
        rsplit_bounds(s, ds, u, &a, &b);
        if (a >= 1)
            list[n++] = u;
    }
    *users = list;
    return n;
}

int64_t rsplit_eval_users(const struct rsplit *s, const struct dataset *ds, int test,
                          int64_t **users)
{
    int64_t *list = xmalloc((size_t)(ds->num_users ? ds->num_users : 1) * sizeof *list), n = 0;
    for (int64_t u = 0; u < ds->num_users; u++) {
        int64_t c0, c1;
        rsplit_candidates(s, ds, test, u, &c0, &c1);
        if (c1 > c0)
            list[n++] = u;
    }
    *users = list;
    return n;
}

void rsplit_describe(const struct rsplit *s, char *buf, size_t len)
{
    const struct rsplit_conf *c = &s->conf;
    switch (c->mode) {
    case RSPLIT_LOO:
        snprintf(buf, len, "loo (test: each user's last event; validation: the one before)");
        break;
    case RSPLIT_LAST:
        snprintf(buf, len, "last:%lld (test: each user's last %lld events; validation: as many "
                 "before them)", (long long)c->k, (long long)c->k);
        break;
    case RSPLIT_LAST_PCT:
        snprintf(buf, len, "last:%g%% (test: the last %g%% of each user's events rounded down, "
                 "at least 1; validation: as many before them)", c->pct, c->pct);
        break;
    case RSPLIT_TIME:
        snprintf(buf, len, "time (validation: events in [%lld, %lld); test: at or after %lld)",
                 (long long)c->t_val, (long long)c->t_test, (long long)c->t_test);
        break;
    }
}
