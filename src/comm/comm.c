/* comm: all MPI calls of the program; see comm.h. */
#include "comm/comm.h"

#include <limits.h>
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* Open MPI: MPIX_Query_cuda_support */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/clock.h"
#include "comm/comm_priv.h"
#include "comm/comm_trace.h"

/* The communicator of group grp of c; noted as the one the next wait is on
 * (the watchdog's view, below). */
#define MCOMM(c, grp) (*(MPI_Comm *)note_group((c), (grp)))

/* --- what the main thread waits in, for the watchdog -------------------------
 * Written by the main thread around every blocking MPI call, read by the
 * watchdog thread (comm_wait_state): relaxed atomics, no locks. */
static struct {
    const char *op;   /* the call's text ("MPI_Allreduce(...)"), NULL outside MPI */
    int group;        /* enum comm_group of the wait */
    double since;     /* MPI_Wtime() at its start */
    uint64_t done;    /* blocking calls completed */
} g_wait;
static int g_next_group;

static void *note_group(const struct comm *c, enum comm_group grp)
{
    __atomic_store_n(&g_next_group, (int)grp, __ATOMIC_RELAXED);
    return c->g[grp].mpi;
}

static void wait_enter(const char *op, int group, double t0)
{
    __atomic_store(&g_wait.since, &t0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_wait.group, group, __ATOMIC_RELAXED);
    __atomic_store_n(&g_wait.op, op, __ATOMIC_RELEASE);
}

static void wait_leave(void)
{
    __atomic_store_n(&g_wait.op, (const char *)NULL, __ATOMIC_RELEASE);
    __atomic_add_fetch(&g_wait.done, 1, __ATOMIC_RELAXED);
}

const char *comm_group_name(enum comm_group g)
{
    static const char *names[COMM_NGROUPS] = {"world", "node", "emb", "emb_replica", "dp",
                                              "xnode"};
    return g >= 0 && g < COMM_NGROUPS ? names[g] : "?";
}

uint64_t comm_wait_state(char *op, size_t oplen, const char **group, double *seconds)
{
    const char *o = __atomic_load_n(&g_wait.op, __ATOMIC_ACQUIRE);
    double since;
    __atomic_load(&g_wait.since, &since, __ATOMIC_RELAXED);
    int g = __atomic_load_n(&g_wait.group, __ATOMIC_RELAXED);
    if (g < 0) /* the group its arguments named */
        g = __atomic_load_n(&g_next_group, __ATOMIC_RELAXED);
    int n = o ? (int)strcspn(o, "(") : 0; /* the call's name, its arguments dropped */
    while (n > 0 && o[n - 1] == ' ')
        n--;
    snprintf(op, oplen, "%.*s", n, o ? o : "");
    *group = comm_group_name((enum comm_group)g);
    *seconds = o ? MPI_Wtime() - since : 0;
    return __atomic_load_n(&g_wait.done, __ATOMIC_RELAXED);
}

/* Seconds spent inside MPI communication calls (blocking collectives and
 * waits), the "waiting" of the bubble accounting. */
static double g_mpi_seconds = 0;

double comm_mpi_seconds(void) { return g_mpi_seconds; }

/* The main thread's CPU seconds inside those calls, when counted (only the
 * main thread makes them: comm_progress.c's thread only probes). */
static int g_cpu_timed = 0;
static double g_mpi_cpu_seconds = 0;

void comm_time_cpu(int on) { g_cpu_timed = on; }
double comm_mpi_cpu_seconds(void) { return g_mpi_cpu_seconds; }

/* Seconds that non-blocking exchanges were in flight (post to observed
 * completion), summed over requests: with g_mpi_seconds, the overlap ratio
 * of steptime.h. */
static double g_flight_seconds = 0;

double comm_flight_seconds(void) { return g_flight_seconds; }

/* Of g_mpi_seconds, the part spent waiting for non-blocking exchanges. */
static double g_nb_wait_seconds = 0;

double comm_hidden_seconds(void)
{
    double h = g_flight_seconds - g_nb_wait_seconds;
    return h > 0 ? h : 0;
}

