/* import_read: line reader, number parsers, id interning and the movielens,
 * csv and sasrec parsers of 'freescale data import'; see import_read.h. */
#include "tools/import_read.h"

#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"

#define READ_CHUNK ((size_t)16 << 20)  /* bytes per fread */
#define MAX_LINE ((size_t)64 << 20)    /* longer lines: not a text file */
#define MAX_RECORD ((size_t)1 << 20)   /* csv record spanning lines (open quote) */
#define MAX_WARNINGS 10                /* bad lines reported with --skip-bad */

/* --- lines of a file, read in large chunks -------------------------------- */

struct lines {
    FILE *f;
    const char *path;
    char *buf;
    size_t cap, beg, end;
    int eof;
    int64_t line; /* number of the line last returned, 1-based */
};

static void lines_open(struct lines *L, const char *path)
{
    memset(L, 0, sizeof *L);
    L->path = path;
    L->f = fopen(path, "rb");
    if (!L->f)
        fatal("%s: cannot open: %s", path, strerror(errno));
    L->cap = READ_CHUNK;
    L->buf = xmalloc(L->cap);
}

static void lines_close(struct lines *L)
{
    fclose(L->f);
    free(L->buf);
}

/* Next line as s[0 .. len), '\n' included when present; a UTF-8 byte order
 * mark on line 1 is dropped. Returns 0 at end of file. */
static int lines_next(struct lines *L, char **s, size_t *len)
{
    for (;;) {
        size_t have = L->end - L->beg;
        char *nl = have ? memchr(L->buf + L->beg, '\n', have) : NULL;
        if (nl || (L->eof && have)) {
            *s = L->buf + L->beg;
            *len = nl ? (size_t)(nl + 1 - *s) : have;
            L->beg += *len;
            if (++L->line == 1 && *len >= 3 && !memcmp(*s, "\xEF\xBB\xBF", 3)) {
                *s += 3;
                *len -= 3;
            }
            return 1;
        }
        if (L->eof)
            return 0;
        memmove(L->buf, L->buf + L->beg, have);
        L->beg = 0;
        L->end = have;
        if (L->end == L->cap) {
            if (L->cap >= MAX_LINE)
                fatal("%s:%lld: line longer than %zu MiB (is this a text file?)", L->path,
                      (long long)L->line + 1, MAX_LINE >> 20);
            L->cap *= 2;
            L->buf = xrealloc(L->buf, L->cap);
        }
        size_t want = L->cap - L->end < READ_CHUNK ? L->cap - L->end : READ_CHUNK;
        size_t got = fread(L->buf + L->end, 1, want, L->f);
        if (got == 0) {
            if (ferror(L->f))
                fatal("%s: read error: %s", L->path, strerror(errno));
            L->eof = 1;
        }
        L->end += got;
    }
}

/* --- numbers ----------------------------------------------------------------- */

static void trim(const char **s, size_t *len)
{
    while (*len && (**s == ' ' || **s == '\t'))
        (*s)++, (*len)--;
    while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t' || (*s)[*len - 1] == '\r'))
        (*len)--;
}

/* Decimal int64 in s[0 .. len), spaces around allowed. 0 or -1. */
static int parse_i64(const char *s, size_t len, int64_t *out)
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

/* Finite decimal number (digits, sign, '.', exponent) in s[0 .. len). */
static int parse_f64(const char *s, size_t len, double *out)
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

/* A field value for a message: at most 40 bytes, unprintables as '?'. */
static const char *shown(char *buf, size_t buflen, const char *s, size_t len)
{
    size_t n = len > 40 ? 40 : len, i;
    for (i = 0; i < n && i + 4 < buflen; i++)
        buf[i] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
    if (n < len)
        memcpy(buf + i, "...", 3), i += 3;
    buf[i] = 0;
    return buf;
}

/* --- interning of original ids --------------------------------------------- */

static uint64_t mix64(uint64_t x) /* splitmix64 finaliser */
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void ids_rehash(struct import_ids *t, uint64_t size)
{
    free(t->slots);
    t->slots = xcalloc(size, sizeof *t->slots);
    t->mask = size - 1;
    for (int64_t k = 0; k < t->n; k++) {
        uint64_t h = mix64((uint64_t)t->ids[k]) & t->mask;
        while (t->slots[h])
            h = (h + 1) & t->mask;
        t->slots[h] = (int32_t)(k + 1);
    }
}

