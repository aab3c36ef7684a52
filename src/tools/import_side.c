/* import_side: the join of side files to the events and the generic csv
 * side file; see import_side.h (the MovieLens files: import_ml.c). */
#include "tools/import_side.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "tools/import_priv.h"
#include "tools/import_table.h"

void import_join_init(struct import_join *j, enum dataset_feat_kind kind,
                      const struct import_ids *ids, const int32_t *rank, int64_t n)
{
    *j = (struct import_join){.kind = kind, .what = kind == DS_USERS ? "user" : "item",
                              .ids = ids, .rank = rank, .n = n};
    j->line = xcalloc((size_t)(n ? n : 1), sizeof *j->line);
}

void import_join_free(struct import_join *j)
{
    free(j->line);
    j->line = NULL;
}

int64_t import_join_key(struct import_join *j, const char *path, int64_t line, const char *col,
                        const char *s, size_t len)
{
    char b[48];
    while (len && (*s == ' ' || *s == '\t'))
        s++, len--;
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
        len--;
    if (len == 0)
        fatal("%s:%lld: the key column '%s' is empty (a row without its %s id: missing join "
              "key)", path, (long long)line, col, j->what);
    int32_t k;
    if (j->ids->strings)
        k = import_ids_find_str(j->ids, s, len);
    else {
        int64_t id;
        if (import_parse_i64(s, len, &id))
            fatal("%s:%lld: key '%s' = '%s' is not an integer (the events' %s ids are; string "
                  "ids: --%s-ids string)", path, (long long)line, col,
                  import_shown(b, sizeof b, s, len), j->what, j->what);
        k = import_ids_find_i64(j->ids, id);
    }
    j->rows++;
    const int64_t e = k < 0 ? -1 : j->rank[k];
    if (e < 0) {
        j->unknown++;
        return -1;
    }
    if (j->line[e])
        fatal("%s:%lld: %s '%s' appears twice (first at line %lld): one row per %s",
              path, (long long)line, j->what, import_shown(b, sizeof b, s, len),
              (long long)j->line[e], j->what);
    j->line[e] = line;
    return e;
}

void import_join_report(struct import_join *j, const char *path)
{
    int64_t missing = 0;
    for (int64_t e = 0; e < j->n; e++)
        missing += j->line[e] == 0;
    log_info("data import: %s: %lld rows, %lld of them for %ss without events (skipped); %lld "
             "of the %lld %ss have no row (their features are missing)", path,
             (long long)j->rows, (long long)j->unknown, j->what, (long long)missing,
             (long long)j->n, j->what);
    memset(j->line, 0, (size_t)(j->n ? j->n : 1) * sizeof *j->line);
    j->rows = j->unknown = 0;
}

/* --- the generic csv side file ------------------------------------------------ */

#define SIDE_MAX_COLS DATASET_MAX_FEATURES

struct side_state {
    const struct import_side *s;
    struct import_join *j;
    struct import_features *out;
    const char *path;
    int header_done;
    int32_t nnames, key;
    int ncols;
    int32_t col[SIDE_MAX_COLS];              /* field of each kept column */
    struct import_feature *f[SIDE_MAX_COLS];
    int multi[SIDE_MAX_COLS];
};