/* A blocking call: timed, and seen by the watchdog (op, group: -1 = the one
 * its MCOMM names). */
#define TIMED_AS(op, group, call)                                                        \
    do {                                                                                 \
        double timed_t0_ = MPI_Wtime();                                                  \
        double timed_c0_ = g_cpu_timed ? clock_thread_seconds() : 0;                     \
        wait_enter((op), (group), timed_t0_);                                            \
        MPI_CHECK(call);                                                                 \
        wait_leave();                                                                    \
        g_mpi_seconds += MPI_Wtime() - timed_t0_;                                        \
        if (g_cpu_timed)                                                                 \
            g_mpi_cpu_seconds += clock_thread_seconds() - timed_c0_;                     \
    } while (0)
#define TIMED(call) TIMED_AS(#call, -1, call)

static MPI_Datatype mpi_type(enum comm_dtype t)
{
    return t == COMM_I64    ? MPI_INT64_T
           : t == COMM_F64  ? MPI_DOUBLE
           : t == COMM_BYTE ? MPI_BYTE
                            : MPI_FLOAT;
}
static size_t type_size(enum comm_dtype t) { return t == COMM_F32 ? 4 : t == COMM_BYTE ? 1 : 8; }

/* The MPI type of a row of width elements of t: a contiguous type (*made =
 * 1: free it once the call that uses it is posted), or t itself (width 1).
 * Counts in rows keep large exchanges within MPI's int counts. */
static MPI_Datatype row_type(enum comm_dtype t, int64_t width, int *made)
{
    *made = 0;
    if (width == 1)
        return mpi_type(t);
    if (width < 1 || width > INT_MAX)
        fatal("exchange: rows of %lld elements", (long long)width);
    MPI_Datatype r;
    MPI_CHECK(MPI_Type_contiguous((int)width, mpi_type(t), &r));
    MPI_CHECK(MPI_Type_commit(&r));
    *made = 1;
    return r;
}

static void set_group(struct comm *c, enum comm_group grp, MPI_Comm m)
{
    MPI_Comm *p = xmalloc(sizeof *p);
    *p = m;
    /* errors come back as codes, so MPI_CHECK can report file:line */
    MPI_CHECK(MPI_Comm_set_errhandler(m, MPI_ERRORS_RETURN));
    c->g[grp].mpi = p;
    MPI_CHECK(MPI_Comm_rank(m, &c->g[grp].rank));
    MPI_CHECK(MPI_Comm_size(m, &c->g[grp].size));
}

void comm_init(struct comm *c, int *argc, char ***argv)
{
    int provided;
    memset(c, 0, sizeof *c);
    /* MPI-IO through ROMIO, not Open MPI's own OMPIO: OMPIO's collective
     * writes (fcoll vulcan, Open MPI 4.1.4) print "No space left on
     * device" and return success, leaving holes in a file reported
     * complete (checkpoints, outputs: data/h5io.c); ROMIO returns the error
     * on every rank. A choice made on the command line (--mca io) or in
     * the environment stays. */
    setenv("OMPI_MCA_io", "^ompio", 0);
    /* SERIALIZED: the progress thread (comm_progress_*) calls MPI while the
     * main thread computes, never at the same time */
    MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided));
    c->thread_level_ok = provided >= MPI_THREAD_SERIALIZED;
    MPI_Comm w, node;
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &w));
    set_group(c, COMM_WORLD, w);
    c->rank = c->g[COMM_WORLD].rank;
    c->size = c->g[COMM_WORLD].size;
    log_set_rank(c->rank, c->size);
    log_set_job_abort(comm_abort);
    MPI_CHECK(MPI_Comm_split_type(w, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node));
    set_group(c, COMM_NODE, node);
    MPI_Comm xnode;
    MPI_CHECK(MPI_Comm_split(w, c->g[COMM_NODE].rank, c->rank, &xnode));
    set_group(c, COMM_XNODE, xnode);
    comm_nodes_init(c); /* every rank's node, for the byte counters */
    /* until comm_setup_groups: one embedding group of all ranks */
    char err[256];
    if (comm_setup_groups(c, 0, err, sizeof err))
        fatal("%s", err);
}

