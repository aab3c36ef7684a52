/* dense_ipc: the dense gradient all-reduce over dp with the intra-node
 * transports of parallel.transport = copy-engine | kernel (doc/overlap.md,
 * "Transports"): peers on one node read each other's gradient arenas
 * through CUDA IPC mappings (backend.h: ipc_*, peer_copy, comm_add), with
 * the copy engines (no SM) or a copy kernel; nodes sum through MPI (comm).
 * Verified on one H200 shared by 2 and 4 ranks (device.share=on: losses
 * of tests/cuda_train.sh equal to mpi's); not yet with several GPUs (peer
 * access between devices) or several nodes (the COMM_XNODE step).
 *
 * With L ranks on a node, node rank r owns slice r of the arena grad[n]
 * (slices of `chunk` floats; the last ones may be short or empty):
 *   1. reduce-scatter: r copies slice r of every peer's arena into its
 *      scratch and adds the copies IN NODE-RANK ORDER 0, 1, .., L-1, so a
 *      slice's sum has the same bits whichever rank computes it; the sum
 *      goes back into slice r of r's arena;
 *   2. with several nodes: slice r is summed over COMM_XNODE by MPI
 *      (through a pinned host buffer unless MPI reads device memory);
 *   3. all-gather: r copies slice q of peer q's arena into its own, q != r.
 * Node barriers (after comm_sync) separate the phases: no rank reads a
 * slice before it is final, and none returns (then zeroes or scales its
 * arena) while peers still read it. Needs the same number of ranks on
 * every node and dp = all ranks. */
#ifndef FS_DENSE_IPC_H
#define FS_DENSE_IPC_H

#include <stdint.h>

#include "backend/backend.h"
#include "comm/comm.h"

struct dense_ipc {
    const struct backend_ops *be;
    struct comm *c;
    float *grad;     /* [n] this rank's arena (backend memory) */
    int64_t n;
    int L, me;       /* ranks on this node, this rank's node-local index */
    int nodes;       /* nodes (COMM_XNODE size) */
    int use_kernel;  /* 1: the copy kernel, 0: the copy engines */
    int64_t chunk;   /* floats per slice: slice q = [q chunk, (q + 1) chunk) within n */
    float **peer;    /* [L]: node rank q's arena, mapped here (peer[me] = grad) */
    float *scratch;  /* [L * chunk] backend memory: slot q = rank q's copy of slice me */
    float *stage;    /* [chunk] pinned host memory for the cross-node step, or NULL */
};

/* Set up the transport for the arena grad[n] (the same n on every rank) on
 * a backend with CUDA IPC (backend_has_ipc: dense_sync asks first): exports grad's handle, gathers the node's handles (COMM_NODE) and maps
 * the peers' arenas. direct: MPI reads device memory (no staging). Collective
 * over the world; returns 0, or -1 on every rank with the same err (the
 * first failing rank's reason) when the layout is unsupported or a mapping
 * fails (nothing is left allocated then). */
int dense_ipc_init(struct dense_ipc *d, struct comm *c, const struct backend_ops *be,
                   float *grad, int64_t n, int use_kernel, int direct, char *err,
                   size_t errlen);
/* Sum grad[n] over dp in place (every rank gets the same values). The
 * gradients are those enqueued so far on the compute stream; returns once
 * the arena holds the sums. Collective over the world. */
void dense_ipc_allreduce(struct dense_ipc *d);
/* Unmap and free; collective over the node (nobody frees its arena while
 * a peer still maps it). */
void dense_ipc_free(struct dense_ipc *d);

#endif
