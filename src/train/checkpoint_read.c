/* checkpoint_read: verifying and loading checkpoints; see checkpoint.h.
 *
 * A checkpoint is input like any other: every attribute and dataset used is
 * checked for its class, size, rank and shape before anything is read into
 * a buffer (the h5_* helpers below, used for every object), and its values
 * for their range, with the file and the object named in the error.
 * checkpoint_verify reads every dataset back in blocks: HDF5 verifies each
 * chunk's Fletcher-32 checksum (and the metadata checksums of the v2
 * headers) on the way, and every float must be finite. */
#include "train/checkpoint.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/check.h"
#include "base/log.h"
#include "data/dataset.h"
#include "train/checkpoint_priv.h"

#define VERIFY_BLOCK_VALUES ((hsize_t)1 << 20)
#define MAX_STEP ((int64_t)1 << 52) /* any real run: the planner's indices stay far below */

/* --- validating helpers: 0, or -1 with err naming file and object ----------------- */

/* name exists: each of its components, so that a missing group is an error
 * rather than an HDF5 failure. */
static int h5_exists(hid_t f, const char *name)
{
    char part[256];
    for (const char *p = strchr(name + 1, '/');; p = strchr(p + 1, '/')) {
        size_t n = p ? (size_t)(p - name) : strlen(name);
        if (n >= sizeof part)
            return 0;
        memcpy(part, name, n);
        part[n] = '\0';
        if (H5Lexists(f, part, H5P_DEFAULT) <= 0)
            return 0;
        if (!p)
            return 1;
    }
}

static const char *class_name(H5T_class_t c)
{
    switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "float";
    case H5T_STRING: return "string";
    default: return "another class";
    }
}

/* Open attribute name of the root: scalar, of class cls, at most max_size
 * bytes (0: any). Returns the attribute and its type (*type). */
static hid_t h5_attr_open(hid_t f, const char *file, const char *name, H5T_class_t cls,
                          size_t max_size, hid_t *type, char *err, size_t len)
{
    *type = -1;
    if (H5Aexists(f, name) <= 0)
        return errorf(err, len, "%s: missing attribute '%s' (not a freescale checkpoint?)",
                      file, name);
    hid_t a = H5Aopen(f, name, H5P_DEFAULT), s = a >= 0 ? H5Aget_space(a) : -1;
    hid_t t = a >= 0 ? H5Aget_type(a) : -1;
    const char *bad = NULL;
    char found[96] = "";
    if (s < 0 || t < 0) {
        bad = "unreadable";
    } else if (H5Sget_simple_extent_type(s) != H5S_SCALAR) {
        bad = "not a scalar";
        snprintf(found, sizeof found, " (an array of %lld values)",
                 (long long)H5Sget_simple_extent_npoints(s));
    } else if (H5Tget_class(t) != cls) {
        bad = "of the wrong class";
        snprintf(found, sizeof found, " (%s, expected %s)", class_name(H5Tget_class(t)),
                 class_name(cls));
    } else if (max_size && H5Tget_size(t) > max_size) {
        bad = "too wide";
        snprintf(found, sizeof found, " (%zu bytes)", H5Tget_size(t));
    }
    if (s >= 0)
        H5Sclose(s);
    if (bad) {
        if (t >= 0)
            H5Tclose(t);
        if (a >= 0)
            H5Aclose(a);
        return errorf(err, len, "%s: attribute '%s' is %s%s", file, name, bad, found);
    }
    *type = t;
    return a;
}

