/* h5io: opening, creating and writing HDF5 files, serially or through
 * MPI-IO; see h5io.h (the checked reads: h5io_read.c). */
#include "data/h5io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "comm/comm.h"

#define COMPACT_MAX 4096 /* links and attributes kept in the object header */

void h5io_quiet(void)
{
    static int done = 0;
    if (!done) {
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
        done = 1;
    }
}

/* --- failures ------------------------------------------------------------------ */

struct walk {
    int errnum;
    char desc[256], mpi[200];
};

/* HDF5 reports a failed write()/open() as "... errno = N, error message =
 * '...'" somewhere on its stack, an MPI-IO failure as "MPI error string is
 * '...'": keep those, and the innermost description. */
static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    struct walk *w = data;
    const char *d = e->desc ? e->desc : "";
    const char *p = strstr(d, "errno = ");
    if (p && w->errnum == 0)
        w->errnum = atoi(p + 8);
    p = strstr(d, "MPI error string is ");
    if (p && !w->mpi[0])
        snprintf(w->mpi, sizeof w->mpi, "%s", p + 20);
    if (n == 0 && d[0])
        snprintf(w->desc, sizeof w->desc, "%s", d);
    return 0;
}

/* The call `what` failed, errno saved_errno right after it: record it and
 * call on_fail (once). Returns -1. */
static int fail(struct h5io *h, const char *what, int saved_errno)
{
    if (h->failed)
        return -1;
    struct walk w = {0, "", ""};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_cb, &w);
    h->failed = 1;
    h->errnum = w.errnum ? w.errnum : saved_errno;
    snprintf(h->what, sizeof h->what, "%s", what);
    if (w.mpi[0])
        snprintf(h->desc, sizeof h->desc, "%.120s: MPI-IO: %.120s", w.desc, w.mpi);
    else
        snprintf(h->desc, sizeof h->desc, "%s", w.desc);
    if (h->on_fail)
        h->on_fail(h);
    return -1;
}

/* Run an HDF5 call of a writer: on failure, fail() and return -1 from the
 * function (or `ret`). */
#define TRY_RET(h, ret, call)                                                            \
    do {                                                                                 \
        errno = 0;                                                                       \
        if ((call) < 0) {                                                                \
            fail((h), #call, errno);                                                     \
            return (ret);                                                                \
        }                                                                                \
    } while (0)
#define TRY(h, call) TRY_RET(h, -1, call)

const char *h5io_failure(const struct h5io *h, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s", h->what, h->desc[0] ? ": " : "", h->desc);
    return buf;
}

/* --- files --------------------------------------------------------------------- */

/* The file-access list: strong close; MPI-IO over c's world when c (each
 * rank reads the metadata it needs itself: the readers' checks differ in
 * what they read, and a collective per attribute costs more than the few
 * KiB of headers on every rank). */
static hid_t make_fapl(struct h5io *h, const struct comm *c, unsigned flags)
{
    const int checksummed = (flags & H5IO_CHECKSUMMED) != 0;
    hid_t fapl;
    TRY(h, fapl = H5Pcreate(H5P_FILE_ACCESS));
    errno = 0;
    if (H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0 ||
        /* superblock v3, v2 object headers, fixed-array chunk indices */
        (checksummed && H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST) < 0) ||
        (c && comm_h5_fapl_mpio(c, COMM_WORLD, fapl, (flags & H5IO_DIRECT) != 0) < 0)) {
        fail(h, "the file-access property list", errno);
        H5Pclose(fapl);
        return -1;
    }
    return fapl;
}

static int set_xfer(struct h5io *h)
{
    h->xfer = H5P_DEFAULT;
    if (!h->mpi)
        return 0;
    TRY(h, h->xfer = H5Pcreate(H5P_DATASET_XFER));
    TRY(h, H5Pset_dxpl_mpio(h->xfer, H5FD_MPIO_COLLECTIVE));
    return 0;
}

static void init(struct h5io *h, const char *path, const struct comm *c)
{
    memset(h, 0, sizeof *h);
    h->f = h->xfer = -1;
    h->mpi = c != NULL;
    snprintf(h->path, sizeof h->path, "%s", path);
    h5io_quiet();
}

