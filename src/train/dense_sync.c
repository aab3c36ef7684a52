/* dense_sync: the dense gradient all-reduce; see dense_sync.h. */
#include "train/dense_sync.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "train/dense_ipc.h"

#define DENSE_MAX_BUCKETS (MODEL_MAX_PARAMS + 1)

struct dense_sync {
    struct comm *c;
    const struct backend_ops *be;
    struct model *m;
    int ipc;                  /* copy-engine | kernel in use */
    struct dense_ipc dipc;    /* its state when ipc */
    float *stage;             /* [m->ngrad] pinned host buffer (staged all-reduce) or NULL */
    int bucketed;
    int nbuckets;
    int64_t bucket_end;       /* arena floats [bucket_end, ngrad) are posted */
    struct comm_request buckets[DENSE_MAX_BUCKETS];
    /* staged (a device through pinned host memory) where the host would
     * post buckets, dp >= 3: the buckets' bounds recorded during the
     * backward and summed in the same non-blocking all-reduces on the
     * staged copy (staged_sum): the host's bits at any P */
    int mimic;
    int64_t blo[DENSE_MAX_BUCKETS], bn[DENSE_MAX_BUCKETS]; /* bucket i: [blo, blo + bn) */
    /* issue 51 G: the staged copy down started after the backward */
    struct backend_event *down; /* its event, or NULL */
    int started;                /* this step's copy is in flight */
    double sumsq;               /* the summed arena's sum of squares (host) */
};

/* parallel.transport: mpi, or on the CUDA backend copy-engine | kernel
 * within a node (MPI across nodes). auto = copy-engine when the backend is
 * CUDA and some node runs several ranks, else mpi; it falls back to mpi
 * when the CUDA IPC mappings cannot be made, where an explicit choice ends
 * the job. Every rank takes the same branch (same backend, global rank
 * counts). The embedding exchanges: train.c (table_transport). */
static void transport_choose(struct dense_sync *s, const struct device_choice *dev,
                             const char *tp)
{
    /* copy-engine or kernel without CUDA IPC: refused by backend_check */
    const int is_auto = !strcmp(tp, "auto"), host = backend_is_host(s->be);
    const int ipc = backend_has_ipc(s->be);
    const char *mpi_how = host ? "MPI"
                          : dev->direct ? "CUDA-aware MPI"
                                        : "MPI, staged through pinned host memory";
    int64_t most_on_node = comm_allreduce_max_i64(s->c, s->c->g[COMM_NODE].size);
    if (!strcmp(tp, "mpi") || !ipc || (is_auto && most_on_node < 2)) {
        log_info("parallel.transport: mpi (%s)%s", mpi_how,
                 !is_auto ? ""
                 : host   ? ", chosen by auto: the CPU backend"
                 : !ipc   ? ", chosen by auto: the backend has no CUDA IPC"
                          : ", chosen by auto: one rank per node");
        return;
    }
    const int use_kernel = !strcmp(tp, "kernel");
    char err[512];
    if (dense_ipc_init(&s->dipc, s->c, s->be, s->m->grad, s->m->ngrad, use_kernel, dev->direct,
                       err, sizeof err)) {
        if (!is_auto)
            fatal("parallel.transport = %s: %s", tp, err);
        log_info("notice: parallel.transport=auto: mpi (%s), CUDA IPC is not available: %s",
                 mpi_how, err);
        return;
    }
    s->ipc = 1;
    log_info("parallel.transport: %s%s: dense all-reduce by %s through CUDA IPC within a "
             "node (%d ranks), %s across the %d nodes",
             use_kernel ? "kernel" : "copy-engine", is_auto ? " (chosen by auto)" : "",
             use_kernel ? "a copy kernel" : "the copy engines", s->dipc.L,
             s->dipc.nodes < 2 ? "nothing" : s->dipc.stage ? "staged MPI" : "CUDA-aware MPI",
             s->dipc.nodes);
}

struct dense_sync *dense_sync_init(struct comm *c, const struct device_choice *dev,
                                   struct model *m, const char *transport, int want_buckets)
{
    struct dense_sync *s = xcalloc(1, sizeof *s);
    s->c = c;
    s->be = dev->be;
    s->m = m;
    transport_choose(s, dev, transport);
    /* buckets are non-blocking all-reduces: on host memory only (CUDA-aware
     * Open MPI takes device buffers in point-to-point calls and blocking
     * collectives, not in non-blocking collectives); the IPC transports
     * reduce the whole arena at once */
    s->bucketed = want_buckets && !s->ipc && backend_is_host(s->be) && !model_exact(m);
    if (!backend_is_host(s->be) && !dev->direct && !s->ipc)
        s->stage = s->be->host_alloc((size_t)m->ngrad * sizeof(float));
    /* at P = 2 a + b = b + a: one all-reduce has the buckets' bits */
    s->mimic = want_buckets && s->stage && !model_exact(m) && c->g[COMM_DP].size >= 3;
    return s;
}

void dense_sync_free(struct dense_sync *s)
{
    if (!s)
        return;
    if (s->ipc)
        dense_ipc_free(&s->dipc);
    if (s->stage)
        s->be->host_free(s->stage);
    if (s->down)
        s->be->event_free(s->down);
    free(s);
}

int dense_sync_bucketed(const struct dense_sync *s) { return s->bucketed; }

