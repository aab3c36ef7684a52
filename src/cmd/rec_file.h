/* rec_file: the output files of 'freescale recommend' and 'freescale
 * export', written under the temporary name PATH.tmp.PID and renamed to
 * PATH only when complete.
 *
 * PATH never holds a half-written file. The temporary is removed when
 * anything this module knows of fails (rec_fatal: the writer's own errors,
 * every HDF5 call of the output, a bad record read while writing), and
 * whenever the process ends before the commit, signals included
 * (base/tmpguard.h). One output at a time per process.
 *
 * An HDF5 output is written by every rank (collective: c given): rank 0
 * creates it alone with its attributes, small datasets and the empty large
 * ones (rec_h5_create ... rec_h5_close), then every rank opens it through
 * MPI-IO (rec_h5_reopen) and writes its own rows (data/h5io.h), and rank 0
 * renames it once every rank has closed it (rec_file_commit). */
#ifndef FS_REC_FILE_H
#define FS_REC_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"
#include "data/h5io.h"

struct rec_file {
    char path[4096]; /* the final name */
    char tmp[4200];  /* PATH.tmp.PID: open this to write */
    struct h5io h;   /* the HDF5 output; every call checked (rec_fatal) */
};

/* The temporary of path, guarded until rec_file_commit or rec_file_abort.
 * c NULL: this process alone; else every rank of c (rank 0's PID). */
void rec_file_begin(struct rec_file *f, const char *path, struct comm *c);
/* Rename the complete temporary (closed by the caller) to its path;
 * fatal() naming path on failure. Collective with c (rank 0 renames once
 * every rank is there). */
void rec_file_commit(struct rec_file *f, struct comm *c);
/* Set-up: rank 0 checks that PATH can be created (its folder exists and
 * takes files; PATH is no folder); every rank ends on its verdict, one
 * message naming tool and PATH (comm_fail_agree). Collective. */
void rec_file_check(struct comm *c, const char *tool, const char *path);
/* Remove the temporary (after an error). */
void rec_file_abort(struct rec_file *f);
/* End the job with the message, removing the output being written first
 * (if any). */
void rec_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* HDF5: rank 0 creates the temporary alone (f->h); ... rec_h5_close; then
 * every rank of c opens it through MPI-IO; rec_h5_close again (collective).
 * A failure of any call ends the job through rec_fatal. */
void rec_h5_create(struct rec_file *f);
void rec_h5_reopen(struct rec_file *f, struct comm *c);
void rec_h5_close(struct rec_file *f);
/* A dataset of ftype, [rows] (cols 0) or [rows, cols], contiguous, rows
 * never written reading as 0; and an existing one opened again. */
hid_t rec_h5_dset(struct rec_file *f, hid_t loc, const char *name, hid_t ftype, int64_t rows,
                  int64_t cols);
hid_t rec_h5_open(struct rec_file *f, const char *name);

#endif