static int h5_attr_i64(hid_t f, const char *file, const char *name, int64_t *v, char *err,
                       size_t len)
{
    hid_t t, a = h5_attr_open(f, file, name, H5T_INTEGER, 8, &t, err, len);
    if (a < 0)
        return -1;
    int rc = 0;
    if (H5Tget_sign(t) == H5T_SGN_NONE && H5Tget_size(t) == 8) {
        uint64_t u;
        rc = H5Aread(a, H5T_NATIVE_UINT64, &u) < 0 ? -1 : u > INT64_MAX ? -2 : 0;
        *v = (int64_t)u;
    } else {
        rc = H5Aread(a, H5T_NATIVE_INT64, v) < 0 ? -1 : 0;
    }
    H5Tclose(t);
    H5Aclose(a);
    if (rc)
        return errorf(err, len, "%s: attribute '%s': %s", file, name,
                      rc == -2 ? "value out of range" : "cannot be read (corrupt?)");
    return 0;
}

static int h5_attr_f64(hid_t f, const char *file, const char *name, double *v, char *err,
                       size_t len)
{
    hid_t t, a = h5_attr_open(f, file, name, H5T_FLOAT, 8, &t, err, len);
    if (a < 0)
        return -1;
    int rc = H5Aread(a, H5T_NATIVE_DOUBLE, v);
    H5Tclose(t);
    H5Aclose(a);
    if (rc < 0)
        return errorf(err, len, "%s: attribute '%s' cannot be read (corrupt?)", file, name);
    return 0;
}

/* A string attribute (fixed or variable length) into buf[cap]. */
static int h5_attr_str(hid_t f, const char *file, const char *name, char *buf, size_t cap,
                       char *err, size_t len)
{
    hid_t t, a = h5_attr_open(f, file, name, H5T_STRING, 0, &t, err, len);
    if (a < 0)
        return -1;
    int rc = -1;
    hid_t mt = H5Tcopy(H5T_C_S1);
    if (mt >= 0 && H5Tset_cset(mt, H5Tget_cset(t)) < 0) { /* h5py writes UTF-8 */
        H5Tclose(mt);
        mt = -1;
    }
    char what[96];
    snprintf(what, sizeof what, "attribute '%s'", name);
    if (H5Tis_variable_str(t) > 0 && dataset_h5_vlen_check(a, file, what, err, len)) {
        rc = -3; /* a damaged global heap: not read, err says why */
    } else if (H5Tis_variable_str(t) > 0) {
        char *s = NULL;
        if (mt >= 0 && H5Tset_size(mt, H5T_VARIABLE) >= 0 && H5Aread(a, mt, &s) >= 0 && s) {
            rc = strlen(s) < cap ? 0 : -2;
            if (rc == 0)
                memcpy(buf, s, strlen(s) + 1);
            H5free_memory(s);
        }
    } else {
        size_t n = H5Tget_size(t);
        char *s = n < cap ? calloc(n + 1, 1) : NULL;
        rc = n >= cap ? -2 : -1;
        if (s && mt >= 0 && H5Tset_size(mt, n + 1) >= 0 && H5Aread(a, mt, s) >= 0) {
            memcpy(buf, s, n + 1);
            rc = 0;
        }
        free(s);
    }
    if (mt >= 0)
        H5Tclose(mt);
    H5Tclose(t);
    H5Aclose(a);
    if (rc == -3)
        return -1;
    if (rc)
        return errorf(err, len, "%s: attribute '%s' %s", file, name,
                      rc == -2 ? "is too long" : "cannot be read (corrupt?)");
    return 0;
}

/* Open dataset name: class cls, rank `rank`, shape dims[rank] (a dims[k] of
 * -1 accepts any extent; found in got[rank]). *space: its dataspace. */
