/* window_feats: the item features of window files; see window_feats.h. */
#include "data/window_feats.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"

struct wf_dict {
    char **s;        /* [n] code j + 1's string (owned) */
    size_t *len;     /* [n] */
    int64_t n, cap;
    int64_t *slot;   /* [hcap] hash table: index into s, or -1 */
    int64_t hcap;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The code (1 ..) of s, or 0 when absent and !add. */
static int64_t dict_code(struct wf_dict *d, const char *s, int add)
{
    if (add && 2 * (d->n + 1) > d->hcap) { /* rehash at half full */
        d->hcap = d->hcap ? 2 * d->hcap : 64;
        d->slot = xrealloc(d->slot, (size_t)d->hcap * sizeof *d->slot);
        memset(d->slot, 0xff, (size_t)d->hcap * sizeof *d->slot);
        for (int64_t j = 0; j < d->n; j++) {
            uint64_t h = hash_str(d->s[j]);
            while (d->slot[h & (uint64_t)(d->hcap - 1)] >= 0)
                h++;
            d->slot[h & (uint64_t)(d->hcap - 1)] = j;
        }
    }
    if (!d->hcap)
        return 0;
    for (uint64_t h = hash_str(s);; h++) {
        int64_t *at = &d->slot[h & (uint64_t)(d->hcap - 1)];
        if (*at >= 0 && !strcmp(d->s[*at], s))
            return *at + 1;
        if (*at < 0) {
            if (!add)
                return 0;
            if (d->n == d->cap) {
                d->cap = d->cap ? 2 * d->cap : 64;
                d->s = xrealloc(d->s, (size_t)d->cap * sizeof *d->s);
                d->len = xrealloc(d->len, (size_t)d->cap * sizeof *d->len);
            }
            d->s[d->n] = xstrdup(s);
            d->len[d->n] = strlen(s);
            *at = d->n;
            return ++d->n;
        }
    }
}

static void dict_free(struct wf_dict *d)
{
    for (int64_t j = 0; d && j < d->n; j++)
        free(d->s[j]);
    if (d) {
        free(d->s);
        free(d->len);
        free(d->slot);
    }
    free(d);
}

void window_feats_free(struct window_feats *wf)
{
    for (int j = 0; j < wf->n; j++)
        dict_free(wf->dict[j]);
    free(wf->val);
    memset(wf, 0, sizeof *wf);
}

/* Feature j of ds: found, of the first file's kind, with a map when the
 * first file's has one. */
static const struct dataset_feature *feat_of(const struct window_feats *wf, int j,
                                             const struct dataset *ds, char *err, size_t errlen)
{
    const struct dataset_feature *f = dataset_feat_find(ds, wf->kind, wf->name[j]);
    const char *kn = dataset_feat_kind_name(wf->kind);
    if (!f || f->multi || f->is_float != wf->is_float[j]) {
        errorf(err, errlen, "%s: /%s/%s is %s in this window file, and a single-valued %s "
               "feature in the first: window files carry the first file's %s features",
               ds->path, kn, wf->name[j], !f ? "absent" : f->multi ? "multi-valued"
               : "another type", wf->is_float[j] ? "float" : "categorical",
               wf->kind == DS_ITEMS ? "item" : "user");
        return NULL;
    }
    if (wf->dict[j] && !f->has_map) {
        errorf(err, errlen, "%s: /%s/%s has no /feature_maps/%s/%s, and the first window "
               "file's has one: its values cannot be matched to the other files'", ds->path, kn,
               wf->name[j], kn, wf->name[j]);
        return NULL;
    }
    return f;
}

/* Is name one of the comma-separated list's (spaces around a name ignored)? */
static int listed(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *z = e;
        while (z > p && z[-1] == ' ')
            z--;
        if ((size_t)(z - p) == n && n > 0 && !strncmp(p, name, n))
            return 1;
        p = e;
    }
    return 0;
}

