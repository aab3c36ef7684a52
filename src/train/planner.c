/* planner: per-step assignment of sequences to ranks; see planner.h. */
#include "train/planner.h"

#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/check.h"
#include "balance/cost.h"
#include "train/train.h"

void planner_init(struct planner *pl, struct trainer *tr)
{
    const struct params *p = tr->p;
    const struct cost_model *cm = &tr->conf.cost;
    const struct split_conf *sc = &tr->conf.split_long;
    memset(pl, 0, sizeof *pl);
    pl->mode = (enum balance_mode)balance_parse(params_str(p, P_parallel_balance));
    pl->equal_count = (int)params_i64(p, P_parallel_balance_equal_count);
    pl->adapt = (int)params_i64(p, P_parallel_balance_adapt);
    /* compute on the host: its busy CPU time is measured beside the wall
     * time (on a device the host's CPU time is not the compute's) */
    if (pl->adapt && tr->c->size > 1 && backend_is_host(tr->be) && backend_is_host(tr->items->be))
        steptime_time_cpu(&tr->st);
    const int64_t Bg = tr->conf.batch_size;
    pl->Bg = Bg;
    pl->steps_per_epoch = (tr->n_train + Bg - 1) / Bg;
    pl->len = xmalloc((size_t)(Bg ? Bg : 1) * sizeof *pl->len);
    for (int k = 0; k < 2; k++) {
        pl->perm[k] = xmalloc((size_t)(tr->n_train ? tr->n_train : 1) * sizeof *pl->perm[k]);
        pl->perm_epoch[k] = -1;
        pl->plan[k].step = -1;
    }
    /* auto: FLOP counts; given: its own units (calibrate's are microseconds) */
    const char *u = !strcmp(params_str(tr->p, P_parallel_cost_model), "auto")
                        ? "FLOPs"
                        : "parallel.cost_model's units";
    log_info("balance: %s%s%s, cost c(L) = %g + %g L + %g L^2 %s per sequence",
             balance_name(pl->mode), pl->equal_count ? ", equal counts" : "",
             pl->adapt ? ", adapting to rank speeds" : "", cm->c0, cm->a, cm->b, u);
    if (sc->force >= 2)
        log_info("split_long: every sequence cut into %d chunks (debug.split_chunks)", sc->force);
    else if (sc->on && sc->threshold > 0)
        log_info("split_long: sequences of predicted cost above %g %s cut into chunks "
                 "(key/value row %g %s)", sc->threshold, u, sc->kv_cost, u);
    else if (sc->on)
        log_info("split_long: sequences of predicted cost above %g x the step's mean per rank "
                 "cut into chunks (key/value row %g %s)", sc->fraction, sc->kv_cost, u);
}

void planner_free(struct planner *pl)
{
    adapt_free(&pl->ad);
    free(pl->owner);
    free(pl->len);
    for (int k = 0; k < 2; k++) {
        struct step_plan *sp = &pl->plan[k];
        free(pl->perm[k]);
        free(sp->users);
        free(sp->p0);
        free(sp->p1);
        free(sp->piece);
        free(sp->owner);
        split_free(&sp->pieces);
    }
    memset(pl, 0, sizeof *pl);
}

void planner_window(struct planner *pl, struct trainer *tr)
{
    const int64_t n = tr->n_train;
    pl->steps_per_epoch = n > 0 ? (n + pl->Bg - 1) / pl->Bg : 1;
    for (int k = 0; k < 2; k++) {
        pl->perm[k] = xrealloc(pl->perm[k], (size_t)(n ? n : 1) * sizeof *pl->perm[k]);
        pl->perm_epoch[k] = -1;
        pl->plan[k].step = -1;
    }
}

/* The permutation of the training users in epoch e (the older of the two
 * kept is replaced). */
static const int64_t *epoch_perm(struct planner *pl, struct trainer *tr, int64_t e)
{
    for (int k = 0; k < 2; k++)
        if (pl->perm_epoch[k] == e)
            return pl->perm[k];
    int k = pl->perm_epoch[0] <= pl->perm_epoch[1] ? 0 : 1;
    split_permutation(tr->conf.seed, (uint64_t)e, tr->n_train, pl->perm[k]);
    pl->perm_epoch[k] = e;
    return pl->perm[k];
}

/* Room for n entries in sp. */
static void plan_reserve(struct step_plan *sp, int64_t n)
{
    if (n <= sp->cap)
        return;
    sp->cap = n > 2 * sp->cap ? n : 2 * sp->cap;
    sp->users = xrealloc(sp->users, (size_t)sp->cap * sizeof *sp->users);
    sp->p0 = xrealloc(sp->p0, (size_t)sp->cap * sizeof *sp->p0);
    sp->p1 = xrealloc(sp->p1, (size_t)sp->cap * sizeof *sp->p1);
    sp->piece = xrealloc(sp->piece, (size_t)sp->cap * sizeof *sp->piece);
}

