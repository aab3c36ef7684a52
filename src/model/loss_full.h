/* loss_full: the exact softmax cross-entropy of every supervised position
 * against ALL items of the item table (train.loss = full), computed over
 * the table as it is sharded in the emb group (vocabulary-parallel, as
 * Megatron-LM's cross-entropy; doc/quality.md).
 *
 * With e_j the (L2-normalised when normalize_items) rows of items 1..I and
 * u_i the user vector of position i,
 *   s_ij = u_i . e_j / tau,   loss_i = logsumexp_j s_ij - s_i,target(i)
 * (history items are not excluded, as in the published full-CE setups).
 * Within the emb group of G ranks:
 *   1. the supervised positions' u and target ids are all-gathered in rank
 *      order (Ng positions in the group);
 *   2. every rank scores the Ng positions against ITS shard (ids = shard
 *      mod G) in blocks: logits [cp, ci] by GEMM, at most
 *      LOSS_FULL_LOGITS floats (debug.full_logits) a block; a device takes
 *      k consecutive blocks in one pass ([k cp, ci]: up to a quarter of its
 *      free memory, LOSS_FULL_DEV_LOGITS at most, the same k on every
 *      rank of the group);
 *   3. per pass, the shards' log-sum-exps are all-gathered and combined in
 *      rank order (the group-wide max and sum of exponentials); the
 *      target's logit comes from the target's owner, summed per block on
 *      the backend (softmax_block_grad's acc) and read once per step;
 *   4. the gradient w.r.t. the logits, p_ij - [j = target], gives each
 *      owner the gradient of the Ng user vectors against its shard (sent
 *      back to the positions' ranks by one all-to-all and summed there in
 *      rank order) and the gradient of its shard rows (every row: the
 *      softmax touches them all), accumulated into drows.
 * With one item block per shard (ceil(I / G) <= LOSS_FULL_LOGITS / 128)
 * each block of logits is computed once (3 GEMMs of Ng x I/G x d); beyond,
 * it is recomputed for the backward (4 GEMMs) so that memory stays
 * bounded. The sums that cross positions (the shard rows' gradients, the
 * loss) are taken per block of cp positions in block order whatever the
 * pass, so that a device's passes give the CPU's results (the fake device:
 * bit for bit).
 *
 * The shard's rows come from the step's exchange: the trainer requests
 * every id of its own shard along with the step's inputs (ids first,
 * first + G, ... in loss_full_shard_ids order), so that their gradients
 * travel and are applied by the existing sparse path (emb_grad_finish: one
 * optimizer step per row, replicas summed) together with those of the
 * history tokens.
 *
 * Memory per rank, beyond the exchange's own [nuniq, d] buffers (which the
 * shard's rows join): three [m, d] float buffers (the shard's rows, their
 * normalised copy, their gradient; m = ceil(I / G)), LOSS_FULL_LOGITS floats
 * of logits (16 MiB; a device's pass: up to a quarter of its free memory),
 * and O(Ng d) for the gathered user vectors and their partial gradients.
 *
 * Losses and gradients are normalised by the caller's scale = 1 / (global
 * supervised positions). Sums are in fixed orders (rank order across the
 * group), so the loss is the same on any number of ranks and any
 * embedding_group to float rounding. The pointers u, rows, du, drows and
 * sh->idx are backend memory; targets are host memory. On a host backend
 * the gathered vectors and the partial gradients go to MPI as they are, on
 * a device through host copies or directly (device.staging = direct). On
 * a device the host waits of a step are one per pass (its log-sum-exps
 * cross to the host for the all-gather) and one for the target logits'
 * sums, besides the gather and the gradients' all-to-all. */
#ifndef FS_LOSS_FULL_H
#define FS_LOSS_FULL_H

#include <stdint.h>

#include "backend/backend.h"
#include "comm/comm.h"

/* Logits of a block (floats): 16 MiB; shards of at most LOSS_FULL_LOGITS /
 * 128 rows (32768) are scored in one item block, larger ones in blocks of
 * 256 positions. */
#define LOSS_FULL_LOGITS (1 << 22)
/* The most logits a device holds in one pass: 1 GiB. */
#define LOSS_FULL_DEV_LOGITS ((int64_t)1 << 28)

/* This rank's shard of items 1..num_items as rows of the step's unique
 * rows: row k of the shard (id first + k G) is rows[idx[k]]. */
struct loss_full_shard {
    int G, shard;     /* the emb group's size, this rank's index in it */
    int64_t num_items;
    int64_t m;        /* ids of the shard */
    const int64_t *idx; /* [m] */
    int direct;       /* a device's vectors and gradients go to MPI as device
                         buffers (CUDA-aware: device_choice.direct), else
                         through host copies */
    int64_t logits;     /* the block's logits (0 = LOSS_FULL_LOGITS; debug.full_logits) */
    int64_t dev_logits; /* a device's pass (0 = from its free memory) */
};

/* The ids of shard `shard` of G over 1..num_items, ascending, into
 * ids[return value] (ids may be NULL: count only). */
int64_t loss_full_shard_ids(int G, int shard, int64_t num_items, int64_t *ids);

/* The full softmax over the group's supervised positions (collective over
 * COMM_EMB; every rank of the group calls it).
 *   u: [T, d] this rank's user vectors; targets: [T] HOST item ids, < 1 =
 *   unsupervised (no loss, du row 0); rows: [nu, d] the step's unique rows
 *   (raw), of which sh->idx are this rank's shard.
 * Writes du: [T, d], ACCUMULATES drows: [nu, d] (the shard's rows only).
 * Returns this rank's share of the unscaled loss sum (the log-sum-exps of
 * its positions, less the target logits it owns: the sum over the ranks
 * is the sum of the losses) and its supervised positions in *count. be has
 * softmax_block_lse and softmax_block_grad (train/backend_check.c). */
double loss_full_softmax(const struct backend_ops *be, struct comm *c, int64_t T, int d,
                         float tau, int normalize_items, const float *u, const int64_t *targets,
                         int64_t nu, const float *rows, const struct loss_full_shard *sh,
                         float scale, float *du, float *drows, int64_t *count);

#endif
