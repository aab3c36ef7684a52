/* banner: start-up line; see banner.h. */
#include "cli/banner.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int g_verbose;

void banner_set_verbose(int on) { g_verbose = on; }

int banner_verbose(void) { return g_verbose; }

int banner_take_verbose(int *argc, char **argv)
{
    int n = 0;
    for (int i = 0; i < *argc; i++)
        if (i == 0 || strcmp(argv[i], "--verbose") != 0)
            argv[n++] = argv[i];
    const int found = n < *argc;
    *argc = n;
    argv[n] = NULL;
    if (found)
        g_verbose = 1;
    return found;
}

void banner_start(struct comm *c, struct params *p, int *argc, char ***argv, const char *path,
                  int noverrides, char **overrides)
{
    comm_init(c, argc, argv);
    log_hold(); /* until the command's set-up is done: an error comes first */
    comm_params_load(p, c, path, noverrides, overrides);
}

void banner_params(const struct comm *c, const struct params *p)
{
    if (c->rank != 0 || !g_verbose)
        return;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        fatal("banner: open_memstream: out of memory");
    params_dump(p, f);
    if (fclose(f) != 0)
        fatal("banner: writing the parameters: out of memory");
    if (len && text[len - 1] == '\n')
        text[len - 1] = '\0';
    log_info("%s", text); /* after what is held, in order */
    free(text);
}

void banner_show(const struct comm *c, const struct params *p)
{
    banner_print(c);
    banner_params(c, p);
}
