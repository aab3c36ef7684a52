/* test_loss: the training losses (src/model/loss.c) against central finite
 * differences of a double-precision reference written out here, the keyed
 * negative sampler (deterministic, in range, independent of the other
 * positions in the call), the GEMM form of negatives shared by runs of
 * positions (train.shared_negatives) against the per-position reference,
 * and a timing printout at HSTU's ML-1M size.
 *
 * usage: test_loss OUT.bin
 * OUT.bin receives the small cases (inputs, loss, du, drows) for the
 * PyTorch autograd oracle tests/torch_loss.py. Each record is
 *   u8 name length, name, u8 type ('f' float32, 'd' float64, 'q' int64),
 *   int64 count, count values (little endian, as written by this machine).
 * Exit 0 when every check passes, 1 otherwise. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/backend_cpu.h"
#include "model/loss.h"
#include "base/rng.h"
#include "expect.h"
#include "oracle_records.h"


enum kind { SOFTMAX, BCE };

/* One small case: u: [T, d], rows: [nu, d], pos: [T], neg: [T, R]
 * (BCE: R = 1); drows0 the values drows starts from (checks +=). */
struct lcase {
    const char *name;
    enum kind kind;
    int64_t T, nu;
    int d, R, normalize, shared; /* shared: the GEMM form (softmax_loss_shared) */
    float tau, scale;
    float *u, *rows, *du, *drows0, *drows;
    int64_t *pos, *neg;
    double loss;
    int64_t count;
};

static void *talloc(size_t bytes)
{
    void *p = calloc(bytes ? bytes : 1, 1);
    if (!p) {
        printf("out of memory\n");
        exit(1);
    }
    return p;
}

/* ---- double-precision reference: scale * sum_i loss_i ---- */

static double ref_loss(const struct lcase *c, const double *u, const double *rows)
{
    int d = c->d;
    double *e = talloc((size_t)c->nu * d * sizeof(double));
    for (int64_t k = 0; k < c->nu; k++) {
        double ss = 0;
        for (int j = 0; j < d; j++)
            ss += rows[k * d + j] * rows[k * d + j];
        double n = c->normalize ? fmax(sqrt(ss), 1e-6) : 1.0;
        for (int j = 0; j < d; j++)
            e[k * d + j] = rows[k * d + j] / n;
    }
    double total = 0;
    for (int64_t i = 0; i < c->T; i++) {
        int64_t p = c->pos[i];
        if (p < 0)
            continue;
        double sp = 0;
        for (int j = 0; j < d; j++)
            sp += u[i * d + j] * e[p * d + j];
        if (c->kind == BCE) {
            total += log1p(exp(-sp));
            int64_t k = c->neg[i];
            if (k >= 0 && k != p) {
                double sn = 0;
                for (int j = 0; j < d; j++)
                    sn += u[i * d + j] * e[k * d + j];
                total += log1p(exp(sn));
            }
            continue;
        }
        double s[64];
        int n = 0;
        s[n++] = sp / c->tau;
        for (int r = 0; r < c->R; r++) {
            int64_t k = c->neg[i * c->R + r];
            if (k < 0 || k == p)
                continue;
            double sn = 0;
            for (int j = 0; j < d; j++)
                sn += u[i * d + j] * e[k * d + j];
            s[n++] = sn / c->tau;
        }
        double m = s[0], sum = 0;
        for (int r = 1; r < n; r++)
            m = fmax(m, s[r]);
        for (int r = 0; r < n; r++)
            sum += exp(s[r] - m);
        total += m + log(sum) - s[0];
    }
    free(e);
    return total;
}

static double *to_double(const float *x, int64_t n)
{
    double *y = talloc((size_t)n * sizeof(double));
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i];
    return y;
}

/* Central differences of scale * ref_loss over every value of x (u or
 * rows), compared with the analytic gradient g (drows: minus drows0). */
