/* banner: the start-up line of every MPI command: version, MPI and ranks,
 * BLAS library and kernel set, HDF5. Collective over c's world; rank 0
 * prints. */
#ifndef FS_BANNER_H
#define FS_BANNER_H

#include "comm/comm.h"

void banner_print(const struct comm *c);

struct params;
/* The start of a command that takes a parameter file: MPI and the
 * parameters (rank 0 reads path and applies the overrides, then
 * broadcasts; an error ends the job with one message). Nothing is printed:
 * the command checks its inputs first, so that an error is the first thing
 * on the screen, then calls banner_show. From here on log_info holds its
 * lines until the command calls log_release (base/log.h), so that an error
 * of the set-up is the first thing printed. */
void banner_start(struct comm *c, struct params *p, int *argc, char ***argv, const char *path,
                  int noverrides, char **overrides);
/* The banner, then with --verbose the effective parameters (rank 0). */
void banner_show(const struct comm *c, const struct params *p);
/* The effective parameters, on rank 0, with --verbose (or
 * banner_set_verbose(1): 'freescale params'). train writes them to its
 * metrics file ("event":"params") either way. */
void banner_params(const struct comm *c, const struct params *p);
/* --verbose anywhere in argv[1..]: taken out (argv stays NULL-terminated),
 * remembered; 1 if it was there. */
int banner_take_verbose(int *argc, char **argv);
void banner_set_verbose(int on);
int banner_verbose(void);

#endif
