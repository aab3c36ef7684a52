/* comm_h5: the MPI side of HDF5's MPI-IO file driver, so that MPI stays in
 * comm/: the file-access list of a file every rank of a group opens
 * together (data/h5io.c makes every other HDF5 call). */
#include "comm/comm.h"

#include <hdf5.h>
#include <mpi.h>

#include "base/check.h"

int comm_h5_fapl_mpio(const struct comm *c, enum comm_group g, int64_t fapl)
{
    /* HDF5 duplicates the communicator; errors come back as codes (HDF5
     * reports them through its own error stack) */
    return H5Pset_fapl_mpio((hid_t)fapl, *(MPI_Comm *)c->g[g].mpi, MPI_INFO_NULL) < 0 ? -1 : 0;
}
