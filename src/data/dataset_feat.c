/* dataset_feat: the features of a version 2 sequence dataset (dataset.h):
 * /events/NAME, /users/NAME, /items/NAME, single-valued datasets or
 * multi-valued CSR groups (offsets, values), categorical integers with a
 * `cardinality` attribute or floats; their value maps in
 * /feature_maps/KIND/NAME.
 *
 * dataset_open finds every feature and checks what can be checked without
 * reading the values (names, classes, ranks, lengths, the cardinality
 * attribute and its range, the storage); the readers check every value
 * they return (categorical ids in 0 .. cardinality - 1, finite floats,
 * offsets within the values and non-decreasing), naming the dataset and
 * the first bad index, and dataset_feat_validate streams them all. Every
 * HDF5 call goes through data/h5io. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "data/dataset.h"

#define FEAT_BLOCK ((int64_t)1 << 16)       /* values per checked conversion */
#define FEAT_VALIDATE ((int64_t)1 << 20)    /* entities per validation read */
#define FEAT_CACHE_BYTES ((size_t)8 << 20)  /* chunk cache of an open feature dataset */

static const char *const kind_names[3] = {"events", "users", "items"};

const char *dataset_feat_kind_name(enum dataset_feat_kind k) { return kind_names[k]; }

const struct dataset_feature *dataset_feat_find(const struct dataset *ds,
                                                enum dataset_feat_kind kind, const char *name)
{
    for (int i = 0; i < ds->nfeat; i++)
        if (ds->feat[i].kind == kind && !strcmp(ds->feat[i].name, name))
            return &ds->feat[i];
    return NULL;
}

/* A name usable in parameter lists: [A-Za-z0-9_-] and '.', not leading. */
static int valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= DATASET_FEATURE_NAME || s[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
            return 0;
    return 1;
}

static void feat_path(const struct dataset_feature *f, const char *member, char *buf, size_t len)
{
    snprintf(buf, len, "/%s/%s%s%s", kind_names[f->kind], f->name, member ? "/" : "",
             member ? member : "");
}

/* --- listing ------------------------------------------------------------------ */

struct listing {
    char names[DATASET_MAX_FEATURES + 1][DATASET_FEATURE_NAME];
    int n, too_long, hard;
    char bad[96];
};

static int list_member(const char *name, int hard, void *data)
{
    struct listing *l = data;
    if (!hard) {
        l->hard = 1;
        snprintf(l->bad, sizeof l->bad, "%.80s", name);
        return 1;
    }
    if (!valid_name(name)) {
        l->too_long = 1;
        snprintf(l->bad, sizeof l->bad, "%.80s", name);
        return 1;
    }
    if (l->n <= DATASET_MAX_FEATURES)
        snprintf(l->names[l->n], DATASET_FEATURE_NAME, "%s", name);
    l->n++;
    return l->n > DATASET_MAX_FEATURES ? 1 : 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(a, b); }

/* --- one feature ------------------------------------------------------------- */

/* An integer attribute "cardinality" of object path (open obj), into *v;
 * *present = 0 without one. */
static int read_cardinality(const struct dataset *ds, hid_t obj, const char *path, int *present,
                            int64_t *v, char *err, size_t errlen)
{
    *present = h5io_has_attr(obj, "cardinality");
    if (!*present)
        return 0;
    if (dataset_h5_attrs_check(obj, ds->path, path, err, errlen))
        return -1;
    char where[4300];
    snprintf(where, sizeof where, "%s: %s", ds->path, path);
    int rc = h5io_attr_read_i64(obj, where, "cardinality", v, err, errlen);
    if (rc == 0 && (*v < 1 || *v > DATASET_MAX_ROWS))
        rc = errorf(err, errlen,
                    "%s: %s: attribute cardinality = %lld is outside 1 .. 2^40 (no table can "
                    "hold %lld rows; the values use 0 .. cardinality - 1)",
                    ds->path, path, (long long)*v, (long long)*v);
    return rc;
}

/* Open 1-D dataset path (with a chunk cache): integer (is_float 0, stored
 * type into *it) or float; n elements (n < 0: any, the count into *count). */
