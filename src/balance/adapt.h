/* adapt: parallel.balance_adapt's rule (doc/balance.md, "Adapting to slow
 * ranks"): from each logging interval's measures of the ranks' busy time
 * per unit of predicted cost, when to weight the balancer by rank speeds.
 *
 * The first interval is a warm-up (first touches of memory, a link's burst
 * allowance), not learnt. From the second on, an EMA (weight 1/2 per
 * interval) of each rank's busy seconds per unit of cost is kept, by wall
 * time (tau) and, where the compute is the host's, by the rank's thread
 * CPU time (tau_cpu: a rank descheduled by other processes takes longer in
 * wall time, not in CPU time). Each measure predicts the gain of weighting
 * the ranks by its speeds, by the interval's own figures and by the EMA:
 * the busy seconds saved on the slowest rank against a split in
 * proportion to the speeds, as a share of the interval's wall time (waits
 * inside MPI included: moving work does not shorten them). The speeds
 * 1 / tau are adopted after two intervals in a row in which every
 * prediction is above 5%. When the EMAs do not predict
 * that and the ranks wait inside MPI for more than half the step, the run
 * is bound by communication (said once by the caller). Pure: the inputs
 * come from one all-gather, so every rank decides alike. */
#ifndef FS_BALANCE_ADAPT_H
#define FS_BALANCE_ADAPT_H

#define ADAPT_MIN_GAIN 0.05 /* of the step */
#define ADAPT_INTERVALS 2   /* in a row */

struct adapt {
    int warmed;       /* the warm-up interval seen */
    int over;         /* learnt intervals in a row whose every prediction is over 5% */
    int told_wire;    /* ADAPT_WIRE returned */
    double *tau;      /* [P] EMA of busy wall seconds per unit of cost */
    double *tau_cpu;  /* [P] EMA of busy CPU seconds per unit of cost (NULL: not measured) */
    double *speed;    /* [P] relative speeds once adopted (mean 1), else NULL */
};

/* One interval's measures, [P] each: busy wall seconds and busy CPU
 * seconds (NULL: not measured) per unit of predicted cost, the predicted
 * cost of each rank; steps: the interval's wall seconds (per step the
 * slowest rank's, summed); bubble: the fraction of the step the ranks
 * waited (steptime.h). */
struct adapt_obs {
    const double *tau, *tau_cpu, *cost;
    double steps, bubble;
};

enum adapt_verdict {
    ADAPT_KEEP,    /* nothing new */
    ADAPT_UPDATED, /* a->speed (re)set */
    ADAPT_WIRE     /* bound by communication (once) */
};

/* Learn interval o of P ranks; *gain = the predicted gain of the EMA
 * speeds by wall time (a share of the step). */
enum adapt_verdict adapt_learn(struct adapt *a, int P, const struct adapt_obs *o, double *gain);
void adapt_free(struct adapt *a);

#endif
