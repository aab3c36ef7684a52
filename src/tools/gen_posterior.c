/* gen_posterior: Laplace fits of a user's hidden parameters; see
 * gen_posterior.h. */
#include "tools/gen_posterior.h"

#include <math.h>
#include <string.h>

#include "base/log.h"

/* The log posterior at t, its gradient and Hessian. */
static double eval(int d, const double *pv, gen_post_loglik f, void *ctx, const double *t,
                   double *g, double *h)
{
    double lp = 0;
    memset(g, 0, (size_t)d * sizeof *g);
    memset(h, 0, (size_t)(d * d) * sizeof *h);
    f(ctx, t, &lp, g, h);
    for (int i = 0; i < d; i++) {
        lp -= 0.5 * t[i] * t[i] / pv[i];
        g[i] -= t[i] / pv[i];
        h[i * d + i] -= 1.0 / pv[i];
    }
    return lp;
}

/* a [d * d] symmetric positive definite <- its Cholesky factor L (lower). */
static void cholesky(int d, double *a)
{
    for (int j = 0; j < d; j++) {
        double s = a[j * d + j];
        for (int k = 0; k < j; k++)
            s -= a[j * d + k] * a[j * d + k];
        if (!(s > 0))
            fatal("data gen: a posterior's negative Hessian is not positive definite (a "
                  "likelihood that is not log-concave)");
        a[j * d + j] = sqrt(s);
        for (int i = j + 1; i < d; i++) {
            double t = a[i * d + j];
            for (int k = 0; k < j; k++)
                t -= a[i * d + k] * a[j * d + k];
            a[i * d + j] = t / a[j * d + j];
        }
    }
}

/* x <- A^-1 x with L the Cholesky factor of A. */
static void chol_solve(int d, const double *l, double *x)
{
    for (int i = 0; i < d; i++) {
        for (int k = 0; k < i; k++)
            x[i] -= l[i * d + k] * x[k];
        x[i] /= l[i * d + i];
    }
    for (int i = d - 1; i >= 0; i--) {
        for (int k = i + 1; k < d; k++)
            x[i] -= l[k * d + i] * x[k];
        x[i] /= l[i * d + i];
    }
}

int gen_post_fit(int d, const double *prior_var, gen_post_loglik f, void *ctx, double *theta,
                 double *cov)
{
    if (d < 1 || d > GEN_POST_DMAX)
        fatal("data gen: a posterior of %d parameters (1 .. %d)", d, GEN_POST_DMAX);
    double g[GEN_POST_DMAX], h[GEN_POST_DMAX * GEN_POST_DMAX], step[GEN_POST_DMAX];
    double t2[GEN_POST_DMAX], g2[GEN_POST_DMAX], h2[GEN_POST_DMAX * GEN_POST_DMAX];
    memset(theta, 0, (size_t)d * sizeof *theta);
    double lp = eval(d, prior_var, f, ctx, theta, g, h);
    int it = 0;
    for (; it < 100; it++) {
        for (int i = 0; i < d * d; i++)
            h[i] = -h[i];
        cholesky(d, h);
        memcpy(step, g, (size_t)d * sizeof *step);
        chol_solve(d, h, step);
        double dec = 0;
        for (int i = 0; i < d; i++)
            dec += step[i] * g[i];
        if (dec < 1e-18)
            break;
        double a = 1, lp2 = lp;
        for (int half = 0; half < 40; half++, a *= 0.5) {
            for (int i = 0; i < d; i++)
                t2[i] = theta[i] + a * step[i];
            lp2 = eval(d, prior_var, f, ctx, t2, g2, h2);
            if (lp2 >= lp - 1e-12)
                break;
        }
        memcpy(theta, t2, (size_t)d * sizeof *theta);
        memcpy(g, g2, (size_t)d * sizeof *g);
        memcpy(h, h2, (size_t)(d * d) * sizeof *h);
        lp = lp2;
    }
    eval(d, prior_var, f, ctx, theta, g, h);
    for (int i = 0; i < d * d; i++)
        h[i] = -h[i];
    cholesky(d, h);
    for (int j = 0; j < d; j++) {
        double e[GEN_POST_DMAX] = {0};
        e[j] = 1;
        chol_solve(d, h, e);
        for (int i = 0; i < d; i++)
            cov[i * d + j] = e[i];
    }
    return it;
}

double gen_post_var(int d, const double *cov, const double *x)
{
    double v = 0;
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++)
            v += x[i] * cov[i * d + j] * x[j];
    return v > 0 ? v : 0;
}

double gen_post_probit(double m, double v)
{
    return 1.0 / (1.0 + exp(-m / sqrt(1.0 + M_PI * v / 8.0)));
}

double gen_post_expect(double m, double v, double (*g)(double s))
{
    const double sd = sqrt(v);
    double acc = 0, wsum = 0;
    for (int k = 0; k <= 64; k++) {
        const double z = -8.0 + 0.25 * k, w = exp(-0.5 * z * z);
        acc += w * g(m + sd * z);
        wsum += w;
    }
    return acc / wsum;
}