static void free_group(struct comm *c, enum comm_group grp)
{
    if (!c->g[grp].mpi)
        return;
    MPI_CHECK(MPI_Comm_free((MPI_Comm *)c->g[grp].mpi));
    free(c->g[grp].mpi);
    c->g[grp].mpi = NULL;
    free(c->g[grp].remote);
    c->g[grp].remote = NULL;
}

int comm_setup_groups(struct comm *c, int64_t embedding_group, char *err, size_t errlen)
{
    int64_t G = embedding_group == 0 ? c->size : embedding_group;
    if (G < 1 || G > c->size || c->size % G != 0)
        return errorf(err, errlen,
                      "parallel.embedding_group = %lld does not divide the %d ranks of this job "
                      "(use 0 for all ranks, or a divisor of %d)",
                      (long long)embedding_group, c->size, c->size);
    free_group(c, COMM_EMB);
    free_group(c, COMM_EMB_REPLICA);
    free_group(c, COMM_DP);
    MPI_Comm emb, rep, dp;
    /* groups of G consecutive ranks: with ranks placed by node, a group is a
     * node (or part of one) and only the replica reduction crosses nodes */
    MPI_CHECK(MPI_Comm_split(MCOMM(c, COMM_WORLD), (int)(c->rank / G), c->rank, &emb));
    MPI_CHECK(MPI_Comm_split(MCOMM(c, COMM_WORLD), (int)(c->rank % G), c->rank, &rep));
    MPI_CHECK(MPI_Comm_dup(MCOMM(c, COMM_WORLD), &dp));
    set_group(c, COMM_EMB, emb);
    set_group(c, COMM_EMB_REPLICA, rep);
    set_group(c, COMM_DP, dp);
    comm_group_nodes(c, COMM_EMB);
    comm_group_nodes(c, COMM_EMB_REPLICA);
    comm_group_nodes(c, COMM_DP);
    c->emb_groups = (int)(c->size / G);
    return 0;
}

void comm_free(struct comm *c)
{
    comm_progress_stop(c);
    for (int grp = COMM_NGROUPS - 1; grp >= 0; grp--)
        free_group(c, (enum comm_group)grp);
    free(c->node_of);
    c->node_of = NULL;
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

void comm_mpi_failed(int err, const char *call, const char *file, int line)
{
    char msg[512];
    comm_error_string(err, msg, sizeof msg);
    fatal("%s:%d: MPI call failed: %s: %s", file, line, call, msg);
}

void comm_describe(const struct comm *c, char *buf, size_t len)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_CHECK(MPI_Get_library_version(lib, &n));
    char *nl = strpbrk(lib, ",\n"); /* keep "Open MPI v4.1.4" */
    if (nl)
        *nl = '\0';
    int nodes = comm_allreduce_sum_i64(c, c->g[COMM_NODE].rank == 0);
    snprintf(buf, len, "%s, %d rank%s on %d node%s", lib, c->size, c->size == 1 ? "" : "s",
             nodes, nodes == 1 ? "" : "s");
}

int comm_cuda_aware(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT)
    /* asked at run time even where the headers built against say 0: the
     * same program with a CUDA-aware libmpi.so.40 of the same version in
     * its place (the GPU bundle's second launcher) answers 1 */
    return MPIX_Query_cuda_support() != 0;
#else
    return 0; /* not built CUDA-aware (or not Open MPI): stage through the host */
#endif
}

const char *comm_phase_name(enum comm_phase ph)
{
    static const char *names[COMM_NPHASES] = {"counts",  "ids",   "rows", "grads", "replica",
                                              "dense",   "kv",    "bias", "other"};
    return names[ph];
}

void comm_bcast_bytes(const struct comm *c, void *buf, size_t bytes, int root)
{
    char *p = buf;
    while (bytes > 0) { /* MPI counts are int */
        int n = bytes > (1u << 30) ? (1 << 30) : (int)bytes;
        TIMED(MPI_Bcast(p, n, MPI_BYTE, root, MCOMM(c, COMM_WORLD)));
        p += n;
        bytes -= (size_t)n;
    }
}

