/* comm: the only module that calls MPI. Everything else receives a
 * struct comm and calls these wrappers.
 *
 * Communicators (doc/embedding.md, "Embedding groups"):
 *   world        duplicate of MPI_COMM_WORLD
 *   node         ranks sharing a node (shared-memory split)
 *   emb          the embedding group of G consecutive ranks that shards the
 *                tables (G = parallel.embedding_group, 0 = all ranks)
 *   emb_replica  ranks holding the same shard in the P/G groups: sparse
 *                gradients are summed across it so replicas stay identical
 *   dp           the dense data-parallel group (all ranks)
 *   xnode        ranks with the same node-local index, one per node (the
 *                cross-node step of hierarchical reductions)
 * comm_init builds world and node; comm_setup_groups the other three.
 *
 * Exchanges take counts and displacements in elements (int64) and count the
 * bytes and messages each rank sends, per phase. */
#ifndef FS_COMM_H
#define FS_COMM_H

#include <stddef.h>
#include <stdint.h>

enum comm_group {
    COMM_WORLD, COMM_NODE, COMM_EMB, COMM_EMB_REPLICA, COMM_DP,
    COMM_XNODE, /* the ranks with this rank's node-local index, one per node */
    COMM_NGROUPS
};

enum comm_dtype { COMM_I64, COMM_F32, COMM_F64, COMM_BYTE /* encoded rows */ };

/* What an exchange is for, for the counters. */
enum comm_phase {
    COMM_PH_COUNTS,    /* all-to-all of counts */
    COMM_PH_IDS,       /* input dist: ids to owners */
    COMM_PH_ROWS,      /* output dist: rows back to requesters */
    COMM_PH_GRADS,     /* gradients to owners */
    COMM_PH_REPLICA,   /* sparse gradient reduction across replicas */
    COMM_PH_DENSE,     /* dense gradient all-reduce */
    COMM_PH_KV,        /* split_long: keys/values and their gradients between chunks */
    COMM_PH_BIAS,      /* model.bias's rows and gradients (train/bias_rows.h) */
    COMM_PH_OTHER,
    COMM_NPHASES
};

struct comm_counters {
    int64_t bytes[COMM_NPHASES];    /* bytes sent to other ranks */
    int64_t messages[COMM_NPHASES]; /* non-empty sends to other ranks */
    int64_t calls[COMM_NPHASES];    /* exchanges */
    int64_t xbytes[COMM_NPHASES];   /* of bytes, those to ranks on other nodes
                                     * (all-to-alls and gathers) */
    int64_t ipc[COMM_NPHASES];      /* of bytes, those copied through CUDA IPC
                                     * (comm_count_ipc), not sent by MPI */
};

struct comm_group_info {
    void *mpi; /* MPI_Comm* */
    int rank, size;
    int *remote; /* [size] 1 when that rank is on another node (the counters) */
};

struct comm {
    int rank, size;
    struct comm_group_info g[COMM_NGROUPS];
    int emb_groups; /* P / G */
    int thread_level_ok; /* MPI provides MPI_THREAD_SERIALIZED */
    struct comm_counters counters;
    int *node_of; /* [size] node of every world rank (the leader's world rank) */
};

/* A non-blocking exchange in flight. */
struct comm_request {
    void *mpi; /* MPI_Request* */
    void *scounts, *sdispls, *rcounts, *rdispls; /* int arrays MPI reads */
    double posted;                               /* MPI_Wtime() at the post */
    const char *op;                              /* what it is, for the watchdog */
    int group;                                   /* its enum comm_group */
};

void comm_init(struct comm *c, int *argc, char ***argv);
/* Build emb, emb_replica and dp for embedding_group G (0 = all ranks).
 * Returns -1 with err when G does not divide the rank count. */
int comm_setup_groups(struct comm *c, int64_t embedding_group, char *err, size_t errlen);
void comm_free(struct comm *c);
/* Test hook (debug.node_size): count bytes as if nodes held n consecutive
 * world ranks (n > 0); the communicators themselves do not change. */
void comm_set_node_size(struct comm *c, int n);
/* 1 when rank p of group g is on another node than this rank. */
int comm_peer_remote(const struct comm *c, enum comm_group g, int p);
/* Count bytes that rank p of group g received from this rank outside MPI
 * (a copy through CUDA IPC): in bytes, messages and ipc. */
