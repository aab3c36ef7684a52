/* rec_file: the output files of 'freescale recommend' and 'freescale
 * export', written by one process (rank 0) under the temporary name
 * PATH.tmp.PID and renamed to PATH only when complete, and the small HDF5
 * writing helpers they share.
 *
 * PATH never holds a half-written file. The temporary is removed when
 * anything this module knows of fails (rec_fatal: the writer's own errors,
 * every HDF5 call of the helpers, a bad record read while writing), and
 * whenever the process ends before the commit, signals included
 * (base/tmpguard.h). One output at a time per process. */
#ifndef FS_REC_FILE_H
#define FS_REC_FILE_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

struct rec_file {
    char path[4096]; /* the final name */
    char tmp[4200];  /* PATH.tmp.PID: open this to write */
};

/* The temporary of path, guarded until rec_file_commit or rec_file_abort. */
void rec_file_begin(struct rec_file *f, const char *path);
/* Rename the complete temporary (closed by the caller) to its path;
 * fatal() naming path on failure. */
void rec_file_commit(struct rec_file *f);
/* Remove the temporary (after an error). */
void rec_file_abort(struct rec_file *f);
/* End the job with the message, removing the output being written first
 * (if any). */
void rec_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* An HDF5 call of the output: a negative result ends the job through
 * rec_fatal, naming the call and file:line. */
#define REC_H5(call)                                                                     \
    do {                                                                                 \
        if ((call) < 0)                                                                  \
            rec_fatal("HDF5 call failed writing the output (disk full?): %s at %s:%d",   \
                      #call, __FILE__, __LINE__);                                        \
    } while (0)

/* HDF5 helpers; every call checked (REC_H5). */
void rec_h5_attr_str(hid_t loc, const char *name, const char *v); /* variable-length UTF-8 */
void rec_h5_attr_i64(hid_t loc, const char *name, int64_t v);
void rec_h5_attr_f64(hid_t loc, const char *name, double v);
/* A dataset of type ftype, shape [rows] (cols = 0) or [rows, cols], with
 * fill value 0 (rows never written read as zeros). */
hid_t rec_h5_create(hid_t loc, const char *name, hid_t ftype, int64_t rows, int64_t cols);
/* Write rows [r0, r0 + n) of a dataset made by rec_h5_create. */
void rec_h5_write_rows(hid_t d, hid_t mtype, int64_t r0, int64_t n, int64_t cols,
                       const void *buf);
/* The type of fixed-length NUL-padded UTF-8 strings of size bytes (>= 1);
 * H5Tclose it. */
hid_t rec_h5_str_type(size_t size);

#endif