int window_feats_open(struct window_feats *wf, enum dataset_feat_kind kind, const char *want,
                      struct stream_files *s, char *err, size_t errlen)
{
    memset(wf, 0, sizeof *wf);
    wf->ready = 1;
    wf->kind = kind;
    if (!want || !want[0])
        return 0;
    int rc = 0;
    for (int k = 0; k < s->n && rc == 0 && (k == 0 || wf->n > 0); k++) {
        const struct dataset *ds = stream_files_dataset(s, k, err, errlen);
        if (!ds) {
            rc = -1;
            break;
        }
        for (int i = 0; k == 0 && i < ds->nfeat && wf->n < DATASET_MAX_FEATURES; i++) {
            const struct dataset_feature *f = &ds->feat[i];
            if (f->kind != kind || f->multi || !listed(want, f->name))
                continue;
            const int j = wf->n++;
            memcpy(wf->name[j], f->name, DATASET_FEATURE_NAME);
            wf->is_float[j] = f->is_float;
            wf->dict[j] = !f->is_float && f->has_map ? xcalloc(1, sizeof *wf->dict[j]) : NULL;
        }
        for (int j = 0; j < wf->n && rc == 0; j++) {
            const struct dataset_feature *f = feat_of(wf, j, ds, err, errlen);
            if (!f) {
                rc = -1;
                break;
            }
            if (!wf->dict[j]) {
                if (!f->is_float && f->cardinality > wf->card[j])
                    wf->card[j] = f->cardinality;
                continue;
            }
            char **m = dataset_feat_map(ds, f, err, errlen);
            if (!m) {
                rc = -1;
                break;
            }
            for (int64_t c = 0; c + 1 < f->cardinality; c++)
                dict_code(wf->dict[j], m[c], 1);
            free(m);
            wf->card[j] = wf->dict[j]->n + 1;
        }
        stream_files_release(s, k + 1); /* one open at a time; opened again when used */
    }
    return rc;
}

int window_feats_read(const struct window_feats *wf, const struct dataset *ds, double *out,
                      char *err, size_t errlen)
{
    const int64_t n = wf->kind == DS_ITEMS ? ds->num_items : ds->num_users;
    int32_t *iv = xmalloc((size_t)(n ? n : 1) * sizeof *iv);
    float *fv = xmalloc((size_t)(n ? n : 1) * sizeof *fv);
    int rc = 0;
    for (int j = 0; j < wf->n && rc == 0; j++) {
        const struct dataset_feature *f = feat_of(wf, j, ds, err, errlen);
        if (!f) {
            rc = -1;
            break;
        }
        rc = f->is_float ? dataset_feat_floats(ds, f, 0, n, fv, err, errlen)
                         : dataset_feat_ints(ds, f, 0, n, iv, err, errlen);
        char **m = rc == 0 && wf->dict[j] ? dataset_feat_map(ds, f, err, errlen) : NULL;
        rc = rc == 0 && wf->dict[j] && !m ? -1 : rc;
        for (int64_t i = 0; rc == 0 && i < n; i++) {
            double v = f->is_float ? (double)fv[i] : (double)iv[i];
            if (m && iv[i] > 0) { /* 0: missing, as ever */
                const int64_t c = dict_code(wf->dict[j], m[iv[i] - 1], 0);
                if (c == 0)
                    rc = errorf(err, errlen, "%s: /%s/%s value '%s' is in none of the window "
                                "files present at the start, whose values make the feature's "
                                "table (a file added since, by train.follow)", ds->path,
                                dataset_feat_kind_name(wf->kind), wf->name[j], m[iv[i] - 1]);
                v = (double)c;
            } else if (!f->is_float && iv[i] >= wf->card[j])
                rc = errorf(err, errlen, "%s: /%s/%s value %d is beyond the cardinality %lld "
                            "of the window files present at the start (a file added since, by "
                            "train.follow)", ds->path, dataset_feat_kind_name(wf->kind),
                            wf->name[j], iv[i], (long long)wf->card[j]);
            out[i * wf->n + j] = v;
        }
        free(m);
    }
    free(iv);
    free(fv);
    return rc;
}

int window_feats_write(const struct window_feats *wf, struct dataset_writer *w, const double *val,
                       int64_t n, char *err, size_t errlen)
{
    int32_t *iv = xmalloc((size_t)(n ? n : 1) * sizeof *iv);
    float *fv = xmalloc((size_t)(n ? n : 1) * sizeof *fv);
    int rc = 0;
    for (int j = 0; j < wf->n && rc == 0; j++) {
        for (int64_t i = 0; i < n; i++) {
            iv[i] = (int32_t)val[i * wf->n + j];
            fv[i] = (float)val[i * wf->n + j];
        }
        rc = dataset_writer_feature(w, wf->kind, wf->name[j], wf->is_float[j] ? 0 : wf->card[j],
                                    n, NULL, wf->is_float[j] ? NULL : iv,
                                    wf->is_float[j] ? fv : NULL, err, errlen);
        if (rc == 0 && wf->dict[j])
            rc = dataset_writer_feature_map(w, wf->kind, wf->name[j],
                                            (const char *const *)wf->dict[j]->s,
                                            wf->dict[j]->len, wf->dict[j]->n, err, errlen);
    }
    free(iv);
    free(fv);
    return rc;
}
