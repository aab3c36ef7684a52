/* rec_file: guarded temporary output files, written by one or every rank;
 * see rec_file.h. */
#include "cmd/rec_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/check.h"
#include "base/tmpguard.h"
#include "comm/comm_fail.h"

void rec_file_begin(struct rec_file *f, const char *path, struct comm *c)
{
    memset(f, 0, sizeof *f);
    f->h.f = -1;
    if (strlen(path) >= sizeof f->path)
        fatal("%s: path too long", path);
    memcpy(f->path, path, strlen(path) + 1);
    long pid = (long)getpid();
    if (c)
        comm_bcast_bytes(c, &pid, sizeof pid, 0);
    snprintf(f->tmp, sizeof f->tmp, "%s.tmp.%ld", path, pid);
    tmpguard_begin(f->tmp, 1);
}

void rec_file_check(struct comm *c, const char *tool, const char *path)
{
    char err[8400] = "", dir[4096];
    int bad = 0;
    if (c->rank == 0) {
        struct stat st;
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else
            slash[slash == dir] = '\0'; /* "/x": the root */
        if (strlen(path) >= sizeof ((struct rec_file *)0)->path)
            bad = errorf(err, sizeof err, "%s: -o %s: path too long", tool, path);
        else if (stat(dir, &st) != 0)
            bad = errorf(err, sizeof err, "%s: -o %s: cannot create it: folder %s: %s", tool,
                         path, dir, strerror(errno));
        else if (!S_ISDIR(st.st_mode))
            bad = errorf(err, sizeof err, "%s: -o %s: cannot create it: %s is not a folder",
                         tool, path, dir);
        else if (access(dir, W_OK | X_OK) != 0)
            bad = errorf(err, sizeof err, "%s: -o %s: cannot create it in %s: %s", tool, path,
                         dir, strerror(errno));
        else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            bad = errorf(err, sizeof err, "%s: -o %s is a folder: name a file", tool, path);
    }
    comm_fail_agree(c, bad != 0, err);
}

void rec_file_commit(struct rec_file *f, struct comm *c)
{
    if (c)
        comm_barrier(c); /* every rank has closed it */
    if (!c || c->rank == 0) {
        if (rename(f->tmp, f->path) != 0) {
            int e = errno;
            rec_file_abort(f);
            fatal("%s: cannot rename %s into place: %s", f->path, f->tmp, strerror(e));
        }
    }
    tmpguard_end();
    if (c)
        comm_barrier(c);
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

static void h5_fail(struct h5io *h)
{
    struct rec_file *f = h->ctx;
    char what[512];
    h5io_abandon(h);
    if (h->errnum)
        rec_fatal("%s: writing %s failed: %s (%s)", f->path, f->tmp, strerror(h->errnum),
                  h5io_failure(h, what, sizeof what));
    rec_fatal("%s: writing %s failed (disk full?): %s", f->path, f->tmp,
              h5io_failure(h, what, sizeof what));
}

void rec_h5_create(struct rec_file *f)
{
    h5io_create(&f->h, f->tmp, NULL, 0, h5_fail, f);
}

void rec_h5_reopen(struct rec_file *f, struct comm *c)
{
    comm_barrier(c); /* rank 0 has created and closed it */
    h5io_open_rw(&f->h, f->tmp, c, 0, h5_fail, f);
}

void rec_h5_close(struct rec_file *f)
{
    h5io_close(&f->h);
}

hid_t rec_h5_dset(struct rec_file *f, hid_t loc, const char *name, hid_t ftype, int64_t rows,
                  int64_t cols)
{
    const struct h5io_layout lay = {.fill_zero = 1};
    return h5io_dset(&f->h, loc, name, ftype, rows, cols, &lay);
}

hid_t rec_h5_open(struct rec_file *f, const char *name)
{
    return h5io_dset_reopen(&f->h, f->h.f, name);
}