void comm_bcast_string(const struct comm *c, char **s, int root)
{
    uint64_t n = c->rank == root ? strlen(*s) + 1 : 0;
    TIMED(MPI_Bcast(&n, 1, MPI_UINT64_T, root, MCOMM(c, COMM_WORLD)));
    if (c->rank != root) {
        free(*s);
        *s = xmalloc(n);
    }
    comm_bcast_bytes(c, *s, n, root);
}

int64_t comm_allreduce_max_i64(const struct comm *c, int64_t v)
{
    int64_t r;
    TIMED(MPI_Allreduce(&v, &r, 1, MPI_INT64_T, MPI_MAX, MCOMM(c, COMM_WORLD)));
    return r;
}

int64_t comm_allreduce_sum_i64(const struct comm *c, int64_t v)
{
    int64_t r;
    TIMED(MPI_Allreduce(&v, &r, 1, MPI_INT64_T, MPI_SUM, MCOMM(c, COMM_WORLD)));
    return r;
}

double comm_allreduce_max_f64(const struct comm *c, enum comm_group g, double v)
{
    double r;
    TIMED(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, MCOMM(c, g)));
    return r;
}

double comm_allreduce_sum_f64(const struct comm *c, enum comm_group g, double v)
{
    double r;
    TIMED(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_SUM, MCOMM(c, g)));
    return r;
}

void comm_barrier(const struct comm *c) { TIMED(MPI_Barrier(MCOMM(c, COMM_WORLD))); }

void comm_barrier_group(const struct comm *c, enum comm_group g)
{
    TIMED(MPI_Barrier(MCOMM(c, g)));
}

void comm_allgather_bytes(const struct comm *c, enum comm_group g, const void *send, size_t n,
                          void *recv)
{
    if (n > INT_MAX)
        fatal("allgather: %zu bytes do not fit an MPI count", n);
    TIMED(MPI_Allgather(send, (int)n, MPI_BYTE, recv, (int)n, MPI_BYTE, MCOMM(c, g)));
}

/* Count a send of n elements to rank p of the group (not to itself). */
static void count_send(struct comm *c, enum comm_group g, int p, int64_t n, size_t elem,
                       enum comm_phase ph)
{
    if (p == c->g[g].rank || n <= 0)
        return;
    c->counters.bytes[ph] += n * (int64_t)elem;
    c->counters.messages[ph]++;
    if (comm_peer_remote(c, g, p))
        c->counters.xbytes[ph] += n * (int64_t)elem;
}

void comm_count_ipc(struct comm *c, enum comm_group g, int p, int64_t bytes, enum comm_phase ph)
{
    count_send(c, g, p, bytes, 1, ph);
    if (p != c->g[g].rank && bytes > 0)
        c->counters.ipc[ph] += bytes;
}

/* Count what this rank sends to the other ranks of the group. */
static void count_sends(struct comm *c, enum comm_group g, const int64_t *scounts, size_t elem,
                        enum comm_phase ph)
{
    for (int p = 0; p < c->g[g].size; p++)
        count_send(c, g, p, scounts[p], elem, ph);
    c->counters.calls[ph]++;
}

/* MPI-3 counts are int: convert, refusing what does not fit. */
static int *to_int(const int64_t *v, int n, const char *what)
{
    int *r = xmalloc((size_t)n * sizeof *r);
    for (int i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] > INT_MAX)
            fatal("exchange: %s[%d] = %lld does not fit an MPI count (split the batch)", what, i,
                  (long long)v[i]);
        r[i] = (int)v[i];
    }
    return r;
}

