/* import_csv: the csv reader of 'freescale data import'. Rows of delimited
 * fields; the columns are chosen by name in a header line, or by position
 * (--columns, with or without a header line, which is then skipped).
 *
 * A one-character delimiter goes through libcsv (RFC 4180 quoting, strict),
 * fed a line at a time so that every record and quoting error has its exact
 * line (a record whose quoted field runs over several lines starts at the
 * line where it began). A longer delimiter ("::", " | ") splits each line
 * literally, without quoting. Both hand a record's fields to row_end(). */
#include <csv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "tools/import_priv.h"

#define MAX_RECORD ((size_t)1 << 20) /* csv record spanning lines (open quote) */

struct field {
    size_t off, len;
};

struct csv_state {
    struct reader *r;
    int header_pending;          /* the next record is the header */
    int by_name;                 /* columns chosen by header name */
    char **names;                /* header columns [nnames] (by name) */
    int32_t nnames, ncap;
    int32_t col[IMPORT_NCOLS];   /* field index of each column we keep; -1 none */
    const char *colname[IMPORT_NCOLS];
    int32_t need;                /* by position: fields a row must have */
    int32_t last;                /* by position: the column in field need - 1 */
    /* the current record: its fields' text in buf */
    char *buf;
    size_t blen, bcap;
    struct field *f;
    int32_t nf, fcap;
    int64_t rec_line;            /* line where the current record starts */
    int rows_ended;              /* records ended during the current line */
};

static void field_add(struct csv_state *st, const char *s, size_t len)
{
    if (st->nf == st->fcap) {
        st->fcap = st->fcap ? 2 * st->fcap : 16;
        st->f = xrealloc(st->f, (size_t)st->fcap * sizeof *st->f);
    }
    if (st->blen + len + 1 > st->bcap) {
        while (st->blen + len + 1 > st->bcap)
            st->bcap = st->bcap ? 2 * st->bcap : 4096;
        st->buf = xrealloc(st->buf, st->bcap);
    }
    memcpy(st->buf + st->blen, s, len);
    st->f[st->nf++] = (struct field){st->blen, len};
    st->blen += len;
    st->buf[st->blen++] = 0;
}

/* Find the chosen columns in the header; a missing one ends the program. */
static void header_names(struct csv_state *st)
{
    const struct import_options *o = st->r->o;
    const char *want[IMPORT_NCOLS] = {o->user_col, o->item_col, o->rating_col, o->time_col};
    const char *opt[IMPORT_NCOLS] = {"--user-col", "--item-col", "--rating-col", "--time-col"};
    st->nnames = st->nf;
    st->names = xmalloc((size_t)(st->nf ? st->nf : 1) * sizeof *st->names);
    for (int32_t i = 0; i < st->nf; i++)
        st->names[i] = xstrdup(st->buf + st->f[i].off);
    for (int c = 0; c < IMPORT_NCOLS; c++) {
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
              c >= IMPORT_RATING ? (c == IMPORT_RATING ? " or drop it with --no-rating"
                                                       : " or drop it with --no-time")
                                 : ", or give the columns by position with --columns");
    }
}

/* A whole record in st->f [nf]: the header, a blank line, or a row of data. */
static void row_process(struct csv_state *st)
{
    struct reader *r = st->r;
    int32_t nf = st->nf;
    if (nf == 0)
        return; /* blank line */
    if (st->header_pending) {
        st->header_pending = 0;
        r->in_header = 0;
        if (st->by_name)
            header_names(st);
        return;
    }
    r->ev->rows++;
    if (st->by_name && nf != st->nnames) {
        import_bad_line(r, st->rec_line, "%d field%s, expected %d as in the header", nf,
                        nf == 1 ? "" : "s", st->nnames);
        return;
    }
    if (!st->by_name && nf < st->need) {
        import_bad_line(r, st->rec_line, "%d field%s, but --columns puts '%s' in field %d", nf,
                        nf == 1 ? "" : "s", st->colname[st->last], st->need);
        return;
    }
    struct import_key key[2] = {{0}};
    double rating = 0;
    int64_t ts = 0;
    char err[640];
    for (int c = 0; c < IMPORT_NCOLS; c++) {
        if (st->col[c] < 0)
            continue;
        const struct field *f = &st->f[st->col[c]];
        if (import_field(r, c, st->colname[c], st->buf + f->off, f->len, c < 2 ? &key[c] : NULL,
                         &rating, &ts, err, sizeof err)) {
            import_bad_line(r, st->rec_line, "%s", err);
            return;
        }
    }
    import_add_event(r, st->rec_line, &key[0], &key[1], rating, ts);
}