int h5io_create(struct h5io *h, const char *path, const struct comm *c, unsigned flags,
                void (*on_fail)(struct h5io *h), void *ctx)
{
    init(h, path, c);
    h->on_fail = on_fail;
    h->ctx = ctx;
    h->checksummed = (flags & H5IO_CHECKSUMMED) != 0;
    hid_t fapl = make_fapl(h, c, flags), fcpl = H5P_DEFAULT;
    if (fapl < 0)
        return -1;
    if (h->checksummed) { /* attributes and links in the (checksummed) object headers,
                             never in a fractal heap (not checksummed; a damaged one
                             crashes HDF5 1.10) */
        TRY(h, fcpl = H5Pcreate(H5P_FILE_CREATE));
        TRY(h, H5Pset_attr_phase_change(fcpl, COMPACT_MAX, COMPACT_MAX));
        TRY(h, H5Pset_link_phase_change(fcpl, COMPACT_MAX, COMPACT_MAX));
    }
    errno = 0;
    h->f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
    int e = errno;
    H5Pclose(fapl);
    if (fcpl != H5P_DEFAULT)
        H5Pclose(fcpl);
    if (h->f < 0)
        return fail(h, "cannot create the file", e);
    return set_xfer(h);
}

int h5io_open_rw(struct h5io *h, const char *path, const struct comm *c, unsigned flags,
                 void (*on_fail)(struct h5io *h), void *ctx)
{
    init(h, path, c);
    h->on_fail = on_fail;
    h->ctx = ctx;
    h->checksummed = (flags & H5IO_CHECKSUMMED) != 0;
    hid_t fapl = make_fapl(h, c, flags);
    if (fapl < 0)
        return -1;
    errno = 0;
    h->f = H5Fopen(path, H5F_ACC_RDWR, fapl);
    int e = errno;
    H5Pclose(fapl);
    if (h->f < 0)
        return fail(h, "cannot open the file to write", e);
    return set_xfer(h);
}

int h5io_open_read(struct h5io *h, const char *path, const struct comm *c, unsigned flags,
                   char *err, size_t errlen)
{
    init(h, path, c);
    hid_t fapl = make_fapl(h, c, flags & H5IO_DIRECT);
    if (fapl >= 0)
        h->f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (fapl >= 0)
        H5Pclose(fapl);
    if (h->f >= 0 && set_xfer(h)) {
        H5Fclose(h->f);
        h->f = -1;
    }
    if (h->f < 0)
        return errorf(err, errlen, "%s: not a readable HDF5 file (truncated or corrupt?)", path);
    return 0;
}

int h5io_close(struct h5io *h)
{
    int rc = 0;
    if (h->xfer >= 0 && h->xfer != H5P_DEFAULT)
        H5Pclose(h->xfer);
    h->xfer = -1;
    if (h->f >= 0) {
        errno = 0;
        rc = H5Fclose(h->f) < 0 ? -1 : 0;
        int e = errno;
        h->f = -1; /* the strong close degree released it, even on failure */
        if (rc)
            fail(h, "H5Fclose", e);
    }
    return rc;
}

void h5io_abandon(struct h5io *h)
{
    if (h->f >= 0 && !h->mpi) {
        H5E_BEGIN_TRY { H5Fclose(h->f); } /* strong close degree: every object goes */
        H5E_END_TRY;
    }
    h->f = -1;
}

/* --- writing -------------------------------------------------------------------- */

hid_t h5io_group(struct h5io *h, hid_t loc, const char *name)
{
    hid_t gcpl = H5P_DEFAULT, g;
    if (h->checksummed) {
        TRY(h, gcpl = H5Pcreate(H5P_GROUP_CREATE));
        TRY(h, H5Pset_link_phase_change(gcpl, COMPACT_MAX, COMPACT_MAX));
    }
    TRY(h, g = H5Gcreate2(loc, name, H5P_DEFAULT, gcpl, H5P_DEFAULT));
    if (gcpl != H5P_DEFAULT)
        TRY(h, H5Pclose(gcpl));
    return g;
}

hid_t h5io_dset_reopen(struct h5io *h, hid_t loc, const char *name)
{
    hid_t d;
    TRY(h, d = H5Dopen2(loc, name, H5P_DEFAULT));
    return d;
}