static void check_fd(const struct lcase *c, const char *what, double *ud, double *rd, double *x,
                     int64_t n, const float *g, const float *g0)
{
    const double h = 1e-5;
    double *fd = talloc((size_t)n * sizeof(double));
    double gmax = 0;
    for (int64_t i = 0; i < n; i++) {
        double keep = x[i];
        x[i] = keep + h;
        double lp = ref_loss(c, ud, rd);
        x[i] = keep - h;
        double lm = ref_loss(c, ud, rd);
        x[i] = keep;
        fd[i] = c->scale * (lp - lm) / (2 * h);
        gmax = fmax(gmax, fabs(fd[i]));
    }
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = g[i] - (g0 ? g0[i] : 0);
        double err = fabs(a - fd[i]);
        CHECK(err <= 1e-2 * fabs(fd[i]) + 1e-4 * gmax, "%s %s[%lld]: analytic %.8g, fd %.8g",
              c->name, what, (long long)i, a, fd[i]);
        worst = fmax(worst, err / (gmax > 0 ? gmax : 1));
    }
    CHECK(gmax > 0, "%s %s: gradient is all zero", c->name, what);
    printf("%s: %s vs finite differences: max |err| / max |fd| = %.2e (max |fd| %.3g)\n",
           c->name, what, worst, gmax);
    free(fd);
}

static void run_case(struct lcase *c)
{
    int64_t nd = c->nu * c->d;
    memcpy(c->drows, c->drows0, (size_t)nd * sizeof(float));
    if (c->kind == SOFTMAX && c->shared) { /* the training step's call */
        struct loss_ws ws = {0};
        double acc[2] = {0, 0};
        loss_sampled_softmax_acc(&backend_cpu, &ws, 1, c->T, c->d, c->R, c->tau, c->normalize,
                                 c->u, c->nu, c->rows, NULL, c->pos, c->neg, c->scale, c->du,
                                 c->drows, acc);
        loss_ws_free(&ws);
        c->loss = acc[0];
        c->count = (int64_t)acc[1];
    } else if (c->kind == SOFTMAX)
        c->loss = loss_sampled_softmax(&backend_cpu, c->T, c->d, c->R, c->tau, c->normalize, c->u,
                                       c->nu, c->rows, c->pos, c->neg, c->scale, c->du, c->drows,
                                       &c->count);
    else
        c->loss = loss_bce(&backend_cpu, c->T, c->d, c->u, c->nu, c->rows, c->pos, c->neg,
                           c->scale, c->du, c->drows, &c->count);

    int64_t want = 0;
    for (int64_t i = 0; i < c->T; i++)
        want += c->pos[i] >= 0;
    CHECK(c->count == want, "%s: count %lld, want %lld", c->name, (long long)c->count,
          (long long)want);
    double *ud = to_double(c->u, c->T * c->d), *rd = to_double(c->rows, nd);
    double ref = ref_loss(c, ud, rd);
    CHECK(fabs(c->loss - ref) <= 1e-5 * fabs(ref), "%s: loss %.9g, reference %.9g", c->name,
          c->loss, ref);
    printf("%s: loss %.9g, reference %.9g, %lld supervised\n", c->name, c->loss, ref,
           (long long)c->count);
    for (int64_t i = 0; i < c->T; i++)
        if (c->pos[i] < 0)
            for (int j = 0; j < c->d; j++)
                CHECK(c->du[i * c->d + j] == 0, "%s: du of unsupervised position %lld not 0",
                      c->name, (long long)i);
    check_fd(c, "du", ud, rd, ud, c->T * c->d, c->du, NULL);
    check_fd(c, "drows", ud, rd, rd, nd, c->drows, c->drows0);
    free(ud);
    free(rd);
}

/* Random case: u rows of norm 1 (as HSTU's output), raw rows ~ N(0, 0.3^2)
 * (row 9 scaled down to norm ~0.007, still far above the eps clamp). */
