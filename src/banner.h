/* banner: the start-up line of every MPI command: version, MPI and ranks,
 * BLAS library and kernel set, HDF5. Collective over c's world; rank 0
 * prints. */
#ifndef FS_BANNER_H
#define FS_BANNER_H

#include "comm.h"

void banner_print(const struct comm *c);

#endif