void comm_count_ipc(struct comm *c, enum comm_group g, int p, int64_t bytes, enum comm_phase ph);
int comm_active(void); /* MPI initialised and not finalised */
void comm_abort(int code); /* MPI_Abort when active, else returns */
void comm_error_string(int err, char *buf, size_t len);
void comm_describe(const struct comm *c, char *buf, size_t len);
const char *comm_phase_name(enum comm_phase ph);
/* Seconds this process has spent inside MPI communication calls (blocking
 * collectives and waits: communication that compute did not hide). */
double comm_mpi_seconds(void);
/* With comm_time_cpu(1) (balance_adapt on the host: doc/balance.md), the
 * calling thread's CPU seconds inside the same calls (MPI polls while it
 * waits), so that the thread's CPU time less them is its compute;
 * comm_mpi_cpu_seconds() is 0 without. */
void comm_time_cpu(int on);
double comm_mpi_cpu_seconds(void);
/* Seconds non-blocking exchanges were in flight, post to completion,
 * summed over requests. */
double comm_flight_seconds(void);
/* Seconds of communication that compute hid: in-flight time of
 * non-blocking exchanges less the time spent waiting for them. */
double comm_hidden_seconds(void);

/* The watchdog's view of the main thread (any thread may call): the MPI
 * call it is blocked in now (op: "MPI_Allreduce", "MPI_Wait for MPI_Ialltoallv",
 * "" when in none), its communicator's name and the seconds waited so far;
 * returns the number of blocking calls completed (progress). */
uint64_t comm_wait_state(char *op, size_t oplen, const char **group, double *seconds);
const char *comm_group_name(enum comm_group g);

void comm_bcast_bytes(const struct comm *c, void *buf, size_t bytes, int root);
/* Broadcast a heap string from root; on other ranks *s is replaced. */
void comm_bcast_string(const struct comm *c, char **s, int root);
/* 1 when MPI can read and write device (CUDA) memory, per
 * MPIX_Query_cuda_support() at run time; 0 otherwise. */
int comm_cuda_aware(void);

int64_t comm_allreduce_max_i64(const struct comm *c, int64_t v);
int64_t comm_allreduce_sum_i64(const struct comm *c, int64_t v);
double comm_allreduce_max_f64(const struct comm *c, enum comm_group g, double v);
double comm_allreduce_sum_f64(const struct comm *c, enum comm_group g, double v);
void comm_barrier(const struct comm *c);
void comm_barrier_group(const struct comm *c, enum comm_group g);
/* n bytes from every rank of group g into recv[size * n], in rank order. */
void comm_allgather_bytes(const struct comm *c, enum comm_group g, const void *send, size_t n,
                          void *recv);
/* In-place sums over group g: buf[n] (dense gradients) */
void comm_allreduce_sum_f32(struct comm *c, enum comm_group g, float *buf, int64_t n,
                            enum comm_phase ph);
void comm_allreduce_sum_i64v(struct comm *c, enum comm_group g, int64_t *buf, int64_t n);

/* All-to-all of one int64 per peer of group g: send[size] -> recv[size]. */
void comm_alltoall_i64(struct comm *c, enum comm_group g, const int64_t *send, int64_t *recv,
                       enum comm_phase ph);
/* All-to-allv of elements of type t (counts and displacements in elements,
 * one per peer of group g), blocking; non-blocking in rows of width
 * elements (counts and displacements in rows: MPI's int counts hold rows,
 * not their values). Host memory only for the non-blocking one (device
 * pointers never reach a non-blocking collective). */
void comm_alltoallv(struct comm *c, enum comm_group g, enum comm_dtype t, const void *send,
                    const int64_t *scounts, const int64_t *sdispls, void *recv,
                    const int64_t *rcounts, const int64_t *rdispls, enum comm_phase ph);
void comm_ialltoallv(struct comm *c, enum comm_group g, enum comm_dtype t, int64_t width,
                     const void *send, const int64_t *scounts, const int64_t *sdispls,
                     void *recv, const int64_t *rcounts, const int64_t *rdispls,
                     enum comm_phase ph, struct comm_request *req);
