/* comm_params: the parameters of a job (base/params.h) read by rank 0 and
 * broadcast to the others. */
#ifndef FS_COMM_PARAMS_H
#define FS_COMM_PARAMS_H

#include "base/params.h"

struct comm;

/* Rank 0 reads path and applies overrides, then broadcasts; the other ranks
 * never open the file. An error ends the job with one message on every
 * rank's behalf (comm_fail_agree: no MPI_Abort). */
void comm_params_load(struct params *p, struct comm *c, const char *path, int noverrides,
                      char **overrides);

#endif