void comm_alltoall_i64(struct comm *c, enum comm_group g, const int64_t *send, int64_t *recv,
                       enum comm_phase ph)
{
    int n = c->g[g].size;
    int64_t *ones = xmalloc((size_t)n * sizeof *ones);
    for (int p = 0; p < n; p++)
        ones[p] = 1;
    count_sends(c, g, ones, 8, ph);
    free(ones);
    TIMED(MPI_Alltoall(send, 1, MPI_INT64_T, recv, 1, MPI_INT64_T, MCOMM(c, g)));
}

static void request_start(struct comm_request *req, const char *op, enum comm_group g)
{
    req->mpi = xmalloc(sizeof(MPI_Request));
    req->posted = MPI_Wtime();
    req->op = op;
    req->group = (int)g;
}

static void request_done(struct comm_request *req)
{
    g_flight_seconds += MPI_Wtime() - req->posted;
    free(req->mpi);
    free(req->scounts);
    free(req->sdispls);
    free(req->rcounts);
    free(req->rdispls);
    memset(req, 0, sizeof *req);
}

void comm_ialltoallv(struct comm *c, enum comm_group g, enum comm_dtype t, int64_t width,
                     const void *send, const int64_t *scounts, const int64_t *sdispls,
                     void *recv, const int64_t *rcounts, const int64_t *rdispls,
                     enum comm_phase ph, struct comm_request *req)
{
    int n = c->g[g].size, made;
    count_sends(c, g, scounts, type_size(t) * (size_t)width, ph);
    req->scounts = to_int(scounts, n, "send count");
    req->sdispls = to_int(sdispls, n, "send displacement");
    req->rcounts = to_int(rcounts, n, "receive count");
    req->rdispls = to_int(rdispls, n, "receive displacement");
    request_start(req, "MPI_Wait for MPI_Ialltoallv", g);
    MPI_Datatype rt = row_type(t, width, &made);
    MPI_CHECK(MPI_Ialltoallv(send, req->scounts, req->sdispls, rt, recv, req->rcounts,
                             req->rdispls, rt, MCOMM(c, g), (MPI_Request *)req->mpi));
    if (made)
        MPI_CHECK(MPI_Type_free(&rt));
}

void comm_ialltoall_i64(struct comm *c, enum comm_group g, const int64_t *send, int per_peer,
                        int64_t *recv, enum comm_phase ph, struct comm_request *req)
{
    int n = c->g[g].size;
    int64_t *k = xmalloc((size_t)n * sizeof *k);
    for (int p = 0; p < n; p++)
        k[p] = per_peer;
    count_sends(c, g, k, 8, ph);
    free(k);
    request_start(req, "MPI_Wait for MPI_Ialltoall", g);
    MPI_CHECK(MPI_Ialltoall(send, per_peer, MPI_INT64_T, recv, per_peer, MPI_INT64_T,
                            MCOMM(c, g), (MPI_Request *)req->mpi));
}

void comm_iallreduce_sum_f32(struct comm *c, enum comm_group g, float *buf, int64_t n,
                             enum comm_phase ph, struct comm_request *req)
{
    if (n > INT_MAX)
        fatal("iallreduce: %lld values do not fit an MPI count (smaller buckets)", (long long)n);
    c->counters.calls[ph]++;
    if (c->g[g].size > 1) {
        c->counters.bytes[ph] += n * 4;
        c->counters.messages[ph]++;
    }
    request_start(req, "MPI_Wait for MPI_Iallreduce", g);
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MCOMM(c, g),
                             (MPI_Request *)req->mpi));
}

void comm_wait(struct comm_request *req)
{
    double t0 = g_mpi_seconds;
    TIMED_AS(req->op, req->group, MPI_Wait((MPI_Request *)req->mpi, MPI_STATUS_IGNORE));
    g_nb_wait_seconds += g_mpi_seconds - t0;
    request_done(req);
}

int comm_test(struct comm_request *req)
{
    int done = 0;
    MPI_CHECK(MPI_Test((MPI_Request *)req->mpi, &done, MPI_STATUS_IGNORE));
    if (done)
        request_done(req);
    return done;
}