/* This rank's pieces of the global batch train_users[perm[0..gB)), in
 * batch order, into sp. */
static void assign(struct planner *pl, struct trainer *tr, const int64_t *perm, int64_t gB,
                   struct step_plan *sp)
{
    const int P = tr->c->size;
    sp->tokens = 0;
    sp->pairs = 0;
    for (int64_t i = 0; i < gB; i++) { /* the task's tokens: contextual ones computed too */
        pl->len[i] = tr->task.ops->train_tokens(&tr->task, &tr->tdata, tr->train_users[perm[i]]);
        sp->tokens += pl->len[i];
        sp->pairs += 0.5 * (double)pl->len[i] * (double)(pl->len[i] + 1);
    }
    struct split_pieces *pc = &sp->pieces;
    split_plan(&tr->conf.split_long, &tr->conf.cost, pl->len, gB, P, pc);
    if (pc->n > pl->owner_cap) {
        pl->owner_cap = pc->n;
        pl->owner = xrealloc(pl->owner, (size_t)pl->owner_cap * sizeof *pl->owner);
    }
    balance_assign(pl->mode, pl->equal_count, pc->cost, pc->n, P, pl->ad.speed, pl->owner);
    sp->n = 0;
    sp->cost = 0;
    sp->global_B = gB;
    int64_t mine = 0;
    for (int64_t i = 0; i < pc->n; i++)
        mine += pl->owner[i] == tr->c->rank;
    plan_reserve(sp, mine);
    for (int64_t i = 0; i < pc->n; i++)
        if (pl->owner[i] == tr->c->rank) {
            sp->users[sp->n] = tr->train_users[perm[pc->pc[i].seq]];
            sp->p0[sp->n] = pc->pc[i].p0;
            sp->p1[sp->n] = pc->pc[i].p1;
            sp->piece[sp->n++] = i;
            sp->cost += pc->cost[i];
        }
    if (pc->nsplit) { /* the ranks of every piece, for the key/value exchange */
        sp->owner = xrealloc(sp->owner, (size_t)pc->n * sizeof *sp->owner);
        memcpy(sp->owner, pl->owner, (size_t)pc->n * sizeof *sp->owner);
    }
}

const struct step_plan *planner_plan(struct planner *pl, struct trainer *tr, int64_t step)
{
    for (int k = 0; k < 2; k++)
        if (pl->plan[k].step == step)
            return &pl->plan[k];
    struct step_plan *sp = &pl->plan[pl->plan[0].step <= pl->plan[1].step ? 0 : 1];
    const int64_t S = pl->steps_per_epoch, e = step / S, g0 = (step % S) * pl->Bg;
    const int64_t gB = g0 + pl->Bg < tr->n_train ? pl->Bg : tr->n_train - g0;
    assign(pl, tr, epoch_perm(pl, tr, e) + g0, gB, sp);
    sp->step = step;
    sp->epoch = e;
    return sp;
}

void planner_adapt(struct planner *pl, struct trainer *tr, const struct step_stats *st)
{
    const int P = tr->c->size;
    if (!pl->adapt || P == 1 || !st->tau)
        return;
    const struct adapt_obs o = {
        .tau = st->tau, .tau_cpu = st->tau_cpu, .cost = st->cost_sum, .steps = st->steps_s,
        .bubble = st->bubble};
    double gain;
    switch (adapt_learn(&pl->ad, P, &o, &gain)) {
    case ADAPT_UPDATED:
        log_info("balance_adapt: rank speeds updated (predicted gain %.0f%%)", 100 * gain);
        break;
    case ADAPT_WIRE: {
        double imb = st->imbalance; /* by CPU time where measured: max / mean busy */
        if (st->tau_cpu) {
            double mx = 0, sum = 0;
            for (int r = 0; r < P; r++) {
                const double b = st->tau_cpu[r] * st->cost_sum[r];
                mx = b > mx ? b : mx;
                sum += b;
            }
            imb = sum > 0 ? mx / (sum / P) : 1;
        }
        log_info("balance_adapt: the ranks wait inside MPI for %.0f%% of the step (busy "
                 "compute within %.0f%% between them%s): the run is bound by communication, "
                 "and moving work between ranks would save under 5%% of a step; it does not "
                 "cut the bytes on a slow link or network, fewer bytes do (parallel.rows_codec, "
                 "parallel.grads_codec, parallel.embedding_group: doc/balance.md)",
                 100 * st->bubble, 100 * (imb - 1), st->tau_cpu ? ", by CPU time" : "");
        break;
    }
    case ADAPT_KEEP:
        break;
    }
}
