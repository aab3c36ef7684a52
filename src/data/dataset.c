/* dataset: the reader of HDF5 sequence datasets; see dataset.h for the
 * format and what is accepted (the writer: dataset_write.c).
 *
 * Every attribute and dataset is checked for its class, size, rank and
 * shape before anything is read into a buffer. Integers are read through
 * HDF5's conversion into int64 (or int32), which is exact unless the stored
 * type is wider than the destination (uint64 into int64; int64, uint32 ...
 * into int32): those are read at their own width and range-checked here,
 * since HDF5 would silently clip them.
 *
 * HDF5 1.10 trusts the file's own structure (heap objects, chunk sizes,
 * attribute messages) and hangs or copies out of bounds on a damaged one:
 * the dataset_h5_* checks (dataset.h, dataset_h5.c; the checkpoint reader
 * uses them too) check that structure from the file before HDF5 reads
 * through it. */
#include "data/dataset.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/check.h"

#define CHUNK_CACHE_BYTES ((size_t)32 << 20) /* per open event dataset */
#define VALIDATE_EVENTS ((int64_t)1 << 22)
#define CONVERT_BLOCK ((int64_t)1 << 16)     /* elements per checked conversion */
#define MAX_ATTR_STRING 4096                 /* longest fixed-length string attribute */

void dataset_h5_quiet(void)
{
    static int done = 0;
    if (!done) { /* we report errors ourselves */
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
        done = 1;
    }
}

/* "int64", "uint8", "float32", "string", ... for error messages. */
static void type_name(hid_t t, char *buf, size_t len)
{
    H5T_class_t cls = H5Tget_class(t);
    size_t bits = 8 * H5Tget_size(t);
    if (cls == H5T_INTEGER)
        snprintf(buf, len, "%sint%zu", H5Tget_sign(t) == H5T_SGN_NONE ? "u" : "", bits);
    else if (cls == H5T_FLOAT)
        snprintf(buf, len, "float%zu", bits);
    else if (cls == H5T_STRING)
        snprintf(buf, len, "string");
    else if (cls == H5T_ENUM)
        snprintf(buf, len, "enum (h5py bool?)");
    else if (cls == H5T_COMPOUND)
        snprintf(buf, len, "compound");
    else
        snprintf(buf, len, "HDF5 class %d", (int)cls);
}

