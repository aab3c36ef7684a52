/* rec_ids: original user and item ids of a dataset; see rec_ids.h. */
#include "cmd/rec_ids.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "cmd/rec_file.h"

int rec_ids_load(struct rec_ids *m, const struct dataset *ds, int items, char *err,
                 size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->items = items;
    m->n = items ? ds->num_items : ds->num_users;
    m->maxlen = 1;
    int has_str = items ? ds->has_item_map_str : ds->has_user_map_str;
    int has_int = items ? ds->has_item_map : ds->has_user_map;
    if (has_str) {
        m->kind = REC_IDS_STRING;
        m->strs = dataset_read_map_str(ds, items ? "item_map_str" : "user_map_str", err, errlen);
        if (!m->strs)
            return -1;
        for (int64_t i = 0; i < m->n; i++) {
            size_t l = strlen(m->strs[i]);
            if (l > m->maxlen)
                m->maxlen = l;
        }
    } else if (items && ds->raw_ids) { /* item number j is raw id /items/ids[j - 1] */
        m->kind = REC_IDS_INT;
        m->ints = xmalloc((size_t)(m->n ? m->n : 1) * sizeof *m->ints);
        memcpy(m->ints, ds->item_list, (size_t)m->n * sizeof *m->ints);
    } else if (has_int) {
        m->kind = REC_IDS_INT;
        m->ints = dataset_read_map(ds, items ? "item_map" : "user_map", err, errlen);
        if (!m->ints)
            return -1;
    } else {
        m->kind = REC_IDS_DENSE;
    }
    return 0;
}

void rec_ids_free(struct rec_ids *m)
{
    free(m->ints);
    free(m->strs);
    free(m->sorted);
    memset(m, 0, sizeof *m);
}

const char *rec_ids_kind_name(const struct rec_ids *m)
{
    return m->kind == REC_IDS_STRING ? "string" : m->kind == REC_IDS_INT ? "int" : "dense";
}

static int64_t base_of(const struct rec_ids *m) { return m->items ? 1 : 0; }

const char *rec_ids_text(const struct rec_ids *m, int64_t id, char *buf, size_t len)
{
    int64_t row = id - base_of(m);
    if (row < 0 || row >= m->n)
        rec_fatal("rec_ids_text: dense id %lld outside %lld..%lld", (long long)id,
              (long long)base_of(m), (long long)(base_of(m) + m->n - 1));
    if (m->kind == REC_IDS_STRING)
        return m->strs[row];
    snprintf(buf, len, "%lld", (long long)(m->kind == REC_IDS_INT ? m->ints[row] : id));
    return buf;
}

/* Strict integer: the whole text, no overflow. */
static int parse_i64(const char *s, int64_t *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (end == s || *end || errno == ERANGE)
        return -1;
    *v = x;
    return 0;
}

static const struct rec_ids *g_sort_ids; /* qsort has no context argument */

static int cmp_orig(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    if (g_sort_ids->kind == REC_IDS_STRING)
        return strcmp(g_sort_ids->strs[a], g_sort_ids->strs[b]);
    return (g_sort_ids->ints[a] > g_sort_ids->ints[b]) - (g_sort_ids->ints[a] < g_sort_ids->ints[b]);
}

int64_t rec_ids_find(struct rec_ids *m, const char *text)
{
    int64_t v = 0;
    if (m->kind != REC_IDS_STRING && parse_i64(text, &v))
        return -1;
    if (m->kind == REC_IDS_DENSE)
        return v >= base_of(m) && v < base_of(m) + m->n ? v : -1;
    if (!m->sorted) {
        m->sorted = xmalloc((size_t)(m->n ? m->n : 1) * sizeof *m->sorted);
        for (int64_t i = 0; i < m->n; i++)
            m->sorted[i] = i;
        g_sort_ids = m;
        qsort(m->sorted, (size_t)m->n, sizeof *m->sorted, cmp_orig);
    }
    int64_t lo = 0, hi = m->n; /* first position whose original id >= the key */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2, r = m->sorted[mid];
        int c = m->kind == REC_IDS_STRING ? strcmp(m->strs[r], text)
                                          : (m->ints[r] > v) - (m->ints[r] < v);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == m->n)
        return -1;
    int64_t r = m->sorted[lo];
    int hit = m->kind == REC_IDS_STRING ? !strcmp(m->strs[r], text) : m->ints[r] == v;
    return hit ? r + base_of(m) : -1;
}

hid_t rec_ids_h5_type(const struct rec_ids *m, struct h5io *h)
{
    if (m->kind == REC_IDS_STRING)
        return h5io_str_type(h, m->maxlen, 1);
    return h5io_type_copy(h, H5T_STD_I64LE);
}

size_t rec_ids_h5_size(const struct rec_ids *m)
{
    return m->kind == REC_IDS_STRING ? m->maxlen : sizeof(int64_t);
}

void rec_ids_h5_fill(const struct rec_ids *m, const int64_t *ids, int64_t n, int64_t pad,
                     void *buf)
{
    const int64_t base = base_of(m);
    if (m->kind == REC_IDS_STRING) {
        char *b = buf;
        memset(b, 0, (size_t)n * m->maxlen);
        for (int64_t i = 0; i < n; i++)
            if (ids[i] != pad)
                memcpy(b + (size_t)i * m->maxlen, m->strs[ids[i] - base],
                       strlen(m->strs[ids[i] - base]));
        return;
    }
    int64_t *o = buf;
    for (int64_t i = 0; i < n; i++)
        o[i] = ids[i] == pad ? 0 : m->kind == REC_IDS_INT ? m->ints[ids[i] - base] : ids[i];
}

void rec_ids_h5_write(const struct rec_ids *m, struct h5io *h, hid_t d, int part, int nparts)
{
    const int64_t B = 1 << 16, base = base_of(m), blocks = (m->n + B - 1) / B;
    hid_t ft = rec_ids_h5_type(m, h), mt = m->kind == REC_IDS_STRING ? ft : H5T_NATIVE_INT64;
    int64_t *ids = xmalloc((size_t)B * sizeof *ids);
    char *buf = xmalloc((size_t)B * rec_ids_h5_size(m));
    for (int64_t r = 0; r < (blocks + nparts - 1) / nparts; r++) { /* the same calls on all */
        const int64_t a = (r * nparts + part) * B;
        const int64_t k = a >= m->n ? 0 : m->n - a < B ? m->n - a : B;
        for (int64_t i = 0; i < k; i++)
            ids[i] = a + i + base;
        rec_ids_h5_fill(m, ids, k, -1, buf);
        h5io_write_rows(h, d, mt, a < m->n ? a : 0, 1, k, 0, buf);
    }
    free(ids);
    free(buf);
    h5io_close_obj(h, ft);
}
