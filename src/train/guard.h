/* guard: the divergence guard (train.nonfinite, debug.nan_step).
 *
 * After each step the global loss, this rank's embedding gradients and the
 * dense gradient (summed over dp, the same on every rank) must be finite.
 * Their sums of squares are computed where the gradients are (device
 * memory too) into the step's scalars, which the step reads back with its
 * loss at its end: no host wait of its own.
 *   stop (default)  guard_after_step() ends the run with a message naming
 *                   the step and what is not finite (the loss: every rank
 *                   alike; a rank's embedding gradients: that rank; the
 *                   dense gradient: its first non-finite tensor); the loop
 *                   has not written the bad state, so the newest
 *                   checkpoint is the last good one.
 *   skip            the step decides BEFORE its updates: guard_before_update
 *                   (the loss and the sparse sum read now, one all-reduce of
 *                   a double over dp: this rank's loss sum, NaN if it is not
 *                   finite, +inf if only its sparse gradients are not) says
 *                   whether the sparse update is applied, guard_dense_ok
 *                   (after the dense all-reduce) whether the dense one is; a
 *                   dropped update is counted in tr->skipped and the warning
 *                   names what was not finite.
 * model.bias's rows (sharded, train/bias_rows.h): guard_bias_ok, on their
 * owners before they are updated.
 * debug.nan_step = S makes step S's loss NaN (both modes), or with
 * debug.nan_in = sparse one of rank 0's embedding gradients, or with bias
 * one of the model.bias rows' gradients rank 0 owns, for tests. */
#ifndef FS_GUARD_H
#define FS_GUARD_H

#include <stdint.h>

#include "train/train.h"

/* debug.nan_in = sparse at this step: a NaN into gu[0] (rank 0; gu of
 * backend be's memory). */
void guard_inject_sparse(struct trainer *tr, const struct backend_ops *be, float *gu, int64_t n);
/* Step tr->step (not yet counted): 1 = apply this step's sparse update, 0 =
 * drop it (skip mode, every rank agrees; collective). loss_sum: this
 * rank's loss sum, sparse_sq: the sum of squares of its sparse gradients
 * (host values: the caller read them). Stop mode: 1 without looking. */
int guard_before_update(struct trainer *tr, double loss_sum, double sparse_sq);
/* After the dense all-reduce: 1 = apply the dense update. Skip mode only
 * looks (dense_sq: the dense gradient's sum of squares, the same on every
 * rank); stop mode: 1. */
int guard_dense_ok(struct trainer *tr, double dense_sq);
/* After guard_dense_ok, before the dense update: model.bias's rows
 * (train/bias_rows.h), their summed gradients at their owners (collective:
 * the rows' push; debug.nan_in = bias puts a NaN into rank 0's first).
 * stop: fatal() on the owner whose gradients are not finite, before they
 * are applied; skip: 0 = drop the dense and the rows' updates (one
 * all-reduce of a double: every rank agrees). 1 without model.bias's rows. */
int guard_bias_ok(struct trainer *tr);
/* After step tr->step (counted): *loss is the global loss (NaN-injected
 * here at debug.nan_step), sparse_sq and dense_sq the step's sums of
 * squares. stop: fatal() when one is not finite; skip: reports a dropped
 * update. */
void guard_after_step(struct trainer *tr, double *loss, double sparse_sq, double dense_sq);

#endif