static hid_t h5_dset_open(hid_t f, const char *file, const char *name, H5T_class_t cls, int rank,
                          const int64_t *dims, int64_t *got, hid_t *space, char *err, size_t len)
{
    *space = -1;
    if (!h5_exists(f, name))
        return errorf(err, len, "%s: missing dataset %s", file, name);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0)
        return errorf(err, len, "%s: %s is not a readable dataset", file, name);
    hid_t t = H5Dget_type(d), s = H5Dget_space(d);
    int nd = s >= 0 ? H5Sget_simple_extent_ndims(s) : -1;
    char bad[160] = "";
    if (t < 0 || s < 0 || nd < 0)
        snprintf(bad, sizeof bad, "is unreadable");
    else if (H5Tget_class(t) != cls || H5Tget_size(t) > 8)
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
    /* the storage must hold every value (HDF5 1.10 copies past a short compact buffer or
     * chunk, or checksums before a chunk shorter than its checksum, rather than refusing) */
    char what[300];
    snprintf(what, sizeof what, "dataset %s", name);
    if (bad[0] || dataset_h5_storage_check(d, file, what, err, len)) {
        if (s >= 0)
            H5Sclose(s);
        H5Dclose(d);
        return bad[0] ? errorf(err, len, "%s: dataset %s %s", file, name, bad) : -1;
    }
    *space = s;
    return d;
}

/* An int64 attribute in [lo, hi]. */
static int h5_attr_range(hid_t f, const char *file, const char *name, int64_t lo, int64_t hi,
                         int64_t *v, char *err, size_t len)
{
    if (h5_attr_i64(f, file, name, v, err, len))
        return -1;
    if (*v < lo || *v > hi)
        return errorf(err, len, "%s: attribute '%s' = %lld is out of range [%lld, %lld]", file,
                      name, (long long)*v, (long long)lo, (long long)hi);
    return 0;
}

/* The progress counters: step, adam_t (<= step), best_epoch (-1 .. step),
 * best_val (-1 or an NDCG in [0, 1]). */
struct ckpt_counters {
    int64_t step, adam_t, best_epoch;
    double best_val;
};

static int read_counters(hid_t f, const char *file, struct ckpt_counters *k, char *err,
                         size_t len)
{
    if (h5_attr_range(f, file, "step", 0, MAX_STEP, &k->step, err, len) ||
        h5_attr_range(f, file, "adam_t", 0, k->step, &k->adam_t, err, len) ||
        h5_attr_range(f, file, "best_epoch", -1, k->step, &k->best_epoch, err, len) ||
        h5_attr_f64(f, file, "best_val", &k->best_val, err, len))
        return -1;
    if (!(k->best_val == -1 || (k->best_val >= 0 && k->best_val <= 1)))
        return errorf(err, len, "%s: attribute 'best_val' = %g is not -1 or an NDCG in [0, 1]",
                      file, k->best_val);
    return 0;
}

/* --- verification ------------------------------------------------------------- */

/* Read dataset name [rows(, cols)] back in blocks: checksums verified by
 * HDF5, floats finite. */