/* Index of id in t, added when new. */
static int32_t ids_intern(struct import_ids *t, int64_t id)
{
    if (t->n && id == t->last_id)
        return t->last_k;
    if (!t->slots)
        ids_rehash(t, 1024);
    uint64_t h = mix64((uint64_t)id) & t->mask;
    int32_t k;
    while ((k = t->slots[h]) != 0 && t->ids[k - 1] != id)
        h = (h + 1) & t->mask;
    if (k == 0) {
        if (t->n == INT32_MAX - 1)
            fatal("more than %d distinct ids: not supported", INT32_MAX - 1);
        if (t->n == t->cap) {
            t->cap = t->cap ? 2 * t->cap : 1024;
            t->ids = xrealloc(t->ids, (size_t)t->cap * sizeof *t->ids);
        }
        t->ids[t->n++] = id;
        k = (int32_t)t->n;
        t->slots[h] = k;
        if ((uint64_t)t->n * 2 > t->mask)
            ids_rehash(t, 2 * (t->mask + 1));
    }
    t->last_id = id;
    t->last_k = k - 1;
    return k - 1;
}

/* --- the event table ------------------------------------------------------- */

struct reader {
    const char *path;
    const struct import_options *o;
    struct import_events *ev;
    int has_rating, has_time; /* the input has these columns */
    int in_header;            /* csv header not read yet: errors are fatal */
};

static void bad_line(struct reader *r, int64_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void bad_line(struct reader *r, int64_t line, const char *fmt, ...)
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

/* One valid row. rating / ts are ignored when the input has none. Returns 0,
 * or -1 after reporting a rating out of range. */
static int add_event(struct reader *r, int64_t line, int64_t user, int64_t item, double rating,
                     int64_t ts)
{
    struct import_events *ev = r->ev;
    if (r->has_rating && fabs(rating) * 10 > (double)INT32_MAX) {
        bad_line(r, line, "rating %g is out of range (|rating| x 10 must fit int32)", rating);
        return -1;
    }
    if (r->has_rating && r->o->has_min_rating && rating < r->o->min_rating) {
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
    }
    ev->user[ev->n] = ids_intern(&ev->users, user);
    ev->item[ev->n] = ids_intern(&ev->items, item);
    if (ev->ts)
        ev->ts[ev->n] = ts;
    if (ev->act)
        ev->act[ev->n] = (int32_t)lround(rating * 10);
    ev->n++;
    return 0;
}

/* --- movielens and sasrec: one line, one event -------------------------------- */

/* Is s[0 .. len) only spaces, tabs and line ends? */
static int blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            return 0;
    return 1;
}

/* Field NAME = s[0 .. len) as an integer (id, timestamp) or, with real, a
 * number (rating) into *iv or *fv; reports the line and returns -1 when it
 * is not one. */
static int field_value(struct reader *r, const char *name, const char *s, size_t len, int real,
                       int64_t *iv, double *fv)
{
    char b[48];
    if ((real ? parse_f64(s, len, fv) : parse_i64(s, len, iv)) == 0)
        return 0;
    if (blank(s, len))
        bad_line(r, r->ev->lines, "field '%s' is empty", name);
    else
        bad_line(r, r->ev->lines, "field '%s' = '%s' is not %s", name,
                 shown(b, sizeof b, s, len), real ? "a number" : "an integer");
    return -1;
}

/* "user::item::rating::timestamp" (ML-1M / ML-10M ratings.dat). */
static void movielens_line(struct reader *r, const char *s, size_t len)
{
    const char *f[5];
    size_t n[5];
    int k = 0;
    const char *p = s, *end = s + len;
    for (;;) {
        const char *q = p;
        while (q + 1 < end && !(q[0] == ':' && q[1] == ':'))
            q++;
        if (q + 1 >= end)
            q = end;
        if (k < 5)
            f[k] = p, n[k] = (size_t)(q - p);
        k++;
        if (q == end)
            break;
        p = q + 2;
    }
    if (k != 4) {
        char b[48];
        bad_line(r, r->ev->lines,
                 "expected 4 fields user::item::rating::timestamp separated by '::', "
                 "found %d in '%s'", k, shown(b, sizeof b, s, len));
        return;
    }
    int64_t user, item, ts;
    double rating;
    if (field_value(r, "user", f[0], n[0], 0, &user, NULL) ||
        field_value(r, "item", f[1], n[1], 0, &item, NULL) ||
        field_value(r, "rating", f[2], n[2], 1, NULL, &rating) ||
        field_value(r, "timestamp", f[3], n[3], 0, &ts, NULL))
        return;
    add_event(r, r->ev->lines, user, item, rating, ts);
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
        bad_line(r, r->ev->lines, "expected 2 fields 'user item', found %d in '%s'", k,
                 shown(b, sizeof b, s, len));
        return;
    }
    int64_t user, item;
    if (field_value(r, "user", f[0], n[0], 0, &user, NULL) ||
        field_value(r, "item", f[1], n[1], 0, &item, NULL))
        return;
    add_event(r, r->ev->lines, user, item, 0, 0);
}