static struct lcase make_case(const char *name, enum kind kind, int normalize, float tau,
                              uint64_t seed)
{
    struct lcase c = {.name = name, .kind = kind, .T = 7, .nu = 10, .d = 6,
                      .R = kind == BCE ? 1 : 5, .normalize = normalize, .tau = tau};
    struct rng g;
    rng_init(&g, seed);
    int d = c.d;
    c.u = talloc((size_t)c.T * d * sizeof(float));
    c.du = talloc((size_t)c.T * d * sizeof(float));
    c.rows = talloc((size_t)c.nu * d * sizeof(float));
    c.drows0 = talloc((size_t)c.nu * d * sizeof(float));
    c.drows = talloc((size_t)c.nu * d * sizeof(float));
    c.pos = talloc((size_t)c.T * sizeof(int64_t));
    c.neg = talloc((size_t)c.T * c.R * sizeof(int64_t));
    for (int64_t i = 0; i < c.T; i++) {
        double ss = 0;
        for (int j = 0; j < d; j++) {
            c.u[i * d + j] = (float)rng_normal(&g);
            ss += (double)c.u[i * d + j] * c.u[i * d + j];
        }
        for (int j = 0; j < d; j++)
            c.u[i * d + j] = (float)(c.u[i * d + j] / sqrt(ss));
    }
    for (int64_t k = 0; k < c.nu * d; k++) {
        c.rows[k] = (float)(0.3 * rng_normal(&g));
        c.drows0[k] = (float)(0.01 * rng_normal(&g));
    }
    for (int j = 0; j < d; j++)
        c.rows[9 * d + j] *= 0.01f;
    /* positions 2 and 5 unsupervised; pos 3 also a negative elsewhere */
    static const int64_t pos[7] = {3, 0, -1, 7, 3, -1, 9};
    memcpy(c.pos, pos, sizeof pos);
    for (int64_t i = 0; i < c.T * c.R; i++)
        c.neg[i] = (int64_t)rng_below(&g, (uint64_t)c.nu);
    if (kind == SOFTMAX) {
        c.neg[0 * 5 + 1] = 3;     /* == pos: masked */
        c.neg[0 * 5 + 4] = 3;     /* twice */
        c.neg[1 * 5 + 2] = 3;     /* pos of position 0 as a negative */
        c.neg[3 * 5 + 0] = 7;     /* == pos: masked */
        c.neg[4 * 5 + 3] = -1;    /* padding: masked */
        c.neg[6 * 5 + 1] = 8;     /* repeated negative */
        c.neg[6 * 5 + 2] = 8;
    } else {
        c.neg[4] = 3;             /* == pos: negative term dropped */
        c.neg[6] = -1;            /* no negative */
        c.neg[1] = 3;
    }
    /* other ranks hold 3 more supervised positions: N_global = 5 + 3 */
    c.scale = 1.0f / 8;
    return c;
}

/* make_case's softmax case with its negatives shared by the runs of
 * positions 0-2 and 3-6 (each run the neg row of its first position), so
 * that the masking stays per position: the positive 3 of positions 0 and 4
 * among the first run's and the second's, 7 (position 3's positive) and
 * -1 in the second's, 8 twice */
static struct lcase make_shared_case(const char *name, uint64_t seed)
{
    struct lcase c = make_case(name, SOFTMAX, 1, 0.05f, seed);
    const int R = c.R;
    c.shared = 1;
    c.neg[0 * R + 2] = 3;
    c.neg[3 * R + 1] = 3;
    c.neg[3 * R + 2] = 8;
    c.neg[3 * R + 3] = -1;
    c.neg[3 * R + 4] = 8;
    for (int64_t i = 0; i < c.T; i++)
        memcpy(c.neg + i * R, c.neg + (i < 3 ? 0 : 3) * R, (size_t)R * sizeof *c.neg);
    return c;
}

static double max_rel(const float *a, const float *b, int64_t n)
{
    double worst = 0, big = 0;
    for (int64_t i = 0; i < n; i++)
        big = fmax(big, fabs((double)b[i]));
    for (int64_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)a[i] - (double)b[i]) / (big > 0 ? big : 1));
    return worst;
}

