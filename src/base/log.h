/* log: rank-aware logging and the single fatal() exit path.
 *
 * log_info    rank 0 only, to stdout ("freescale: ..." prefix omitted).
 * log_warn    every rank, to stderr, prefixed with the rank.
 * fatal       every rank that calls it: prints "freescale: error [rank R]: ..."
 *             to stderr and aborts the whole job (MPI_Abort through comm),
 *             or exits 1 when MPI is not running (serial tools). */
#ifndef FS_LOG_H
#define FS_LOG_H

#include <stdarg.h>
#include <stddef.h>

void log_set_rank(int rank, int size);
int log_rank(void);
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Format an error for the caller into err[errlen]; returns -1, so that
 * modules can write "return errorf(err, errlen, ...);". */
int errorf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void vfatal(const char *fmt, va_list ap) __attribute__((noreturn));

#endif