/* All-to-all of per_peer int64 per peer, non-blocking. */
void comm_ialltoall_i64(struct comm *c, enum comm_group g, const int64_t *send, int per_peer,
                        int64_t *recv, enum comm_phase ph, struct comm_request *req);
/* In-place sum of buf[n] over group g, non-blocking. */
void comm_iallreduce_sum_f32(struct comm *c, enum comm_group g, float *buf, int64_t n,
                             enum comm_phase ph, struct comm_request *req);
/* Complete a non-blocking exchange: comm_wait blocks (timed as
 * communication); comm_test returns 1 once it has completed (and then
 * releases it like comm_wait), 0 while in flight; calling it is what makes
 * MPI progress the exchange between compute phases. */
void comm_wait(struct comm_request *req);
int comm_test(struct comm_request *req);

/* One point-to-point message: n elements at buf to or from rank `peer` of
 * the group, matched by tag (0 <= tag < 32768). */
struct comm_msg {
    int peer, tag;
    void *buf;
    int64_t n;
};
/* Messages in flight (comm_post_msgs), completed together by comm_wait_msgs. */
struct comm_msgs {
    void *mpi; /* MPI_Request[n] */
    int n;
    int group; /* its enum comm_group, for the watchdog */
    struct comm_trace_msgs *trace; /* output.trace_peers: per request (comm_trace.h), or NULL */
};
/* Post n sends (send = 1) or receives of group g, non-blocking; a rank may
 * send to itself. Peers must post matching messages. A post labelled by
 * comm_trace_label while the per-peer trace records is traced per message
 * (comm_trace.h). */
void comm_post_msgs(struct comm *c, enum comm_group g, enum comm_dtype t,
                    const struct comm_msg *m, int n, int send, enum comm_phase ph,
                    struct comm_msgs *out);
/* The same with messages of n rows of width elements each. */
void comm_post_rows(struct comm *c, enum comm_group g, enum comm_dtype t, int64_t width,
                    const struct comm_msg *m, int n, int send, enum comm_phase ph,
                    struct comm_msgs *out);
/* Wait for every message of r (timed as communication; r is released). */
void comm_wait_msgs(struct comm_msgs *r);
/* 1 once every message of r has completed (r is then released), else 0;
 * never blocks. */
int comm_test_msgs(struct comm_msgs *r);

/* Progress thread (parallel.progress=thread): started once; between
 * comm_compute_begin() and comm_compute_end() the main thread makes no comm
 * call and the thread drives MPI's progress engine; outside those windows
 * the thread is idle. Without a started thread the two calls do nothing.
 * comm_progress_start returns -1 with err when threads are not supported. */
int comm_progress_start(struct comm *c, char *err, size_t errlen);
void comm_progress_stop(struct comm *c);
void comm_compute_begin(void);
void comm_compute_end(void);
/* Gather variable-length blocks from every rank of group g into recv, in
 * rank order; counts[size] are returned through rcounts. */
void comm_allgatherv(struct comm *c, enum comm_group g, enum comm_dtype t, const void *send,
                     int64_t n, void *recv, const int64_t *rcounts, enum comm_phase ph);
void comm_allgather_i64(struct comm *c, enum comm_group g, int64_t v, int64_t *out);
/* Gather variable-length blocks to rank root of group g, in rank order;
 * rcounts[size] is read on the root only. */
void comm_gatherv(struct comm *c, enum comm_group g, enum comm_dtype t, const void *send,
                  int64_t n, void *recv, const int64_t *rcounts, int root);
void comm_gather_i64(struct comm *c, enum comm_group g, int64_t v, int64_t *out, int root);

/* HDF5's MPI-IO driver on the file-access list fapl (a hid_t): the file is
 * opened by every rank of group g together (comm_h5.c). direct: each rank
 * reads and writes its own large contiguous pieces itself (ROMIO's
 * collective buffering and data sieving off); else ROMIO aggregates
 * interleaved pieces (strided rows) per node. 0, or -1 when HDF5 refuses
 * (its error stack says why). */
int comm_h5_fapl_mpio(const struct comm *c, enum comm_group g, int64_t fapl, int direct);

#endif