/* softmax_loss_shared against the per-position reference on the same
 * negatives at HSTU's shapes (d = 50, R = 128): runs of 1 to 300 positions
 * (a run longer than the GEMM's rows is cut), unsupervised positions, a
 * run's negative equal to some of its positions' positives, padding, with
 * and without logq. The sums' order differs: a tolerance. */
static void test_shared(void)
{
    const int d = 50, R = 128;
    const int64_t T = 900, nu = 400;
    struct rng g;
    rng_init(&g, 21);
    float *u = talloc((size_t)T * d * sizeof(float)), *e = talloc((size_t)nu * d * sizeof(float));
    float *du[2], *de[2], *logq = talloc((size_t)nu * sizeof(float));
    for (int k = 0; k < 2; k++) {
        du[k] = talloc((size_t)T * d * sizeof(float));
        de[k] = talloc((size_t)nu * d * sizeof(float));
    }
    int64_t *pos = talloc((size_t)T * sizeof(int64_t)), *neg = talloc((size_t)T * R * 8);
    for (int64_t i = 0; i < T * d; i++)
        u[i] = (float)(rng_normal(&g) / sqrt(d));
    for (int64_t i = 0; i < nu * d; i++)
        e[i] = (float)(rng_normal(&g) / sqrt(d));
    for (int64_t k = 0; k < nu; k++)
        logq[k] = (float)(0.5 * rng_normal(&g));
    static const int64_t runs[] = {1, 7, 64, 300, 2, 50, 200, 64, 12};
    int64_t i = 0;
    for (size_t b = 0; i < T; b = (b + 1) % (sizeof runs / sizeof *runs)) {
        int64_t *nb = neg + i * R;
        for (int r = 0; r < R; r++)
            nb[r] = (int64_t)rng_below(&g, (uint64_t)nu);
        nb[5] = -1;
        for (int64_t t = i; t < T && t < i + runs[b]; t++) {
            memcpy(neg + t * R, nb, (size_t)R * sizeof *nb);
            pos[t] = rng_below(&g, 10) == 0 ? -1                           /* unsupervised */
                     : rng_below(&g, 4) == 0 ? nb[rng_below(&g, R)]       /* a negative too */
                                             : (int64_t)rng_below(&g, (uint64_t)nu);
        }
        i += runs[b];
    }
    for (int q = 0; q < 2; q++) {
        const float *lq = q ? logq : NULL;
        double acc[2] = {0, 0};
        int64_t n = 0;
        memset(de[0], 0, (size_t)nu * d * sizeof(float));
        memset(de[1], 0, (size_t)nu * d * sizeof(float));
        double ref = cpu_softmax_loss_ref(T, d, R, 20.0f, u, nu, e, lq, pos, neg, 1e-3f, du[0],
                                          de[0], &n);
        backend_cpu.softmax_loss_shared(T, d, R, 20.0f, u, nu, e, lq, pos, neg, 1e-3f, du[1],
                                        de[1], acc);
        const double el = fabs(acc[0] - ref) / fabs(ref);
        const double eu = max_rel(du[1], du[0], T * d), ee = max_rel(de[1], de[0], nu * d);
        CHECK(acc[1] == (double)n && n > 0, "shared: count %g, reference %lld", acc[1],
              (long long)n);
        CHECK(el < 1e-6 && eu < 1e-5 && ee < 1e-5,
              "shared%s: relative errors loss %.2e du %.2e de %.2e", q ? " (logq)" : "", el, eu,
              ee);
        printf("shared%s vs the per-position reference, %lld positions: relative errors loss "
               "%.2e, du %.2e, de %.2e\n",
               q ? " (logq)" : "", (long long)n, el, eu, ee);
    }
    for (int k = 0; k < 2; k++) {
        free(du[k]);
        free(de[k]);
    }
    free(u);
    free(e);
    free(logq);
    free(pos);
    free(neg);
}

static void free_case(struct lcase *c)
{
    free(c->u);
    free(c->du);
    free(c->rows);
    free(c->drows0);
    free(c->drows);
    free(c->pos);
    free(c->neg);
}

/* ---- output for the PyTorch oracle ---- */

