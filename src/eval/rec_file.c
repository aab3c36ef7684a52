/* rec_file: guarded temporary output files and HDF5 helpers; see
 * rec_file.h. */
#include "eval/rec_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/check.h"
#include "base/tmpguard.h"

void rec_file_begin(struct rec_file *f, const char *path)
{
    memset(f, 0, sizeof *f);
    if (strlen(path) >= sizeof f->path)
        fatal("%s: path too long", path);
    memcpy(f->path, path, strlen(path) + 1);
    snprintf(f->tmp, sizeof f->tmp, "%s.tmp.%ld", path, (long)getpid());
    tmpguard_begin(f->tmp, 1);
}

void rec_file_commit(struct rec_file *f)
{
    if (rename(f->tmp, f->path) != 0) {
        int e = errno;
        rec_file_abort(f);
        fatal("%s: cannot rename %s into place: %s", f->path, f->tmp, strerror(e));
    }
    tmpguard_end();
}

void rec_file_abort(struct rec_file *f)
{
    unlink(f->tmp);
    tmpguard_end();
}

void rec_fatal(const char *fmt, ...)
{
    va_list ap; /* fatal() removes the guarded temporary (tmpguard.h) */
    va_start(ap, fmt);
    vfatal(fmt, ap);
}

/* --- HDF5 ---------------------------------------------------------------------- */

void rec_h5_attr_str(hid_t loc, const char *name, const char *v)
{
    hid_t t, s, a;
    REC_H5(t = H5Tcopy(H5T_C_S1));
    REC_H5(H5Tset_size(t, H5T_VARIABLE));
    REC_H5(H5Tset_cset(t, H5T_CSET_UTF8));
    REC_H5(s = H5Screate(H5S_SCALAR));
    REC_H5(a = H5Acreate2(loc, name, t, s, H5P_DEFAULT, H5P_DEFAULT));
    REC_H5(H5Awrite(a, t, &v));
    REC_H5(H5Aclose(a));
    REC_H5(H5Sclose(s));
    REC_H5(H5Tclose(t));
}

static void attr_scalar(hid_t loc, const char *name, hid_t ftype, hid_t mtype, const void *v)
{
    hid_t s, a;
    REC_H5(s = H5Screate(H5S_SCALAR));
    REC_H5(a = H5Acreate2(loc, name, ftype, s, H5P_DEFAULT, H5P_DEFAULT));
    REC_H5(H5Awrite(a, mtype, v));
    REC_H5(H5Aclose(a));
    REC_H5(H5Sclose(s));
}

void rec_h5_attr_i64(hid_t loc, const char *name, int64_t v)
{
    attr_scalar(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

void rec_h5_attr_f64(hid_t loc, const char *name, double v)
{
    attr_scalar(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

hid_t rec_h5_create(hid_t loc, const char *name, hid_t ftype, int64_t rows, int64_t cols)
{
    hsize_t dims[2] = {(hsize_t)rows, (hsize_t)cols};
    hid_t s, pl, d;
    REC_H5(s = H5Screate_simple(cols > 0 ? 2 : 1, dims, NULL));
    REC_H5(pl = H5Pcreate(H5P_DATASET_CREATE));
    REC_H5(H5Pset_obj_track_times(pl, 0)); /* the same file from the same inputs */
    REC_H5(H5Pset_fill_time(pl, H5D_FILL_TIME_IFSET));
    if (H5Tget_class(ftype) != H5T_STRING) {
        static const char zeros[16];
        REC_H5(H5Pset_fill_value(pl, H5Tget_class(ftype) == H5T_FLOAT ? H5T_NATIVE_FLOAT
                                                                        : H5T_NATIVE_INT64,
                                   zeros));
    }
    REC_H5(d = H5Dcreate2(loc, name, ftype, s, H5P_DEFAULT, pl, H5P_DEFAULT));
    REC_H5(H5Pclose(pl));
    REC_H5(H5Sclose(s));
    return d;
}

void rec_h5_write_rows(hid_t d, hid_t mtype, int64_t r0, int64_t n, int64_t cols,
                       const void *buf)
{
    if (n == 0)
        return;
    int nd = cols > 0 ? 2 : 1;
    hsize_t start[2] = {(hsize_t)r0, 0}, count[2] = {(hsize_t)n, (hsize_t)cols};
    hid_t fs, ms;
    REC_H5(fs = H5Dget_space(d));
    REC_H5(ms = H5Screate_simple(nd, count, NULL));
    REC_H5(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
    REC_H5(H5Dwrite(d, mtype, ms, fs, H5P_DEFAULT, buf));
    REC_H5(H5Sclose(ms));
    REC_H5(H5Sclose(fs));
}

hid_t rec_h5_str_type(size_t size)
{
    hid_t t;
    REC_H5(t = H5Tcopy(H5T_C_S1));
    REC_H5(H5Tset_size(t, size ? size : 1));
    REC_H5(H5Tset_strpad(t, H5T_STR_NULLPAD));
    REC_H5(H5Tset_cset(t, H5T_CSET_UTF8));
    return t;
}
