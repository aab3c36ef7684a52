/* import_table: records of delimited text; see import_table.h. */
#include "tools/import_table.h"

#include <csv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"

#define MAX_RECORD ((size_t)1 << 20) /* a record spanning lines (open quote) */

struct table_state {
    const struct import_table_ops *ops;
    char *buf;
    size_t blen, bcap;
    size_t *off, *len;
    int32_t nf, fcap;
    int64_t rec_line;   /* line where the current record starts */
    int rows_ended;     /* records ended during the current line */
};

static void field_add(struct table_state *st, const char *s, size_t len)
{
    if (st->nf == st->fcap) {
        st->fcap = st->fcap ? 2 * st->fcap : 16;
        st->off = xrealloc(st->off, (size_t)st->fcap * sizeof *st->off);
        st->len = xrealloc(st->len, (size_t)st->fcap * sizeof *st->len);
    }
    if (st->blen + len + 1 > st->bcap) {
        while (st->blen + len + 1 > st->bcap)
            st->bcap = st->bcap ? 2 * st->bcap : 4096;
        st->buf = xrealloc(st->buf, st->bcap);
    }
    memcpy(st->buf + st->blen, s, len);
    st->off[st->nf] = st->blen;
    st->len[st->nf++] = len;
    st->blen += len;
    st->buf[st->blen++] = 0;
}

static void row_end(struct table_state *st)
{
    st->rows_ended++;
    if (st->nf > 0) {
        struct import_record r = {.line = st->rec_line, .nf = st->nf, .buf = st->buf,
                                  .off = st->off, .len = st->len};
        st->ops->record(st->ops->ctx, &r);
    }
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

static void csv_start(struct table_state *st, struct csv_parser *p, char delim)
{
    if (csv_init(p, CSV_STRICT | CSV_STRICT_FINI | CSV_REPALL_NL | CSV_APPEND_NULL) != 0)
        fatal("libcsv: csv_init failed");
    csv_set_delim(p, (unsigned char)delim);
    st->nf = 0;
    st->blen = 0;
}

static void read_libcsv(struct table_state *st, struct import_input *in, char delim)
{
    const struct import_table_ops *ops = st->ops;
    struct csv_parser p;
    csv_start(st, &p, delim);
    int in_record = 0;
    size_t record_bytes = 0;
    char *s;
    size_t len;
    while (import_input_line(in, &s, &len)) {
        if (ops->line)
            ops->line(ops->ctx, in->line);
        if (!in_record)
            st->rec_line = in->line, record_bytes = 0;
        record_bytes += len;
        st->rows_ended = 0;
        size_t done = csv_parse(&p, s, len, csv_field_cb, csv_row_cb, st);
        if (done != len) {
            if (csv_error(&p) != CSV_EPARSE)
                fatal("%s:%lld: libcsv: %s", in->path, (long long)in->line,
                      csv_strerror(csv_error(&p)));
            char what[160];
            snprintf(what, sizeof what, "malformed CSV quoting at column %zu (a quote inside an "
                     "unquoted field, or text after a closing quote)", done + 1);
            ops->bad(ops->ctx, in->line, what);
            csv_free(&p);
            csv_start(st, &p, delim);
            in_record = 0;
            continue;
        }
        in_record = st->rows_ended == 0;
        if (in_record && record_bytes > MAX_RECORD) {
            char what[160];
            snprintf(what, sizeof what, "quoted field still open after %zu KiB (unbalanced "
                     "quote?)", MAX_RECORD >> 10);
            ops->bad(ops->ctx, st->rec_line, what);
            csv_free(&p);
            csv_start(st, &p, delim);
            in_record = 0;
        }
    }
    if (csv_fini(&p, csv_field_cb, csv_row_cb, st) != 0)
        ops->bad(ops->ctx, st->rec_line, "quoted field not closed at the end of the file");
    csv_free(&p);
}

/* A delimiter of several bytes: each line split at every occurrence. */
static void read_split(struct table_state *st, struct import_input *in, const char *d)
{
    size_t dl = strlen(d);
    char *s;
    size_t len;
    while (import_input_line(in, &s, &len)) {
        if (st->ops->line)
            st->ops->line(st->ops->ctx, in->line);
        st->rec_line = in->line;
        if (len && s[len - 1] == '\n')
            len--;
        if (len && s[len - 1] == '\r')
            len--;
        int blank = 1;
        for (size_t i = 0; i < len && blank; i++)
            blank = s[i] == ' ' || s[i] == '\t';
        if (blank)
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

void import_table_read(struct import_input *in, const char *delimiter, int quoting,
                       const struct import_table_ops *ops)
{
    struct table_state st = {.ops = ops};
    if (quoting && strlen(delimiter) == 1)
        read_libcsv(&st, in, delimiter[0]);
    else
        read_split(&st, in, delimiter);
    free(st.buf);
    free(st.off);
    free(st.len);
}