static hid_t open_1d(const struct dataset *ds, const char *path, int want_float, int64_t n,
                     struct h5io_int *it, int64_t *count, char *err, size_t errlen)
{
    hid_t dapl = h5io_dapl_cache(FEAT_CACHE_BYTES), d = -1;
    struct h5io_info info;
    if (dapl >= 0)
        d = h5io_dset_describe((hid_t)ds->file, path, dapl, &info);
    h5io_close_obj(NULL, dapl);
    if (d < 0) {
        errorf(err, errlen, "%s: %s is not a readable dataset", ds->path, path);
        return -1;
    }
    const H5T_class_t cls = info.cls;
    const int float_ok = cls == H5T_FLOAT && atoi(info.type + 5) <= 64;
    int rc = 0;
    if (cls == H5T_NO_CLASS || !info.shape[0])
        rc = errorf(err, errlen, "%s: cannot read the type of %s", ds->path, path);
    else if (want_float ? !float_ok : !info.is_int)
        rc = errorf(err, errlen, "%s: %s has %s values, expected %s", ds->path, path,
                    cls == H5T_INTEGER ? "integer" : cls == H5T_FLOAT ? "float"
                    : cls == H5T_STRING ? "string" : cls == H5T_ENUM ? "enum (h5py bool?)" : "other",
                    want_float ? "floats (float32 or float64)" : "integers");
    else if (info.rank != 1)
        rc = errorf(err, errlen, "%s: %s is not 1-dimensional", ds->path, path);
    else if (n >= 0 && info.dims[0] != n)
        rc = errorf(err, errlen, "%s: %s has %lld elements, expected %lld", ds->path, path,
                    (long long)info.dims[0], (long long)n);
    else
        rc = dataset_h5_storage_check(d, ds->path, path, err, errlen);
    if (rc == 0 && it)
        *it = info.it;
    if (count)
        *count = info.rank == 1 ? info.dims[0] : 0;
    if (rc) {
        h5io_close_obj(NULL, d);
        return -1;
    }
    return d;
}

/* Is KIND/name a group (multi-valued) or a dataset? 1, 0, or -1 + err. */
static int is_group(const struct dataset *ds, const char *path, char *err, size_t errlen)
{
    const int kind = h5io_obj_kind((hid_t)ds->file, path);
    if (kind < 0)
        return errorf(err, errlen, "%s: %s cannot be read (corrupt?)", ds->path, path);
    if (kind == 1 || kind == 0)
        return kind;
    return errorf(err, errlen, "%s: %s is neither a dataset nor a group", ds->path, path);
}

static int open_feature(struct dataset *ds, struct dataset_feature *f, char *err, size_t errlen)
{
    char path[160], vpath[176], opath[176];
    feat_path(f, NULL, path, sizeof path);
    f->d_val = f->d_off = -1;
    f->n = f->kind == DS_EVENTS ? ds->num_events : f->kind == DS_USERS ? ds->num_users
                                                                        : ds->num_items;
    int grp = is_group(ds, path, err, errlen);
    if (grp < 0)
        return -1;
    f->multi = grp;
    if (grp && f->kind == DS_EVENTS)
        return errorf(err, errlen, "%s: %s is a group: event features are single-valued (a "
                      "dataset of num_events values)", ds->path, path);
    hid_t obj = h5io_obj_open((hid_t)ds->file, path);
    if (obj < 0)
        return errorf(err, errlen, "%s: %s cannot be opened", ds->path, path);
    int has_card = 0;
    int rc = read_cardinality(ds, obj, path, &has_card, &f->cardinality, err, errlen);
    int is_float = 0;
    if (rc == 0 && !grp) {
        struct h5io_info info;
        hid_t d = h5io_dset_describe((hid_t)ds->file, path, H5P_DEFAULT, &info);
        const H5T_class_t cls = info.cls;
        h5io_close_obj(NULL, d);
        is_float = cls == H5T_FLOAT;
        if (cls != H5T_FLOAT && cls != H5T_INTEGER)
            rc = errorf(err, errlen, "%s: %s has %s values, expected integers (categorical) or "
                        "floats", ds->path, path, cls == H5T_STRING ? "string"
                        : cls == H5T_ENUM ? "enum (h5py bool?)" : "other");
    }
    h5io_close_obj(NULL, obj);
    if (grp) {
        feat_path(f, "offsets", opath, sizeof opath);
        feat_path(f, "values", vpath, sizeof vpath);
        if (rc == 0 && (!h5io_exists((hid_t)ds->file, opath) ||
                        !h5io_exists((hid_t)ds->file, vpath)))
            rc = errorf(err, errlen, "%s: %s is a group but lacks offsets and values (a "
                        "multi-valued feature is CSR: %s [%lld + 1], %s)", ds->path, path,
                        opath, (long long)f->n, vpath);
    }
    if (rc)
        return -1;
    f->is_float = is_float;
    if (!is_float && !has_card)
        return errorf(err, errlen, "%s: %s has integer values but no 'cardinality' attribute "
                      "(categorical values 0 .. cardinality - 1, 0 = missing)", ds->path, path);
    if (is_float && has_card)
        return errorf(err, errlen, "%s: %s has float values and a 'cardinality' attribute: "
                      "categorical values are integers", ds->path, path);
    if (grp) {
        f->d_off = open_1d(ds, opath, 0, f->n + 1, &f->t_off, NULL, err, errlen);
        if (f->d_off < 0)
            return -1;
        f->d_val = open_1d(ds, vpath, 0, -1, &f->t_val, &f->n_values, err, errlen);
        if (f->d_val < 0) {
            /* a float multi-valued feature: say so rather than "expected integers" */
            struct h5io_info info;
            hid_t d = h5io_dset_describe((hid_t)ds->file, vpath, H5P_DEFAULT, &info);
            if (d >= 0 && info.cls == H5T_FLOAT)
                errorf(err, errlen, "%s: %s: multi-valued features are categorical (integer "
                       "values), this one has floats", ds->path, vpath);
            h5io_close_obj(NULL, d);
            return -1;
        }
    } else {
        f->d_val = open_1d(ds, path, is_float, f->n, is_float ? NULL : &f->t_val, NULL, err,
                           errlen);
        if (f->d_val < 0)
            return -1;
        f->n_values = f->n;
    }
    char mpath[176];
    snprintf(mpath, sizeof mpath, "/feature_maps/%s/%s", kind_names[f->kind], f->name);
    f->has_map = !f->is_float && h5io_exists((hid_t)ds->file, mpath);
    return 0;
}

