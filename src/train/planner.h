/* planner: which sequences of each global batch a rank trains on
 * (parallel.balance), with the cost model and, with
 * parallel.balance_adapt, per-rank speeds measured by the step timers.
 *
 * Global step s of the run is step s mod S of epoch s / S (S steps per
 * epoch): train.batch_size users of that epoch's permutation (keyed by
 * seed and epoch, whatever P is), the last batch of an epoch shorter. The
 * assignment is computed identically on every rank from the lengths in
 * /offsets: no samples are exchanged. The planner keeps the plans of two
 * steps, so that the trainer can ask for step s + 1 during step s (the
 * look-ahead of parallel.overlap) and again when it runs it. */
#ifndef FS_PLANNER_H
#define FS_PLANNER_H

#include <stdint.h>

#include "balance/balance.h"
#include "balance/cost.h"
#include "train/steptime.h"

struct trainer;

/* One step's work for this rank. */
struct step_plan {
    int64_t step;       /* global step index (-1: slot unused) */
    int64_t epoch;      /* its epoch (0-based) */
    int64_t global_B;   /* sequences in the global batch */
    int64_t n;          /* of which this rank's */
    int64_t *users;     /* [n] dataset user indexes, in batch order */
    double cost;        /* their predicted cost */
};

struct planner {
    enum balance_mode mode;
    int equal_count, adapt;
    struct cost_model cm;
    int64_t Bg, steps_per_epoch;
    double *speed;      /* [P] relative speeds once adapted, else NULL */
    double *tau;        /* [P] EMA of busy seconds per unit of predicted cost */
    double *cost;       /* [Bg] */
    int *owner;         /* [Bg] */
    int64_t *perm[2];   /* [n_train] permutations of two epochs */
    int64_t perm_epoch[2];
    struct step_plan plan[2];
};

void planner_init(struct planner *pl, struct trainer *tr);
void planner_free(struct planner *pl);
/* This rank's plan of global step `step` (valid until two other steps have
 * been planned). */
const struct step_plan *planner_plan(struct planner *pl, struct trainer *tr, int64_t step);
/* balance_adapt: keep an EMA (weight 1/2 per logging interval) of each
 * rank's busy time per unit of predicted cost, tau, and adopt speeds 1/tau
 * when that is predicted to cut the step time by more than 5% (identical
 * decision on every rank: the inputs come from one all-gather). */
void planner_adapt(struct planner *pl, struct trainer *tr, const struct step_stats *st);

#endif
