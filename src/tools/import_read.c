/* import_read: number and id parsers, the event table, the movielens and
 * sasrec parsers and the entry point of the readers of 'freescale data
 * import'; see import_read.h (csv: import_csv.c, jsonl: import_jsonl.c). */
#include "tools/import_read.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "tools/import_priv.h"

#define MAX_WARNINGS 10 /* bad lines reported with --skip-bad */

/* --- numbers ----------------------------------------------------------------- */

static void trim(const char **s, size_t *len)
{
    while (*len && (**s == ' ' || **s == '\t'))
        (*s)++, (*len)--;
    while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t' || (*s)[*len - 1] == '\r'))
        (*len)--;
}

int import_parse_i64(const char *s, size_t len, int64_t *out)
{
    trim(&s, &len);
    int neg = 0;
    if (len && (*s == '-' || *s == '+'))
        neg = *s == '-', s++, len--;
    if (len == 0 || len > 19)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9)
            return -1;
        v = v * 10 + d;
    }
    if (v > (uint64_t)INT64_MAX)
        return -1;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

int import_parse_f64(const char *s, size_t len, double *out)
{
    trim(&s, &len);
    char tmp[64];
    if (len == 0 || len >= sizeof tmp)
        return -1;
    for (size_t i = 0; i < len; i++)
        if (!strchr("0123456789+-.eE", s[i]) || s[i] == 0)
            return -1;
    memcpy(tmp, s, len);
    tmp[len] = 0;
    char *end;
    double v = strtod(tmp, &end);
    if (end != tmp + len || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

const char *import_shown(char *buf, size_t buflen, const char *s, size_t len)
{
    size_t n = len > 40 ? 40 : len, i;
    for (i = 0; i < n && i + 4 < buflen; i++)
        buf[i] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
    if (n < len)
        memcpy(buf + i, "...", 3), i += 3;
    buf[i] = 0;
    return buf;
}

int import_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            return 0;
    return 1;
}

int import_field(const struct reader *r, int c, const char *name, const char *s, size_t len,
                 struct import_key *key, double *rating, int64_t *ts, char *err, size_t errlen)
{
    char b[48];
    const struct import_options *o = r->o;
    int is_id = c == IMPORT_USER || c == IMPORT_ITEM;
    int strings = c == IMPORT_USER ? o->string_users : o->string_items;
    if (import_blank(s, len))
        return errorf(err, errlen, "field '%s' is empty", name);
    if (is_id && strings) {
        trim(&s, &len);
        if (len > IMPORT_MAX_ID_BYTES)
            return errorf(err, errlen, "field '%s' = '%s' is longer than %d bytes", name,
                          import_shown(b, sizeof b, s, len), IMPORT_MAX_ID_BYTES);
        key->s = s, key->len = len;
        return 0;
    }
    if (c == IMPORT_RATING ? import_parse_f64(s, len, rating) == 0
                           : import_parse_i64(s, len, is_id ? &key->i : ts) == 0)
        return 0;
    double t;
    if (c == IMPORT_TIME && import_parse_f64(s, len, &t) == 0 && t == floor(t) &&
        fabs(t) < 9.2e18) { /* 1649433617592.0 */
        *ts = (int64_t)t;
        return 0;
    }
    return errorf(err, errlen, "field '%s' = '%s' is not %s%s", name,
                  import_shown(b, sizeof b, s, len),
                  c == IMPORT_RATING ? "a number" : "an integer",
                  !is_id ? "" : c == IMPORT_USER ? " (string ids: --user-ids string)"
                                                 : " (string ids: --item-ids string)");
}

/* --- the event table ------------------------------------------------------- */

void import_bad_line(struct reader *r, int64_t line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!r->o->skip_bad || r->in_header)
        fatal("%s:%lld: %s", r->path, (long long)line, msg);
    if (++r->ev->bad <= MAX_WARNINGS)
        log_warn("%s:%lld: %s (skipped)", r->path, (long long)line, msg);
}

/* Is s[0 .. len) (spaces around it aside) one of a closed column's values? */
static int closed_value(const struct import_evcol *col, const char *s, size_t len)
{
    trim(&s, &len);
    for (int i = 0; i < col->nvalues; i++)
        if (strlen(col->values[i]) == len && !memcmp(col->values[i], s, len))
            return 1;
    return 0;
}