int dataset_feat_open(struct dataset *ds, char *err, size_t errlen)
{
    hid_t file = (hid_t)ds->file;
    int any = 0;
    for (int k = 0; k < 3; k++)
    {
        char gpath[16];
        snprintf(gpath, sizeof gpath, "/%s", kind_names[k]);
        any |= h5io_exists(file, gpath);
    }
    if (!any)
        return 0;
    if (ds->version < DATASET_VERSION_FEATURES)
        return errorf(err, errlen, "%s: attribute version = %lld, but the file has features "
                      "(/events, /users or /items): features need version = 2", ds->path,
                      (long long)ds->version);
    ds->feat = xcalloc(DATASET_MAX_FEATURES, sizeof *ds->feat);
    for (int k = 0; k < 3; k++) {
        char gpath[16];
        snprintf(gpath, sizeof gpath, "/%s", kind_names[k]);
        if (!h5io_exists(file, gpath))
            continue;
        if (h5io_obj_kind(file, gpath) != 1)
            return errorf(err, errlen, "%s: %s is not a group (features are /%s/NAME)",
                          ds->path, gpath, kind_names[k]);
        struct listing *l = xcalloc(1, sizeof *l);
        char lerr[512];
        const int it = h5io_links(file, ds->path, gpath, list_member, l, lerr, sizeof lerr);
        int rc = 0;
        if (l->hard)
            rc = errorf(err, errlen, "%s: %s/%s is a soft or external link: features are "
                        "datasets or groups of the file", ds->path, gpath, l->bad);
        else if (l->too_long)
            rc = errorf(err, errlen, "%s: feature %s/%s: names are 1 to %d characters of "
                        "A-Z a-z 0-9 _ - . (not leading '.')", ds->path, gpath, l->bad,
                        DATASET_FEATURE_NAME - 1);
        else if (it < 0)
            rc = errorf(err, errlen, "%s: group %s cannot be listed (corrupt?)", ds->path, gpath);
        else if (ds->nfeat + l->n > DATASET_MAX_FEATURES)
            rc = errorf(err, errlen, "%s: more than %d features", ds->path, DATASET_MAX_FEATURES);
        qsort(l->names, (size_t)(l->n < DATASET_MAX_FEATURES ? l->n : DATASET_MAX_FEATURES),
              sizeof l->names[0], cmp_names);
        for (int i = 0; rc == 0 && i < l->n; i++) {
            if (k == DS_ITEMS && ds->raw_ids && !strcmp(l->names[i], DATASET_RAW_LIST))
                continue; /* the item list of raw ids (dataset_raw.c), no feature */
            struct dataset_feature *f = &ds->feat[ds->nfeat++];
            snprintf(f->name, sizeof f->name, "%s", l->names[i]);
            f->kind = (enum dataset_feat_kind)k;
            rc = open_feature(ds, f, err, errlen);
        }
        free(l);
        if (rc)
            return -1;
    }
    return 0;
}