static int verify_dataset(hid_t f, const char *file, const char *name, H5T_class_t cls,
                          int rank, int64_t version, char *err, size_t len)
{
    int64_t any[2] = {-1, -1}, dims[2] = {1, 1};
    hid_t s, d = h5_dset_open(f, file, name, cls, rank, any, dims, &s, err, len);
    if (d < 0)
        return -1;
    int rc = 0;
    hid_t dcpl = H5Dget_create_plist(d);
    unsigned flags, fc;
    size_t ne = 0;
    if (version >= 2 && (dcpl < 0 || H5Pget_filter_by_id2(dcpl, H5Z_FILTER_FLETCHER32, &flags,
                                                          &ne, NULL, 0, NULL, &fc) < 0))
        rc = errorf(err, len, "%s: dataset %s has no checksum (Fletcher-32 filter)", file, name);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    const hsize_t cols = rank == 2 ? (hsize_t)dims[1] : 1, rows = (hsize_t)dims[0];
    const hsize_t step = cols > 0 && cols < VERIFY_BLOCK_VALUES ? VERIFY_BLOCK_VALUES / cols : 1;
    double *buf = xmalloc((size_t)(step * (cols ? cols : 1)) * sizeof *buf);
    for (hsize_t r = 0; rc == 0 && r < rows && cols > 0; r += step) {
        hsize_t n = r + step < rows ? step : rows - r;
        hsize_t start[2] = {r, 0}, count[2] = {n, cols};
        hid_t ms = H5Screate_simple(rank, count, NULL);
        if (ms < 0 || H5Sselect_hyperslab(s, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
            H5Dread(d, H5T_NATIVE_DOUBLE, ms, s, H5P_DEFAULT, buf) < 0)
            rc = errorf(err, len, "%s: dataset %s: rows %llu..%llu cannot be read (checksum "
                        "mismatch: the file is damaged)", file, name,
                        (unsigned long long)r, (unsigned long long)(r + n - 1));
        for (hsize_t i = 0; rc == 0 && i < n * cols; i++)
            if (!isfinite(buf[i]))
                rc = errorf(err, len, "%s: dataset %s: value %g at row %llu is not finite",
                            file, name, buf[i], (unsigned long long)(r + i / cols));
        if (ms >= 0)
            H5Sclose(ms);
    }
    free(buf);
    H5Sclose(s);
    H5Dclose(d);
    return rc;
}

struct verify_walk {
    hid_t f;
    const char *file, *group;
    int64_t version;
    char *err;
    size_t len;
    int rc, n;
};

static herr_t verify_member(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    (void)g;
    (void)info;
    struct verify_walk *w = data;
    char full[512];
    snprintf(full, sizeof full, "%s/%s", w->group, name);
    w->n++;
    w->rc = verify_dataset(w->f, w->file, full, H5T_FLOAT, 1, w->version, w->err, w->len);
    return w->rc ? 1 : 0;
}

/* Every member of group (a dataset [n] of floats). */
static int verify_group(hid_t f, const char *file, const char *group, int64_t version, char *err,
                        size_t len)
{
    if (!h5_exists(f, group))
        return errorf(err, len, "%s: missing group %s", file, group);
    struct verify_walk w = {f, file, group, version, err, len, 0, 0};
    /* native order: a group with its links in a fractal heap (dense storage, as written
     * before the links were kept in the object header) is walked in its name index,
     * not copied into a table first (HDF5 1.10 frees the table's unfilled entries
     * when a damaged link fails to decode: a wild free) */
    if (H5Literate_by_name(f, group, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, verify_member, &w,
                            H5P_DEFAULT) < 0 && w.rc == 0)
        return errorf(err, len, "%s: group %s cannot be listed (corrupt?)", file, group);
    if (w.rc == 0 && w.n == 0)
        return errorf(err, len, "%s: group %s is empty", file, group);
    return w.rc;
}

/* The datasets of table /emb/NAME: weight, and state and steps when there. */
static int verify_table(hid_t f, const char *path, const char *name, int64_t version, char *err,
                        size_t len)
{
    char d[256];
    snprintf(d, sizeof d, "/emb/%s/weight", name);
    if (verify_dataset(f, path, d, H5T_FLOAT, 2, version, err, len))
        return -1;
    snprintf(d, sizeof d, "/emb/%s/state", name);
    if (h5_exists(f, d) && verify_dataset(f, path, d, H5T_FLOAT, 2, version, err, len))
        return -1;
    snprintf(d, sizeof d, "/emb/%s/steps", name);
    if (h5_exists(f, d) && verify_dataset(f, path, d, H5T_INTEGER, 1, version, err, len))
        return -1;
    return 0;
}

struct table_walk {
    hid_t f;
    const char *path;
    int64_t version;
    char *err;
    size_t len;
    int rc;
};

static herr_t verify_table_member(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    (void)g;
    (void)info;
    struct table_walk *w = data;
    if (!strcmp(name, "items"))
        return 0;
    w->rc = verify_table(w->f, w->path, name, w->version, w->err, w->len);
    return w->rc ? 1 : 0;
}

static int verify_open(hid_t f, const char *path, char *err, size_t len)
{
    char format[64];
    int64_t version;
    if (dataset_h5_attrs_check(f, path, "/", err, len) ||
        h5_attr_str(f, path, "format", format, sizeof format, err, len) ||
        h5_attr_i64(f, path, "version", &version, err, len))
        return -1;
    if (strcmp(format, CKPT_FORMAT))
        return errorf(err, len, "%s: attribute 'format' is '%s', expected '%s'", path, format,
                      CKPT_FORMAT);
    if (version < 1 || version > CKPT_VERSION)
        return errorf(err, len, "%s: version %lld, this program reads versions 1 to %d", path,
                      (long long)version, CKPT_VERSION);
    struct ckpt_counters k;
    if (read_counters(f, path, &k, err, len))
        return -1;
    static const char *groups[] = {"/dense", "/dense_m", "/dense_v"};
    for (int i = 0; i < 3; i++)
        if (verify_group(f, path, groups[i], version, err, len))
            return -1;
    if (verify_table(f, path, "items", version, err, len))
        return -1;
    /* every other table (features: /emb/feat.NAME, /emb/proj.NAME) */
    struct table_walk w = {f, path, version, err, len, 0};
    if (H5Literate_by_name(f, "/emb", H5_INDEX_NAME, H5_ITER_NATIVE, NULL, verify_table_member,
                           &w, H5P_DEFAULT) < 0 && w.rc == 0)
        return errorf(err, len, "%s: group /emb cannot be listed (corrupt?)", path);
    return w.rc;
}

int checkpoint_verify(const char *path, char *err, size_t len)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (access(path, R_OK) != 0)
        return errorf(err, len, "%s: %s", path, strerror(errno));
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return errorf(err, len, "%s: not a readable HDF5 file (truncated or corrupt?)", path);
    int rc = verify_open(f, path, err, len);
    H5Fclose(f);
    return rc;
}

