/* dataset: HDF5 sequence datasets; see dataset.h for the format. */
#include "data/dataset.h"

#include <errno.h>
#include <hdf5.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/check.h"

#define CHUNK_EVENTS ((hsize_t)1 << 16) /* 64 Ki events = 512 KiB of int64 */
#define CHUNK_CACHE_BYTES ((size_t)32 << 20) /* per open event dataset */
#define VALIDATE_EVENTS ((int64_t)1 << 22)

static void h5_quiet(void)
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
    else
        snprintf(buf, len, "HDF5 class %d", (int)cls);
}

static int is_int(hid_t t, size_t bytes)
{
    return H5Tget_class(t) == H5T_INTEGER && H5Tget_size(t) == bytes &&
           H5Tget_sign(t) == H5T_SGN_2;
}

/* --- reader --------------------------------------------------------------- */

static int read_attr_i64(const struct dataset *ds, const char *name, int64_t *v, char *err,
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
    char tn[32] = "?";
    if (a < 0 || t < 0 || s < 0)
        rc = errorf(err, errlen, "%s: cannot read attribute '%s'", ds->path, name);
    else if (H5Tget_class(t) != H5T_INTEGER) {
        type_name(t, tn, sizeof tn);
        rc = errorf(err, errlen, "%s: attribute '%s' has type %s, expected an integer", ds->path,
                    name, tn);
    } else if (H5Sget_simple_extent_npoints(s) != 1)
        rc = errorf(err, errlen, "%s: attribute '%s' is not a scalar", ds->path, name);
    else if (H5Aread(a, H5T_NATIVE_INT64, v) < 0)
        rc = errorf(err, errlen, "%s: cannot read attribute '%s'", ds->path, name);
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return rc;
}

static int check_format_attr(const struct dataset *ds, char *err, size_t errlen)
{
    hid_t f = (hid_t)ds->file;
    if (H5Aexists(f, "format") <= 0)
        return errorf(err, errlen, "%s: missing attribute 'format' on / (not a freescale dataset)",
                      ds->path);
    hid_t a = H5Aopen(f, "format", H5P_DEFAULT);
    hid_t t = a < 0 ? -1 : H5Aget_type(a);
    int rc = 0;
    char val[64] = "";
    if (a < 0 || t < 0 || H5Tget_class(t) != H5T_STRING)
        rc = errorf(err, errlen, "%s: attribute 'format' is not a string", ds->path);
    else if (H5Tis_variable_str(t) > 0) {
        char *s = NULL;
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        if (H5Aread(a, mt, &s) < 0)
            rc = errorf(err, errlen, "%s: cannot read attribute 'format'", ds->path);
        else
            snprintf(val, sizeof val, "%s", s ? s : "");
        if (s)
            H5free_memory(s);
        H5Tclose(mt);
    } else {
        size_t n = H5Tget_size(t);
        char *s = xcalloc(n + 1, 1);
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, n + 1);
        if (H5Aread(a, mt, s) < 0)
            rc = errorf(err, errlen, "%s: cannot read attribute 'format'", ds->path);
        snprintf(val, sizeof val, "%s", s);
        free(s);
        H5Tclose(mt);
    }
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    if (rc == 0 && strcmp(val, DATASET_FORMAT))
        rc = errorf(err, errlen, "%s: attribute format = '%s', expected '%s'", ds->path, val,
                    DATASET_FORMAT);
    return rc;
}

/* Check that /name exists, is 1-D of n elements (n < 0: any) and of a signed
 * integer type of `bytes` bytes. Sets *present (optional datasets). */