void dataset_feat_close(struct dataset *ds)
{
    for (int i = 0; ds->feat && i < ds->nfeat; i++) {
        h5io_close_obj(NULL, (hid_t)ds->feat[i].d_val);
        h5io_close_obj(NULL, (hid_t)ds->feat[i].d_off);
    }
    free(ds->feat);
    ds->feat = NULL;
    ds->nfeat = 0;
}

/* --- reading ------------------------------------------------------------------ */

static int read_hyperslab(const struct dataset *ds, hid_t d, const char *path, hid_t mem,
                          int64_t first, int64_t n, void *buf, char *err, size_t errlen)
{
    if (n == 0)
        return 0;
    if (h5io_read_rows(NULL, d, mem, first, 1, n, 0, buf))
        return errorf(err, errlen, "%s: cannot read %s[%lld..%lld) (truncated or corrupt file?)",
                      ds->path, path, (long long)first, (long long)(first + n));
    return 0;
}

/* int64 values [first, first + n) of an integer dataset (uint64 beyond
 * int64 are errors): out[n]. */
static int read_i64(const struct dataset *ds, hid_t d, const struct h5io_int *it,
                    const char *path, int64_t first, int64_t n, int64_t *out, char *err,
                    size_t errlen)
{
    const int u64 = !it->is_signed && it->bytes == 8;
    if (read_hyperslab(ds, d, path, u64 ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64, first, n, out,
                       err, errlen))
        return -1;
    if (u64)
        for (int64_t i = 0; i < n; i++)
            if ((uint64_t)out[i] > (uint64_t)INT64_MAX)
                return errorf(err, errlen, "%s: %s[%lld] = %llu does not fit int64", ds->path,
                              path, (long long)(first + i), (unsigned long long)out[i]);
    return 0;
}

int dataset_feat_offsets(const struct dataset *ds, const struct dataset_feature *f,
                         int64_t first, int64_t n, int64_t *off, char *err, size_t errlen)
{
    if (first < 0 || n < 0 || first + n > f->n)
        return errorf(err, errlen, "%s: feature %s/%s: entities [%lld, %lld) outside [0, %lld)",
                      ds->path, kind_names[f->kind], f->name, (long long)first,
                      (long long)(first + n), (long long)f->n);
    if (!f->multi) {
        for (int64_t i = 0; i <= n; i++)
            off[i] = first + i;
        return 0;
    }
    char path[176];
    feat_path(f, "offsets", path, sizeof path);
    if (read_i64(ds, (hid_t)f->d_off, &f->t_off, path, first, n + 1, off, err, errlen))
        return -1;
    if (first == 0 && off[0] != 0)
        return errorf(err, errlen, "%s: %s[0] = %lld, expected 0", ds->path, path,
                      (long long)off[0]);
    if (first + n == f->n && off[n] != f->n_values)
        return errorf(err, errlen, "%s: %s[%lld] = %lld, expected the number of values %lld",
                      ds->path, path, (long long)f->n, (long long)off[n],
                      (long long)f->n_values);
    for (int64_t i = 0; i <= n; i++) {
        if (off[i] < 0 || off[i] > f->n_values)
            return errorf(err, errlen, "%s: %s[%lld] = %lld is outside 0 .. %lld (the values)",
                          ds->path, path, (long long)(first + i), (long long)off[i],
                          (long long)f->n_values);
        if (i && off[i] < off[i - 1])
            return errorf(err, errlen, "%s: %s decreases at index %lld (%lld after %lld)",
                          ds->path, path, (long long)(first + i), (long long)off[i],
                          (long long)off[i - 1]);
    }
    return 0;
}

int dataset_feat_ints(const struct dataset *ds, const struct dataset_feature *f, int64_t v0,
                      int64_t n, int32_t *out, char *err, size_t errlen)
{
    char path[176];
    feat_path(f, f->multi ? "values" : NULL, path, sizeof path);
    if (f->is_float)
        return errorf(err, errlen, "%s: %s has float values, not categorical ids", ds->path,
                      path);
    if (v0 < 0 || n < 0 || v0 + n > f->n_values)
        return errorf(err, errlen, "%s: %s: values [%lld, %lld) outside [0, %lld)", ds->path,
                      path, (long long)v0, (long long)(v0 + n), (long long)f->n_values);
    int64_t *tmp = xmalloc((size_t)(n < FEAT_BLOCK ? (n ? n : 1) : FEAT_BLOCK) * sizeof *tmp);
    int rc = 0;
    for (int64_t b = 0; rc == 0 && b < n; b += FEAT_BLOCK) {
        const int64_t m = n - b < FEAT_BLOCK ? n - b : FEAT_BLOCK;
        rc = read_i64(ds, (hid_t)f->d_val, &f->t_val, path, v0 + b, m, tmp, err, errlen);
        for (int64_t i = 0; rc == 0 && i < m; i++) {
            if (tmp[i] < 0 || tmp[i] >= f->cardinality)
                rc = errorf(err, errlen,
                            "%s: %s[%lld] = %lld is outside 0 .. %lld (cardinality %lld; 0 = "
                            "missing)", ds->path, path, (long long)(v0 + b + i),
                            (long long)tmp[i], (long long)(f->cardinality - 1),
                            (long long)f->cardinality);
            else
                out[b + i] = (int32_t)tmp[i];
        }
    }
    free(tmp);
    return rc;
}