int checkpoint_identity(const char *path, struct ckpt_identity *id, char *err, size_t len)
{
    memset(id, 0, sizeof *id);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return errorf(err, len, "%s: not a readable HDF5 file (truncated or corrupt?)", path);
    char format[64];
    int rc = dataset_h5_attrs_check(f, path, "/", err, len) ||
             h5_attr_str(f, path, "format", format, sizeof format, err, len) ||
             h5_attr_range(f, path, "step", 0, MAX_STEP, &id->step, err, len);
    if (!rc && strcmp(format, CKPT_FORMAT))
        rc = errorf(err, len, "%s: attribute 'format' is '%s', expected '%s'", path, format,
                    CKPT_FORMAT);
    if (!rc && H5Aexists(f, "run_id") > 0)
        rc = h5_attr_str(f, path, "run_id", id->run_id, sizeof id->run_id, err, len) ||
             h5_attr_str(f, path, "run_params", id->run_params, sizeof id->run_params, err, len);
    if (!rc && H5Aexists(f, "written_ns") > 0)
        rc = h5_attr_i64(f, path, "written_ns", &id->written_ns, err, len);
    H5Fclose(f);
    return rc ? -1 : 0;
}

/* --- loading ---------------------------------------------------------------- */

/* Attribute name = want; -1 with err naming what differs. */
static int expect_attr(hid_t f, const char *path, const char *name, int64_t want,
                       const char *what, char *err, size_t len)
{
    int64_t v;
    char e[1024];
    if (h5_attr_i64(f, path, name, &v, e, sizeof e))
        return errorf(err, len, "checkpoint %s", e);
    if (v != want)
        return errorf(err, len, "checkpoint %s: %s = %lld in the checkpoint, %lld in this run: "
                      "it belongs to another model or dataset",
                      path, what, (long long)v, (long long)want);
    return 0;
}