static const char *closed_list(const struct import_evcol *col, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < col->nvalues && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s", i ? ", " : "", col->values[i]);
    return buf;
}

int import_add_event(struct reader *r, int64_t line, const struct import_key *user,
                     const struct import_key *item, double rating, int64_t ts,
                     const struct import_text *evt)
{
    struct import_events *ev = r->ev;
    const struct import_options *o = r->o;
    if (r->has_rating && fabs(rating) * 10 > (double)INT32_MAX) {
        import_bad_line(r, line, "rating %g is out of range (|rating| x 10 must fit int32)",
                        rating);
        return -1;
    }
    double fv[IMPORT_MAX_EVCOLS];
    char list[256];
    for (int c = 0; c < ev->nevf; c++) { /* numbers and closed values first: a bad one drops the row */
        const struct import_evcol *col = &o->evcol[c];
        if (col->empty_zero && import_blank(evt[c].s, evt[c].len)) {
            fv[c] = 0; /* a null of a preset's float column */
            continue;
        }
        if (col->nvalues && !import_blank(evt[c].s, evt[c].len) &&
            !closed_value(col, evt[c].s, evt[c].len)) {
            char b[48];
            import_bad_line(r, line, "field '%s' = '%s' is not one of %s", col->name,
                            import_shown(b, sizeof b, evt[c].s, evt[c].len),
                            closed_list(col, list, sizeof list));
            return -1;
        }
        if (ev->evf[c].is_float && import_parse_f64(evt[c].s, evt[c].len, &fv[c])) {
            char b[48];
            import_bad_line(r, line, "field '%s' = '%s' is not a number (a float event "
                            "column)", ev->evf[c].name, import_shown(b, sizeof b, evt[c].s,
                                                                      evt[c].len));
            return -1;
        }
    }
    if (o->raw_items && !o->string_items && item->i <= 0) {
        import_bad_line(r, line, "item id %lld: raw item ids (--ids raw) are positive, 1 .. "
                        "2^63 - 1 (0 is padding)", (long long)item->i);
        return -1;
    }
    if (o->time_ms) /* milliseconds to seconds, rounded down */
        ts = ts >= 0 ? ts / 1000 : -((-(ts + 1)) / 1000) - 1;
    if (r->has_rating && o->has_min_rating && rating < o->min_rating) {
        ev->below_min++;
        return 0;
    }
    if (ev->n == ev->cap) {
        ev->cap = ev->cap ? ev->cap + ev->cap / 2 : (int64_t)1 << 16;
        ev->user = xrealloc(ev->user, (size_t)ev->cap * sizeof *ev->user);
        ev->item = xrealloc(ev->item, (size_t)ev->cap * sizeof *ev->item);
        if (ev->ts)
            ev->ts = xrealloc(ev->ts, (size_t)ev->cap * sizeof *ev->ts);
        if (ev->act)
            ev->act = xrealloc(ev->act, (size_t)ev->cap * sizeof *ev->act);
        for (int c = 0; c < ev->nevf; c++) {
            struct import_evfeat *f = &ev->evf[c];
            if (f->is_float)
                f->v = xrealloc(f->v, (size_t)ev->cap * sizeof *f->v);
            else
                f->k = xrealloc(f->k, (size_t)ev->cap * sizeof *f->k);
        }
    }
    for (int c = 0; c < ev->nevf; c++) {
        struct import_evfeat *f = &ev->evf[c];
        const char *s = evt[c].s;
        size_t len = evt[c].len;
        while (len && (*s == ' ' || *s == '\t'))
            s++, len--;
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
            len--;
        if (f->is_float)
            f->v[ev->n] = (float)fv[c];
        else
            f->k[ev->n] = len ? import_vocab_add(&f->vocab, s, len) : -1;
    }
    ev->user[ev->n] = o->string_users ? import_ids_add_str(&ev->users, user->s, user->len)
                                      : import_ids_add_i64(&ev->users, user->i);
    ev->item[ev->n] = o->string_items ? import_ids_add_str(&ev->items, item->s, item->len)
                                      : import_ids_add_i64(&ev->items, item->i);
    if (ev->ts)
        ev->ts[ev->n] = ts;
    if (ev->act)
        ev->act[ev->n] = (int32_t)lround(rating * 10);
    ev->n++;
    return 0;
}

