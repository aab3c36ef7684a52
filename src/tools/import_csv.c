/* import_csv: the csv reader of 'freescale data import'. Rows of delimited
 * fields (import_table.h: libcsv for a one-character delimiter, a literal
 * split for a longer one); the columns are chosen by name in a header line,
 * or by position (--columns, with or without a header line, which is then
 * skipped). Columns named by --event-cols are kept as event features. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "tools/import_priv.h"
#include "tools/import_table.h"

struct csv_state {
    struct reader *r;
    int header_pending;          /* the next record is the header */
    int by_name;                 /* columns chosen by header name */
    char **names;                /* header columns [nnames] (by name) */
    int32_t nnames;
    int32_t col[IMPORT_NCOLS];   /* field index of each column we keep; -1 none */
    const char *colname[IMPORT_NCOLS];
    int32_t evcol[IMPORT_MAX_EVCOLS]; /* field index of each event column */
    int32_t need;                /* by position: fields a row must have */
    int32_t last;                /* by position: the column in field need - 1 (from
                                    IMPORT_NCOLS: event column last - IMPORT_NCOLS) */
};

/* The header's columns as "'a', 'b', ..." for a message. */
static void header_list(const struct csv_state *st, char *list, size_t size)
{
    size_t used = 0;
    list[0] = 0;
    for (int32_t i = 0; i < st->nnames && used + 8 < size; i++) {
        int w = snprintf(list + used, size - used, "%s'%s'", i ? ", " : "", st->names[i]);
        used += w > 0 ? (size_t)w : 0;
    }
    if (used >= size)
        strcpy(list + size - 5, "...");
}

/* The field of header column name (once), or -1. */
static int32_t header_find(const struct csv_state *st, const char *name, int64_t line)
{
    int32_t at = -1;
    for (int32_t i = 0; i < st->nnames; i++) {
        if (strcmp(st->names[i], name))
            continue;
        if (at >= 0)
            fatal("%s:%lld: column '%s' appears twice in the header", st->r->path,
                  (long long)line, name);
        at = i;
    }
    return at;
}

/* Find the chosen columns in the header; a missing one ends the program. */
static void header_names(struct csv_state *st, const struct import_record *rec)
{
    const struct import_options *o = st->r->o;
    const char *want[IMPORT_NCOLS] = {o->user_col, o->item_col, o->rating_col, o->time_col};
    const char *opt[IMPORT_NCOLS] = {"--user-col", "--item-col", "--rating-col", "--time-col"};
    st->nnames = rec->nf;
    st->names = xmalloc((size_t)(rec->nf ? rec->nf : 1) * sizeof *st->names);
    for (int32_t i = 0; i < rec->nf; i++)
        st->names[i] = xstrdup(rec->buf + rec->off[i]);
    char list[1024];
    for (int c = 0; c < IMPORT_NCOLS; c++) {
        st->col[c] = -1;
        st->colname[c] = want[c];
        if (!want[c] || (st->col[c] = header_find(st, want[c], rec->line)) >= 0)
            continue;
        header_list(st, list, sizeof list);
        fatal("%s:%lld: no column '%s' in the header (columns: %s); choose one with %s NAME%s",
              st->r->path, (long long)rec->line, want[c], list, opt[c],
              c >= IMPORT_RATING ? (c == IMPORT_RATING ? " or drop it with --no-rating"
                                                       : " or drop it with --no-time")
                                 : ", or give the columns by position with --columns");
    }
    for (int c = 0; c < o->nevcols; c++)
        if ((st->evcol[c] = header_find(st, o->evcol[c].name, rec->line)) < 0) {
            header_list(st, list, sizeof list);
            fatal("%s:%lld: --event-cols: no column '%s' in the header (columns: %s)",
                  st->r->path, (long long)rec->line, o->evcol[c].name, list);
        }
}

/* A whole record: the header or a row of data. */
static void row_process(void *ctx, const struct import_record *rec)
{
    struct csv_state *st = ctx;
    struct reader *r = st->r;
    int32_t nf = rec->nf;
    if (st->header_pending) {
        st->header_pending = 0;
        r->in_header = 0;
        if (st->by_name)
            header_names(st, rec);
        return;
    }
    r->ev->rows++;
    if (st->by_name && nf != st->nnames) {
        import_bad_line(r, rec->line, "%d field%s, expected %d as in the header", nf,
                        nf == 1 ? "" : "s", st->nnames);
        return;
    }
    if (!st->by_name && nf < st->need) {
        import_bad_line(r, rec->line, "%d field%s, but --columns puts '%s' in field %d", nf,
                        nf == 1 ? "" : "s", st->last < IMPORT_NCOLS ? st->colname[st->last]
                        : r->o->evcol[st->last - IMPORT_NCOLS].name, st->need);
        return;
    }
    struct import_key key[2] = {{0}};
    double rating = 0;
    int64_t ts = 0;
    char err[640];
    for (int c = 0; c < IMPORT_NCOLS; c++) {
        if (st->col[c] < 0)
            continue;
        size_t len;
        const char *s = import_record_field(rec, st->col[c], &len);
        if (import_field(r, c, st->colname[c], s, len, c < 2 ? &key[c] : NULL, &rating, &ts, err,
                         sizeof err)) {
            import_bad_line(r, rec->line, "%s", err);
            return;
        }
    }
    struct import_text ev[IMPORT_MAX_EVCOLS];
    for (int c = 0; c < r->o->nevcols; c++)
        ev[c].s = import_record_field(rec, st->evcol[c], &ev[c].len);
    import_add_event(r, rec->line, &key[0], &key[1], rating, ts, ev);
}

static void row_bad(void *ctx, int64_t line, const char *what)
{
    struct csv_state *st = ctx;
    import_bad_line(st->r, line, "%s", what);
    st->r->ev->rows++;
}

static void row_line(void *ctx, int64_t line)
{
    struct csv_state *st = ctx;
    st->r->ev->lines = line;
}

void import_read_csv(struct reader *r, struct import_input *in)
{
    static const char *pos_name[IMPORT_NCOLS] = {"user", "item", "rating", "time"};
    const struct import_options *o = r->o;
    struct csv_state st = {.r = r, .header_pending = !o->no_header, .by_name = !o->by_position};
    r->in_header = st.header_pending;
    if (o->by_position) {
        for (int c = 0; c < o->nevcols; c++) { /* named as --columns names them */
            st.evcol[c] = o->evpos[c];
            if (st.evcol[c] >= st.need)
                st.need = st.evcol[c] + 1, st.last = IMPORT_NCOLS + c;
        }
        for (int c = 0; c < IMPORT_NCOLS; c++) {
            int keep = c == IMPORT_RATING ? r->has_rating : c == IMPORT_TIME ? r->has_time : 1;
            st.col[c] = keep ? o->position[c] : -1;
            st.colname[c] = pos_name[c];
            if (st.col[c] >= st.need)
                st.need = st.col[c] + 1, st.last = c;
        }
    }
    const struct import_table_ops ops = {.record = row_process, .bad = row_bad,
                                         .line = row_line, .ctx = &st};
    import_table_read(in, o->delimiter, 1, &ops);
    int no_header = st.header_pending && !o->no_header;
    for (int32_t i = 0; i < st.nnames; i++)
        free(st.names[i]);
    free(st.names);
    if (no_header)
        fatal("%s: empty file (no header)", r->path);
    if (r->ev->rows == 0)
        fatal(o->no_header ? "%s: empty file (no events)" : "%s: no data rows after the header",
              r->path);
}