void comm_alltoallv(struct comm *c, enum comm_group g, enum comm_dtype t, const void *send,
                    const int64_t *scounts, const int64_t *sdispls, void *recv,
                    const int64_t *rcounts, const int64_t *rdispls, enum comm_phase ph)
{
    int n = c->g[g].size;
    count_sends(c, g, scounts, type_size(t), ph);
    int *sc = to_int(scounts, n, "send count"), *sd = to_int(sdispls, n, "send displacement");
    int *rc = to_int(rcounts, n, "receive count"), *rd = to_int(rdispls, n, "receive displacement");
    TIMED(MPI_Alltoallv(send, sc, sd, mpi_type(t), recv, rc, rd, mpi_type(t), MCOMM(c, g)));
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

void comm_post_rows(struct comm *c, enum comm_group g, enum comm_dtype t, int64_t width,
                    const struct comm_msg *m, int n, int send, enum comm_phase ph,
                    struct comm_msgs *out)
{
    MPI_Request *req = xmalloc((size_t)(n ? n : 1) * sizeof *req);
    const size_t elem = type_size(t) * (size_t)width;
    int made;
    MPI_Datatype rt = row_type(t, width, &made);
    for (int i = 0; i < n; i++) {
        if (m[i].n < 0 || m[i].n > INT_MAX)
            fatal("exchange: a message of %lld rows does not fit an MPI count",
                  (long long)m[i].n);
        if (!send) {
            MPI_CHECK(MPI_Irecv(m[i].buf, (int)m[i].n, rt, m[i].peer, m[i].tag, MCOMM(c, g),
                                &req[i]));
            continue;
        }
        count_send(c, g, m[i].peer, m[i].n, elem, ph);
        MPI_CHECK(MPI_Isend(m[i].buf, (int)m[i].n, rt, m[i].peer, m[i].tag, MCOMM(c, g),
                            &req[i]));
    }
    if (made)
        MPI_CHECK(MPI_Type_free(&rt));
    if (send)
        c->counters.calls[ph]++;
    out->mpi = req;
    out->n = n;
    out->group = (int)g;
    out->trace = comm_trace_on() ? comm_trace_post(c, (int)g, m, n, elem, send) : NULL;
}

void comm_post_msgs(struct comm *c, enum comm_group g, enum comm_dtype t,
                    const struct comm_msg *m, int n, int send, enum comm_phase ph,
                    struct comm_msgs *out)
{
    comm_post_rows(c, g, t, 1, m, n, send, ph, out);
}

/* The traced requests of r: test (block = 0) or wait for (1) them one by
 * one (MPI_Testsome / MPI_Waitsome), each completion recorded when seen;
 * *done = 1 once all are. Returns MPI_SUCCESS (for TIMED_AS). */
static int traced_complete(struct comm_msgs *r, int block, int *done)
{
    MPI_Request *q = r->mpi;
    int *idx = xmalloc((size_t)r->n * sizeof *idx), out = 0;
    *done = 0;
    do {
        if (block)
            MPI_CHECK(MPI_Waitsome(r->n, q, &out, idx, MPI_STATUSES_IGNORE));
        else
            MPI_CHECK(MPI_Testsome(r->n, q, &out, idx, MPI_STATUSES_IGNORE));
        if (out == MPI_UNDEFINED) { /* none left */
            *done = 1;
            break;
        }
        for (int i = 0; i < out; i++)
            comm_trace_done(r->trace, idx[i]);
        int left = 0;
        for (int i = 0; i < r->n; i++)
            left += q[i] != MPI_REQUEST_NULL;
        *done = left == 0;
    } while (block && !*done);
    free(idx);
    return MPI_SUCCESS;
}

static void msgs_release(struct comm_msgs *r)
{
    free(r->mpi);
    r->mpi = NULL;
    r->n = 0;
    comm_trace_free(r->trace);
    r->trace = NULL;
}

int comm_test_msgs(struct comm_msgs *r)
{
    int done = 1;
    if (r->n > 0 && r->trace)
        traced_complete(r, 0, &done);
    else if (r->n > 0)
        MPI_CHECK(MPI_Testall(r->n, r->mpi, &done, MPI_STATUSES_IGNORE));
    if (done)
        msgs_release(r);
    return done;
}

void comm_wait_msgs(struct comm_msgs *r)
{
    int done;
    if (r->n > 0 && r->trace)
        TIMED_AS("point-to-point messages (MPI_Waitsome)", r->group,
                 traced_complete(r, 1, &done));
    else if (r->n > 0)
        TIMED_AS("point-to-point messages (MPI_Waitall)", r->group,
                 MPI_Waitall(r->n, r->mpi, MPI_STATUSES_IGNORE));
    msgs_release(r);
}

void comm_allgather_i64(struct comm *c, enum comm_group g, int64_t v, int64_t *out)
{
    TIMED(MPI_Allgather(&v, 1, MPI_INT64_T, out, 1, MPI_INT64_T, MCOMM(c, g)));
}

void comm_allgatherv(struct comm *c, enum comm_group g, enum comm_dtype t, const void *send,
                     int64_t n, void *recv, const int64_t *rcounts, enum comm_phase ph)
{
    int size = c->g[g].size;
    int64_t *displs = xmalloc((size_t)size * sizeof *displs);
    int64_t *sc = xmalloc((size_t)size * sizeof *sc), total = 0;
    for (int p = 0; p < size; p++) {
        displs[p] = total;
        total += rcounts[p];
        sc[p] = n;
    }
    count_sends(c, g, sc, type_size(t), ph);
    int *rc = to_int(rcounts, size, "gather count"), *rd = to_int(displs, size, "gather displacement");
    if (n > INT_MAX)
        fatal("allgatherv: %lld elements do not fit an MPI count", (long long)n);
    TIMED(MPI_Allgatherv(send, (int)n, mpi_type(t), recv, rc, rd, mpi_type(t), MCOMM(c, g)));
    free(rc);
    free(rd);
    free(sc);
    free(displs);
}

void comm_allreduce_sum_f32(struct comm *c, enum comm_group g, float *buf, int64_t n,
                            enum comm_phase ph)
{
    c->counters.calls[ph]++;
    if (c->g[g].size > 1) {
        c->counters.bytes[ph] += n * 4;
        c->counters.messages[ph]++;
    }
    while (n > 0) {
        int k = n > (1 << 28) ? (1 << 28) : (int)n;
        TIMED(MPI_Allreduce(MPI_IN_PLACE, buf, k, MPI_FLOAT, MPI_SUM, MCOMM(c, g)));
        buf += k;
        n -= k;
    }
}


void comm_gather_i64(struct comm *c, enum comm_group g, int64_t v, int64_t *out, int root)
{
    TIMED(MPI_Gather(&v, 1, MPI_INT64_T, out, 1, MPI_INT64_T, root, MCOMM(c, g)));
}

void comm_gatherv(struct comm *c, enum comm_group g, enum comm_dtype t, const void *send,
                  int64_t n, void *recv, const int64_t *rcounts, int root)
{
    int size = c->g[g].size, *rc = NULL, *rd = NULL;
    if (c->g[g].rank == root) {
        int64_t *displs = xmalloc((size_t)size * sizeof *displs), total = 0;
        for (int p = 0; p < size; p++) {
            displs[p] = total;
            total += rcounts[p];
        }
        rc = to_int(rcounts, size, "gather count");
        rd = to_int(displs, size, "gather displacement");
        free(displs);
    }
    if (n > INT_MAX)
        fatal("gatherv: %lld elements do not fit an MPI count", (long long)n);
    TIMED(MPI_Gatherv(send, (int)n, mpi_type(t), recv, rc, rd, mpi_type(t), root, MCOMM(c, g)));
    free(rc);
    free(rd);
}


void comm_allreduce_sum_i64v(struct comm *c, enum comm_group g, int64_t *buf, int64_t n)
{
    while (n > 0) {
        int k = n > (1 << 28) ? (1 << 28) : (int)n;
        TIMED(MPI_Allreduce(MPI_IN_PLACE, buf, k, MPI_INT64_T, MPI_SUM, MCOMM(c, g)));
        buf += k;
        n -= k;
    }
}