/* --- movielens and sasrec: one line, one event -------------------------------- */

/* Field c of the current line, or report it and return -1. */
static int line_field(struct reader *r, int c, const char *name, const char *s, size_t len,
                      struct import_key *key, double *rating, int64_t *ts)
{
    char err[640];
    if (import_field(r, c, name, s, len, key, rating, ts, err, sizeof err) == 0)
        return 0;
    import_bad_line(r, r->ev->lines, "%s", err);
    return -1;
}

/* The MovieLens ratings layouts, told apart by the first line. */
enum ml_layout { ML_UNKNOWN, ML_DAT, ML_CSV, ML_UDATA };
static const char *const ml_sep[] = {"", "::", ",", "\t"};
static const char *const ml_what[] = {"", "user::item::rating::timestamp separated by '::'",
                                      "userId,movieId,rating,timestamp separated by ','",
                                      "user item rating timestamp separated by tabs (u.data)"};

/* "user::item::rating::timestamp" (ML-1M / ML-10M ratings.dat), the
 * ratings.csv of ML-20M/25M/latest (header userId,movieId,rating,timestamp)
 * or ML-100K's u.data (tab-separated): the layout from the first line. */
static void movielens_line(struct reader *r, enum ml_layout *layout, const char *s, size_t len)
{
    if (*layout == ML_UNKNOWN) {
        *layout = memmem(s, len, "::", 2) ? ML_DAT : memchr(s, '\t', len) ? ML_UDATA
                  : memchr(s, ',', len) ? ML_CSV : ML_DAT;
        if (*layout == ML_CSV && len >= 7 && !memcmp(s, "userId,", 7)) {
            r->ev->rows--; /* the header of ratings.csv: no row */
            return;
        }
    }
    const char *sep = ml_sep[*layout];
    const size_t sl = strlen(sep);
    const char *f[5];
    size_t n[5];
    int k = 0;
    const char *p = s, *end = s + len;
    for (;;) {
        const char *q = memmem(p, (size_t)(end - p), sep, sl);
        if (!q)
            q = end;
        if (k < 5)
            f[k] = p, n[k] = (size_t)(q - p);
        k++;
        if (q == end)
            break;
        p = q + sl;
    }
    if (k != 4) {
        char b[48];
        import_bad_line(r, r->ev->lines, "expected 4 fields %s, found %d in '%s'",
                        ml_what[*layout], k, import_shown(b, sizeof b, s, len));
        return;
    }
    struct import_key user, item;
    int64_t ts;
    double rating;
    struct import_text ev[IMPORT_MAX_EVCOLS];
    for (int c = 0; c < r->o->nevcols; c++) /* rating or timestamp: data_import.c */
        ev[c].s = f[r->o->evpos[c]], ev[c].len = n[r->o->evpos[c]];
    if (line_field(r, IMPORT_USER, "user", f[0], n[0], &user, NULL, NULL) ||
        line_field(r, IMPORT_ITEM, "item", f[1], n[1], &item, NULL, NULL) ||
        line_field(r, IMPORT_RATING, "rating", f[2], n[2], NULL, &rating, NULL) ||
        line_field(r, IMPORT_TIME, "timestamp", f[3], n[3], NULL, NULL, &ts))
        return;
    import_add_event(r, r->ev->lines, &user, &item, rating, ts, ev);
}

/* "user item", separated by spaces or tabs. */
static void sasrec_line(struct reader *r, const char *s, size_t len)
{
    const char *f[3];
    size_t n[3];
    int k = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
            i++;
        if (i == len)
            break;
        size_t b = i;
        while (i < len && s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            i++;
        if (k < 3)
            f[k] = s + b, n[k] = i - b;
        k++;
    }
    if (k != 2) {
        char b[48];
        import_bad_line(r, r->ev->lines, "expected 2 fields 'user item', found %d in '%s'", k,
                        import_shown(b, sizeof b, s, len));
        return;
    }
    struct import_key user, item;
    if (line_field(r, IMPORT_USER, "user", f[0], n[0], &user, NULL, NULL) ||
        line_field(r, IMPORT_ITEM, "item", f[1], n[1], &item, NULL, NULL))
        return;
    import_add_event(r, r->ev->lines, &user, &item, 0, 0, NULL);
}

