/* h5io_read: the checked reads of the HDF5 layer; see h5io.h. Every
 * attribute and dataset is checked for its class, size, rank and shape
 * before anything is read into a buffer, and variable-length values and
 * chunked storage are checked against the file itself first
 * (dataset_h5_*: HDF5 1.10 trusts them). */
#include "data/h5io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "data/dataset.h"

#define MAX_FIXED_STRING 65536 /* longest fixed-length string attribute read */

/* --- names of types and shapes ------------------------------------------------ */

void h5io_type_name(hid_t t, char *buf, size_t len)
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

void h5io_shape_name(hid_t s, char *buf, size_t len)
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

int h5io_int_type(hid_t t, struct h5io_int *it)
{
    if (H5Tget_class(t) != H5T_INTEGER || H5Tget_size(t) < 1 || H5Tget_size(t) > 8)
        return -1;
    it->bytes = (int8_t)H5Tget_size(t);
    it->is_signed = H5Tget_sign(t) != H5T_SGN_NONE;
    return 0;
}

/* --- existence -------------------------------------------------------------------- */

int h5io_exists(hid_t loc, const char *path)
{
    char part[256];
    if (path[0] != '/')
        return H5Lexists(loc, path, H5P_DEFAULT) > 0;
    for (const char *p = strchr(path + 1, '/');; p = strchr(p + 1, '/')) {
        size_t n = p ? (size_t)(p - path) : strlen(path);
        if (n >= sizeof part)
            return 0;
        memcpy(part, path, n);
        part[n] = '\0';
        if (H5Lexists(loc, part, H5P_DEFAULT) <= 0)
            return 0;
        if (!p)
            return 1;
    }
}

int h5io_has_attr(hid_t loc, const char *name)
{
    return H5Aexists(loc, name) > 0;
}

/* --- attributes -------------------------------------------------------------------- */

/* "/", "/group": where an attribute is, for messages. */
static void loc_name(hid_t loc, char *buf, size_t len)
{
    if (H5Iget_name(loc, buf, len) <= 0)
        snprintf(buf, len, "?");
}

/* Open scalar attribute name of loc, its type in *type; -1 + err (nothing
 * left open) when missing or not a scalar. */
