/* gen_posterior: what a user's history shows of their hidden parameters,
 * for the generators' "posterior" optima (data gen --labels planted,
 * data gen --yambda; doc/data.md). The Laplace approximation of a
 * log-concave posterior of theta[d] under a N(0, diag(prior_var)) prior:
 * its mode (Newton's method, steps halved while the log posterior does
 * not rise) and the inverse of the negative Hessian there. */
#ifndef FS_GEN_POSTERIOR_H
#define FS_GEN_POSTERIOR_H

#define GEN_POST_DMAX 17

/* Adds to *lp, grad[d], hess[d * d] (row-major) the log-likelihood of the
 * observations at theta and its gradient and Hessian (hess negative
 * semi-definite for a log-concave likelihood). */
typedef void (*gen_post_loglik)(void *ctx, const double *theta, double *lp, double *grad,
                                double *hess);

/* theta[d] <- the posterior mode (from 0), cov[d * d] <- its Laplace
 * covariance. d <= GEN_POST_DMAX. Returns the Newton steps taken. */
int gen_post_fit(int d, const double *prior_var, gen_post_loglik f, void *ctx, double *theta,
                 double *cov);
/* x' cov x, cov [d * d]. */
double gen_post_var(int d, const double *cov, const double *x);
/* E[sigmoid(s)], s ~ N(m, v), by the probit approximation
 * sigmoid(m / sqrt(1 + pi v / 8)). */
double gen_post_probit(double m, double v);
/* E[g(s)], s ~ N(m, v), by the trapezoid rule on 65 points of
 * m + sqrt(v) z, z in [-8, 8] (weights exp(-z^2 / 2), normalised; the
 * error of a smooth g is far below the figures' precision). */
double gen_post_expect(double m, double v, double (*g)(double s));

#endif
