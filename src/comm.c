/* comm: all MPI calls of the program; see comm.h. */
#include "comm.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define WORLD(c) (*(MPI_Comm *)(c)->world)

void comm_init(struct comm *c, int *argc, char ***argv)
{
    int provided;
    MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
    MPI_Comm *w = xmalloc(sizeof *w);
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, w));
    /* Errors come back as codes, so MPI_CHECK can report file:line. */
    MPI_CHECK(MPI_Comm_set_errhandler(*w, MPI_ERRORS_RETURN));
    c->world = w;
    MPI_CHECK(MPI_Comm_rank(*w, &c->rank));
    MPI_CHECK(MPI_Comm_size(*w, &c->size));
    log_set_rank(c->rank, c->size);
}

void comm_free(struct comm *c)
{
    if (!c->world)
        return;
    MPI_CHECK(MPI_Comm_free((MPI_Comm *)c->world));
    free(c->world);
    c->world = NULL;
    MPI_CHECK(MPI_Finalize());
}

int comm_active(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

void comm_abort(int code)
{
    if (comm_active())
        MPI_Abort(MPI_COMM_WORLD, code);
}

void comm_error_string(int err, char *buf, size_t len)
{
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(err, s, &n) != MPI_SUCCESS)
        snprintf(s, sizeof s, "MPI error %d", err);
    snprintf(buf, len, "%s", s);
}

void comm_describe(const struct comm *c, char *buf, size_t len)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_CHECK(MPI_Get_library_version(lib, &n));
    char *nl = strpbrk(lib, ",\n"); /* keep "Open MPI v4.1.4" */
    if (nl)
        *nl = '\0';
    snprintf(buf, len, "%s, %d rank%s", lib, c->size, c->size == 1 ? "" : "s");
}

void comm_bcast_bytes(const struct comm *c, void *buf, size_t bytes, int root)
{
    char *p = buf;
    while (bytes > 0) { /* MPI counts are int */
        int n = bytes > (1u << 30) ? (1 << 30) : (int)bytes;
        MPI_CHECK(MPI_Bcast(p, n, MPI_BYTE, root, WORLD(c)));
        p += n;
        bytes -= (size_t)n;
    }
}

void comm_bcast_string(const struct comm *c, char **s, int root)
{
    uint64_t n = c->rank == root ? strlen(*s) + 1 : 0;
    MPI_CHECK(MPI_Bcast(&n, 1, MPI_UINT64_T, root, WORLD(c)));
    if (c->rank != root) {
        free(*s);
        *s = xmalloc(n);
    }
    comm_bcast_bytes(c, *s, n, root);
}

int64_t comm_allreduce_max_i64(const struct comm *c, int64_t v)
{
    int64_t r;
    MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_INT64_T, MPI_MAX, WORLD(c)));
    return r;
}

int64_t comm_allreduce_sum_i64(const struct comm *c, int64_t v)
{
    int64_t r;
    MPI_CHECK(MPI_Allreduce(&v, &r, 1, MPI_INT64_T, MPI_SUM, WORLD(c)));
    return r;
}

void comm_barrier(const struct comm *c) { MPI_CHECK(MPI_Barrier(WORLD(c))); }
