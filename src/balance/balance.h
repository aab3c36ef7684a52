/* balance: cost-balanced assignment of a global batch's sequences to ranks
 * (FreeScale technique 1, doc/balance.md).
 *
 * The predicted cost of a sequence of L tokens is c(L) = c0 + a L + b L^2
 * (struct cost_model). A balancer assigns n sequences to P ranks:
 *   none  contiguous equal shares in batch order (rank r gets
 *         [n r / P, n (r + 1) / P));
 *   lpt   greedy longest-processing-time: by cost descending, each sequence
 *         to the least-loaded rank;
 *   kk    Karmarkar-Karp largest differencing (P-way): partial partitions
 *         are merged two at a time, the one with the largest spread first,
 *         pairing the heaviest subset of one with the lightest of the other.
 * equal_count keeps n / P sequences per rank (+1 on n mod P ranks): the
 * greedy then only fills ranks with room, for both lpt and kk (balanced
 * differencing, one sequence per rank from each group of P, is poor on
 * heavy-tailed costs). speed[r] > 0 (NULL = all 1) is a rank's relative
 * speed: loads are compared as load / speed, so a slower rank gets less
 * work (weighted greedy, for both lpt and kk).
 *
 * Deterministic: the same inputs give the same assignment on every rank
 * (ties broken by index), so no samples need to be exchanged. */
#ifndef FS_BALANCE_H
#define FS_BALANCE_H

#include <stdint.h>

enum balance_mode { BALANCE_NONE, BALANCE_LPT, BALANCE_KK };

struct cost_model {
    double c0, a, b;
};

static inline double cost_of(const struct cost_model *m, int64_t L)
{
    return m->c0 + m->a * (double)L + m->b * (double)L * (double)L;
}

/* "none", "lpt", "kk" -> mode; -1 if unknown. */
int balance_parse(const char *name);
const char *balance_name(enum balance_mode m);

/* owner[n]: the rank of each sequence. cost[n] >= 0. */
void balance_assign(enum balance_mode mode, int equal_count, const double *cost, int64_t n,
                    int P, const double *speed, int *owner);

/* The bubble of an assignment if each rank's time were its load / speed:
 * sum_r (T - t_r) / (P T) with T = max_r t_r (doc/balance.md); and the
 * imbalance max_r t_r / mean_r t_r. */
void balance_bubble(const double *cost, int64_t n, int P, const int *owner, const double *speed,
                    double *bubble, double *imbalance);

#endif
