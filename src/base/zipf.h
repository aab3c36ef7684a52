/* zipf: Zipf-distributed ranks in O(1) memory and O(1) expected time.
 *
 * P(k) = k^-s / H(n, s) for k = 1..n, s >= 0 (s = 0: uniform). Sampling is
 * rejection-inversion (W. Hörmann, G. Derflinger, "Rejection-inversion to
 * generate variates from monotone discrete distributions", ACM TOMACS 6(3),
 * 1996): draw x by inverting the integral of the hat h(x) = x^-s over
 * [1.5, n + 0.5] (plus a unit-width block for k = 1), round to k, and accept
 * if x fell under the bar of k; the acceptance rate is high for every s, so
 * no table of n probabilities is needed. Header-only, like rng.h. */
#ifndef FS_ZIPF_H
#define FS_ZIPF_H

#include <math.h>
#include <stdint.h>

#include "base/rng.h"

struct zipf {
    int64_t n;     /* ranks 1..n */
    double s;      /* exponent, >= 0 */
    double h_x1;   /* hat integral at 1.5, minus h(1) = 1: start of the k = 1 block */
    double h_n;    /* hat integral at n + 0.5 */
    double squeeze; /* accept at once when k - x <= squeeze */
};

/* expm1(t) / t, continuous at t = 0. */
static inline double zipf_expm1_div(double t)
{
    return fabs(t) > 1e-8 ? expm1(t) / t : 1.0 + t * 0.5 * (1.0 + t / 3.0);
}

/* log1p(t) / t, continuous at t = 0. */
static inline double zipf_log1p_div(double t)
{
    return fabs(t) > 1e-8 ? log1p(t) / t : 1.0 - t * (0.5 - t / 3.0);
}

/* Hat h(x) = x^-s. */
static inline double zipf_hat(const struct zipf *z, double x) { return exp(-z->s * log(x)); }

/* H(x) = integral_1^x t^-s dt = (x^(1-s) - 1) / (1 - s), or log x at s = 1. */
static inline double zipf_hat_integral(const struct zipf *z, double x)
{
    double lx = log(x);
    return zipf_expm1_div((1.0 - z->s) * lx) * lx;
}

/* Inverse of H. */
static inline double zipf_hat_integral_inv(const struct zipf *z, double y)
{
    double t = y * (1.0 - z->s);
    if (t < -1.0) /* rounding at the far end of the range */
        t = -1.0;
    return exp(zipf_log1p_div(t) * y);
}

/* Prepare a sampler of ranks 1..n (n >= 1) with exponent s >= 0. */
static inline void zipf_init(struct zipf *z, int64_t n, double s)
{
    z->n = n;
    z->s = s;
    z->h_x1 = zipf_hat_integral(z, 1.5) - 1.0;
    z->h_n = zipf_hat_integral(z, (double)n + 0.5);
    z->squeeze = 2.0 - zipf_hat_integral_inv(z, zipf_hat_integral(z, 2.5) - zipf_hat(z, 2.0));
}

/* One rank in 1..n. */
static inline int64_t zipf_sample(const struct zipf *z, struct rng *r)
{
    if (z->s == 0.0 || z->n == 1)
        return 1 + (int64_t)rng_below(r, (uint64_t)z->n);
    for (;;) {
        /* u uniform in (h_x1, h_n]: the hat's area, k = 1 block included */
        double u = z->h_n + rng_uniform(r) * (z->h_x1 - z->h_n);
        double x = zipf_hat_integral_inv(z, u);
        int64_t k = (int64_t)(x + 0.5);
        if (k < 1)
            k = 1;
        else if (k > z->n)
            k = z->n;
        if ((double)k - x <= z->squeeze ||
            u >= zipf_hat_integral(z, (double)k + 0.5) - zipf_hat(z, (double)k))
            return k;
    }
}

#endif