int dataset_feat_floats(const struct dataset *ds, const struct dataset_feature *f, int64_t v0,
                        int64_t n, float *out, char *err, size_t errlen)
{
    char path[176];
    feat_path(f, NULL, path, sizeof path);
    if (!f->is_float)
        return errorf(err, errlen, "%s: %s has categorical values, not floats", ds->path, path);
    if (v0 < 0 || n < 0 || v0 + n > f->n_values)
        return errorf(err, errlen, "%s: %s: values [%lld, %lld) outside [0, %lld)", ds->path,
                      path, (long long)v0, (long long)(v0 + n), (long long)f->n_values);
    if (read_hyperslab(ds, (hid_t)f->d_val, path, H5T_NATIVE_FLOAT, v0, n, out, err, errlen))
        return -1;
    for (int64_t i = 0; i < n; i++)
        if (!(out[i] - out[i] == 0)) /* NaN or infinite (also past float's range) */
            return errorf(err, errlen, "%s: %s[%lld] = %g is not a finite float32", ds->path,
                          path, (long long)(v0 + i), (double)out[i]);
    return 0;
}

int dataset_feat_validate(const struct dataset *ds, char *err, size_t errlen)
{
    int rc = 0;
    int64_t *off = xmalloc((size_t)(FEAT_VALIDATE + 1) * sizeof *off);
    int32_t *iv = xmalloc((size_t)FEAT_BLOCK * sizeof *iv);
    float *fv = xmalloc((size_t)FEAT_BLOCK * sizeof *fv);
    for (int i = 0; rc == 0 && i < ds->nfeat; i++) {
        const struct dataset_feature *f = &ds->feat[i];
        int64_t max_v = 0;
        for (int64_t e0 = 0; rc == 0 && (e0 < f->n || e0 == 0); e0 += FEAT_VALIDATE) {
            const int64_t m = f->n - e0 < FEAT_VALIDATE ? f->n - e0 : FEAT_VALIDATE;
            rc = dataset_feat_offsets(ds, f, e0, m, off, err, errlen);
            for (int64_t v = off[0]; rc == 0 && v < off[m]; v += FEAT_BLOCK) {
                const int64_t k = off[m] - v < FEAT_BLOCK ? off[m] - v : FEAT_BLOCK;
                rc = f->is_float ? dataset_feat_floats(ds, f, v, k, fv, err, errlen)
                                 : dataset_feat_ints(ds, f, v, k, iv, err, errlen);
                for (int64_t j = 0; rc == 0 && !f->is_float && j < k; j++)
                    max_v = iv[j] > max_v ? iv[j] : max_v;
            }
            if (f->n == 0)
                break;
        }
        if (rc == 0 && !f->is_float && dataset_rows_absurd(f->cardinality - 1, max_v))
            rc = errorf(err, errlen,
                        "%s: /%s/%s: attribute cardinality = %lld is far beyond the largest "
                        "value used, %lld: its table would have %lld rows for at most %lld "
                        "values", ds->path, kind_names[f->kind], f->name,
                        (long long)f->cardinality, (long long)max_v,
                        (long long)(f->cardinality - 1), (long long)max_v);
    }
    free(off);
    free(iv);
    free(fv);
    return rc;
}

char **dataset_feat_map(const struct dataset *ds, const struct dataset_feature *f, char *err,
                        size_t errlen)
{
    char name[160];
    snprintf(name, sizeof name, "feature_maps/%s/%s", kind_names[f->kind], f->name);
    if (!f->has_map) {
        errorf(err, errlen, "%s: has no /%s", ds->path, name);
        return NULL;
    }
    return dataset_read_strings(ds, name, f->cardinality - 1, err, errlen);
}