static int check_dataset(const struct dataset *ds, const char *name, size_t bytes, int64_t n,
                         int required, int *present, char *err, size_t errlen)
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
    char tn[32];
    hsize_t dims[2] = {0, 0};
    if (t < 0 || s < 0)
        rc = errorf(err, errlen, "%s: cannot read the type of %s", ds->path, path);
    else if (!is_int(t, bytes)) {
        type_name(t, tn, sizeof tn);
        rc = errorf(err, errlen, "%s: %s has type %s, expected int%zu", ds->path, path, tn,
                    8 * bytes);
    } else if (H5Sget_simple_extent_ndims(s) != 1)
        rc = errorf(err, errlen, "%s: %s has %d dimensions, expected 1", ds->path, path,
                    H5Sget_simple_extent_ndims(s));
    else {
        H5Sget_simple_extent_dims(s, dims, NULL);
        if (n >= 0 && (int64_t)dims[0] != n)
            rc = errorf(err, errlen, "%s: %s has %lld elements, expected %lld", ds->path, path,
                        (long long)dims[0], (long long)n);
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

int dataset_open(struct dataset *ds, const char *path, char *err, size_t errlen)
{
    h5_quiet();
    memset(ds, 0, sizeof *ds);
    ds->file = ds->d_items = ds->d_ts = ds->d_actions = -1;
    snprintf(ds->path, sizeof ds->path, "%s", path);
    struct stat st;
    if (stat(path, &st) != 0)
        return errorf(err, errlen, "%s: cannot open dataset: %s", path, strerror(errno));
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return errorf(err, errlen, "%s: not a readable HDF5 file (truncated or corrupt?)", path);
    ds->file = f;
    int64_t version = 0;
    int present;
    if (check_format_attr(ds, err, errlen) || read_attr_i64(ds, "version", &version, err, errlen))
        goto fail;
    if (version != DATASET_VERSION) {
        errorf(err, errlen, "%s: attribute version = %lld, this program reads version %d", path,
               (long long)version, DATASET_VERSION);
        goto fail;
    }
    if (read_attr_i64(ds, "num_items", &ds->num_items, err, errlen) ||
        read_attr_i64(ds, "num_users", &ds->num_users, err, errlen))
        goto fail;
    if (ds->num_items < 1 || ds->num_users < 0) {
        errorf(err, errlen, "%s: attributes num_items = %lld, num_users = %lld out of range", path,
               (long long)ds->num_items, (long long)ds->num_users);
        goto fail;
    }
    if (check_dataset(ds, "offsets", 8, ds->num_users + 1, 1, &present, err, errlen) ||
        check_dataset(ds, "item_ids", 8, -1, 1, &present, err, errlen))
        goto fail;
    /* the event count is the length of /item_ids */
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
    if (check_dataset(ds, "timestamps", 8, ds->num_events, 0, &ds->has_timestamps, err, errlen) ||
        check_dataset(ds, "actions", 4, ds->num_events, 0, &ds->has_actions, err, errlen) ||
        check_dataset(ds, "item_map", 8, ds->num_items, 0, &ds->has_item_map, err, errlen) ||
        check_dataset(ds, "user_map", 8, ds->num_users, 0, &ds->has_user_map, err, errlen))
        goto fail;
    ds->d_items = open_cached(f, "/item_ids");
    ds->d_ts = ds->has_timestamps ? open_cached(f, "/timestamps") : -1;
    ds->d_actions = ds->has_actions ? open_cached(f, "/actions") : -1;
    if (ds->d_items < 0 || (ds->has_timestamps && ds->d_ts < 0) ||
        (ds->has_actions && ds->d_actions < 0)) {
        errorf(err, errlen, "%s: cannot open the event datasets", path);
        goto fail;
    }
    ds->offsets = xmalloc((size_t)(ds->num_users + 1) * sizeof(int64_t));
    if (read_slab(ds, "offsets", H5T_NATIVE_INT64, 0, ds->num_users + 1, ds->offsets, err, errlen))
        goto fail;
    if (ds->offsets[0] != 0) {
        errorf(err, errlen, "%s: /offsets[0] = %lld, expected 0", path, (long long)ds->offsets[0]);
        goto fail;
    }
    for (int64_t u = 0; u < ds->num_users; u++)
        if (ds->offsets[u + 1] < ds->offsets[u]) {
            errorf(err, errlen, "%s: /offsets decreases at index %lld (%lld after %lld)", path,
                   (long long)(u + 1), (long long)ds->offsets[u + 1], (long long)ds->offsets[u]);
            goto fail;
        }
    if (ds->offsets[ds->num_users] != ds->num_events) {
        errorf(err, errlen, "%s: /offsets[%lld] = %lld, expected the event count %lld", path,
               (long long)ds->num_users, (long long)ds->offsets[ds->num_users],
               (long long)ds->num_events);
        goto fail;
    }
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
    if (read_slab(ds, "item_ids", H5T_NATIVE_INT64, e0, n, items, err, errlen) ||
        (ts && read_slab(ds, "timestamps", H5T_NATIVE_INT64, e0, n, ts, err, errlen)) ||
        (actions && read_slab(ds, "actions", H5T_NATIVE_INT32, e0, n, actions, err, errlen)))
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
    int64_t n = !strcmp(name, "item_map") ? ds->num_items : ds->num_users;
    int present = !strcmp(name, "item_map") ? ds->has_item_map : ds->has_user_map;
    if (!present) {
        errorf(err, errlen, "%s: has no /%s", ds->path, name);
        return NULL;
    }
    int64_t *m = xmalloc((size_t)(n ? n : 1) * sizeof *m);
    if (read_slab(ds, name, H5T_NATIVE_INT64, 0, n, m, err, errlen)) {
        free(m);
        return NULL;
    }
    return m;
}

int dataset_validate(const struct dataset *ds, char *err, size_t errlen)
{
    int64_t *items = xmalloc((size_t)VALIDATE_EVENTS * sizeof *items);
    int64_t *ts = ds->has_timestamps ? xmalloc((size_t)VALIDATE_EVENTS * sizeof *ts) : NULL;
    int rc = 0;
    int64_t u0 = 0;
    while (rc == 0 && u0 < ds->num_users) {
        /* as many whole users as fit; a longer user is read alone */
        int64_t u1 = u0 + 1;
        while (u1 < ds->num_users && ds->offsets[u1 + 1] - ds->offsets[u0] <= VALIDATE_EVENTS)
            u1++;
        int64_t n = ds->offsets[u1] - ds->offsets[u0];
        int64_t *bi = items, *bt = ts;
        if (n > VALIDATE_EVENTS) {
            bi = xmalloc((size_t)n * sizeof *bi);
            bt = ts ? xmalloc((size_t)n * sizeof *bt) : NULL;
        }
        rc = dataset_read_users(ds, u0, u1, bi, bt, NULL, err, errlen);
        if (bi != items) {
            free(bi);
            free(bt);
        }
        u0 = u1;
    }
    free(items);
    free(ts);
    return rc;
}

/* --- writer --------------------------------------------------------------- */

struct dataset_writer {
    char path[4096], tmp[4200];
    hid_t file, d_items, d_ts, d_actions;
    int64_t events, users, cap_users;
    int64_t *offsets;
};

static hid_t create_extendible(hid_t f, const char *name, hid_t type)
{
    hsize_t dim = 0, maxdim = H5S_UNLIMITED, chunk = CHUNK_EVENTS;
    hid_t s = H5Screate_simple(1, &dim, &maxdim);
    hid_t pl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t d = -1;
    if (s >= 0 && pl >= 0 && H5Pset_chunk(pl, 1, &chunk) >= 0 && H5Pset_shuffle(pl) >= 0 &&
        H5Pset_deflate(pl, 1) >= 0 && H5Pset_obj_track_times(pl, 0) >= 0)
        d = H5Dcreate2(f, name, type, s, H5P_DEFAULT, pl, H5P_DEFAULT);
    if (pl >= 0) H5Pclose(pl);
    if (s >= 0) H5Sclose(s);
    return d;
}

static int append_slab(hid_t d, hid_t mem_type, int64_t first, int64_t n, const void *buf)
{
    if (n == 0)
        return 0;
    hsize_t size = (hsize_t)(first + n), start = (hsize_t)first, count = (hsize_t)n;
    if (H5Dset_extent(d, &size) < 0)
        return -1;
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &count, NULL);
    int rc = (fs < 0 || ms < 0 ||
              H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &count, NULL) < 0 ||
              H5Dwrite(d, mem_type, ms, fs, H5P_DEFAULT, buf) < 0)
                 ? -1 : 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return rc;
}

