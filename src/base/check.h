/* check: macros that check library results, stringify the call and record
 * file:line, then end the job through fatal().
 *
 *   H5_CHECK(id = H5Dopen2(...));       HDF5 calls: negative result = failure
 *   p = xmalloc(bytes);                 allocation that cannot return NULL
 *
 * Errors that a user can cause (bad files, bad parameters) are reported by
 * the modules themselves with the file name and place; these macros are for
 * failures of the libraries and the machine. MPI calls, all in comm/, are
 * checked by comm's own MPI_CHECK (comm/comm_priv.h). */
#ifndef FS_CHECK_H
#define FS_CHECK_H

#include <stddef.h>

#include "base/log.h"

void check_h5_failed(const char *call, const char *file, int line) __attribute__((noreturn));

#define H5_CHECK(call)                                                                   \
    do {                                                                                 \
        if ((call) < 0)                                                                  \
            check_h5_failed(#call, __FILE__, __LINE__);                                  \
    } while (0)

#define xmalloc(n) check_xmalloc((n), #n, __FILE__, __LINE__)
#define xcalloc(n, s) check_xcalloc((n), (s), #n, __FILE__, __LINE__)
#define xrealloc(p, n) check_xrealloc((p), (n), #n, __FILE__, __LINE__)

void *check_xmalloc(size_t bytes, const char *what, const char *file, int line);
void *check_xcalloc(size_t n, size_t size, const char *what, const char *file, int line);
void *check_xrealloc(void *p, size_t bytes, const char *what, const char *file, int line);
char *xstrdup(const char *s);

#endif