void h5io_close_obj(struct h5io *h, hid_t id)
{
    if (id < 0)
        return;
    H5I_type_t t = H5Iget_type(id);
    errno = 0;
    herr_t rc = t == H5I_GROUP ? H5Gclose(id) : t == H5I_DATASET ? H5Dclose(id)
                : t == H5I_DATATYPE ? H5Tclose(id) : t == H5I_ATTR ? H5Aclose(id)
                : t == H5I_GENPROP_LST ? H5Pclose(id) : t == H5I_FILE ? H5Fclose(id) : -1;
    if (rc < 0 && h)
        fail(h, "closing an object", errno);
}

static int attr_write(struct h5io *h, hid_t loc, const char *name, hid_t ftype, hid_t mtype,
                      const void *v)
{
    hid_t s, a;
    TRY(h, s = H5Screate(H5S_SCALAR));
    TRY(h, a = H5Acreate2(loc, name, ftype, s, H5P_DEFAULT, H5P_DEFAULT));
    TRY(h, H5Awrite(a, mtype, v));
    TRY(h, H5Aclose(a));
    TRY(h, H5Sclose(s));
    return 0;
}

int h5io_attr_i64(struct h5io *h, hid_t loc, const char *name, int64_t v)
{
    return attr_write(h, loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

int h5io_attr_f64(struct h5io *h, hid_t loc, const char *name, double v)
{
    return attr_write(h, loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

int h5io_attr_str(struct h5io *h, hid_t loc, const char *name, const char *v)
{
    hid_t t;
    TRY(h, t = H5Tcopy(H5T_C_S1));
    TRY(h, H5Tset_size(t, strlen(v) + 1));
    int rc = attr_write(h, loc, name, t, t, v);
    TRY(h, H5Tclose(t));
    return rc;
}

int h5io_attr_utf8(struct h5io *h, hid_t loc, const char *name, const char *v)
{
    hid_t t;
    TRY(h, t = H5Tcopy(H5T_C_S1));
    TRY(h, H5Tset_size(t, H5T_VARIABLE));
    TRY(h, H5Tset_cset(t, H5T_CSET_UTF8));
    int rc = attr_write(h, loc, name, t, t, &v);
    TRY(h, H5Tclose(t));
    return rc;
}

int64_t h5io_chunk_rows(hid_t ftype, int64_t rows, int64_t cols)
{
    const int64_t per_row = (cols > 0 ? cols : 1) * (int64_t)H5Tget_size(ftype);
    int64_t crows = 1;
    while (crows * 2 * per_row <= H5IO_CHUNK_BYTES && crows * 2 <= H5IO_CHUNK_MAX_ROWS &&
           crows * 2 <= rows)
        crows *= 2;
    return crows;
}

hid_t h5io_dset(struct h5io *h, hid_t loc, const char *name, hid_t ftype, int64_t rows,
                int64_t cols, const struct h5io_layout *lay)
{
    const int nd = cols > 0 ? 2 : 1;
    hsize_t dims[2] = {(hsize_t)(lay->extendible ? 0 : rows), (hsize_t)cols};
    hsize_t maxd[2] = {lay->extendible ? H5S_UNLIMITED : (hsize_t)rows, (hsize_t)cols};
    hsize_t chunk[2] = {(hsize_t)lay->chunk_rows, (hsize_t)cols};
    hid_t s, pl, d;
    TRY(h, s = H5Screate_simple(nd, dims, maxd));
    TRY(h, pl = H5Pcreate(H5P_DATASET_CREATE));
    TRY(h, H5Pset_obj_track_times(pl, 0)); /* the same file from the same inputs */
    if (lay->chunk_rows > 0) {
        TRY(h, H5Pset_chunk(pl, nd, chunk));
        if (lay->deflate && !lay->deflate_noshuffle)
            TRY(h, H5Pset_shuffle(pl));
        if (lay->deflate)
            TRY(h, H5Pset_deflate(pl, 1));
        if (lay->checksum)
            TRY(h, H5Pset_fletcher32(pl));
    }
    if (lay->fill_zero) {
        static const char zeros[16];
        H5T_class_t cls = H5Tget_class(ftype);
        TRY(h, H5Pset_fill_time(pl, H5D_FILL_TIME_IFSET));
        if (cls != H5T_STRING)
            TRY(h, H5Pset_fill_value(pl, cls == H5T_FLOAT ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT64,
                                     zeros));
    }
    TRY(h, d = H5Dcreate2(loc, name, ftype, s, H5P_DEFAULT, pl, H5P_DEFAULT));
    TRY(h, H5Pclose(pl));
    TRY(h, H5Sclose(s));
    return d;
}

/* The selection of rows r0, r0 + stride, ... (n) of a [rows(, cols)]
 * dataspace fs, and the memory space of [n(, cols)]; none when n = 0. */
static int select_rows(struct h5io *h, hid_t fs, int64_t r0, int64_t stride, int64_t n,
                       int64_t cols, hid_t *ms)
{
    const int nd = cols > 0 ? 2 : 1;
    hsize_t start[2] = {(hsize_t)r0, 0}, step[2] = {(hsize_t)(stride > 0 ? stride : 1), 1};
    hsize_t count[2] = {(hsize_t)n, (hsize_t)cols}, one[2] = {1, 1};
    TRY(h, *ms = H5Screate_simple(nd, n > 0 ? count : one, NULL));
    if (n == 0) {
        TRY(h, H5Sselect_none(fs));
        TRY(h, H5Sselect_none(*ms));
        return 0;
    }
    TRY(h, H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, step, count, NULL));
    return 0;
}

int h5io_write_rows(struct h5io *h, hid_t d, hid_t mtype, int64_t r0, int64_t stride, int64_t n,
                    int64_t cols, const void *buf)
{
    if (n == 0 && !h->mpi)
        return 0;
    hid_t fs, ms;
    TRY(h, fs = H5Dget_space(d));
    if (select_rows(h, fs, r0, stride, n, cols, &ms))
        return -1;
    TRY(h, H5Dwrite(d, mtype, ms, fs, h->xfer, buf));
    TRY(h, H5Sclose(ms));
    TRY(h, H5Sclose(fs));
    return 0;
}

int h5io_write_row_list(struct h5io *h, hid_t d, hid_t mtype, const int64_t *rows, int64_t n,
                        int64_t cols, const void *buf)
{
    if (n == 0 && !h->mpi)
        return 0;
    const int nd = cols > 0 ? 2 : 1;
    hsize_t count[2] = {(hsize_t)n, (hsize_t)cols}, one[2] = {1, 1};
    hid_t fs, ms;
    TRY(h, fs = H5Dget_space(d));
    TRY(h, ms = H5Screate_simple(nd, n > 0 ? count : one, NULL));
    if (n == 0) {
        TRY(h, H5Sselect_none(fs));
        TRY(h, H5Sselect_none(ms));
    }
    for (int64_t a = 0, b; a < n; a = b) { /* runs [a, b) of consecutive rows */
        for (b = a + 1; b < n && rows[b] == rows[b - 1] + 1; b++)
            ;
        hsize_t start[2] = {(hsize_t)rows[a], 0}, cnt[2] = {(hsize_t)(b - a), (hsize_t)cols};
        TRY(h, H5Sselect_hyperslab(fs, a ? H5S_SELECT_OR : H5S_SELECT_SET, start, NULL, cnt,
                                   NULL));
    }
    TRY(h, H5Dwrite(d, mtype, ms, fs, h->xfer, buf));
    TRY(h, H5Sclose(ms));
    TRY(h, H5Sclose(fs));
    return 0;
}

int h5io_append(struct h5io *h, hid_t d, hid_t mtype, int64_t r0, int64_t n, const void *buf)
{
    if (n == 0)
        return 0;
    hsize_t size = (hsize_t)(r0 + n);
    TRY(h, H5Dset_extent(d, &size));
    return h5io_write_rows(h, d, mtype, r0, 1, n, 0, buf);
}

hid_t h5io_type_copy(struct h5io *h, hid_t t)
{
    hid_t c;
    TRY(h, c = H5Tcopy(t));
    return c;
}

hid_t h5io_str_type(struct h5io *h, size_t size, int utf8)
{
    hid_t t;
    TRY(h, t = H5Tcopy(H5T_C_S1));
    TRY(h, H5Tset_size(t, size ? size : 1));
    TRY(h, H5Tset_strpad(t, H5T_STR_NULLPAD));
    TRY(h, H5Tset_cset(t, utf8 ? H5T_CSET_UTF8 : H5T_CSET_ASCII));
    return t;
}