static hid_t attr_open(hid_t loc, const char *file, const char *name, hid_t *type, char *err,
                       size_t errlen)
{
    char where[256];
    loc_name(loc, where, sizeof where);
    if (H5Aexists(loc, name) <= 0)
        return errorf(err, errlen, "%s: missing attribute '%s' on %s", file, name, where);
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    hid_t t = a < 0 ? -1 : H5Aget_type(a);
    hid_t s = a < 0 ? -1 : H5Aget_space(a);
    int rc = 0;
    char shape[96];
    if (a < 0 || t < 0 || s < 0)
        rc = errorf(err, errlen, "%s: cannot read attribute '%s' (corrupt?)", file, name);
    else if (H5Sget_simple_extent_type(s) != H5S_SCALAR) {
        h5io_shape_name(s, shape, sizeof shape);
        rc = errorf(err, errlen, "%s: attribute '%s' has shape %s, expected a scalar", file, name,
                    shape);
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

static int wrong_type(hid_t t, const char *file, const char *name, const char *expected,
                      char *err, size_t errlen)
{
    char tn[32];
    h5io_type_name(t, tn, sizeof tn);
    return errorf(err, errlen, "%s: attribute '%s' has type %s, expected %s", file, name, tn,
                  expected);
}

int h5io_attr_read_i64(hid_t loc, const char *file, const char *name, int64_t *v, char *err,
                       size_t errlen)
{
    hid_t t, a = attr_open(loc, file, name, &t, err, errlen);
    if (a < 0)
        return -1;
    struct h5io_int it;
    int rc = 0;
    uint64_t u = 0;
    if (h5io_int_type(t, &it)) {
        rc = wrong_type(t, file, name, "an integer", err, errlen);
    } else if (!it.is_signed && it.bytes == 8) {
        if (H5Aread(a, H5T_NATIVE_UINT64, &u) < 0)
            rc = errorf(err, errlen, "%s: cannot read attribute '%s' (corrupt?)", file, name);
        else if (u > (uint64_t)INT64_MAX)
            rc = errorf(err, errlen, "%s: attribute '%s' = %llu does not fit int64", file, name,
                        (unsigned long long)u);
        *v = (int64_t)u;
    } else if (H5Aread(a, H5T_NATIVE_INT64, v) < 0)
        rc = errorf(err, errlen, "%s: cannot read attribute '%s' (corrupt?)", file, name);
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

int h5io_attr_read_f64(hid_t loc, const char *file, const char *name, double *v, char *err,
                       size_t errlen)
{
    hid_t t, a = attr_open(loc, file, name, &t, err, errlen);
    if (a < 0)
        return -1;
    int rc = 0;
    if (H5Tget_class(t) != H5T_FLOAT || H5Tget_size(t) > 8)
        rc = wrong_type(t, file, name, "a float", err, errlen);
    else if (H5Aread(a, H5T_NATIVE_DOUBLE, v) < 0)
        rc = errorf(err, errlen, "%s: cannot read attribute '%s' (corrupt?)", file, name);
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

int h5io_attr_read_str(hid_t loc, const char *file, const char *name, char *buf, size_t cap,
                       char *err, size_t errlen)
{
    hid_t t, a = attr_open(loc, file, name, &t, err, errlen);
    if (a < 0)
        return -1;
    int rc = 0;
    hid_t mt = -1;
    size_t n = 0;
    buf[0] = 0;
    char where[256], what[400];
    loc_name(loc, where, sizeof where);
    snprintf(what, sizeof what, "attribute '%s' on %s", name, where);
    if (H5Tget_class(t) != H5T_STRING) {
        rc = wrong_type(t, file, name, "a string", err, errlen);
    } else if (H5Tis_variable_str(t) > 0) {
        char *s = NULL;
        if (dataset_h5_vlen_check(a, file, what, err, errlen))
            rc = -1; /* a damaged global heap: not read */
        else if ((mt = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(mt, H5T_VARIABLE) < 0 ||
                 H5Tset_cset(mt, H5Tget_cset(t)) < 0 || H5Aread(a, mt, &s) < 0)
            rc = errorf(err, errlen, "%s: cannot read attribute '%s' (corrupt?)", file, name);
        else if ((n = strlen(s ? s : "")) >= cap)
            rc = errorf(err, errlen, "%s: attribute '%s' is too long (%zu bytes, at most %zu)",
                        file, name, n, cap - 1);
        else
            memcpy(buf, s ? s : "", n + 1);
        if (s)
            H5free_memory(s);
    } else {
        const size_t size = H5Tget_size(t);
        char *s = NULL;
        if (size == 0 || size > MAX_FIXED_STRING)
            rc = errorf(err, errlen, "%s: attribute '%s' is a string of %zu bytes, expected 1 "
                        "to %d", file, name, size, MAX_FIXED_STRING);
        if (!rc) { /* the file's own type: same size, padding and character set */
            s = xcalloc(size + 1, 1);
            if ((mt = H5Tcopy(t)) < 0 || H5Aread(a, mt, s) < 0)
                rc = errorf(err, errlen, "%s: cannot read attribute '%s' (corrupt?)", file, name);
        }
        if (!rc) {
            n = strnlen(s, size);
            if (H5Tget_strpad(t) == H5T_STR_SPACEPAD)
                while (n && s[n - 1] == ' ')
                    n--;
            if (n >= cap)
                rc = errorf(err, errlen, "%s: attribute '%s' is too long (%zu bytes, at most "
                            "%zu)", file, name, n, cap - 1);
            else {
                memcpy(buf, s, n);
                buf[n] = 0;
            }
        }
        free(s);
    }
    if (mt >= 0) H5Tclose(mt);
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

int h5io_attr_read_range(hid_t loc, const char *file, const char *name, int64_t lo, int64_t hi,
                         int64_t *v, char *err, size_t errlen)
{
    if (h5io_attr_read_i64(loc, file, name, v, err, errlen))
        return -1;
    if (*v < lo || *v > hi)
        return errorf(err, errlen, "%s: attribute '%s' = %lld is out of range [%lld, %lld]", file,
                      name, (long long)*v, (long long)lo, (long long)hi);
    return 0;
}

/* --- datasets ----------------------------------------------------------------------- */

static const char *class_name(H5T_class_t c)
{
    switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "float";
    case H5T_STRING: return "string";
    default: return "another class";
    }
}

hid_t h5io_dset_open(hid_t loc, const char *file, const char *name, H5T_class_t cls, int rank,
                     const int64_t *dims, int64_t *got, hid_t dapl, char *err, size_t errlen)
{
    if (!h5io_exists(loc, name))
        return errorf(err, errlen, "%s: missing dataset %s", file, name);
    hid_t d = H5Dopen2(loc, name, dapl);
    if (d < 0)
        return errorf(err, errlen, "%s: %s is not a readable dataset", file, name);
    hid_t t = H5Dget_type(d), s = H5Dget_space(d);
    int nd = s >= 0 ? H5Sget_simple_extent_ndims(s) : -1;
    char bad[160] = "";
    if (t < 0 || s < 0 || nd < 0)
        snprintf(bad, sizeof bad, "is unreadable");
    else if (H5Tget_class(t) != cls || (cls != H5T_STRING && H5Tget_size(t) > 8))
        snprintf(bad, sizeof bad, "is %s of %zu bytes, expected %s", class_name(H5Tget_class(t)),
                 H5Tget_size(t), class_name(cls));
    else if (nd != rank)
        snprintf(bad, sizeof bad, "has rank %d, expected %d", nd, rank);
    else {
        hsize_t dd[2] = {0, 0}; /* nd == rank <= 2: fits */
        H5Sget_simple_extent_dims(s, dd, NULL);
        for (int k = 0; k < rank; k++) {
            got[k] = (int64_t)dd[k];
            if (dims[k] >= 0 && got[k] != dims[k] && !bad[0])
                snprintf(bad, sizeof bad, "has %lld in dimension %d, expected %lld",
                         (long long)got[k], k, (long long)dims[k]);
        }
    }
    if (t >= 0)
        H5Tclose(t);
    if (s >= 0)
        H5Sclose(s);
    /* the storage must hold every value (HDF5 1.10 copies past a short compact buffer or
     * chunk, or checksums before a chunk shorter than its checksum, rather than refusing) */
    char what[300];
    snprintf(what, sizeof what, "dataset %s", name);
    if (bad[0] || dataset_h5_storage_check(d, file, what, err, errlen)) {
        H5Dclose(d);
        return bad[0] ? errorf(err, errlen, "%s: dataset %s %s", file, name, bad) : -1;
    }
    return d;
}

int h5io_has_checksum(hid_t d)
{
    hid_t dcpl = H5Dget_create_plist(d);
    unsigned flags, fc;
    size_t ne = 0;
    int ok = dcpl >= 0 &&
             H5Pget_filter_by_id2(dcpl, H5Z_FILTER_FLETCHER32, &flags, &ne, NULL, 0, NULL, &fc) >= 0;
    if (dcpl >= 0)
        H5Pclose(dcpl);
    return ok;
}

int64_t h5io_dset_chunk_rows(hid_t d)
{
    hid_t dcpl = H5Dget_create_plist(d);
    hsize_t dims[H5S_MAX_RANK] = {0};
    int64_t rows = 0;
    if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_chunk(dcpl, H5S_MAX_RANK, dims) > 0)
        rows = (int64_t)dims[0];
    if (dcpl >= 0)
        H5Pclose(dcpl);
    return rows;
}

int h5io_read_rows(const struct h5io *h, hid_t d, hid_t mtype, int64_t r0, int64_t stride,
                   int64_t n, int64_t cols, void *buf)
{
    const int mpi = h && h->mpi;
    if (n == 0 && !mpi)
        return 0;
    const int nd = cols > 0 ? 2 : 1;
    hsize_t start[2] = {(hsize_t)r0, 0}, step[2] = {(hsize_t)(stride > 0 ? stride : 1), 1};
    hsize_t count[2] = {(hsize_t)n, (hsize_t)cols}, one[2] = {1, 1};
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(nd, n > 0 ? count : one, NULL);
    int rc = fs < 0 || ms < 0 ? -1 : 0;
    if (!rc && n == 0)
        rc = H5Sselect_none(fs) < 0 || H5Sselect_none(ms) < 0 ? -1 : 0;
    else if (!rc)
        rc = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, step, count, NULL) < 0 ? -1 : 0;
    if (!rc && H5Dread(d, mtype, ms, fs, h ? h->xfer : H5P_DEFAULT, buf) < 0)
        rc = -1;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return rc;
}

hid_t h5io_dset_describe(hid_t loc, const char *name, hid_t dapl, struct h5io_info *info)
{
    memset(info, 0, sizeof *info);
    info->cls = H5T_NO_CLASS;
    info->rank = -1;
    hid_t d = H5Dopen2(loc, name, dapl);
    if (d < 0)
        return -1;
    hid_t t = H5Dget_type(d), s = H5Dget_space(d);
    if (t >= 0) {
        info->cls = H5Tget_class(t);
        info->is_int = h5io_int_type(t, &info->it) == 0;
        h5io_type_name(t, info->type, sizeof info->type);
        H5Tclose(t);
    }
    if (s >= 0) {
        h5io_shape_name(s, info->shape, sizeof info->shape);
        hsize_t dims[H5S_MAX_RANK];
        int nd = H5Sget_simple_extent_ndims(s);
        if (H5Sget_simple_extent_type(s) == H5S_SIMPLE && nd >= 1 && nd <= H5S_MAX_RANK &&
            H5Sget_simple_extent_dims(s, dims, NULL) >= 0) {
            info->rank = nd;
            for (int k = 0; k < nd && k < 2; k++)
                info->dims[k] = (int64_t)dims[k];
        }
        H5Sclose(s);
    }
    return d;
}

hid_t h5io_dapl_cache(size_t bytes)
{
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    if (dapl >= 0 && H5Pset_chunk_cache(dapl, 12421, bytes, 0.75) < 0) {
        H5Pclose(dapl);
        dapl = -1;
    }
    return dapl;
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

char **h5io_read_strings(hid_t loc, const char *file, const char *name, int64_t n, char *err,
                         size_t errlen)
{
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    hid_t t = d < 0 ? -1 : H5Dget_type(d), s = d < 0 ? -1 : H5Dget_space(d), mt = -1;
    char **out = NULL;
    hsize_t dim = 0;
    int bad = 0;
    if (d >= 0 && (t < 0 || s < 0 || H5Tget_class(t) != H5T_STRING ||
                   H5Sget_simple_extent_type(s) != H5S_SIMPLE ||
                   H5Sget_simple_extent_ndims(s) != 1 ||
                   H5Sget_simple_extent_dims(s, &dim, NULL) < 0))
        bad = errorf(err, errlen, "%s: %s is not a 1-D dataset of strings", file, name);
    else if (d >= 0 && (int64_t)dim != n)
        bad = errorf(err, errlen, "%s: %s has %lld strings, expected %lld", file, name,
                     (long long)dim, (long long)n);
    else if (d >= 0)
        bad = dataset_h5_storage_check(d, file, name, err, errlen);
    if (bad) {
        H5Dclose(d);
        if (t >= 0) H5Tclose(t);
        if (s >= 0) H5Sclose(s);
        return NULL;
    }
    if (d >= 0 && dataset_h5_vlen_check(d, file, name, err, errlen)) {
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
        errorf(err, errlen, "%s: cannot read %s (truncated or corrupt file?)", file, name);
    if (mt >= 0) H5Tclose(mt);
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    if (d >= 0) H5Dclose(d);
    return out;
}

/* --- group members ------------------------------------------------------------------ */

struct members {
    int (*fn)(const char *name, void *data);
    void *data;
    int rc;
};

static herr_t member_cb(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    (void)g;
    (void)info;
    struct members *m = data;
    m->rc = m->fn(name, m->data);
    return m->rc ? 1 : 0;
}

int h5io_members(hid_t loc, const char *file, const char *group,
                 int (*fn)(const char *name, void *data), void *data, char *err, size_t errlen)
{
    if (!h5io_exists(loc, group))
        return errorf(err, errlen, "%s: missing group %s", file, group);
    struct members m = {fn, data, 0};
    /* native order: a group with its links in a fractal heap (dense storage, as written
     * before the links were kept in the object header) is walked in its name index,
     * not copied into a table first (HDF5 1.10 frees the table's unfilled entries
     * when a damaged link fails to decode: a wild free) */
    if (H5Literate_by_name(loc, group, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, member_cb, &m,
                           H5P_DEFAULT) < 0 && m.rc == 0)
        return errorf(err, errlen, "%s: group %s cannot be listed (corrupt?)", file, group);
    return m.rc;
}

struct links {
    int (*fn)(const char *name, int hard, void *data);
    void *data;
    int rc;
};

static herr_t link_cb(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    (void)g;
    struct links *l = data;
    l->rc = l->fn(name, info->type == H5L_TYPE_HARD, l->data);
    return l->rc ? 1 : 0;
}

int h5io_links(hid_t loc, const char *file, const char *group,
               int (*fn)(const char *name, int hard, void *data), void *data, char *err,
               size_t errlen)
{
    struct links l = {fn, data, 0};
    if (H5Literate_by_name(loc, group, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, link_cb, &l,
                           H5P_DEFAULT) < 0 && l.rc == 0)
        return errorf(err, errlen, "%s: group %s cannot be listed (corrupt?)", file, group);
    return l.rc;
}

int h5io_obj_kind(hid_t loc, const char *path)
{
    H5O_info_t oi;
    if (H5Oget_info_by_name2(loc, path, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
        return -1;
    return oi.type == H5O_TYPE_GROUP ? 1 : oi.type == H5O_TYPE_DATASET ? 0 : 2;
}

hid_t h5io_obj_open(hid_t loc, const char *path)
{
    return H5Oopen(loc, path, H5P_DEFAULT);
}