static void read_simple(struct reader *r, struct lines *L)
{
    char *s;
    size_t len;
    while (lines_next(L, &s, &len)) {
        r->ev->lines = L->line;
        if (len && s[len - 1] == '\n')
            len--;
        if (blank(s, len))
            continue;
        r->ev->rows++;
        if (r->o->format == IMPORT_MOVIELENS)
            movielens_line(r, s, len);
        else
            sasrec_line(r, s, len);
    }
    if (r->ev->rows == 0)
        fatal("%s: empty file (no events)", r->path);
}

/* --- csv -------------------------------------------------------------------- */

enum { COL_USER, COL_ITEM, COL_RATING, COL_TIME, NCOLS };

struct csv_state {
    struct reader *r;
    int have_header;
    char **names;          /* header columns [nnames] */
    int32_t nnames, cap;
    int32_t col[NCOLS];    /* column index of each field we keep; -1 none */
    const char *colname[NCOLS];
    int32_t field;         /* fields seen in the current row */
    int64_t rec_line;      /* line where the current record starts */
    int rows_ended;        /* rows ended during the current line */
    char err[640];         /* first field error of the current row */
    int64_t v[NCOLS];      /* parsed user, item, -, time */
    double rating;
};

static void csv_field(void *data, size_t len, void *arg)
{
    struct csv_state *st = arg;
    const char *s = data ? data : "";
    if (!st->have_header) {
        if (st->nnames == st->cap) {
            st->cap = st->cap ? 2 * st->cap : 16;
            st->names = xrealloc(st->names, (size_t)st->cap * sizeof *st->names);
        }
        char *name = xmalloc(len + 1);
        memcpy(name, s, len);
        name[len] = 0;
        st->names[st->nnames++] = name;
        return;
    }
    int32_t f = st->field++;
    if (st->err[0])
        return;
    for (int c = 0; c < NCOLS; c++) {
        if (st->col[c] != f)
            continue;
        char b[48];
        int bad = c == COL_RATING ? parse_f64(s, len, &st->rating) : parse_i64(s, len, &st->v[c]);
        if (bad && blank(s, len))
            snprintf(st->err, sizeof st->err, "field '%s' is empty", st->colname[c]);
        else if (bad)
            snprintf(st->err, sizeof st->err, "field '%s' = '%s' is not %s", st->colname[c],
                     shown(b, sizeof b, s, len), c == COL_RATING ? "a number" : "an integer");
    }
}

/* Find the chosen columns in the header; a missing one ends the program. */
static void csv_header(struct csv_state *st)
{
    const struct import_options *o = st->r->o;
    const char *want[NCOLS] = {o->user_col, o->item_col, o->rating_col, o->time_col};
    const char *opt[NCOLS] = {"--user-col", "--item-col", "--rating-col", "--time-col"};
    for (int c = 0; c < NCOLS; c++) {
        st->col[c] = -1;
        st->colname[c] = want[c];
        if (!want[c])
            continue;
        for (int32_t i = 0; i < st->nnames; i++) {
            if (strcmp(st->names[i], want[c]))
                continue;
            if (st->col[c] >= 0)
                fatal("%s:%lld: column '%s' appears twice in the header", st->r->path,
                      (long long)st->rec_line, want[c]);
            st->col[c] = i;
        }
        if (st->col[c] >= 0)
            continue;
        char list[1024] = "";
        size_t used = 0;
        for (int32_t i = 0; i < st->nnames && used + 8 < sizeof list; i++) {
            int w = snprintf(list + used, sizeof list - used, "%s'%s'", i ? ", " : "",
                             st->names[i]);
            used += w > 0 ? (size_t)w : 0;
        }
        if (used >= sizeof list)
            strcpy(list + sizeof list - 5, "...");
        fatal("%s:%lld: no column '%s' in the header (columns: %s); choose one with %s NAME%s",
              st->r->path, (long long)st->rec_line, want[c], list, opt[c],
              c >= COL_RATING ? (c == COL_RATING ? " or drop it with --no-rating"
                                                 : " or drop it with --no-time")
                              : "");
    }
    st->have_header = 1;
    st->r->in_header = 0;
}

static void csv_row(int c, void *arg)
{
    (void)c;
    struct csv_state *st = arg;
    st->rows_ended++;
    if (!st->have_header) {
        if (st->nnames)
            csv_header(st);
        return;
    }
    struct reader *r = st->r;
    int32_t fields = st->field;
    st->field = 0;
    if (fields == 0)
        return; /* blank line */
    r->ev->rows++;
    if (fields != st->nnames)
        bad_line(r, st->rec_line, "%d field%s, expected %d as in the header", fields,
                 fields == 1 ? "" : "s", st->nnames);
    else if (st->err[0])
        bad_line(r, st->rec_line, "%s", st->err);
    else
        add_event(r, st->rec_line, st->v[COL_USER], st->v[COL_ITEM], st->rating,
                  st->v[COL_TIME]);
    st->err[0] = 0;
}