static int write_whole(hid_t f, const char *name, hid_t type, const void *buf, int64_t n)
{
    hsize_t dim = (hsize_t)n;
    hid_t s = H5Screate_simple(1, &dim, NULL);
    hid_t pl = H5Pcreate(H5P_DATASET_CREATE);
    if (H5Pset_obj_track_times(pl, 0) < 0)
        n = -1;
    if (n > 0) {
        hsize_t chunk = (hsize_t)n < CHUNK_EVENTS ? (hsize_t)n : CHUNK_EVENTS;
        if (H5Pset_chunk(pl, 1, &chunk) < 0 || H5Pset_shuffle(pl) < 0 || H5Pset_deflate(pl, 1) < 0)
            n = -1;
    }
    hid_t d = n < 0 ? -1 : H5Dcreate2(f, name, type, s, H5P_DEFAULT, pl, H5P_DEFAULT);
    int rc = d < 0 || (n > 0 && H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
                 ? -1 : 0;
    if (d >= 0) H5Dclose(d);
    H5Pclose(pl);
    H5Sclose(s);
    return rc;
}

static int write_attr_i64(hid_t f, const char *name, int64_t v)
{
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, name, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a < 0 || H5Awrite(a, H5T_NATIVE_INT64, &v) < 0 ? -1 : 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(s);
    return rc;
}

static int write_attr_str(hid_t f, const char *name, const char *v)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(v));
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a < 0 || H5Awrite(a, t, v) < 0 ? -1 : 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
    return rc;
}

static void writer_free(struct dataset_writer *w)
{
    if (w->d_items >= 0) H5Dclose(w->d_items);
    if (w->d_ts >= 0) H5Dclose(w->d_ts);
    if (w->d_actions >= 0) H5Dclose(w->d_actions);
    if (w->file >= 0) H5Fclose(w->file);
    free(w->offsets);
    free(w);
}

void dataset_writer_abort(struct dataset_writer *w)
{
    if (!w)
        return;
    char tmp[sizeof w->tmp];
    memcpy(tmp, w->tmp, sizeof tmp);
    writer_free(w);
    unlink(tmp);
}

