/* platt: Platt scaling of binary tasks' logits; see platt.h. */
#include "eval/platt.h"

#include <math.h>

#include "base/log.h"

#define PLATT_ITERS 100

static double softplus(double z) { return (z > 0 ? z : 0) + log1p(exp(-fabs(z))); }

/* The summed loss at (a, b); with g, h: its gradient [2] and Hessian
 * [3] (aa, ab, bb) too. *m: the labelled records. */
static double platt_loss(int64_t n, int stride, const double *z, const float *y, double a,
                         double b, double *g, double *h, int64_t *m)
{
    double loss = 0;
    int64_t cnt = 0;
    if (g)
        g[0] = g[1] = h[0] = h[1] = h[2] = 0;
    for (int64_t i = 0; i < n; i++) {
        const float yi = y[i * stride];
        if (isnan(yi))
            continue;
        const double x = z[i * stride], u = a * x + b, t = yi != 0;
        loss += softplus(u) - t * u;
        cnt++;
        if (g) {
            const double p = 1.0 / (1.0 + exp(-u)), w = p * (1 - p);
            g[0] += (p - t) * x;
            g[1] += p - t;
            h[0] += w * x * x;
            h[1] += w * x;
            h[2] += w;
        }
    }
    if (m)
        *m = cnt;
    return loss;
}

enum platt_status platt_fit(int64_t n, int stride, const double *z, const float *y, int offset,
                            double *ab, double *loss0, double *loss1)
{
    int64_t m = 0, pos = 0;
    for (int64_t i = 0; i < n; i++)
        if (!isnan(y[i * stride]))
            pos += y[i * stride] != 0;
    double a = 1, b = 0, g[2], h[3];
    double L = platt_loss(n, stride, z, y, a, b, g, h, &m);
    const double L0 = L;
    ab[0] = 1;
    ab[1] = 0;
    *loss0 = *loss1 = m ? L0 / (double)m : NAN;
    if (pos == 0 || pos == m)
        return PLATT_ONE_CLASS;
    for (int it = 0; it < PLATT_ITERS; it++) {
        const double det = offset ? h[0] * h[2] - h[1] * h[1] : h[0];
        if (!(det > 0))
            break;
        const double da = offset ? (h[2] * g[0] - h[1] * g[1]) / det : g[0] / h[0];
        const double db = offset ? (h[0] * g[1] - h[1] * g[0]) / det : 0.0;
        double s = 1, Ln = 0;
        for (; s > 1e-10; s /= 2) { /* halved until the loss does not rise */
            Ln = platt_loss(n, stride, z, y, a - s * da, b - s * db, NULL, NULL, NULL);
            if (Ln <= L)
                break;
        }
        if (!(s > 1e-10))
            break;
        a -= s * da;
        b -= s * db;
        const double drop = L - Ln;
        L = platt_loss(n, stride, z, y, a, b, g, h, NULL);
        if (drop <= 1e-15 * (1 + fabs(L)) && fabs(s * da) + fabs(s * db) < 1e-12 * (1 + fabs(a)))
            break;
    }
    if (!(a > 0))
        return PLATT_NOT_POSITIVE;
    /* as the model stores them: floats, through volatiles (GCC 12 at -O2 drops
     * the rounding of a pair of double -> float -> double casts: its SLP
     * vectoriser folds the pair's truncation and extension away) */
    volatile float fa = (float)a, fb = (float)b;
    const double af = fa, bf = fb;
    const double Lf = platt_loss(n, stride, z, y, af, bf, NULL, NULL, NULL);
    if (!(Lf < L0))
        return PLATT_NO_GAIN;
    ab[0] = af;
    ab[1] = bf;
    *loss1 = Lf / (double)m;
    return PLATT_OK;
}

void calib_apply(int K, const int *binary, const double *ab, int64_t n, double *score)
{
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < K; k++)
            if (binary[k])
                score[i * K + k] = ab[k] * score[i * K + k] + ab[K + k];
}

void calib_fit_records(const struct rank_records *r, const int *binary,
                       const char *const *names, int offset, double *ab)
{
    const int K = r->K;
    for (int k = 0; k < K; k++) {
        double f[2] = {1, 0}, l0 = NAN, l1 = NAN;
        const enum platt_status st =
            binary[k] ? platt_fit(r->n, K, r->score + k, r->label + k, offset, f, &l0, &l1)
                      : PLATT_OK;
        ab[k] = f[0];
        ab[K + k] = f[1];
        if (!binary[k])
            continue;
        if (st == PLATT_OK)
            log_info("model.calibrate: %s a %.9g b %.9g (validation logloss %.6f -> %.6f)",
                     names[k], f[0], f[1], l0, l1);
        else
            log_info("model.calibrate: %s left as it is (a 1 b 0): %s", names[k],
                     st == PLATT_ONE_CLASS ? "its validation labels are of one class (or none)"
                     : st == PLATT_NOT_POSITIVE ? "the fit's a <= 0 (the scores rank the "
                                                  "validation events backwards)"
                                                : "the fit does not lower the validation loss");
    }
}
