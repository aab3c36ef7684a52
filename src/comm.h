/* comm: the only module that calls MPI. Everything else receives a
 * struct comm and calls these wrappers.
 *
 * The foundation needs the world communicator, rank/size, a byte broadcast
 * (parameters), an integer all-reduce (errors found by every rank) and abort.
 * The embedding issue adds the node/emb/dp communicators and the exchanges. */
#ifndef FS_COMM_H
#define FS_COMM_H

#include <stddef.h>
#include <stdint.h>

struct comm {
    int rank, size;
    void *world; /* MPI_Comm*, a duplicate of MPI_COMM_WORLD */
};

void comm_init(struct comm *c, int *argc, char ***argv);
void comm_free(struct comm *c);
int comm_active(void); /* MPI initialised and not finalised */
void comm_abort(int code); /* MPI_Abort when active, else returns */
void comm_error_string(int err, char *buf, size_t len);
void comm_describe(const struct comm *c, char *buf, size_t len);

void comm_bcast_bytes(const struct comm *c, void *buf, size_t bytes, int root);
/* Broadcast a heap string from root; on other ranks *s is replaced. */
void comm_bcast_string(const struct comm *c, char **s, int root);
int64_t comm_allreduce_max_i64(const struct comm *c, int64_t v);
int64_t comm_allreduce_sum_i64(const struct comm *c, int64_t v);
void comm_barrier(const struct comm *c);

#endif