struct dataset_writer *dataset_writer_open(const char *path, int with_timestamps,
                                           int with_actions, char *err, size_t errlen)
{
    h5_quiet();
    struct dataset_writer *w = xcalloc(1, sizeof *w);
    w->file = w->d_items = w->d_ts = w->d_actions = -1;
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%ld", path, (long)getpid());
    w->cap_users = 1024;
    w->offsets = xmalloc((size_t)w->cap_users * sizeof(int64_t));
    w->offsets[0] = 0;
    w->file = H5Fcreate(w->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (w->file < 0) {
        errorf(err, errlen, "%s: cannot create output file %s (directory missing or not writable?)",
               path, w->tmp);
        writer_free(w);
        return NULL;
    }
    w->d_items = create_extendible(w->file, "/item_ids", H5T_STD_I64LE);
    if (with_timestamps)
        w->d_ts = create_extendible(w->file, "/timestamps", H5T_STD_I64LE);
    if (with_actions)
        w->d_actions = create_extendible(w->file, "/actions", H5T_STD_I32LE);
    if (w->d_items < 0 || (with_timestamps && w->d_ts < 0) || (with_actions && w->d_actions < 0)) {
        errorf(err, errlen, "%s: cannot create datasets in %s", path, w->tmp);
        dataset_writer_abort(w);
        return NULL;
    }
    return w;
}

int dataset_writer_append(struct dataset_writer *w, int64_t n, const int64_t *lengths,
                          const int64_t *items, const int64_t *ts, const int32_t *actions,
                          char *err, size_t errlen)
{
    if ((ts != NULL) != (w->d_ts >= 0) || (actions != NULL) != (w->d_actions >= 0))
        return errorf(err, errlen, "%s: internal: timestamps/actions given inconsistently", w->path);
    if (w->users + n + 1 > w->cap_users) {
        while (w->users + n + 1 > w->cap_users)
            w->cap_users *= 2;
        w->offsets = xrealloc(w->offsets, (size_t)w->cap_users * sizeof(int64_t));
    }
    int64_t total = 0;
    for (int64_t i = 0; i < n; i++) {
        if (lengths[i] < 0)
            return errorf(err, errlen, "%s: internal: negative length", w->path);
        total += lengths[i];
        w->offsets[w->users + i + 1] = w->events + total;
    }
    if (append_slab(w->d_items, H5T_NATIVE_INT64, w->events, total, items) ||
        (ts && append_slab(w->d_ts, H5T_NATIVE_INT64, w->events, total, ts)) ||
        (actions && append_slab(w->d_actions, H5T_NATIVE_INT32, w->events, total, actions)))
        return errorf(err, errlen, "%s: write to %s failed (disk full?)", w->path, w->tmp);
    w->users += n;
    w->events += total;
    return 0;
}

int dataset_writer_map(struct dataset_writer *w, const char *name, const int64_t *ids, int64_t n,
                       char *err, size_t errlen)
{
    char path[64];
    snprintf(path, sizeof path, "/%s", name);
    if (write_whole(w->file, path, H5T_STD_I64LE, ids, n))
        return errorf(err, errlen, "%s: cannot write %s to %s", w->path, path, w->tmp);
    return 0;
}

int dataset_writer_close(struct dataset_writer *w, int64_t num_items, char *err, size_t errlen)
{
    if (num_items < 1) {
        errorf(err, errlen, "%s: no items: refusing to write an empty dataset", w->path);
        dataset_writer_abort(w);
        return -1;
    }
    if (write_whole(w->file, "/offsets", H5T_STD_I64LE, w->offsets, w->users + 1) ||
        write_attr_str(w->file, "format", DATASET_FORMAT) ||
        write_attr_i64(w->file, "version", DATASET_VERSION) ||
        write_attr_i64(w->file, "num_items", num_items) ||
        write_attr_i64(w->file, "num_users", w->users)) {
        errorf(err, errlen, "%s: cannot write offsets or attributes to %s", w->path, w->tmp);
        dataset_writer_abort(w);
        return -1;
    }
    char tmp[sizeof w->tmp], path[sizeof w->path];
    memcpy(tmp, w->tmp, sizeof tmp);
    memcpy(path, w->path, sizeof path);
    hid_t f = w->file;
    w->file = -1;
    H5Dclose(w->d_items);
    w->d_items = -1;
    if (w->d_ts >= 0) { H5Dclose(w->d_ts); w->d_ts = -1; }
    if (w->d_actions >= 0) { H5Dclose(w->d_actions); w->d_actions = -1; }
    writer_free(w);
    if (H5Fclose(f) < 0) {
        unlink(tmp);
        return errorf(err, errlen, "%s: closing %s failed (disk full?)", path, tmp);
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return errorf(err, errlen, "%s: cannot rename %s into place: %s", path, tmp, strerror(e));
    }
    return 0;
}