static void read_simple(struct reader *r, struct import_input *in)
{
    char *s;
    size_t len;
    enum ml_layout layout = ML_UNKNOWN;
    while (import_input_line(in, &s, &len)) {
        r->ev->lines = in->line;
        if (len && s[len - 1] == '\n')
            len--;
        if (import_blank(s, len))
            continue;
        r->ev->rows++;
        if (r->o->format == IMPORT_MOVIELENS)
            movielens_line(r, &layout, s, len);
        else
            sasrec_line(r, s, len);
    }
    if (r->ev->rows == 0)
        fatal("%s: empty file (no events)", r->path);
}

/* --- entry point ------------------------------------------------------------ */

void import_read(const char *path, const struct import_options *o, struct import_events *ev)
{
    memset(ev, 0, sizeof *ev);
    struct import_input in;
    import_input_open(&in, path);
    ev->path = in.path;
    ev->gzip = in.gzip;
    struct reader r = {.path = in.path, .o = o, .ev = ev};
    if (o->format == IMPORT_CSV || o->format == IMPORT_JSONL)
        r.has_rating = o->rating_col != NULL || (o->by_position && o->position[IMPORT_RATING] >= 0),
        r.has_time = o->time_col != NULL || (o->by_position && o->position[IMPORT_TIME] >= 0);
    else if (o->format == IMPORT_MOVIELENS)
        r.has_rating = 1, r.has_time = 1;
    import_ids_init(&ev->users, o->string_users);
    import_ids_init(&ev->items, o->string_items);
    ev->cap = (int64_t)1 << 16;
    ev->user = xmalloc((size_t)ev->cap * sizeof *ev->user);
    ev->item = xmalloc((size_t)ev->cap * sizeof *ev->item);
    int store_rating = r.has_rating && (o->format != IMPORT_MOVIELENS || o->want_rating);
    int store_time = r.has_time && (o->format != IMPORT_MOVIELENS || o->want_time);
    if (store_time)
        ev->ts = xmalloc((size_t)ev->cap * sizeof *ev->ts);
    if (store_rating)
        ev->act = xmalloc((size_t)ev->cap * sizeof *ev->act);
    ev->nevf = o->nevcols;
    ev->evf = o->nevcols ? xcalloc((size_t)o->nevcols, sizeof *ev->evf) : NULL;
    for (int c = 0; c < o->nevcols; c++) {
        struct import_evfeat *f = &ev->evf[c];
        snprintf(f->name, sizeof f->name, "%s", o->evcol[c].name);
        f->is_float = o->evcol[c].is_float;
        import_vocab_init(&f->vocab);
        for (int i = 0; i < o->evcol[c].nvalues; i++) /* a closed column: every value has its id */
            import_vocab_add(&f->vocab, o->evcol[c].values[i], strlen(o->evcol[c].values[i]));
        if (f->is_float)
            f->v = xmalloc((size_t)ev->cap * sizeof *f->v);
        else
            f->k = xmalloc((size_t)ev->cap * sizeof *f->k);
    }
    if (o->format == IMPORT_CSV)
        import_read_csv(&r, &in);
    else if (o->format == IMPORT_JSONL)
        import_read_jsonl(&r, &in);
    else
        read_simple(&r, &in);
    ev->lines = in.line;
    import_input_close(&in);
    if (ev->bad > MAX_WARNINGS)
        log_warn("%s: %lld bad lines skipped in all (first %d shown)", ev->path,
                 (long long)ev->bad, MAX_WARNINGS);
}

void import_events_free(struct import_events *ev)
{
    free(ev->user);
    free(ev->item);
    free(ev->ts);
    free(ev->act);
    for (int c = 0; c < ev->nevf; c++) {
        free(ev->evf[c].k);
        free(ev->evf[c].v);
        import_vocab_free(&ev->evf[c].vocab);
    }
    free(ev->evf);
    import_ids_free(&ev->users);
    import_ids_free(&ev->items);
    memset(ev, 0, sizeof *ev);
}
