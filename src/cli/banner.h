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
 * on the screen, then calls banner_show. */
void banner_start(struct comm *c, struct params *p, int *argc, char ***argv, const char *path,
                  int noverrides, char **overrides);
/* The banner, then the effective parameters (rank 0). */
void banner_show(const struct comm *c, const struct params *p);

#endif