/* The staged copy stage [ngrad] summed over dp: in the buckets the host
 * backend would have posted (mimic: the same MPI_Iallreduce calls, so the
 * same sums at P >= 3, where Open MPI's order depends on the call and the
 * count), else at once. */
static void staged_sum(struct dense_sync *s)
{
    const int64_t n = s->m->ngrad;
    int64_t covered = 0;
    for (int i = 0; s->mimic && i < s->nbuckets; i++)
        covered += s->bn[i];
    if (!s->mimic || s->nbuckets == 0 || covered != n) {
        comm_allreduce_sum_f32(s->c, COMM_DP, s->stage, n, COMM_PH_DENSE);
        return;
    }
    for (int i = 0; i < s->nbuckets; i++)
        comm_iallreduce_sum_f32(s->c, COMM_DP, s->stage + s->blo[i], s->bn[i], COMM_PH_DENSE,
                                &s->buckets[i]);
    for (int i = 0; i < s->nbuckets; i++)
        comm_wait(&s->buckets[i]);
}

/* --- issue 51 G: the staged copy down started early ---------------------- */

int dense_sync_start(struct dense_sync *s, const void *ride, void *ride_host, size_t ride_bytes)
{
    const struct backend_ops *be = s->be;
    s->started = 0;
    if (!s->stage || s->bucketed || s->ipc || model_exact(s->m) || s->c->g[COMM_DP].size < 2 ||
        s->m->ngrad <= 0)
        return 0;
    if (!s->down)
        s->down = be->event_new(0);
    be->to_host_async(s->stage, s->m->grad, (size_t)s->m->ngrad * sizeof(float));
    if (ride_bytes)
        be->to_host_async(ride_host, ride, ride_bytes);
    be->event_record(s->down, BACKEND_COMM);
    s->started = 1;
    return 1;
}

/* The started copy's end (no wait when it is done), the sum over dp on the
 * host, its sum of squares there (backend_cpu's: the CPU's arithmetic) and
 * the copy up. */
static void finish_started(struct dense_sync *s)
{
    const struct backend_ops *be = s->be;
    const int64_t n = s->m->ngrad;
    if (!be->event_query(s->down))
        be->event_sync(s->down);
    staged_sum(s);
    s->sumsq = 0;
    backend_cpu.sumsq_acc(n, s->stage, &s->sumsq);
    /* the compute stream waits for the copy up; the comm stream runs it
     * before it next overwrites stage */
    be->to_device_async(s->m->grad, s->stage, (size_t)n * sizeof(float));
    s->started = 0;
}

double dense_sync_sumsq(const struct dense_sync *s) { return s->sumsq; }

void dense_sync_begin(struct dense_sync *s)
{
    s->nbuckets = 0;
    s->bucket_end = s->m->ngrad;
}

/* Post the arena floats [offset of params[first], bucket_end) (mimic:
 * record the bounds for staged_sum). */
static void bucket_post(struct dense_sync *s, int first)
{
    int64_t lo = s->m->params[first].g - s->m->grad;
    if (lo >= s->bucket_end)
        return;
    if (s->nbuckets == DENSE_MAX_BUCKETS)
        fatal("train: more than %d gradient buckets", DENSE_MAX_BUCKETS);
    s->blo[s->nbuckets] = lo;
    s->bn[s->nbuckets] = s->bucket_end - lo;
    if (s->bucketed)
        comm_iallreduce_sum_f32(s->c, COMM_DP, s->m->grad + lo, s->bucket_end - lo,
                                COMM_PH_DENSE, &s->buckets[s->nbuckets]);
    s->nbuckets++;
    s->bucket_end = lo;
}

void dense_sync_post_final(struct dense_sync *s, int first_final)
{
    if ((s->bucketed || s->mimic) && first_final > 0)
        bucket_post(s, first_final);
}

void dense_sync_post_last(struct dense_sync *s)
{
    if (s->bucketed || s->mimic)
        bucket_post(s, 0);
}

void dense_sync_progress(struct dense_sync *s)
{
    for (int i = 0; s->bucketed && i < s->nbuckets; i++)
        if (s->buckets[i].mpi)
            comm_test(&s->buckets[i]);
}

void dense_sync_finish(struct dense_sync *s)
{
    if (s->bucketed) {
        for (int i = 0; i < s->nbuckets; i++)
            if (s->buckets[i].mpi)
                comm_wait(&s->buckets[i]);
    } else if (model_exact(s->m)) { /* the accumulators: integer sums, any order */
        int64_t n;
        int64_t *x = model_exact_arena(s->m, &n);
        comm_allreduce_sum_i64v(s->c, COMM_DP, x, n);
        model_exact_finish(s->m);
    } else if (s->ipc) {
        dense_ipc_allreduce(&s->dipc);
    } else if (s->started) {
        finish_started(s);
    } else if (s->mimic && s->c->g[COMM_DP].size > 1 && s->m->ngrad > 0) {
        /* device_allreduce_sum_f32's staging with the host's buckets */
        const size_t bytes = (size_t)s->m->ngrad * sizeof(float);
        s->be->to_host_async(s->stage, s->m->grad, bytes);
        s->be->comm_sync();
        staged_sum(s);
        s->be->to_device_async(s->m->grad, s->stage, bytes);
    } else {
        device_allreduce_sum_f32(s->be, s->c, COMM_DP, s->m->grad, s->m->ngrad, s->stage);
    }
}
