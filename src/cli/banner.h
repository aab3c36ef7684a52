/* banner: the start-up line of every MPI command: version, MPI and ranks,
 * BLAS library and kernel set, HDF5. Collective over c's world; rank 0
 * prints. */
#ifndef FS_BANNER_H
#define FS_BANNER_H

#include "comm/comm.h"

void banner_print(const struct comm *c);

struct params;
/* The start of a command that takes a parameter file: MPI, the banner,
 * the parameters (rank 0 reads path and applies the overrides, then
 * broadcasts), and their dump on rank 0. */
void banner_start(struct comm *c, struct params *p, int *argc, char ***argv, const char *path,
                  int noverrides, char **overrides);

#endif
