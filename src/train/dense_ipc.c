/* dense_ipc: the intra-node transports of the dense all-reduce; see
 * dense_ipc.h. No MPI here: handles and barriers go through comm.
 * Verified on one GPU shared by 2 and 4 ranks only (see dense_ipc.h). */
#include "train/dense_ipc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "backend/device.h"
#include "base/log.h"

#define SLICE_ALIGN 64 /* floats: slices start on 256-byte boundaries */
#define REASON_BYTES 256

/* slice q of the arena: [*lo, *lo + return value) */
static int64_t slice(const struct dense_ipc *d, int q, int64_t *lo)
{
    int64_t a = (int64_t)q * d->chunk, b = a + d->chunk;
    a = a < d->n ? a : d->n;
    b = b < d->n ? b : d->n;
    *lo = a;
    return b - a;
}

static float *slot(const struct dense_ipc *d, int q) { return d->scratch + (int64_t)q * d->chunk; }

/* 0 when no rank failed; else -1 on every rank with err = the reason of
 * the first failing rank (gathered over the world). Collective. */
static int agree(struct comm *c, int failed, const char *why, char *err, size_t errlen)
{
    if (comm_allreduce_sum_i64(c, failed ? 1 : 0) == 0)
        return 0;
    char mine[REASON_BYTES];
    snprintf(mine, sizeof mine, "%s", failed ? why : "");
    char *all = xmalloc((size_t)c->size * REASON_BYTES);
    comm_allgather_bytes(c, COMM_WORLD, mine, REASON_BYTES, all);
    int r = 0;
    while (r < c->size && all[(size_t)r * REASON_BYTES] == '\0')
        r++;
    if (r < c->size)
        errorf(err, errlen, "rank %d: %s", r, all + (size_t)r * REASON_BYTES);
    else
        errorf(err, errlen, "a rank failed without a reason");
    free(all);
    return -1;
}

void dense_ipc_free(struct dense_ipc *d)
{
    const struct backend_ops *be = d->be;
    if (!be)
        return;
    be->comm_sync();
    if (d->peer)
        for (int q = 0; q < d->L; q++)
            if (q != d->me && d->peer[q])
                be->ipc_close(d->peer[q]);
    if (d->L > 1)
        comm_barrier_group(d->c, COMM_NODE);
    free(d->peer);
    be->free(d->scratch);
    if (d->stage)
        be->host_free(d->stage);
    memset(d, 0, sizeof *d);
}

int dense_ipc_init(struct dense_ipc *d, struct comm *c, const struct backend_ops *be,
                   float *grad, int64_t n, int use_kernel, int direct, char *err,
                   size_t errlen)
{
    memset(d, 0, sizeof *d);
    /* the layout: the same everywhere, so every rank takes the same branch */
    const int L = c->g[COMM_NODE].size, nodes = c->g[COMM_XNODE].size;
    if (c->g[COMM_DP].size != c->size)
        return errorf(err, errlen, "the dense group has %d of the %d ranks (dp must be all ranks)",
                      c->g[COMM_DP].size, c->size);
    int64_t most = comm_allreduce_max_i64(c, L), least = -comm_allreduce_max_i64(c, -(int64_t)L);
    if (most != least || (int64_t)L * nodes != c->size)
        return errorf(err, errlen,
                      "nodes run different numbers of ranks (%lld to %lld): the slices of the "
                      "reduction need the same number on every node",
                      (long long)least, (long long)most);
    d->be = be;
    d->c = c;
    d->grad = grad;
    d->n = n;
    d->L = L;
    d->me = c->g[COMM_NODE].rank;
    d->nodes = nodes;
    d->use_kernel = use_kernel;
    d->chunk = ((n + L - 1) / L + SLICE_ALIGN - 1) / SLICE_ALIGN * SLICE_ALIGN;
    d->peer = xcalloc((size_t)L, sizeof *d->peer);
    d->peer[d->me] = grad;
    d->scratch = L > 1 ? be->alloc((size_t)(L * d->chunk) * sizeof(float)) : NULL;
    if (nodes > 1 && !direct)
        d->stage = be->host_alloc((size_t)d->chunk * sizeof(float));
    if (L == 1)
        return 0; /* no peer on this node: MPI across nodes only */

    /* handles of every arena of the node, then the mappings */
    char why[REASON_BYTES] = "";
    unsigned char mine[BACKEND_IPC_HANDLE_BYTES] = {0};
    int failed = be->ipc_export(grad, mine, why, sizeof why) != 0;
    unsigned char *all = xmalloc((size_t)L * BACKEND_IPC_HANDLE_BYTES);
    comm_allgather_bytes(c, COMM_NODE, mine, BACKEND_IPC_HANDLE_BYTES, all);
    int bad = agree(c, failed, why, err, errlen);
    for (int q = 0; q < L && !bad && !failed; q++)
        if (q != d->me) {
            d->peer[q] = be->ipc_open(all + (size_t)q * BACKEND_IPC_HANDLE_BYTES, why,
                                      sizeof why);
            failed = d->peer[q] == NULL;
        }
    free(all);
    if (!bad)
        bad = agree(c, failed, why, err, errlen);
    if (bad) {
        dense_ipc_free(d);
        return -1;
    }
    return 0;
}

void dense_ipc_allreduce(struct dense_ipc *d)
{
    const struct backend_ops *be = d->be;
    struct comm *c = d->c;
    const int L = d->L, me = d->me, k = d->use_kernel;
    if (d->n == 0)
        return;
    int64_t lo;
    const int64_t m = slice(d, me, &lo);
    const size_t bytes = (size_t)m * sizeof(float);
    be->synchronize(); /* this rank's gradients are final ... */
    if (L > 1) {
        comm_barrier_group(c, COMM_NODE); /* ... and every peer's */
        /* 1. reduce-scatter: slot q = rank q's slice me; slot 0 += slot 1, .., slot L-1 */
        for (int q = 0; q < L; q++)
            be->peer_copy(slot(d, q), d->peer[q] + lo, bytes, k);
        for (int q = 1; q < L; q++)
            be->comm_add(slot(d, 0), slot(d, q), m);
        be->peer_copy(d->grad + lo, slot(d, 0), bytes, k);
        be->comm_sync();
    }
    /* 2. across nodes: slice me with the ranks of the same node index (m is
     * the same for all of them, so all or none call) */
    if (d->nodes > 1 && m > 0) {
        device_allreduce_sum_f32(be, c, COMM_XNODE, d->grad + lo, m, d->stage);
        /* staged: the sum comes up on the comm stream, and the node's peers
         * read the slice (step 3) once the barrier says it is there */
        if (L > 1 && d->stage)
            be->comm_sync();
    }
    if (L > 1) {
        comm_barrier_group(c, COMM_NODE); /* every owned slice is final */
        /* 3. all-gather: slice q from its owner q */
        for (int q = 0; q < L; q++) {
            if (q == me)
                continue;
            int64_t qlo;
            const int64_t qm = slice(d, q, &qlo);
            be->peer_copy(d->grad + qlo, d->peer[q] + qlo, (size_t)qm * sizeof(float), k);
        }
        be->comm_sync();
        comm_barrier_group(c, COMM_NODE); /* nobody reads this arena any more */
    }
}