static void read_dense(hid_t f, const char *path, const char *group, struct trainer *tr,
                       float *const *which)
{
    char err[1024];
    for (int i = 0; i < tr->m.nparams; i++) {
        struct dense_tensor *t = &tr->m.params[i];
        char name[128];
        snprintf(name, sizeof name, "%s/%s", group, t->name);
        int64_t want[1] = {t->n}, got[1];
        hid_t s, d = h5_dset_open(f, path, name, H5T_FLOAT, 1, want, got, &s, err, sizeof err);
        if (d < 0)
            fatal("checkpoint %s (it belongs to another model?)", err);
        float *h = xmalloc((size_t)t->n * sizeof *h);
        if (H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, h) < 0)
            fatal("checkpoint %s: cannot read %s (truncated or corrupt?)", path, name);
        for (int64_t k = 0; k < t->n; k++)
            if (!isfinite(h[k]))
                fatal("checkpoint %s: %s[%lld] = %g is not finite", path, name, (long long)k,
                      h[k]);
        tr->be->to_device(which ? which[i] : t->w, h, (size_t)t->n * sizeof *h);
        free(h);
        H5Sclose(s);
        H5Dclose(d);
    }
}

/* This shard's rows: ids shard, shard + G, ... -> slots 0, 1, ... */
static void read_strided(hid_t f, const char *path, const char *name, hid_t mem_type,
                         int64_t cols, const struct emb_table *t, void *buf)
{
    char err[1024];
    const int nd = cols > 0 ? 2 : 1;
    int64_t want[2] = {t->conf.rows + 1, cols}, got[2];
    hid_t fs, ms, d = h5_dset_open(f, path, name, mem_type == H5T_NATIVE_FLOAT ? H5T_FLOAT
                                   : H5T_INTEGER, nd, want, got, &fs, err, sizeof err);
    if (d < 0)
        fatal("checkpoint %s", err);
    int64_t count = (t->conf.rows - t->shard) / t->G + 1;
    hsize_t start[2] = {(hsize_t)t->shard, 0}, stride[2] = {(hsize_t)t->G, 1};
    hsize_t cnt[2] = {(hsize_t)count, (hsize_t)cols};
    H5_CHECK(ms = H5Screate_simple(nd, cnt, NULL));
    H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, stride, cnt, NULL));
    if (H5Dread(d, mem_type, ms, fs, H5P_DEFAULT, buf) < 0)
        fatal("checkpoint %s: cannot read %s (truncated or corrupt?)", path, name);
    H5_CHECK(H5Sclose(ms));
    H5_CHECK(H5Sclose(fs));
    H5_CHECK(H5Dclose(d));
}

/* The shard's n slots just read (w, state, steps as the table lays them
 * out): floats finite, lazy Adam counts in [0, step]. */
static void check_shard(const char *path, const struct emb_table *t, int64_t n, const float *w,
                        const float *state, const int64_t *steps, int64_t step)
{
    const char *name = t->conf.name;
    for (int64_t i = 0; i < n * t->width; i++)
        if (!isfinite(w[i]))
            fatal("checkpoint %s: /emb/%s/weight: a value of row %lld is not finite", path,
                  name, (long long)((i / t->width) * t->G + t->shard));
    for (int64_t i = 0; t->state_floats && i < n * t->state_floats; i++)
        if (!isfinite(state[i]))
            fatal("checkpoint %s: /emb/%s/state: a value of row %lld is not finite", path, name,
                  (long long)((i / t->state_floats) * t->G + t->shard));
    for (int64_t i = 0; steps && i < n; i++)
        if (steps[i] < 0 || steps[i] > step)
            fatal("checkpoint %s: /emb/%s/steps: row %lld has %lld steps, outside [0, %lld]",
                  path, name, (long long)(i * t->G + t->shard), (long long)steps[i],
                  (long long)step);
}

/* Table t's rows of this rank (its shard, or all of a replicated table):
 * straight into a host table, through host buffers into a device one. */
