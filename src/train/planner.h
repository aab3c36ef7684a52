/* train_plan: which sequences of each global batch a rank trains on
 * (parallel.balance), with the cost model and, with
 * parallel.balance_adapt, per-rank speeds measured by the step timers. The
 * assignment is computed identically on every rank from the lengths in
 * /offsets: no samples are exchanged. */
#ifndef FS_TRAIN_PLAN_H
#define FS_TRAIN_PLAN_H

#include <stdint.h>

#include "balance/balance.h"
#include "train/steptime.h"

struct trainer;

struct planner {
    enum balance_mode mode;
    int equal_count, adapt;
    struct cost_model cm;
    double *speed;     /* [P] relative speeds once adapted, else NULL */
    double *tau;       /* [P] EMA of busy seconds per unit of predicted cost */
    double *cost;      /* [Bg] */
    int *owner;        /* [Bg] */
};

void planner_init(struct planner *pl, struct trainer *tr, int64_t Bg);
void planner_free(struct planner *pl);
/* The users of this rank among the global batch train_users[perm[0..gB)),
 * in batch order, into mine; returns their number and their cost. */
int64_t planner_assign(struct planner *pl, struct trainer *tr, const int64_t *perm, int64_t gB,
                       int64_t *mine, double *my_cost);
/* balance_adapt: keep an EMA (weight 1/2 per logging interval) of each
 * rank's busy time per unit of predicted cost, tau, and adopt speeds 1/tau
 * when that is predicted to cut the step time by more than 5% (identical
 * decision on every rank: the inputs come from one all-gather). */
void planner_adapt(struct planner *pl, struct trainer *tr, const struct step_stats *st);

#endif
