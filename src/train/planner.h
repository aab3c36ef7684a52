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
 * look-ahead of parallel.overlap) and again when it runs it.
 *
 * With parallel.split_long (split_long.h) the balancer assigns pieces:
 * whole sequences and the chunks of those cut for context parallelism. A
 * rank's entries are then pieces [p0, p1) of its users, and the plan keeps
 * the step's pieces and their owners, from which the ranks holding chunks
 * of one sequence know whom to send keys and values to (train/ctx_split.h). */
#ifndef FS_PLANNER_H
#define FS_PLANNER_H

#include <stdint.h>

#include "balance/adapt.h"
#include "balance/balance.h"
#include "balance/cost.h"
#include "balance/split_long.h"
#include "train/steptime.h"

struct trainer;

/* One step's work for this rank. */
struct step_plan {
    int64_t step;       /* global step index (-1: slot unused) */
    int64_t epoch;      /* its epoch (0-based) */
    int64_t global_B;   /* sequences in the global batch */
    int64_t n;          /* of which this rank's entries (pieces) */
    int64_t *users;     /* [n] dataset user indexes, in batch order */
    double cost;        /* their predicted cost */
    int64_t tokens;     /* the global batch's tokens: training positions and contextual
                           tokens (all ranks) */
    double pairs;       /* and its causal attention pairs, sum L (L + 1) / 2 */
    int64_t cap;        /* entries the arrays hold */
    /* split_long: when the step cut a sequence (pieces.nsplit > 0), the
     * entries are pieces; else p0, p1, piece are unused */
    int64_t *p0, *p1;   /* [n] positions [p0, p1) of users[i]'s inputs */
    int64_t *piece;     /* [n] index of the entry in pieces */
    struct split_pieces pieces; /* the step's pieces (all ranks) */
    int *owner;         /* [pieces.n] their ranks */
};

struct planner {
    enum balance_mode mode;
    int equal_count, adapt;
    struct adapt ad;    /* balance_adapt's state; ad.speed: [P] relative speeds once
                           adapted, else NULL */
    int64_t Bg, steps_per_epoch;
    int *owner;         /* [owner_cap] */
    int64_t owner_cap;
    int64_t *len;       /* [Bg] training inputs of each sequence of the step */
    int64_t *perm[2];   /* [n_train] permutations of two epochs */
    int64_t perm_epoch[2];
    struct step_plan plan[2];
};

/* After steptime_init(&tr->st): with balance_adapt on the host backend the
 * step timers measure busy CPU time too (steptime_time_cpu). */
void planner_init(struct planner *pl, struct trainer *tr);
void planner_free(struct planner *pl);
/* The stream schedule (cmd/train_stream.c): the planner over a new set of
 * training users (tr->train_users[tr->n_train]: a window's), the plans and
 * orders kept dropped; window k's step s is then planned as global step
 * k * steps_per_epoch + s (epoch k: the window's order and token keys). */
void planner_window(struct planner *pl, struct trainer *tr);
/* This rank's plan of global step `step` (valid until two other steps have
 * been planned). */
const struct step_plan *planner_plan(struct planner *pl, struct trainer *tr, int64_t step);
/* balance_adapt: learn the interval's measures (balance/adapt.h: the
 * rule; identical decision on every rank: the inputs come from one
 * all-gather) and say when the ranks' speeds are adopted, or, once, that
 * the run is bound by communication, which no split of the work changes
 * (a slow link: doc/scaling.md). */
void planner_adapt(struct planner *pl, struct trainer *tr, const struct step_stats *st);

#endif