static void side_header(struct side_state *st, const struct import_record *r)
{
    const struct import_side *s = st->s;
    const char *opt = st->j->kind == DS_USERS ? "--user" : "--item";
    char list[1024] = "";
    size_t used = 0;
    for (int32_t i = 0; i < r->nf && used + 8 < sizeof list; i++) {
        int w = snprintf(list + used, sizeof list - used, "%s'%s'", i ? ", " : "",
                         r->buf + r->off[i]);
        used += w > 0 ? (size_t)w : 0;
    }
    if (used >= sizeof list)
        strcpy(list + sizeof list - 5, "...");
    st->nnames = r->nf;
    st->key = -1;
    for (int32_t i = 0; i < r->nf; i++)
        if (!strcmp(r->buf + r->off[i], s->key))
            st->key = i;
    if (st->key < 0)
        fatal("%s:%lld: %s-key: no column '%s' in the header (columns: %s)", st->path,
              (long long)r->line, opt, s->key, list);
    char spec[4096];
    if (s->cols) {
        snprintf(spec, sizeof spec, "%s", s->cols);
    } else { /* every column but the key */
        size_t at = 0;
        spec[0] = 0;
        for (int32_t i = 0; i < r->nf; i++)
            if (i != st->key && at + r->len[i] + 2 < sizeof spec)
                at += (size_t)snprintf(spec + at, sizeof spec - at, "%s%s", at ? "," : "",
                                       r->buf + r->off[i]);
        if (!spec[0])
            fatal("%s:%lld: no column besides the key '%s': no features", st->path,
                  (long long)r->line, s->key);
    }
    for (char *save = NULL, *tok = strtok_r(spec, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *type = strchr(tok, ':');
        int is_float = 0, multi = 0;
        if (type) {
            *type++ = 0;
            if (!strcmp(type, "float"))
                is_float = 1;
            else if (!strcmp(type, "multi"))
                multi = 1;
            else
                fatal("%s-cols: '%s:%s': the type is float or multi (or none: categorical)",
                      opt, tok, type);
        }
        int32_t at = -1;
        for (int32_t i = 0; i < r->nf; i++)
            if (!strcmp(r->buf + r->off[i], tok))
                at = i;
        if (at < 0)
            fatal("%s:%lld: %s-cols: no column '%s' in the header (columns: %s)", st->path,
                  (long long)r->line, opt, tok, list);
        if (at == st->key)
            fatal("%s-cols: '%s' is the key column", opt, tok);
        if (st->ncols == SIDE_MAX_COLS)
            fatal("%s-cols: more than %d columns", opt, SIDE_MAX_COLS);
        char where[4200];
        snprintf(where, sizeof where, "%s (%s-cols)", st->path, opt);
        st->col[st->ncols] = at;
        st->multi[st->ncols] = multi;
        st->f[st->ncols] = import_features_add(st->out, st->j->kind, tok, is_float, where);
        import_feature_begin(st->f[st->ncols], st->j->n, multi);
        st->ncols++;
    }
}

static void side_record(void *ctx, const struct import_record *r)
{
    struct side_state *st = ctx;
    if (!st->header_done) {
        st->header_done = 1;
        side_header(st, r);
        return;
    }
    if (r->nf != st->nnames)
        fatal("%s:%lld: %d field%s, expected %d as in the header", st->path, (long long)r->line,
              r->nf, r->nf == 1 ? "" : "s", st->nnames);
    size_t len;
    const char *key = import_record_field(r, st->key, &len);
    const int64_t e = import_join_key(st->j, st->path, r->line, st->s->key, key, len);
    if (e < 0)
        return;
    for (int c = 0; c < st->ncols; c++) {
        const char *v = import_record_field(r, st->col[c], &len);
        struct import_feature *f = st->f[c];
        if (f->is_float) {
            double x;
            char b[48];
            if (import_parse_f64(v, len, &x))
                fatal("%s:%lld: field '%s' = '%s' is not a number (a float column)", st->path,
                      (long long)r->line, f->name, import_shown(b, sizeof b, v, len));
            import_feature_float(f, e, (float)x);
        } else if (!st->multi[c])
            import_feature_text(f, e, v, len);
        else
            for (const char *p = v, *end = v + len; p <= end;) {
                const char *q = memchr(p, st->s->multi_sep, (size_t)(end - p));
                if (!q)
                    q = end;
                import_feature_text(f, e, p, (size_t)(q - p));
                p = q + 1;
            }
    }
}

static void side_bad(void *ctx, int64_t line, const char *what)
{
    struct side_state *st = ctx;
    fatal("%s:%lld: %s", st->path, (long long)line, what);
}

void import_side_read(const struct import_side *s, struct import_join *j,
                      struct import_features *out)
{
    struct import_input in;
    import_input_open(&in, s->path);
    struct side_state st = {.s = s, .j = j, .out = out, .path = in.path};
    const struct import_table_ops ops = {.record = side_record, .bad = side_bad, .ctx = &st};
    import_table_read(&in, s->delimiter, 1, &ops);
    import_input_close(&in);
    if (!st.header_done)
        fatal("%s: empty file (no header)", s->path);
    for (int c = 0; c < st.ncols; c++)
        import_feature_finish(st.f[c]);
    import_join_report(j, s->path);
}
