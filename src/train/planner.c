/* train_plan: per-step assignment of sequences to ranks; see train_plan.h. */
#include "train/planner.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "balance/cost.h"
#include "train/train.h"

void planner_init(struct planner *pl, struct trainer *tr, int64_t Bg)
{
    const struct params *p = tr->p;
    char err[512];
    memset(pl, 0, sizeof *pl);
    pl->mode = (enum balance_mode)balance_parse(params_str(p, P_parallel_balance));
    pl->equal_count = (int)params_i64(p, P_parallel_balance_equal_count);
    pl->adapt = (int)params_i64(p, P_parallel_balance_adapt);
    if (cost_model_from_params(p, &pl->cm, NULL, err, sizeof err))
        fatal("%s", err);
    pl->cost = xmalloc((size_t)(Bg ? Bg : 1) * sizeof *pl->cost);
    pl->owner = xmalloc((size_t)(Bg ? Bg : 1) * sizeof *pl->owner);
    log_info("balance: %s%s%s, cost c(L) = %g + %g L + %g L^2", balance_name(pl->mode),
             pl->equal_count ? ", equal counts" : "", pl->adapt ? ", adapting to rank speeds" : "",
             pl->cm.c0, pl->cm.a, pl->cm.b);
}

void planner_free(struct planner *pl)
{
    free(pl->speed);
    free(pl->tau);
    free(pl->cost);
    free(pl->owner);
    memset(pl, 0, sizeof *pl);
}

int64_t planner_assign(struct planner *pl, struct trainer *tr, const int64_t *perm, int64_t gB,
                       int64_t *mine, double *my_cost)
{
    const int hold = split_holdout(tr->split);
    for (int64_t i = 0; i < gB; i++) {
        int64_t L = dataset_length(&tr->ds, tr->train_users[perm[i]]) - hold - 1;
        pl->cost[i] = cost_of(&pl->cm, L < tr->N ? L : tr->N);
    }
    balance_assign(pl->mode, pl->equal_count, pl->cost, gB, tr->c->size, pl->speed, pl->owner);
    int64_t n = 0;
    *my_cost = 0;
    for (int64_t i = 0; i < gB; i++)
        if (pl->owner[i] == tr->c->rank) {
            mine[n++] = tr->train_users[perm[i]];
            *my_cost += pl->cost[i];
        }
    return n;
}

void planner_adapt(struct planner *pl, struct trainer *tr, const struct step_stats *st)
{
    const int P = tr->c->size;
    if (!pl->adapt || P == 1 || !st->tau)
        return;
    if (!pl->tau)
        pl->tau = xcalloc((size_t)P, sizeof *pl->tau);
    for (int r = 0; r < P; r++)
        if (st->tau[r] <= 0)
            return; /* a rank without work in this interval: nothing to learn */
    for (int r = 0; r < P; r++)
        pl->tau[r] = pl->tau[r] > 0 ? 0.5 * pl->tau[r] + 0.5 * st->tau[r] : st->tau[r];
    /* predicted step time now (the slowest rank's busy time) against a
     * perfectly speed-weighted split of the same work */
    double now = 0, work = 0, rate = 0;
    for (int r = 0; r < P; r++) {
        double busy = st->cost_sum[r] * pl->tau[r];
        now = busy > now ? busy : now;
        work += st->cost_sum[r];
        rate += 1.0 / pl->tau[r];
    }
    double ideal = work / rate, gain = now > 0 ? 1.0 - ideal / now : 0;
    if (gain <= 0.05)
        return;
    if (!pl->speed)
        pl->speed = xmalloc((size_t)P * sizeof *pl->speed);
    double mean = rate / P;
    for (int r = 0; r < P; r++)
        pl->speed[r] = (1.0 / pl->tau[r]) / mean;
    log_info("balance_adapt: rank speeds updated (predicted gain %.0f%%)", 100 * gain);
}
