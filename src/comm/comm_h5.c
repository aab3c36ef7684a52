/* comm_h5: the MPI side of HDF5's MPI-IO file driver, so that MPI stays in
 * comm/: the file-access list of a file every rank of a group opens
 * together (data/h5io.c makes every other HDF5 call). */
#include "comm/comm.h"

#include <hdf5.h>
#include <mpi.h>

#include "comm/comm_priv.h"

int comm_h5_fapl_mpio(const struct comm *c, enum comm_group g, int64_t fapl, int direct)
{
    MPI_Info info = MPI_INFO_NULL;
    if (direct) { /* each rank's own large contiguous pieces: no aggregator in between,
                     no read-modify-write of the gaps */
        static const char *const keys[] = {"romio_cb_write", "romio_cb_read", "romio_ds_write",
                                           "romio_ds_read"};
        MPI_CHECK(MPI_Info_create(&info));
        for (int i = 0; i < 4; i++)
            MPI_CHECK(MPI_Info_set(info, keys[i], "disable"));
    }
    /* HDF5 duplicates the communicator and the info; errors come back as
     * codes (HDF5 reports them through its own error stack) */
    int rc = H5Pset_fapl_mpio((hid_t)fapl, *(MPI_Comm *)c->g[g].mpi, info) < 0 ? -1 : 0;
    if (direct)
        MPI_CHECK(MPI_Info_free(&info));
    return rc;
}