static void write_case(FILE *f, const struct lcase *c)
{
    int64_t meta[6] = {c->kind, c->T, c->d, c->R, c->nu, c->normalize};
    double fmeta[2] = {c->tau, c->scale};
    oracle_put(f, c->name, "meta", 'q', 6, meta);
    oracle_put(f, c->name, "tau_scale", 'd', 2, fmeta);
    oracle_put(f, c->name, "u", 'f', c->T * c->d, c->u);
    oracle_put(f, c->name, "rows", 'f', c->nu * c->d, c->rows);
    oracle_put(f, c->name, "pos", 'q', c->T, c->pos);
    oracle_put(f, c->name, "neg", 'q', c->T * c->R, c->neg);
    oracle_put(f, c->name, "loss", 'd', 1, &c->loss);
    oracle_put(f, c->name, "du", 'f', c->T * c->d, c->du);
    oracle_put(f, c->name, "drows0", 'f', c->nu * c->d, c->drows0);
    oracle_put(f, c->name, "drows", 'f', c->nu * c->d, c->drows);
}

/* ---- the sampler ---- */

static void test_sampler(void)
{
    enum { T = 1000, R = 128 };
    const int64_t items = 100;
    uint64_t *keys = talloc(T * sizeof(uint64_t));
    int64_t *a = talloc((size_t)T * R * sizeof(int64_t)), *b = talloc((size_t)T * R * sizeof(int64_t));
    for (int i = 0; i < T; i++)
        keys[i] = rng_key(1000 + i / 50, i % 50, 0); /* (sample, position) */
    loss_sample_negatives(42, 3, keys, T, R, items, a);
    loss_sample_negatives(42, 3, keys, T, R, items, b);
    CHECK(memcmp(a, b, (size_t)T * R * sizeof(int64_t)) == 0, "sampler not deterministic");

    int64_t hist[101] = {0};
    int bad = 0;
    for (int64_t i = 0; i < (int64_t)T * R; i++) {
        if (a[i] < 1 || a[i] > items)
            bad++;
        else
            hist[a[i]]++;
    }
    CHECK(bad == 0, "sampler: %d draws outside 1..%lld", bad, (long long)items);
    /* expected 1280 per item, sd ~ 36: a band of 7 sd */
    int64_t lo = hist[1], hi = hist[1];
    for (int k = 1; k <= items; k++) {
        lo = hist[k] < lo ? hist[k] : lo;
        hi = hist[k] > hi ? hist[k] : hi;
    }
    CHECK(lo > 1280 - 250 && hi < 1280 + 250, "sampler not uniform: counts %lld .. %lld",
          (long long)lo, (long long)hi);

    /* a subset in another order: positions 700, 699, ..., 300 step 3 */
    int64_t ns = 0;
    uint64_t sub[T];
    int64_t which[T];
    for (int i = 700; i >= 300; i -= 3) {
        which[ns] = i;
        sub[ns++] = keys[i];
    }
    loss_sample_negatives(42, 3, sub, ns, R, items, b);
    int differ = 0;
    for (int64_t s = 0; s < ns; s++)
        differ += memcmp(b + s * R, a + which[s] * R, R * sizeof(int64_t)) != 0;
    CHECK(differ == 0, "sampler: %d positions drew differently in a subset call", differ);

    /* other epoch, other seed, other position: other draws */
    loss_sample_negatives(42, 4, keys, 1, R, items, b);
    CHECK(memcmp(a, b, R * sizeof(int64_t)) != 0, "sampler: epoch does not change the draws");
    loss_sample_negatives(43, 3, keys, 1, R, items, b);
    CHECK(memcmp(a, b, R * sizeof(int64_t)) != 0, "sampler: seed does not change the draws");
    CHECK(memcmp(a, a + R, R * sizeof(int64_t)) != 0, "sampler: positions 0 and 1 draw alike");
    printf("sampler: %d x %d draws in 1..%lld, counts per item %lld .. %lld (expected 1280)\n",
           T, R, (long long)items, (long long)lo, (long long)hi);

    /* runs of equal keys (train.shared_negatives): the CPU backend's
     * sampler draws a run's row once, the same rows as one draw a position */
    for (int i = 0; i < T; i++)
        keys[i] = i % 7 == 0 || i % 11 == 3 ? rng_key(2000 + i, 0, 0) : keys[i - 1];
    loss_sample_negatives(42, 3, keys, T, R, items, a);
    backend_cpu.sample_negatives(42, 3, keys, T, R, items, b);
    CHECK(memcmp(a, b, (size_t)T * R * sizeof(int64_t)) == 0,
          "sampler: the backend's draws over runs of keys differ from a draw a position");
    free(keys);
    free(a);
    free(b);
}

