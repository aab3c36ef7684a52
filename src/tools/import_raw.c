/* import_raw: raw ids and their ranks; see import_raw.h. */
#include "tools/import_raw.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"

int64_t import_raw_hash(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return (int64_t)(h & (uint64_t)INT64_MAX);
}

struct keyed {
    int64_t raw;
    int32_t k;
};

/* Ascending raw id, then (strings) bytewise: qsort_r's comparator. */
static int cmp_keyed(const void *a, const void *b, void *arg)
{
    const struct keyed *x = a, *y = b;
    if (x->raw != y->raw)
        return x->raw < y->raw ? -1 : 1;
    const struct import_ids *t = arg;
    if (!t->strings)
        return (x->k > y->k) - (x->k < y->k);
    size_t la, lb;
    const char *sa = import_ids_str(t, x->k, &la), *sb = import_ids_str(t, y->k, &lb);
    const int c = memcmp(sa, sb, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

int64_t import_raw_rank(const struct import_ids *t, const int64_t *count, int merge,
                        int32_t *rank, int32_t **order, int64_t **raw, int64_t *collisions)
{
    struct keyed *e = xmalloc((size_t)(t->n ? t->n : 1) * sizeof *e);
    int64_t m = 0;
    for (int64_t k = 0; k < t->n; k++) {
        rank[k] = -1;
        if (count[k] <= 0)
            continue;
        int64_t r;
        if (t->strings) {
            size_t len;
            const char *s = import_ids_str(t, k, &len);
            r = import_raw_hash(s, len);
            if (r == 0)
                fatal("string id '%.*s' hashes to 0 (FNV-1a 64 with the top bit cleared), "
                      "which is no raw id: import without --ids raw", (int)(len > 200 ? 200 : len),
                      s);
        } else {
            r = t->ids[k];
        }
        e[m++] = (struct keyed){.raw = r, .k = (int32_t)k};
    }
    qsort_r(e, (size_t)m, sizeof *e, cmp_keyed, (void *)t);
    int32_t *ord = xmalloc((size_t)(m ? m : 1) * sizeof *ord);
    int64_t *ids = xmalloc((size_t)(m ? m : 1) * sizeof *ids);
    int64_t n = 0;
    *collisions = 0;
    for (int64_t i = 0; i < m; i++) {
        const int same = i > 0 && e[i].raw == e[i - 1].raw;
        *collisions += same;
        if (!(same && merge)) {
            ord[n] = e[i].k;
            ids[n++] = e[i].raw;
        }
        rank[e[i].k] = (int32_t)(n - 1);
    }
    free(e);
    *order = ord;
    *raw = ids;
    return n;
}
