/* comm_priv: what the files of the comm module share (comm.c,
 * comm_nodes.c, comm_h5.c, comm_progress.c); everything else uses comm.h.
 *
 *   MPI_CHECK(MPI_Bcast(...));   any MPI call returning an error code: a
 *                                failure ends the job through fatal(),
 *                                naming the call, file:line and MPI's text */
#ifndef FS_COMM_PRIV_H
#define FS_COMM_PRIV_H

#include "comm/comm.h"

void comm_mpi_failed(int err, const char *call, const char *file, int line)
    __attribute__((noreturn));

#define MPI_CHECK(call)                                                                  \
    do {                                                                                 \
        int mpi_check_err_ = (call);                                                     \
        if (mpi_check_err_ != 0)                                                         \
            comm_mpi_failed(mpi_check_err_, #call, __FILE__, __LINE__);                  \
    } while (0)

/* c->node_of from the node communicator, and every built group's remote[]
 * (after comm_init has built world, node and xnode). */
void comm_nodes_init(struct comm *c);
/* Group grp's remote[] from c->node_of (its ranks translated to world
 * ranks); nothing before comm_nodes_init. */
void comm_group_nodes(struct comm *c, enum comm_group grp);

#endif