/* ---- timing at HSTU / ML-1M size (printed, not asserted) ---- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void time_losses(void)
{
    const int64_t T = 13000, nu = 3706;
    const int d = 50, R = 128;
    struct rng g;
    rng_init(&g, 7);
    float *u = talloc((size_t)T * d * sizeof(float)), *du = talloc((size_t)T * d * sizeof(float));
    float *rows = talloc((size_t)nu * d * sizeof(float));
    float *drows = talloc((size_t)nu * d * sizeof(float));
    int64_t *pos = talloc((size_t)T * sizeof(int64_t));
    int64_t *neg = talloc((size_t)T * R * sizeof(int64_t));
    uint64_t *keys = talloc((size_t)T * sizeof(uint64_t));
    for (int64_t i = 0; i < T * d; i++)
        u[i] = (float)rng_normal(&g) / sqrtf((float)d);
    for (int64_t i = 0; i < nu * d; i++)
        rows[i] = (float)(0.1 * rng_normal(&g));
    for (int64_t i = 0; i < T; i++) {
        pos[i] = (int64_t)rng_below(&g, (uint64_t)nu);
        keys[i] = (uint64_t)i;
    }
    double t0 = now();
    loss_sample_negatives(1, 0, keys, T, R, nu, neg);
    double t1 = now();
    for (int64_t i = 0; i < T * R; i++)
        neg[i] -= 1; /* ids 1..nu as indexes 0..nu-1 */
    int64_t count = 0;
    double best = 1e9, loss = 0;
    for (int rep = 0; rep < 3; rep++) {
        double a = now();
        loss = loss_sampled_softmax(&backend_cpu, T, d, R, 0.05f, 1, u, nu, rows, pos, neg,
                                    1.0f / T, du, drows, &count);
        best = fmin(best, now() - a);
    }
    double b0 = now();
    double lb = loss_bce(&backend_cpu, T, d, u, nu, rows, pos, neg, 1.0f / T, du, drows, &count);
    double b1 = now();
    CHECK(isfinite(loss) && isfinite(lb) && count == T, "timing case: loss %g, bce %g", loss, lb);
    printf("timing (T = %lld, R = %d, d = %d, nu = %lld, one core): sample %.1f ms, "
           "sampled softmax fwd+bwd %.1f ms (mean loss %.4f), bce %.1f ms\n",
           (long long)T, R, d, (long long)nu, 1e3 * (t1 - t0), 1e3 * best, loss / T,
           1e3 * (b1 - b0));
    free(u);
    free(du);
    free(rows);
    free(drows);
    free(pos);
    free(neg);
    free(keys);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUT.bin\n", argv[0]);
        return 1;
    }
    struct lcase cases[4] = {
        make_case("sm_norm", SOFTMAX, 1, 0.05f, 11),
        make_case("sm_raw", SOFTMAX, 0, 0.5f, 12),
        make_case("bce", BCE, 0, 1.0f, 13),
        make_shared_case("sm_shared", 14),
    };
    FILE *f = fopen(argv[1], "wb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    for (int k = 0; k < 4; k++) {
        run_case(&cases[k]);
        write_case(f, &cases[k]);
        free_case(&cases[k]);
    }
    if (fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    test_sampler();
    test_shared();
    time_losses();
    if (failures) {
        printf("%d check(s) failed\n", failures);
        return 1;
    }
    printf("all loss checks passed\n");
    return 0;
}