static void read_table(hid_t f, const char *path, struct emb_table *t, int64_t step)
{
    char name[256];
    snprintf(name, sizeof name, "/emb/%s", t->conf.name);
    if (!h5_exists(f, name))
        fatal("checkpoint %s: no table %s: it was written by a run without this %s (the "
              "features it trained are in its parameters: features.*)", path, name,
              strncmp(t->conf.name, "proj.", 5) ? "table" : "feature width (a projection)");
    const int64_t n = (t->conf.rows - t->shard) / t->G + 1, sf = t->state_floats;
    const int host = backend_is_host(t->be);
    float *w = host ? t->w : xmalloc((size_t)(n * t->width) * sizeof *w);
    float *state = !sf ? NULL : host ? t->state : xmalloc((size_t)(n * sf) * sizeof *state);
    int64_t *steps = !t->steps ? NULL : host ? t->steps : xmalloc((size_t)n * sizeof *steps);
    snprintf(name, sizeof name, "/emb/%s/weight", t->conf.name);
    read_strided(f, path, name, H5T_NATIVE_FLOAT, t->width, t, w);
    snprintf(name, sizeof name, "/emb/%s/state", t->conf.name);
    if (state)
        read_strided(f, path, name, H5T_NATIVE_FLOAT, sf, t, state);
    snprintf(name, sizeof name, "/emb/%s/steps", t->conf.name);
    if (steps)
        read_strided(f, path, name, H5T_NATIVE_INT64, 0, t, steps);
    check_shard(path, t, n, w, state, steps, step);
    if (host) {
        memset(t->ready, 0xff, (size_t)(t->local_rows / 8 + 1)); /* every row is loaded */
    } else {
        emb_table_set_slots(t, 0, n, w, state, steps);
        free(w);
        free(state);
        free(steps);
    }
}

/* Every table of the checkpoint is one of the run's. */
struct table_names {
    const struct trainer *tr;
    char extra[128];
};

static herr_t find_extra(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    (void)g;
    (void)info;
    struct table_names *tn = data;
    if (emb_registry_find((struct emb_registry *)&tn->tr->reg, name))
        return 0;
    snprintf(tn->extra, sizeof tn->extra, "%s", name);
    return 1;
}

/* A subspace table (embedding.subspace_k > 0) stores c[i] of k values and
 * rebuilds its rows from F and U, which derive from the seed: the
 * checkpoint's k, basis and seed must be the run's; a plain table loads only
 * a plain checkpoint (subspace_k absent or 0). */
static int subspace_check(hid_t f, const char *path, const struct trainer *tr, char *err,
                          size_t len)
{
    const struct emb_table_conf *ec = &tr->items->conf;
    int64_t k = 0;
    char e[1024];
    if (H5Aexists(f, "subspace_k") > 0 && h5_attr_i64(f, path, "subspace_k", &k, e, sizeof e))
        return errorf(err, len, "checkpoint %s", e);
    if (k != ec->subspace_k && (k == 0 || ec->subspace_k == 0))
        return errorf(err, len, "checkpoint %s: %s, this run %s: a plain table and a "
                      "subspace-factorised one (embedding.subspace_k) hold different values; "
                      "resume with embedding.subspace_k = %lld",
                      path, k ? "a subspace table's checkpoint" : "a plain table's checkpoint",
                      ec->subspace_k ? "trains a subspace table" : "a plain table",
                      (long long)k);
    if (ec->subspace_k == 0)
        return 0;
    return expect_attr(f, path, "subspace_k", ec->subspace_k, "embedding.subspace_k", err,
                       len) ||
                   expect_attr(f, path, "subspace_basis", ec->subspace_identity,
                               "embedding.subspace_basis (0 random, 1 identity)", err, len) ||
                   expect_attr(f, path, "seed", (int64_t)tr->conf.seed,
                               "train.seed (the subspace table's F and U derive from it)", err,
                               len)
               ? -1
               : 0;
}

