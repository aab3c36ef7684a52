/* banner: start-up line; see banner.h. */
#include "cli/banner.h"

#include <hdf5.h>

#include "backend/backend.h"
#include "backend/blas.h"
#include "config.h"
#include "base/log.h"
#include "base/params.h"
#include "comm/comm_params.h"

void banner_print(const struct comm *c)
{
    char mpi[256], blas[256];
    unsigned maj, min, rel;
    comm_describe(c, mpi, sizeof mpi);
    blas_describe(blas, sizeof blas);
    H5get_libversion(&maj, &min, &rel);
    log_info("freescale %s | %s (CUDA-aware: %s) | backends: %s | BLAS: %s | HDF5 %u.%u.%u",
             PACKAGE_VERSION, mpi, comm_cuda_aware() ? "yes" : "no", backend_names(), blas, maj,
             min, rel);
}

void banner_start(struct comm *c, struct params *p, int *argc, char ***argv, const char *path,
                  int noverrides, char **overrides)
{
    comm_init(c, argc, argv);
    comm_params_load(p, c, path, noverrides, overrides);
}

void banner_show(const struct comm *c, const struct params *p)
{
    banner_print(c);
    if (c->rank == 0) {
        params_dump(p, stdout);
        fflush(stdout);
    }
}