static void row_end(struct csv_state *st)
{
    st->rows_ended++;
    row_process(st);
    st->nf = 0;
    st->blen = 0;
}

static void csv_field_cb(void *data, size_t len, void *arg)
{
    field_add(arg, data ? data : "", len);
}

static void csv_row_cb(int c, void *arg)
{
    (void)c;
    row_end(arg);
}

static void csv_start(struct csv_state *st, struct csv_parser *p)
{
    if (csv_init(p, CSV_STRICT | CSV_STRICT_FINI | CSV_REPALL_NL | CSV_APPEND_NULL) != 0)
        fatal("libcsv: csv_init failed");
    csv_set_delim(p, (unsigned char)st->r->o->delimiter[0]);
    st->nf = 0;
    st->blen = 0;
}

static void read_libcsv(struct csv_state *st, struct import_input *in)
{
    struct reader *r = st->r;
    struct csv_parser p;
    csv_start(st, &p);
    int in_record = 0;
    size_t record_bytes = 0;
    char *s;
    size_t len;
    while (import_input_line(in, &s, &len)) {
        r->ev->lines = in->line;
        if (!in_record)
            st->rec_line = in->line, record_bytes = 0;
        record_bytes += len;
        st->rows_ended = 0;
        size_t done = csv_parse(&p, s, len, csv_field_cb, csv_row_cb, st);
        if (done != len) {
            if (csv_error(&p) != CSV_EPARSE)
                fatal("%s:%lld: libcsv: %s", r->path, (long long)in->line,
                      csv_strerror(csv_error(&p)));
            import_bad_line(r, in->line, "malformed CSV quoting at column %zu (a quote inside "
                            "an unquoted field, or text after a closing quote)", done + 1);
            r->ev->rows++;
            csv_free(&p);
            csv_start(st, &p);
            in_record = 0;
            continue;
        }
        in_record = st->rows_ended == 0;
        if (in_record && record_bytes > MAX_RECORD) {
            import_bad_line(r, st->rec_line, "quoted field still open after %zu KiB "
                            "(unbalanced quote?)", MAX_RECORD >> 10);
            r->ev->rows++;
            csv_free(&p);
            csv_start(st, &p);
            in_record = 0;
        }
    }
    if (csv_fini(&p, csv_field_cb, csv_row_cb, st) != 0) {
        import_bad_line(r, st->rec_line, "quoted field not closed at the end of the file");
        r->ev->rows++;
    }
    csv_free(&p);
}

/* A delimiter of several bytes: each line split at every occurrence. */
static void read_split(struct csv_state *st, struct import_input *in)
{
    const char *d = st->r->o->delimiter;
    size_t dl = strlen(d);
    char *s;
    size_t len;
    while (import_input_line(in, &s, &len)) {
        st->r->ev->lines = st->rec_line = in->line;
        if (len && s[len - 1] == '\n')
            len--;
        if (len && s[len - 1] == '\r')
            len--;
        if (import_blank(s, len))
            continue;
        const char *p = s, *end = s + len;
        for (;;) {
            const char *q = memmem(p, (size_t)(end - p), d, dl);
            field_add(st, p, (size_t)((q ? q : end) - p));
            if (!q)
                break;
            p = q + dl;
        }
        row_end(st);
    }
}

void import_read_csv(struct reader *r, struct import_input *in)
{
    static const char *pos_name[IMPORT_NCOLS] = {"user", "item", "rating", "time"};
    const struct import_options *o = r->o;
    struct csv_state st = {.r = r, .header_pending = !o->no_header, .by_name = !o->by_position};
    r->in_header = st.header_pending;
    if (o->by_position) {
        for (int c = 0; c < IMPORT_NCOLS; c++) {
            int keep = c == IMPORT_RATING ? r->has_rating : c == IMPORT_TIME ? r->has_time : 1;
            st.col[c] = keep ? o->position[c] : -1;
            st.colname[c] = pos_name[c];
            if (st.col[c] >= st.need)
                st.need = st.col[c] + 1, st.last = c;
        }
    }
    if (strlen(o->delimiter) == 1)
        read_libcsv(&st, in);
    else
        read_split(&st, in);
    int no_header = st.header_pending && !o->no_header;
    for (int32_t i = 0; i < st.nnames; i++)
        free(st.names[i]);
    free(st.names);
    free(st.buf);
    free(st.f);
    if (no_header)
        fatal("%s: empty file (no header)", r->path);
    if (r->ev->rows == 0)
        fatal(o->no_header ? "%s: empty file (no events)" : "%s: no data rows after the header",
              r->path);
}