/* The file's model, table and dataset are the run's. */
static int compat_checks(hid_t f, const char *path, const struct trainer *tr, char *err,
                         size_t len)
{
    const struct model_conf *mc = &tr->m.conf;
    return expect_attr(f, path, "num_items", tr->ds.num_items, "num_items of the dataset", err,
                       len) ||
                   expect_attr(f, path, "model_type", mc->type, "model.type (0 hstu, 1 sasrec)",
                               err, len) ||
                   expect_attr(f, path, "dim", mc->d, "model.dim", err, len) ||
                   expect_attr(f, path, "layers", mc->layers, "model.layers", err, len) ||
                   expect_attr(f, path, "heads", mc->heads, "model.heads", err, len) ||
                   expect_attr(f, path, "max_seq_len", mc->max_len, "data.max_seq_len", err,
                               len) ||
                   expect_attr(f, path, "time_bias", mc->time_bias,
                               "time bias (timestamps in use)", err, len) ||
                   expect_attr(f, path, "emb_optimizer", tr->items->conf.optim.kind,
                               "embedding.optimizer (0 sgd, 1 adagrad, 2 adam)", err, len) ||
                   subspace_check(f, path, tr, err, len)
               ? -1
               : 0;
}

int checkpoint_compatible(const struct trainer *tr, const char *path, char *err, size_t len)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return errorf(err, len, "train.resume = %s: not a readable HDF5 file (truncated or "
                      "corrupt?)", path);
    int rc = compat_checks(f, path, tr, err, len);
    H5Fclose(f);
    return rc;
}

void checkpoint_read(struct trainer *tr, const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (access(path, R_OK) != 0)
        fatal("train.resume = %s: %s", path, strerror(errno));
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        fatal("train.resume = %s: not a readable HDF5 file (truncated or corrupt?)", path);
    char err[1024], format[64];
    if (dataset_h5_attrs_check(f, path, "/", err, sizeof err) ||
        h5_attr_str(f, path, "format", format, sizeof format, err, sizeof err))
        fatal("checkpoint %s", err);
    if (strcmp(format, CKPT_FORMAT))
        fatal("checkpoint %s: attribute 'format' is '%s', expected '%s'", path, format,
              CKPT_FORMAT);
    int64_t version;
    if (h5_attr_range(f, path, "version", 1, CKPT_VERSION, &version, err, sizeof err))
        fatal("checkpoint %s", err);
    char cerr[2048];
    if (compat_checks(f, path, tr, cerr, sizeof cerr))
        fatal("%s", cerr);
    struct ckpt_counters k;
    if (read_counters(f, path, &k, err, sizeof err))
        fatal("checkpoint %s", err);
    tr->step = k.step;
    dense_optim_set_steps(&tr->optim, k.adam_t);
    tr->best_epoch = k.best_epoch;
    tr->best_val = k.best_val;
    tr->val_epoch = -1; /* absent: written before it was recorded, validated again */
    if (H5Aexists(f, "val_epoch") > 0 &&
        h5_attr_range(f, path, "val_epoch", -1, k.step, &tr->val_epoch, err, sizeof err))
        fatal("checkpoint %s", err);
    read_dense(f, path, "/dense", tr, NULL);
    read_dense(f, path, "/dense_m", tr, dense_optim_moments(&tr->optim, 0));
    read_dense(f, path, "/dense_v", tr, dense_optim_moments(&tr->optim, 1));
    /* every table: the item table, the feature tables (any rank count) */
    struct table_names tn = {.tr = tr};
    if (H5Literate_by_name(f, "/emb", H5_INDEX_NAME, H5_ITER_NATIVE, NULL, find_extra, &tn,
                           H5P_DEFAULT) < 0 && !tn.extra[0])
        fatal("checkpoint %s: group /emb cannot be listed (corrupt?)", path);
    if (tn.extra[0])
        fatal("checkpoint %s: it holds table /emb/%s, which this run does not train: resume "
              "with the features it was written with (its parameters: features.*)", path,
              tn.extra);
    for (int k = 0; k < tr->reg.n; k++)
        read_table(f, path, &tr->reg.tables[k], tr->step);
    H5_CHECK(H5Fclose(f));
}