/* "scalar", "[3]", "[2, 5]", "null (no data)" of a dataspace. */
static void shape_name(hid_t s, char *buf, size_t len)
{
    H5S_class_t cls = H5Sget_simple_extent_type(s);
    if (cls == H5S_SCALAR) {
        snprintf(buf, len, "scalar");
        return;
    }
    int rank = H5Sget_simple_extent_ndims(s);
    hsize_t dims[H5S_MAX_RANK];
    if (cls != H5S_SIMPLE || rank < 0 || rank > H5S_MAX_RANK ||
        H5Sget_simple_extent_dims(s, dims, NULL) < 0) {
        snprintf(buf, len, cls == H5S_NULL ? "null (no data)" : "unknown");
        return;
    }
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < rank && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%llu", i ? ", " : "",
                                 (unsigned long long)dims[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
}

/* An integer type of at most 8 bytes: its width and sign into *it; -1 if not. */
static int int_type(hid_t t, struct dataset_int *it)
{
    if (H5Tget_class(t) != H5T_INTEGER || H5Tget_size(t) < 1 || H5Tget_size(t) > 8)
        return -1;
    it->bytes = (int8_t)H5Tget_size(t);
    it->is_signed = H5Tget_sign(t) != H5T_SGN_NONE;
    return 0;
}

/* --- attributes ----------------------------------------------------------- */

/* Open scalar attribute name on /, its type in *type; -1 + err (nothing
 * left open) when it is missing or not a scalar. */
static hid_t attr_open(const struct dataset *ds, const char *name, hid_t *type, char *err,
                       size_t errlen)
{
    hid_t f = (hid_t)ds->file;
    if (H5Aexists(f, name) <= 0)
        return errorf(err, errlen, "%s: missing attribute '%s' on / (not a freescale dataset?)",
                      ds->path, name);
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    hid_t t = a < 0 ? -1 : H5Aget_type(a);
    hid_t s = a < 0 ? -1 : H5Aget_space(a);
    int rc = 0;
    char shape[96];
    if (a < 0 || t < 0 || s < 0)
        rc = errorf(err, errlen, "%s: cannot read attribute '%s'", ds->path, name);
    else if (H5Sget_simple_extent_type(s) != H5S_SCALAR) {
        shape_name(s, shape, sizeof shape);
        rc = errorf(err, errlen, "%s: attribute '%s' has shape %s, expected a scalar", ds->path,
                    name, shape);
    }
    if (s >= 0) H5Sclose(s);
    if (rc) {
        if (t >= 0) H5Tclose(t);
        if (a >= 0) H5Aclose(a);
        return -1;
    }
    *type = t;
    return a;
}

static int read_attr_i64(const struct dataset *ds, const char *name, int64_t *v, char *err,
                         size_t errlen)
{
    hid_t t, a = attr_open(ds, name, &t, err, errlen);
    if (a < 0)
        return -1;
    struct dataset_int it;
    int rc = 0;
    char tn[32];
    uint64_t u = 0;
    if (int_type(t, &it)) {
        type_name(t, tn, sizeof tn);
        rc = errorf(err, errlen, "%s: attribute '%s' has type %s, expected an integer", ds->path,
                    name, tn);
    } else if (!it.is_signed && it.bytes == 8) {
        if (H5Aread(a, H5T_NATIVE_UINT64, &u) < 0)
            rc = errorf(err, errlen, "%s: cannot read attribute '%s'", ds->path, name);
        else if (u > (uint64_t)INT64_MAX)
            rc = errorf(err, errlen, "%s: attribute '%s' = %llu does not fit int64", ds->path,
                        name, (unsigned long long)u);
        *v = (int64_t)u;
    } else if (H5Aread(a, H5T_NATIVE_INT64, v) < 0)
        rc = errorf(err, errlen, "%s: cannot read attribute '%s'", ds->path, name);
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

/* A scalar string attribute, variable or fixed length, any character set,
 * into val[len] (NUL-terminated; longer values are cut). */
static int read_attr_str(const struct dataset *ds, const char *name, char *val, size_t len,
                         char *err, size_t errlen)
{
    hid_t t, a = attr_open(ds, name, &t, err, errlen);
    if (a < 0)
        return -1;
    int rc = 0;
    char tn[32];
    hid_t mt = -1;
    val[0] = 0;
    if (H5Tget_class(t) != H5T_STRING) {
        type_name(t, tn, sizeof tn);
        rc = errorf(err, errlen, "%s: attribute '%s' has type %s, expected a string", ds->path,
                    name, tn);
    } else if (H5Tis_variable_str(t) > 0) {
        char *s = NULL, what[96];
        snprintf(what, sizeof what, "attribute '%s' on /", name);
        if (dataset_h5_vlen_check(a, ds->path, what, err, errlen))
            rc = -1;
        else if ((mt = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(mt, H5T_VARIABLE) < 0 ||
            H5Tset_cset(mt, H5Tget_cset(t)) < 0 || H5Aread(a, mt, &s) < 0)
            rc = errorf(err, errlen, "%s: cannot read attribute '%s'", ds->path, name);
        else
            snprintf(val, len, "%s", s ? s : "");
        if (s)
            H5free_memory(s);
    } else {
        size_t n = H5Tget_size(t);
        if (n == 0 || n > MAX_ATTR_STRING)
            rc = errorf(err, errlen, "%s: attribute '%s' is a string of %zu bytes, expected "
                        "1 to %d", ds->path, name, n, MAX_ATTR_STRING);
        char *s = rc ? NULL : xcalloc(n + 1, 1);
        /* the file's own type: same size, padding and character set */
        if (!rc && ((mt = H5Tcopy(t)) < 0 || H5Aread(a, mt, s) < 0))
            rc = errorf(err, errlen, "%s: cannot read attribute '%s'", ds->path, name);
        if (!rc) {
            size_t used = strnlen(s, n);
            if (H5Tget_strpad(t) == H5T_STR_SPACEPAD)
                while (used && s[used - 1] == ' ')
                    used--;
            snprintf(val, len, "%.*s", (int)used, s);
        }
        free(s);
    }
    if (mt >= 0) H5Tclose(mt);
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

/* --- datasets ------------------------------------------------------------- */

enum want { WANT_INT, WANT_STRING };

/* Check that /name exists, is 1-D of n elements (n < 0: any) and of an
 * integer type (stored type into *it) or a string type. Sets *present
 * (optional datasets). dest: the type it is read as, for messages. */
static int check_dataset(const struct dataset *ds, const char *name, enum want want,
                         const char *dest, int64_t n, int required, int *present,
                         struct dataset_int *it, char *err, size_t errlen)
{
    hid_t f = (hid_t)ds->file;
    char path[64];
    snprintf(path, sizeof path, "/%s", name);
    *present = H5Lexists(f, path, H5P_DEFAULT) > 0;
    if (!*present)
        return required ? errorf(err, errlen, "%s: missing dataset %s", ds->path, path) : 0;
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    if (d < 0)
        return errorf(err, errlen, "%s: %s is not a readable dataset", ds->path, path);
    hid_t t = H5Dget_type(d), s = H5Dget_space(d);
    int rc = 0;
    char tn[32], shape[96];
    struct dataset_int dummy;
    if (t < 0 || s < 0)
        rc = errorf(err, errlen, "%s: cannot read the type of %s", ds->path, path);
    else if (want == WANT_INT && int_type(t, it ? it : &dummy)) {
        type_name(t, tn, sizeof tn);
        rc = errorf(err, errlen, "%s: %s has type %s, expected %s (or another integer type)",
                    ds->path, path, tn, dest);
    } else if (want == WANT_STRING && H5Tget_class(t) != H5T_STRING) {
        type_name(t, tn, sizeof tn);
        rc = errorf(err, errlen, "%s: %s has type %s, expected strings", ds->path, path, tn);
    } else if (H5Sget_simple_extent_type(s) != H5S_SIMPLE ||
               H5Sget_simple_extent_ndims(s) != 1) {
        shape_name(s, shape, sizeof shape);
        rc = errorf(err, errlen, "%s: %s has shape %s, expected 1 dimension", ds->path, path,
                    shape);
    } else {
        hsize_t dim = 0; /* rank 1, checked above */
        H5Sget_simple_extent_dims(s, &dim, NULL);
        if (n >= 0 && (int64_t)dim != n)
            rc = errorf(err, errlen, "%s: %s has %lld elements, expected %lld", ds->path, path,
                        (long long)dim, (long long)n);
        else
            rc = dataset_h5_storage_check(d, ds->path, path, err, errlen);
    }
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    H5Dclose(d);
    return rc;
}

/* The open id of an event dataset (kept open for its chunk cache), or -1. */
static hid_t open_event_dataset(const struct dataset *ds, const char *name)
{
    if (!strcmp(name, "item_ids")) return (hid_t)ds->d_items;
    if (!strcmp(name, "timestamps")) return (hid_t)ds->d_ts;
    if (!strcmp(name, "actions")) return (hid_t)ds->d_actions;
    return -1;
}

/* Read elements [first, first + n) of 1-D dataset /name as mem_type. */
static int read_slab(const struct dataset *ds, const char *name, hid_t mem_type, int64_t first,
                     int64_t n, void *buf, char *err, size_t errlen)
{
    if (n == 0)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/%s", name);
    hid_t kept = open_event_dataset(ds, name);
    hid_t d = kept >= 0 ? kept : H5Dopen2((hid_t)ds->file, path, H5P_DEFAULT);
    hid_t fs = d < 0 ? -1 : H5Dget_space(d);
    hsize_t start = (hsize_t)first, count = (hsize_t)n;
    hid_t ms = H5Screate_simple(1, &count, NULL);
    int rc = 0;
    if (d < 0 || fs < 0 || ms < 0 ||
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL) < 0 ||
        H5Dread(d, mem_type, ms, fs, H5P_DEFAULT, buf) < 0)
        rc = errorf(err, errlen, "%s: cannot read %s[%lld..%lld) (truncated or corrupt file?)",
                    ds->path, path, (long long)first, (long long)(first + n));
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (d >= 0 && d != kept) H5Dclose(d);
    return rc;
}

/* Elements [first, first + n) of integer dataset /name (stored type *it)
 * into out64 [n] or, when out64 is NULL, out32 [n]; values that do not fit
 * are errors naming the first bad index. */
static int read_ints(const struct dataset *ds, const char *name, const struct dataset_int *it,
                     int64_t first, int64_t n, int64_t *out64, int32_t *out32, char *err,
                     size_t errlen)
{
    int u64 = !it->is_signed && it->bytes == 8;
    if (out64) {
        if (!u64)
            return read_slab(ds, name, H5T_NATIVE_INT64, first, n, out64, err, errlen);
        if (read_slab(ds, name, H5T_NATIVE_UINT64, first, n, out64, err, errlen))
            return -1;
        for (int64_t i = 0; i < n; i++)
            if ((uint64_t)out64[i] > (uint64_t)INT64_MAX)
                return errorf(err, errlen, "%s: /%s[%lld] = %llu does not fit int64", ds->path,
                              name, (long long)(first + i), (unsigned long long)out64[i]);
        return 0;
    }
    if (it->is_signed ? it->bytes <= 4 : it->bytes <= 2)
        return read_slab(ds, name, H5T_NATIVE_INT32, first, n, out32, err, errlen);
    int64_t *tmp = xmalloc((size_t)(n < CONVERT_BLOCK ? (n ? n : 1) : CONVERT_BLOCK) * sizeof *tmp);
    int rc = 0;
    for (int64_t b = 0; rc == 0 && b < n; b += CONVERT_BLOCK) {
        int64_t m = n - b < CONVERT_BLOCK ? n - b : CONVERT_BLOCK;
        rc = read_slab(ds, name, u64 ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64, first + b, m, tmp,
                       err, errlen);
        for (int64_t i = 0; rc == 0 && i < m; i++) {
            if (u64 ? (uint64_t)tmp[i] > (uint64_t)INT32_MAX
                    : tmp[i] < INT32_MIN || tmp[i] > INT32_MAX) {
                char v[32];
                if (u64)
                    snprintf(v, sizeof v, "%llu", (unsigned long long)tmp[i]);
                else
                    snprintf(v, sizeof v, "%lld", (long long)tmp[i]);
                rc = errorf(err, errlen, "%s: /%s[%lld] = %s does not fit int32", ds->path,
                            name, (long long)(first + b + i), v);
            } else
                out32[b + i] = (int32_t)tmp[i];
        }
    }
    free(tmp);
    return rc;
}

/* Open an event dataset with a chunk cache large enough for sequential and
 * scattered reads of whole chunks (HDF5's default is 1 MiB). */
static hid_t open_cached(hid_t f, const char *path)
{
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    if (dapl < 0)
        return -1;
    hid_t d = -1;
    if (H5Pset_chunk_cache(dapl, 12421, CHUNK_CACHE_BYTES, 0.75) >= 0)
        d = H5Dopen2(f, path, dapl);
    H5Pclose(dapl);
    return d;
}

/* The attributes of /: format, version, num_items, num_users. */
static int read_attributes(struct dataset *ds, char *err, size_t errlen)
{
    char format[64];
    int64_t version = 0;
    if (read_attr_str(ds, "format", format, sizeof format, err, errlen))
        return -1;
    if (strcmp(format, DATASET_FORMAT))
        return errorf(err, errlen, "%s: attribute format = '%s', expected '%s'", ds->path, format,
                      DATASET_FORMAT);
    if (read_attr_i64(ds, "version", &version, err, errlen))
        return -1;
    if (version != DATASET_VERSION && version != DATASET_VERSION_FEATURES)
        return errorf(err, errlen, "%s: attribute version = %lld, this program reads versions "
                      "%d and %d", ds->path, (long long)version, DATASET_VERSION,
                      DATASET_VERSION_FEATURES);
    ds->version = version;
    if (read_attr_i64(ds, "num_items", &ds->num_items, err, errlen) ||
        read_attr_i64(ds, "num_users", &ds->num_users, err, errlen))
        return -1;
    if (ds->num_items < 1 || ds->num_users < 0 || ds->num_users > ((int64_t)1 << 62))
        return errorf(err, errlen, "%s: attributes num_items = %lld, num_users = %lld out of range",
                      ds->path, (long long)ds->num_items, (long long)ds->num_users);
    if (ds->num_items > DATASET_MAX_ROWS)
        return errorf(err, errlen,
                      "%s: attribute num_items = %lld is beyond any item table (at most 2^40 = "
                      "%lld rows): the item ids of a dataset are 1 .. num_items", ds->path,
                      (long long)ds->num_items, (long long)DATASET_MAX_ROWS);
    return 0;
}

/* /offsets read whole and checked: 0, non-decreasing, ends at num_events. */
static int read_offsets(struct dataset *ds, const struct dataset_int *it, char *err,
                        size_t errlen)
{
    const char *path = ds->path;
    int64_t nu = ds->num_users;
    ds->offsets = xmalloc((size_t)(nu + 1) * sizeof(int64_t));
    if (read_ints(ds, "offsets", it, 0, nu + 1, ds->offsets, NULL, err, errlen))
        return -1;
    if (ds->offsets[0] != 0)
        return errorf(err, errlen, "%s: /offsets[0] = %lld, expected 0", path,
                      (long long)ds->offsets[0]);
    for (int64_t u = 0; u < nu; u++)
        if (ds->offsets[u + 1] < ds->offsets[u])
            return errorf(err, errlen, "%s: /offsets decreases at index %lld (%lld after %lld)",
                          path, (long long)(u + 1), (long long)ds->offsets[u + 1],
                          (long long)ds->offsets[u]);
    if (ds->offsets[nu] != ds->num_events)
        return errorf(err, errlen, "%s: /offsets[%lld] = %lld, expected the event count %lld",
                      path, (long long)nu, (long long)ds->offsets[nu], (long long)ds->num_events);
    return 0;
}

int dataset_open(struct dataset *ds, const char *path, char *err, size_t errlen)
{
    dataset_h5_quiet();
    memset(ds, 0, sizeof *ds);
    ds->file = ds->d_items = ds->d_ts = ds->d_actions = -1;
    snprintf(ds->path, sizeof ds->path, "%s", path);
    struct stat st;
    if (stat(path, &st) != 0)
        return errorf(err, errlen, "%s: cannot open dataset: %s", path, strerror(errno));
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return dataset_hint_not_hdf5(path, err, errlen);
    ds->file = f;
    int present;
    struct dataset_int t_off;
    if (dataset_h5_attrs_check(f, path, "/", err, errlen) || read_attributes(ds, err, errlen) ||
        check_dataset(ds, "offsets", WANT_INT, "int64", ds->num_users + 1, 1, &present, &t_off,
                      err, errlen) ||
        check_dataset(ds, "item_ids", WANT_INT, "int64", -1, 1, &present, &ds->t_items, err,
                      errlen))
        goto fail;
    /* the event count is the length of /item_ids (rank 1, checked above) */
    {
        hid_t d, s;
        hsize_t n = 0;
        H5_CHECK(d = H5Dopen2(f, "/item_ids", H5P_DEFAULT));
        H5_CHECK(s = H5Dget_space(d));
        H5_CHECK(H5Sget_simple_extent_dims(s, &n, NULL));
        H5_CHECK(H5Sclose(s));
        H5_CHECK(H5Dclose(d));
        ds->num_events = (int64_t)n;
    }
    if (check_dataset(ds, "timestamps", WANT_INT, "int64", ds->num_events, 0, &ds->has_timestamps,
                      &ds->t_ts, err, errlen) ||
        check_dataset(ds, "actions", WANT_INT, "int32", ds->num_events, 0, &ds->has_actions,
                      &ds->t_actions, err, errlen) ||
        check_dataset(ds, "item_map", WANT_INT, "int64", ds->num_items, 0, &ds->has_item_map,
                      &ds->t_item_map, err, errlen) ||
        check_dataset(ds, "user_map", WANT_INT, "int64", ds->num_users, 0, &ds->has_user_map,
                      &ds->t_user_map, err, errlen) ||
        check_dataset(ds, "item_map_str", WANT_STRING, NULL, ds->num_items, 0,
                      &ds->has_item_map_str, NULL, err, errlen) ||
        check_dataset(ds, "user_map_str", WANT_STRING, NULL, ds->num_users, 0,
                      &ds->has_user_map_str, NULL, err, errlen))
        goto fail;
    ds->d_items = open_cached(f, "/item_ids");
    ds->d_ts = ds->has_timestamps ? open_cached(f, "/timestamps") : -1;
    ds->d_actions = ds->has_actions ? open_cached(f, "/actions") : -1;
    if (ds->d_items < 0 || (ds->has_timestamps && ds->d_ts < 0) ||
        (ds->has_actions && ds->d_actions < 0)) {
        errorf(err, errlen, "%s: cannot open the event datasets", path);
        goto fail;
    }
    if (read_offsets(ds, &t_off, err, errlen) || dataset_feat_open(ds, err, errlen))
        goto fail;
    return 0;
fail:
    dataset_close(ds);
    return -1;
}

void dataset_close(struct dataset *ds)
{
    if (ds->d_items >= 0) H5_CHECK(H5Dclose((hid_t)ds->d_items));
    if (ds->d_ts >= 0) H5_CHECK(H5Dclose((hid_t)ds->d_ts));
    if (ds->d_actions >= 0) H5_CHECK(H5Dclose((hid_t)ds->d_actions));
    ds->d_items = ds->d_ts = ds->d_actions = -1;
    dataset_feat_close(ds);
    if (ds->file >= 0)
        H5_CHECK(H5Fclose((hid_t)ds->file));
    ds->file = -1;
    free(ds->offsets);
    ds->offsets = NULL;
}

int dataset_read_users(const struct dataset *ds, int64_t u0, int64_t u1, int64_t *items,
                       int64_t *ts, int32_t *actions, char *err, size_t errlen)
{
    if (u0 < 0 || u1 < u0 || u1 > ds->num_users)
        return errorf(err, errlen, "%s: user range [%lld, %lld) outside [0, %lld)", ds->path,
                      (long long)u0, (long long)u1, (long long)ds->num_users);
    if (ts && !ds->has_timestamps)
        return errorf(err, errlen, "%s: has no /timestamps", ds->path);
    if (actions && !ds->has_actions)
        return errorf(err, errlen, "%s: has no /actions", ds->path);
    int64_t e0 = ds->offsets[u0], n = ds->offsets[u1] - e0;
    if (read_ints(ds, "item_ids", &ds->t_items, e0, n, items, NULL, err, errlen) ||
        (ts && read_ints(ds, "timestamps", &ds->t_ts, e0, n, ts, NULL, err, errlen)) ||
        (actions && read_ints(ds, "actions", &ds->t_actions, e0, n, NULL, actions, err, errlen)))
        return -1;
    for (int64_t i = 0; i < n; i++)
        if (items[i] < 1 || items[i] > ds->num_items)
            return errorf(err, errlen, "%s: /item_ids[%lld] = %lld, outside 1..%lld (num_items)",
                          ds->path, (long long)(e0 + i), (long long)items[i],
                          (long long)ds->num_items);
    if (ts)
        for (int64_t u = u0; u < u1; u++)
            for (int64_t e = ds->offsets[u] + 1; e < ds->offsets[u + 1]; e++)
                if (ts[e - e0] < ts[e - 1 - e0])
                    return errorf(err, errlen,
                                  "%s: /timestamps[%lld] = %lld decreases within user %lld "
                                  "(previous %lld)",
                                  ds->path, (long long)e, (long long)ts[e - e0], (long long)u,
                                  (long long)ts[e - 1 - e0]);
    return 0;
}

int64_t *dataset_read_map(const struct dataset *ds, const char *name, char *err, size_t errlen)
{
    int items = !strcmp(name, "item_map");
    int64_t n = items ? ds->num_items : ds->num_users;
    if (!(items ? ds->has_item_map : ds->has_user_map)) {
        errorf(err, errlen, "%s: has no /%s", ds->path, name);
        return NULL;
    }
    int64_t *m = xmalloc((size_t)(n ? n : 1) * sizeof *m);
    if (read_ints(ds, name, items ? &ds->t_item_map : &ds->t_user_map, 0, n, m, NULL, err,
                  errlen)) {
        free(m);
        return NULL;
    }
    return m;
}

/* String i of vlen [n] or of fixed [n * size] (padding dropped): its length. */
static size_t string_at(char **vlen, const char *fixed, size_t size, int spacepad, int64_t i,
                        const char **s)
{
    if (vlen) {
        *s = vlen[i] ? vlen[i] : "";
        return strlen(*s);
    }
    *s = fixed + (size_t)i * size;
    size_t len = strnlen(*s, size);
    while (spacepad && len && (*s)[len - 1] == ' ')
        len--;
    return len;
}

/* n strings (see string_at) into one block: n pointers, then the strings
 * NUL-terminated. */
static char **pack_strings(int64_t n, char **vlen, const char *fixed, size_t size, int spacepad)
{
    const char *s;
    size_t bytes = (size_t)(n ? n : 1) * sizeof(char *);
    for (int64_t i = 0; i < n; i++)
        bytes += string_at(vlen, fixed, size, spacepad, i, &s) + 1;
    char **out = xmalloc(bytes);
    char *p = (char *)(out + n);
    for (int64_t i = 0; i < n; i++) {
        size_t len = string_at(vlen, fixed, size, spacepad, i, &s);
        memcpy(p, s, len);
        p[len] = 0;
        out[i] = p;
        p += len + 1;
    }
    return out;
}

char **dataset_read_map_str(const struct dataset *ds, const char *name, char *err, size_t errlen)
{
    int items = !strcmp(name, "item_map_str");
    int64_t n = items ? ds->num_items : ds->num_users;
    if (!(items ? ds->has_item_map_str : ds->has_user_map_str)) {
        errorf(err, errlen, "%s: has no /%s", ds->path, name);
        return NULL;
    }
    return dataset_read_strings(ds, name, n, err, errlen);
}

char **dataset_read_strings(const struct dataset *ds, const char *name, int64_t n, char *err,
                            size_t errlen)
{
    char path[256];
    snprintf(path, sizeof path, "/%s", name);
    hid_t d = H5Dopen2((hid_t)ds->file, path, H5P_DEFAULT);
    hid_t t = d < 0 ? -1 : H5Dget_type(d), s = d < 0 ? -1 : H5Dget_space(d), mt = -1;
    char **out = NULL;
    hsize_t dim = 0;
    int bad = 0;
    if (d >= 0 && (t < 0 || s < 0 || H5Tget_class(t) != H5T_STRING ||
                   H5Sget_simple_extent_type(s) != H5S_SIMPLE ||
                   H5Sget_simple_extent_ndims(s) != 1 ||
                   H5Sget_simple_extent_dims(s, &dim, NULL) < 0))
        bad = errorf(err, errlen, "%s: %s is not a 1-D dataset of strings", ds->path, path);
    else if (d >= 0 && (int64_t)dim != n)
        bad = errorf(err, errlen, "%s: %s has %lld strings, expected %lld", ds->path, path,
                     (long long)dim, (long long)n);
    else if (d >= 0)
        bad = dataset_h5_storage_check(d, ds->path, path, err, errlen);
    if (bad) {
        H5Dclose(d);
        if (t >= 0) H5Tclose(t);
        if (s >= 0) H5Sclose(s);
        return NULL;
    }
    if (d >= 0 && dataset_h5_vlen_check(d, ds->path, path, err, errlen)) {
        H5Dclose(d); /* the heap is damaged: not read */
        H5Tclose(t);
        H5Sclose(s);
        return NULL;
    }
    if (t >= 0 && s >= 0 && H5Tis_variable_str(t) > 0) {
        char **v = xcalloc((size_t)(n ? n : 1), sizeof *v);
        if ((mt = H5Tcopy(H5T_C_S1)) >= 0 && H5Tset_size(mt, H5T_VARIABLE) >= 0 &&
            H5Tset_cset(mt, H5Tget_cset(t)) >= 0 &&
            (n == 0 || H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0)) {
            out = pack_strings(n, v, NULL, 0, 0);
            if (n)
                H5Dvlen_reclaim(mt, s, H5P_DEFAULT, v);
        }
        free(v);
    } else if (t >= 0 && s >= 0) {
        size_t size = H5Tget_size(t);
        char *buf = xmalloc((size_t)(n ? n : 1) * (size ? size : 1));
        if ((mt = H5Tcopy(t)) >= 0 && /* same size, padding and character set */
            (n == 0 || H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0))
            out = pack_strings(n, NULL, buf, size, H5Tget_strpad(t) == H5T_STR_SPACEPAD);
        free(buf);
    }
    if (!out)
        errorf(err, errlen, "%s: cannot read %s (truncated or corrupt file?)", ds->path, path);
    if (mt >= 0) H5Tclose(mt);
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    if (d >= 0) H5Dclose(d);
    return out;
}

int dataset_validate(const struct dataset *ds, char *err, size_t errlen)
{
    int64_t *items = xmalloc((size_t)VALIDATE_EVENTS * sizeof *items);
    int64_t *ts = ds->has_timestamps ? xmalloc((size_t)VALIDATE_EVENTS * sizeof *ts) : NULL;
    int32_t *act = ds->has_actions ? xmalloc((size_t)VALIDATE_EVENTS * sizeof *act) : NULL;
    int rc = 0;
    int64_t u0 = 0, max_id = 0;
    while (rc == 0 && u0 < ds->num_users) {
        /* as many whole users as fit; a longer user is read alone */
        int64_t u1 = u0 + 1;
        while (u1 < ds->num_users && ds->offsets[u1 + 1] - ds->offsets[u0] <= VALIDATE_EVENTS)
            u1++;
        int64_t n = ds->offsets[u1] - ds->offsets[u0];
        int64_t *bi = items, *bt = ts;
        int32_t *ba = act;
        if (n > VALIDATE_EVENTS) {
            bi = xmalloc((size_t)n * sizeof *bi);
            bt = ts ? xmalloc((size_t)n * sizeof *bt) : NULL;
            ba = act ? xmalloc((size_t)n * sizeof *ba) : NULL;
        }
        rc = dataset_read_users(ds, u0, u1, bi, bt, ba, err, errlen);
        for (int64_t i = 0; rc == 0 && i < n; i++)
            max_id = bi[i] > max_id ? bi[i] : max_id;
        if (bi != items) {
            free(bi);
            free(bt);
            free(ba);
        }
        u0 = u1;
    }
    free(items);
    free(ts);
    free(act);
    if (rc == 0 && dataset_rows_absurd(ds->num_items, max_id))
        rc = errorf(err, errlen,
                    "%s: attribute num_items = %lld is far beyond the largest item id used, "
                    "%lld: the item table would have %lld rows for at most %lld items (set "
                    "num_items to the largest id)", ds->path, (long long)ds->num_items,
                    (long long)max_id, (long long)ds->num_items, (long long)max_id);
    return rc ? rc : dataset_feat_validate(ds, err, errlen);
}