static void csv_reset(struct csv_state *st, struct csv_parser *p)
{
    csv_free(p);
    if (csv_init(p, CSV_STRICT | CSV_STRICT_FINI | CSV_REPALL_NL | CSV_APPEND_NULL) != 0)
        fatal("libcsv: csv_init failed");
    csv_set_delim(p, (unsigned char)st->r->o->delimiter);
    st->field = 0;
    st->err[0] = 0;
}

/* Lines are fed to libcsv one at a time so that every record and every
 * quoting error has its exact line; a record whose quoted field runs over
 * several lines starts at the line where it began. */
static void read_csv(struct reader *r, struct lines *L)
{
    struct csv_state st = {.r = r};
    r->in_header = 1;
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_REPALL_NL | CSV_APPEND_NULL) != 0)
        fatal("libcsv: csv_init failed");
    csv_set_delim(&p, (unsigned char)r->o->delimiter);
    int in_record = 0;
    size_t record_bytes = 0;
    char *s;
    size_t len;
    while (lines_next(L, &s, &len)) {
        r->ev->lines = L->line;
        if (!in_record)
            st.rec_line = L->line, record_bytes = 0;
        record_bytes += len;
        st.rows_ended = 0;
        size_t done = csv_parse(&p, s, len, csv_field, csv_row, &st);
        if (done != len) {
            if (csv_error(&p) != CSV_EPARSE)
                fatal("%s:%lld: libcsv: %s", r->path, (long long)L->line,
                      csv_strerror(csv_error(&p)));
            bad_line(r, L->line, "malformed CSV quoting at column %zu (a quote inside an "
                     "unquoted field, or text after a closing quote)", done + 1);
            r->ev->rows++;
            csv_reset(&st, &p);
            in_record = 0;
            continue;
        }
        in_record = st.rows_ended == 0;
        if (in_record && record_bytes > MAX_RECORD) {
            bad_line(r, st.rec_line, "quoted field still open after %zu KiB (unbalanced quote?)",
                     MAX_RECORD >> 10);
            r->ev->rows++;
            csv_reset(&st, &p);
            in_record = 0;
        }
    }
    if (csv_fini(&p, csv_field, csv_row, &st) != 0) {
        bad_line(r, st.rec_line, "quoted field not closed at the end of the file");
        r->ev->rows++;
    }
    csv_free(&p);
    if (!st.have_header)
        fatal("%s: empty file (no header)", r->path);
    for (int32_t i = 0; i < st.nnames; i++)
        free(st.names[i]);
    free(st.names);
    if (r->ev->rows == 0)
        fatal("%s: no data rows after the header", r->path);
}

/* --- entry point ------------------------------------------------------------ */

void import_read(const char *path, const struct import_options *o, struct import_events *ev)
{
    memset(ev, 0, sizeof *ev);
    struct reader r = {.path = path, .o = o, .ev = ev};
    if (o->format == IMPORT_CSV)
        r.has_rating = o->rating_col != NULL, r.has_time = o->time_col != NULL;
    else if (o->format == IMPORT_MOVIELENS)
        r.has_rating = 1, r.has_time = 1;
    ev->cap = (int64_t)1 << 16;
    ev->user = xmalloc((size_t)ev->cap * sizeof *ev->user);
    ev->item = xmalloc((size_t)ev->cap * sizeof *ev->item);
    int store_rating = r.has_rating && (o->format != IMPORT_MOVIELENS || o->want_rating);
    int store_time = r.has_time && (o->format != IMPORT_MOVIELENS || o->want_time);
    if (store_time)
        ev->ts = xmalloc((size_t)ev->cap * sizeof *ev->ts);
    if (store_rating)
        ev->act = xmalloc((size_t)ev->cap * sizeof *ev->act);
    struct lines L;
    lines_open(&L, path);
    if (o->format == IMPORT_CSV)
        read_csv(&r, &L);
    else
        read_simple(&r, &L);
    lines_close(&L);
    if (ev->bad > MAX_WARNINGS)
        log_warn("%s: %lld bad lines skipped in all (first %d shown)", path,
                 (long long)ev->bad, MAX_WARNINGS);
}

void import_events_free(struct import_events *ev)
{
    free(ev->user);
    free(ev->item);
    free(ev->ts);
    free(ev->act);
    free(ev->users.ids);
    free(ev->users.slots);
    free(ev->items.ids);
    free(ev->items.slots);
    memset(ev, 0, sizeof *ev);
}
