/* guard: the divergence guard (train.nonfinite, debug.nan_step).
 *
 * After each step the global loss and the dense gradient (summed over dp,
 * the same on every rank) must be finite.
 *   stop (default)  guard_after_step() ends the run with a message naming
 *                   the step and the first non-finite tensor; the loop has
 *                   not written the bad state, so the newest checkpoint is
 *                   the last good one. No extra collective: the loss is
 *                   already global. A rank whose loss is finite but whose
 *                   embedding gradients are not stops the job itself, in
 *                   guard_before_update (before the sparse update).
 *   skip            the step decides BEFORE its updates: guard_before_update
 *                   (one all-reduce of a double over dp: this rank's loss
 *                   sum, NaN if it is not finite, +inf if only its sparse
 *                   gradients are not) says whether the sparse update is
 *                   applied, guard_dense_ok (after the dense all-reduce)
 *                   whether the dense one is; a dropped update is counted in
 *                   tr->skipped and the warning names what was not finite.
 * debug.nan_step = S makes step S's loss NaN (both modes), or with
 * debug.nan_in = sparse one of rank 0's embedding gradients, for tests. */
#ifndef FS_GUARD_H
#define FS_GUARD_H

#include <stdint.h>

#include "train/train.h"

/* Step tr->step (not yet counted): 1 = apply this step's sparse update, 0 =
 * drop it (skip mode, every rank agrees). loss_sum: this rank's loss sum;
 * gu[n]: its per-row sparse gradients (debug.nan_in = sparse writes a NaN
 * into them). Collective in skip mode only. */
int guard_before_update(struct trainer *tr, double loss_sum, float *gu, int64_t n);
/* After the dense all-reduce: 1 = apply the dense update. Skip mode only
 * looks (the dense gradient is the same on every rank); stop mode: 1. */
int guard_dense_ok(struct trainer *tr);
/* After step tr->step (counted): *loss is the global loss (NaN-injected
 * here at debug.nan_step). stop: fatal() when it or the dense gradient is
 * not finite; skip: reports a dropped update. */
void guard_after_step(struct trainer *tr, double *loss);

#endif
