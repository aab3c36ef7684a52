/* data_gen_yambda_post: the optimum of what the history shows for data gen
 * --yambda; see data_gen_yambda_model.h and doc/data.md. */
#include "tools/data_gen_yambda_model.h"

#include "tools/gen_posterior.h"

/* The posterior of a user's theta = (p_u, a_u) given their events before
 * the last day (hist): each event's type and a listen's played_ratio_pct
 * (an interval of s + l, l logistic; 99 and 100 as [logit 0.99, inf)),
 * and the organic events' artists (a softmax of p_u.w_a / sqrt F over the
 * artists with tracks). */
struct ypost {
    const struct yopts *o;
    const struct catalog *k;
    const struct ybuf *hist;
};

static double logit(double p) { return log(p / (1 - p)); }

/* d/ds and d2/ds2 of log(sigmoid(b - s) - sigmoid(a - s)), a < b (+-INFINITY allowed). */
static double interval_ll(double a, double b, double s, double *d, double *dd)
{
    const double sa = sigmoid(a - s), sb = sigmoid(b - s);
    /* both in the upper tail: the difference of the complements */
    const double D = a - s > 0 ? sigmoid(s - a) - sigmoid(s - b) : sb - sa;
    const double fa = sa * (1 - sa), fb = sb * (1 - sb);
    const double d1 = (fa - fb) / D, d2 = (fb * (1 - 2 * sb) - fa * (1 - 2 * sa)) / D;
    *d = d1;
    *dd = d2 - d1 * d1;
    return log(D);
}

static void yambda_loglik(void *ctx, const double *t, double *lp, double *g, double *h)
{
    const struct ypost *c = ctx;
    const int F = (int)c->o->factors, D = F + 1;
    const double sf = sqrt((double)F), G = c->o->taste;
    double x[Y_F + 1];
    int64_t norg = 0;
    double wsum[Y_F] = {0};
    for (int64_t i = 0; i < c->hist->n; i++) {
        const struct yev *e = &c->hist->e[i];
        const double *q = c->k->q + (int64_t)e->track * F;
        double s = 0.3 + c->k->c[e->track] + t[F];
        for (int f = 0; f < F; f++) {
            x[f] = G * q[f] / sf;
            s += x[f] * t[f];
        }
        x[F] = 1;
        const double sig = sigmoid(s), fs = sig * (1 - sig);
        double d = 0, dd = 0;
        if (e->type == Y_LIKE) {
            *lp += -log1p(exp(-s));
            d = 1 - sig;
            dd = -fs;
        } else if (e->type == Y_DISLIKE) {
            *lp += -log1p(exp(s));
            d = -sig;
            dd = -fs;
        } else if (e->type == Y_LISTEN) {
            /* P(listen) = 0.984 - 0.028 sig: its curvature clipped at 0 (a
             * bound, so that Newton's matrix stays definite; the mode is exact) */
            const double u = 0.984 - 0.028 * sig, u1 = -0.028 * fs,
                         u2 = -0.028 * fs * (1 - 2 * sig);
            const double pct = e->ratio;
            const double a = pct <= 0 ? -INFINITY : logit(pct / 100 < 0.99 ? pct / 100 : 0.99);
            const double b = pct >= 99 ? INFINITY : logit((pct + 1) / 100);
            double di, ddi;
            *lp += log(u) + interval_ll(a, b, s, &di, &ddi);
            d = u1 / u + di;
            const double du = u2 / u - (u1 / u) * (u1 / u);
            dd = (du < 0 ? du : 0) + ddi;
        }
        for (int r = 0; r < D; r++) {
            g[r] += d * x[r];
            for (int q2 = 0; q2 < D; q2++)
                h[r * D + q2] += dd * x[r] * x[q2];
        }
        if (e->organic) {
            norg++;
            for (int f = 0; f < F; f++)
                wsum[f] += c->k->w[c->k->artist[e->track] * F + f] / sf;
        }
    }
    if (!norg)
        return;
    /* the artists' softmax: norg (p.wbar - log Z(p)), wbar the chosen mean */
    const int64_t A = c->o->artists;
    double mx = -INFINITY, z = 0, m1[Y_F] = {0}, m2[Y_F * Y_F] = {0};
    for (int64_t a = 1; a <= A; a++)
        if (c->k->aoff[a + 1] > c->k->aoff[a]) {
            double dot = 0;
            for (int f = 0; f < F; f++)
                dot += t[f] * c->k->w[a * F + f] / sf;
            mx = dot > mx ? dot : mx;
        }
    for (int64_t a = 1; a <= A; a++)
        if (c->k->aoff[a + 1] > c->k->aoff[a]) {
            const double *w = c->k->w + a * F;
            double dot = 0;
            for (int f = 0; f < F; f++)
                dot += t[f] * w[f] / sf;
            const double e = exp(dot - mx);
            z += e;
            for (int f = 0; f < F; f++) {
                m1[f] += e * w[f] / sf;
                for (int f2 = 0; f2 < F; f2++)
                    m2[f * F + f2] += e * w[f] * w[f2] / (sf * sf);
            }
        }
    *lp -= (double)norg * (mx + log(z));
    for (int f = 0; f < F; f++)
        *lp += t[f] * wsum[f];
    for (int f = 0; f < F; f++) {
        g[f] += wsum[f] - (double)norg * m1[f] / z;
        for (int f2 = 0; f2 < F; f2++)
            h[f * D + f2] -= (double)norg * (m2[f * F + f2] / z - m1[f] * m1[f2] / (z * z));
    }
}

/* P(listen_plus | s) = P(listen) sigmoid(s). */
static double listen_plus(double s)
{
    const double sig = sigmoid(s);
    return (0.984 - 0.028 * sig) * sig;
}

/* The posterior optimum of the user's last-day events last[0 .. n) from
 * their earlier events hist. */
void yambda_posterior(const struct yopts *o, const struct catalog *k,
                             const struct ybuf *hist, struct yev *last, int64_t n)
{
    const int F = (int)o->factors, D = F + 1;
    double pv[Y_F + 1], theta[Y_F + 1], cov[(Y_F + 1) * (Y_F + 1)], x[Y_F + 1];
    for (int f = 0; f < F; f++)
        pv[f] = 1;
    pv[F] = 0.25;
    struct ypost c = {o, k, hist};
    gen_post_fit(D, pv, yambda_loglik, &c, theta, cov);
    for (int64_t i = 0; i < n; i++) {
        const double *q = k->q + (int64_t)last[i].track * F;
        double m = 0.3 + k->c[last[i].track] + theta[F];
        for (int f = 0; f < F; f++) {
            x[f] = o->taste * q[f] / sqrt((double)F);
            m += x[f] * theta[f];
        }
        x[F] = 1;
        last[i].pp = gen_post_expect(m, gen_post_var(D, cov, x), listen_plus);
    }
}
