/* import_feat: value dictionaries and the feature lists of 'freescale data
 * import'; see import_feat.h. */
#include "tools/import_feat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "tools/import_priv.h"

void import_vocab_init(struct import_vocab *v)
{
    memset(v, 0, sizeof *v);
    import_ids_init(&v->ids, 1);
}

void import_vocab_free(struct import_vocab *v)
{
    import_ids_free(&v->ids);
    free(v->dense);
    free(v->order);
    memset(v, 0, sizeof *v);
}

int32_t import_vocab_add(struct import_vocab *v, const char *s, size_t len)
{
    return import_ids_add_str(&v->ids, s, len);
}

struct vocab_sort {
    const struct import_vocab *v;
    const int64_t *num; /* [n] numeric values, or NULL */
};

static int cmp_values(const void *a, const void *b, void *arg)
{
    const struct vocab_sort *vs = arg;
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (vs->num)
        return (vs->num[x] > vs->num[y]) - (vs->num[x] < vs->num[y]);
    size_t la, lb;
    const char *sa = import_ids_str(&vs->v->ids, x, &la);
    const char *sb = import_ids_str(&vs->v->ids, y, &lb);
    int c = memcmp(sa, sb, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

void import_vocab_finish(struct import_vocab *v)
{
    const int64_t n = v->ids.n;
    int64_t *num = xmalloc((size_t)(n ? n : 1) * sizeof *num);
    v->numeric = 1;
    for (int64_t k = 0; k < n && v->numeric; k++) {
        size_t len;
        const char *s = import_ids_str(&v->ids, k, &len);
        v->numeric = import_parse_i64(s, len, &num[k]) == 0;
    }
    v->order = xmalloc((size_t)(n ? n : 1) * sizeof *v->order);
    v->dense = xmalloc((size_t)(n ? n : 1) * sizeof *v->dense);
    for (int64_t k = 0; k < n; k++)
        v->order[k] = (int32_t)k;
    struct vocab_sort vs = {v, v->numeric ? num : NULL};
    qsort_r(v->order, (size_t)n, sizeof *v->order, cmp_values, &vs);
    for (int64_t r = 0; r < n; r++)
        v->dense[v->order[r]] = (int32_t)(r + 1);
    free(num);
}

int import_feat_name_ok(const char *s, size_t len)
{
    if (len == 0 || len >= DATASET_FEATURE_NAME || s[0] == '.')
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
            return 0;
    return 1;
}

struct import_feature *import_features_add(struct import_features *l, enum dataset_feat_kind kind,
                                           const char *name, int is_float, const char *where)
{
    if (!import_feat_name_ok(name, strlen(name)))
        fatal("%s: '%s' cannot name a feature (1 to %d characters of A-Z a-z 0-9 _ - .)", where,
              name, DATASET_FEATURE_NAME - 1);
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->f[i].name, name))
            fatal("%s: feature %s/%s is given twice", where, dataset_feat_kind_name(kind), name);
    if (l->n == DATASET_MAX_FEATURES)
        fatal("%s: more than %d features", where, DATASET_MAX_FEATURES);
    struct import_feature *f = &l->f[l->n++];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->kind = kind;
    f->is_float = is_float;
    import_vocab_init(&f->vocab);
    return f;
}

void import_feature_begin(struct import_feature *f, int64_t n, int multi)
{
    f->n = n;
    f->multi = multi;
    if (f->is_float)
        f->floats = xcalloc((size_t)(n ? n : 1), sizeof *f->floats);
    else if (!multi) {
        f->stage = xmalloc((size_t)(n ? n : 1) * sizeof *f->stage);
        for (int64_t e = 0; e < n; e++)
            f->stage[e] = -1;
    }
}

void import_feature_text(struct import_feature *f, int64_t entity, const char *s, size_t len)
{
    while (len && (*s == ' ' || *s == '\t'))
        s++, len--;
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
        len--;
    if (len == 0)
        return;
    const int32_t k = import_vocab_add(&f->vocab, s, len);
    if (!f->multi) {
        f->stage[entity] = k;
        return;
    }
    if (f->np == f->pcap) {
        f->pcap = f->pcap ? 2 * f->pcap : 1024;
        f->pe = xrealloc(f->pe, (size_t)f->pcap * sizeof *f->pe);
        f->pv = xrealloc(f->pv, (size_t)f->pcap * sizeof *f->pv);
    }
    f->pe[f->np] = entity;
    f->pv[f->np++] = k;
}

void import_feature_float(struct import_feature *f, int64_t entity, float v)
{
    f->floats[entity] = v;
}

void import_feature_finish(struct import_feature *f)
{
    if (f->is_float)
        return;
    import_vocab_finish(&f->vocab);
    const int64_t n = f->n;
    if (!f->multi) {
        f->ints = xmalloc((size_t)(n ? n : 1) * sizeof *f->ints);
        for (int64_t e = 0; e < n; e++)
            f->ints[e] = f->stage[e] < 0 ? 0 : f->vocab.dense[f->stage[e]];
        free(f->stage);
        f->stage = NULL;
        return;
    }
    f->off = xcalloc((size_t)n + 1, sizeof *f->off); /* stable counting sort by entity */
    for (int64_t i = 0; i < f->np; i++)
        f->off[f->pe[i] + 1]++;
    for (int64_t e = 0; e < n; e++)
        f->off[e + 1] += f->off[e];
    f->ints = xmalloc((size_t)(f->np ? f->np : 1) * sizeof *f->ints);
    int64_t *at = xmalloc((size_t)(n ? n : 1) * sizeof *at);
    memcpy(at, f->off, (size_t)n * sizeof *at);
    for (int64_t i = 0; i < f->np; i++)
        f->ints[at[f->pe[i]]++] = f->vocab.dense[f->pv[i]];
    free(at);
    free(f->pe);
    free(f->pv);
    f->pe = NULL;
    f->pv = NULL;
}

void import_features_free(struct import_features *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->f[i].stage);
        free(l->f[i].pe);
        free(l->f[i].pv);
        free(l->f[i].off);
        free(l->f[i].ints);
        free(l->f[i].floats);
        import_vocab_free(&l->f[i].vocab);
    }
    l->n = 0;
}

int import_vocab_write_map(const struct import_vocab *v, struct dataset_writer *w,
                           enum dataset_feat_kind kind, const char *name, char *err,
                           size_t errlen)
{
    const int64_t n = v->ids.n;
    const char **s = xmalloc((size_t)(n ? n : 1) * sizeof *s);
    size_t *len = xmalloc((size_t)(n ? n : 1) * sizeof *len);
    for (int64_t r = 0; r < n; r++)
        s[r] = import_ids_str(&v->ids, v->order[r], &len[r]);
    int rc = dataset_writer_feature_map(w, kind, name, s, len, n, err, errlen);
    free(s);
    free(len);
    return rc;
}

int import_features_write(const struct import_features *l, struct dataset_writer *w, char *err,
                          size_t errlen)
{
    for (int i = 0; i < l->n; i++) {
        const struct import_feature *f = &l->f[i];
        if (dataset_writer_feature(w, f->kind, f->name,
                                   f->is_float ? 0 : import_vocab_card(&f->vocab), f->n, f->off,
                                   f->is_float ? NULL : f->ints, f->is_float ? f->floats : NULL,
                                   err, errlen) ||
            (!f->is_float && import_vocab_write_map(&f->vocab, w, f->kind, f->name, err, errlen)))
            return -1;
    }
    return 0;
}
