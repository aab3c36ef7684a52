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
    h5io_quiet(); /* we report errors ourselves */
}

/* --- attributes ----------------------------------------------------------- */

static int read_attr_i64(const struct dataset *ds, const char *name, int64_t *v, char *err,
                         size_t errlen)
{
    return h5io_attr_read_i64((hid_t)ds->file, ds->path, name, v, err, errlen);
}

/* A scalar string attribute, variable or fixed length, any character set,
 * into val[len] (NUL-terminated). */
static int read_attr_str(const struct dataset *ds, const char *name, char *val, size_t len,
                         char *err, size_t errlen)
{
    return h5io_attr_read_str((hid_t)ds->file, ds->path, name, val, len, err, errlen);
}

/* --- datasets ------------------------------------------------------------- */

enum want { WANT_INT, WANT_STRING };

/* Check that /name exists, is 1-D of n elements (n < 0: any) and of an
 * integer type (stored type into *it) or a string type. Sets *present
 * (optional datasets). dest: the type it is read as, for messages. */
static int check_dataset(const struct dataset *ds, const char *name, enum want want,
                         const char *dest, int64_t n, int required, int *present,
                         struct h5io_int *it, char *err, size_t errlen)
{
    hid_t f = (hid_t)ds->file;
    char path[64];
    snprintf(path, sizeof path, "/%s", name);
    *present = h5io_exists(f, path);
    if (!*present)
        return required ? errorf(err, errlen, "%s: missing dataset %s", ds->path, path) : 0;
    struct h5io_info info;
    hid_t d = h5io_dset_describe(f, path, H5P_DEFAULT, &info);
    if (d < 0)
        return errorf(err, errlen, "%s: %s is not a readable dataset", ds->path, path);
    int rc = 0;
    if (info.cls == H5T_NO_CLASS || !info.shape[0])
        rc = errorf(err, errlen, "%s: cannot read the type of %s", ds->path, path);
    else if (want == WANT_INT && !info.is_int) {
        rc = errorf(err, errlen, "%s: %s has type %s, expected %s (or another integer type)",
                    ds->path, path, info.type, dest);
    } else if (want == WANT_STRING && info.cls != H5T_STRING) {
        rc = errorf(err, errlen, "%s: %s has type %s, expected strings", ds->path, path,
                    info.type);
    } else if (info.rank != 1) {
        rc = errorf(err, errlen, "%s: %s has shape %s, expected 1 dimension", ds->path, path,
                    info.shape);
    } else {
        if (it)
            *it = info.it;
        if (n >= 0 && info.dims[0] != n)
            rc = errorf(err, errlen, "%s: %s has %lld elements, expected %lld", ds->path, path,
                        (long long)info.dims[0], (long long)n);
        else
            rc = dataset_h5_storage_check(d, ds->path, path, err, errlen);
    }
    h5io_close_obj(NULL, d);
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
    struct h5io_info info;
    hid_t d = kept >= 0 ? kept : h5io_dset_describe((hid_t)ds->file, path, H5P_DEFAULT, &info);
    int rc = 0;
    if (d < 0 || h5io_read_rows(NULL, d, mem_type, first, 1, n, 0, buf))
        rc = errorf(err, errlen, "%s: cannot read %s[%lld..%lld) (truncated or corrupt file?)",
                    ds->path, path, (long long)first, (long long)(first + n));
    if (d >= 0 && d != kept) h5io_close_obj(NULL, d);
    return rc;
}

/* Elements [first, first + n) of integer dataset /name (stored type *it)
 * into out64 [n] or, when out64 is NULL, out32 [n]; values that do not fit
 * are errors naming the first bad index. */
static int read_ints(const struct dataset *ds, const char *name, const struct h5io_int *it,
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
    hid_t dapl = h5io_dapl_cache(CHUNK_CACHE_BYTES);
    if (dapl < 0)
        return -1;
    struct h5io_info info;
    hid_t d = h5io_dset_describe(f, path, dapl, &info);
    h5io_close_obj(NULL, dapl);
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
    if (version != DATASET_VERSION && version != DATASET_VERSION_FEATURES &&
        version != DATASET_VERSION_RAW)
        return errorf(err, errlen, "%s: attribute version = %lld, this program reads versions "
                      "%d, %d and %d", ds->path, (long long)version, DATASET_VERSION,
                      DATASET_VERSION_FEATURES, DATASET_VERSION_RAW);
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
static int read_offsets(struct dataset *ds, const struct h5io_int *it, char *err,
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
    struct h5io h;
    if (h5io_open_read(&h, path, NULL, 0, err, errlen))
        return dataset_hint_not_hdf5(path, err, errlen);
    hid_t f = h.f;
    ds->file = f;
    int present;
    struct h5io_int t_off;
    if (dataset_h5_attrs_check(f, path, "/", err, errlen) || read_attributes(ds, err, errlen) ||
        check_dataset(ds, "offsets", WANT_INT, "int64", ds->num_users + 1, 1, &present, &t_off,
                      err, errlen) ||
        check_dataset(ds, "item_ids", WANT_INT, "int64", -1, 1, &present, &ds->t_items, err,
                      errlen))
        goto fail;
    /* the event count is the length of /item_ids (rank 1, checked above) */
    {
        struct h5io_info info;
        hid_t d = h5io_dset_describe(f, "/item_ids", H5P_DEFAULT, &info);
        if (d < 0 || info.rank != 1)
            fatal("%s: /item_ids: HDF5 failed on a dataset it had opened", path);
        h5io_close_obj(NULL, d);
        ds->num_events = info.dims[0];
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
    if (read_offsets(ds, &t_off, err, errlen) || dataset_raw_open(ds, err, errlen) ||
        dataset_feat_open(ds, err, errlen))
        goto fail;
    return 0;
fail:
    dataset_close(ds);
    return -1;
}

void dataset_close(struct dataset *ds)
{
    h5io_close_obj(NULL, (hid_t)ds->d_items);
    h5io_close_obj(NULL, (hid_t)ds->d_ts);
    h5io_close_obj(NULL, (hid_t)ds->d_actions);
    ds->d_items = ds->d_ts = ds->d_actions = -1;
    dataset_feat_close(ds);
    h5io_close_obj(NULL, (hid_t)ds->file);
    ds->file = -1;
    free(ds->offsets);
    ds->offsets = NULL;
    free(ds->item_list);
    ds->item_list = NULL;
    free(ds->user_keys);
    ds->user_keys = NULL;
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
    if (ds->raw_ids && dataset_raw_check_items(ds, e0, items, n, err, errlen))
        return -1;
    for (int64_t i = 0; !ds->raw_ids && i < n; i++)
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
    return h5io_read_strings((hid_t)ds->file, ds->path, path, n, err, errlen);
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
    if (rc == 0 && !ds->raw_ids && dataset_rows_absurd(ds->num_items, max_id))
        rc = errorf(err, errlen,
                    "%s: attribute num_items = %lld is far beyond the largest item id used, "
                    "%lld: the item table would have %lld rows for at most %lld items (set "
                    "num_items to the largest id)", ds->path, (long long)ds->num_items,
                    (long long)max_id, (long long)ds->num_items, (long long)max_id);
    return rc ? rc : dataset_feat_validate(ds, err, errlen);
}
