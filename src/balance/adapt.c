/* adapt: balance_adapt's rule; see adapt.h. */
#include "balance/adapt.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"

/* The slowest rank's busy time in the interval, with busy seconds per unit
 * of cost tau [P], against a perfectly speed-weighted split of the same
 * work, as a share of the interval's wall time: time spent waiting on the
 * wire is not saved by moving work. */
static double gain_of(const double *tau, const struct adapt_obs *o, int P)
{
    double now = 0, work = 0, rate = 0;
    for (int r = 0; r < P; r++) {
        double busy = o->cost[r] * tau[r];
        now = busy > now ? busy : now;
        work += o->cost[r];
        rate += 1.0 / tau[r];
    }
    return now > 0 ? (now - work / rate) / (o->steps > now ? o->steps : now) : 0;
}

/* Fold this interval's x into the EMA *ema [P] (allocated at the first). */
static void ema_add(double **ema, const double *x, int P)
{
    if (!*ema)
        *ema = xcalloc((size_t)P, sizeof **ema);
    for (int r = 0; r < P; r++)
        (*ema)[r] = (*ema)[r] > 0 ? 0.5 * (*ema)[r] + 0.5 * x[r] : x[r];
}

static double min2(double a, double b) { return a < b ? a : b; }

enum adapt_verdict adapt_learn(struct adapt *a, int P, const struct adapt_obs *o, double *gain)
{
    *gain = 0;
    if (!a->warmed) {
        a->warmed = 1;
        return ADAPT_KEEP;
    }
    for (int r = 0; r < P; r++)
        if (o->tau[r] <= 0 || (o->tau_cpu && o->tau_cpu[r] <= 0))
            return ADAPT_KEEP; /* a rank without work in this interval: nothing to learn */
    ema_add(&a->tau, o->tau, P);
    *gain = gain_of(a->tau, o, P);
    /* one interval's spike (a rank descheduled, a burst on a link) is not
     * a slower rank: its own times and the EMA must both predict a gain;
     * and a rank descheduled for longer takes longer in wall time but not
     * in CPU time, which must predict it too */
    double ema = *gain, least = min2(ema, gain_of(o->tau, o, P));
    if (o->tau_cpu) {
        ema_add(&a->tau_cpu, o->tau_cpu, P);
        ema = min2(ema, gain_of(a->tau_cpu, o, P));
        least = min2(least, min2(ema, gain_of(o->tau_cpu, o, P)));
    }
    a->over = least > ADAPT_MIN_GAIN ? a->over + 1 : 0;
    if (a->over >= ADAPT_INTERVALS) {
        if (!a->speed)
            a->speed = xmalloc((size_t)P * sizeof *a->speed);
        double rate = 0;
        for (int r = 0; r < P; r++)
            rate += 1.0 / a->tau[r];
        for (int r = 0; r < P; r++)
            a->speed[r] = (1.0 / a->tau[r]) / (rate / P);
        return ADAPT_UPDATED;
    }
    if (ema <= ADAPT_MIN_GAIN && o->bubble > 0.5 && !a->told_wire) {
        a->told_wire = 1;
        return ADAPT_WIRE;
    }
    return ADAPT_KEEP;
}

void adapt_free(struct adapt *a)
{
    free(a->tau);
    free(a->tau_cpu);
    free(a->speed);
    memset(a, 0, sizeof *a);
}
