/* calibrate: 'freescale calibrate', measure the sequence cost model.
 *
 *   freescale calibrate FILE.in [section.key=value ...] [--points K]
 *                       [--min-length L] [--reps R] [--min-ms M]
 *                       [--ranks-per-node K]
 *
 * Times one training step's dense work on this machine for the configured
 * model (model.*, data.max_seq_len, train.negatives/loss/temperature):
 * forward, loss and backward (model_zero_grads included; the embedding
 * lookup and exchanges are not) on synthetic batches of B sequences of
 * equal length L, for K lengths spaced geometrically from --min-length
 * (default 8; at most max(1, N / 4)) to N = data.max_seq_len. B grows until one batch takes at least
 * --min-ms (default 50 ms; at most 2^17 tokens). Then --reps (default 5)
 * rounds time every length once each, interleaved, after a warm-up run;
 * the FASTEST run of a length gives its time per sequence. (The minimum,
 * not the median: on a shared machine other work only ever adds time, and
 * its bursts last seconds, longer than a few runs of one length; the
 * interleaving spreads them over all lengths.)
 *
 * Fit: c(L) = c0 + a L + b L^2 microseconds per sequence, by least squares
 * on the relative errors (sum ((c(L) - t_L) / t_L)^2, so that short and long
 * sequences count alike), with c0, a, b >= 0 (exact: the unconstrained fit
 * on every subset of the three terms, the best one that is non-negative).
 * R^2 = 1 - SS_res / SS_tot on the measured times (clamped at 0). The
 * report also scales the FLOP-count default (cost.h) to the measurements,
 * to show how well 'auto' matches this machine.
 *
 * BLAS threads: cores / --ranks-per-node (default 1), as the trainer sets
 * them, or OPENBLAS_NUM_THREADS. Serial: no MPI. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/blas.h"
#include "base/check.h"
#include "base/clock.h"
#include "cli/cli.h"
#include "balance/cost.h"
#include "data/dataset.h"
#include "base/log.h"
#include "model/loss.h"
#include "model/model.h"
#include "base/params.h"
#include "tools/plan_tools.h"
#include "base/rng.h"

#define CAL_MAX_POINTS 64
#define CAL_MAX_TOKENS (1LL << 17)
#define CAL_MAX_REPS 1000

struct cal_opts {
    const char *file;
    int points, reps, ranks_per_node;
    int64_t min_len;
    double min_s;
    int noverrides;
    char **overrides;
};

/* Everything one timed step needs, for B sequences of length L. */
struct cal_setup {
    struct model *m;
    int d, R, bce, normalize;
    float tau;
    int64_t nu_cap;
    uint64_t seed;
};

static void cal_usage(FILE *out)
{
    fprintf(out,
            "usage: freescale calibrate FILE.in [section.key=value ...] [--points K]\n"
            "                           [--min-length L] [--reps R] [--min-ms M]\n"
            "                           [--ranks-per-node K]\n"
            "\n"
            "Time the configured model's forward, loss and backward on synthetic\n"
            "sequences of K lengths (default 8) from --min-length (8) to data.max_seq_len,\n"
            "fit c(L) = c0 + a L + b L^2 microseconds per sequence, and print the\n"
            "parallel.cost_model line to paste into the parameter file.\n"
            "  --reps R            timed runs per length, the fastest taken (default 5)\n"
            "  --min-ms M          grow the batch until one run takes M ms (default 50)\n"
            "  --ranks-per-node K  BLAS threads = cores / K, as in training (default 1)\n");
}

/* Seconds of one step (forward, loss, backward) on B sequences of length L. */
static double time_step(const struct cal_setup *S, int64_t L, int64_t B)
{
    const int64_t T = L * B;
    const int d = S->d, R = S->R;
    const struct backend_ops *be = S->m->be;
    int64_t *offsets = xmalloc((size_t)(B + 1) * sizeof *offsets);
    int64_t *ts = xmalloc((size_t)T * sizeof *ts);
    uint64_t *keys = xmalloc((size_t)T * sizeof *keys);
    for (int64_t i = 0; i <= B; i++)
        offsets[i] = i * L;
    for (int64_t t = 0; t < T; t++) {
        ts[t] = 1577836800 + (t % L) * 3600;
        keys[t] = rng_key(S->seed, (uint64_t)t, 0x63616c);
    }
    int64_t nu = T * (R + 2) < S->nu_cap ? T * (R + 2) : S->nu_cap;
    float *emb = xmalloc((size_t)T * (size_t)d * sizeof *emb);
    float *rows = xmalloc((size_t)nu * (size_t)d * sizeof *rows);
    struct rng r;
    rng_init(&r, rng_key(S->seed, (uint64_t)L, (uint64_t)B));
    for (int64_t i = 0; i < T * d; i++)
        emb[i] = (float)(0.1 * (2 * rng_uniform(&r) - 1));
    for (int64_t i = 0; i < nu * d; i++)
        rows[i] = (float)(0.1 * (2 * rng_uniform(&r) - 1));
    int64_t *pos = xmalloc((size_t)T * sizeof *pos);
    int64_t *neg = xmalloc((size_t)T * (size_t)R * sizeof *neg);
    for (int64_t t = 0; t < T; t++)
        pos[t] = (int64_t)rng_below(&r, (uint64_t)nu);
    for (int64_t t = 0; t < T * R; t++)
        neg[t] = (int64_t)rng_below(&r, (uint64_t)nu);
    float *out = xmalloc((size_t)T * (size_t)d * sizeof *out);
    float *du = xmalloc((size_t)T * (size_t)d * sizeof *du);
    float *demb = xmalloc((size_t)T * (size_t)d * sizeof *demb);
    float *drows = xcalloc((size_t)nu * (size_t)d, sizeof *drows);
    struct batch b = {.B = B, .T = T, .offsets = offsets,
                      .ts = S->m->conf.time_bias ? ts : NULL, .row_keys = keys, .train = 1};
    int64_t count;
    float scale = 1.0f / (float)T;
    /* touch the outputs so that page faults are not timed */
    memset(out, 0, (size_t)T * (size_t)d * sizeof *out);
    memset(du, 0, (size_t)T * (size_t)d * sizeof *du);
    memset(demb, 0, (size_t)T * (size_t)d * sizeof *demb);

    double t0 = clock_seconds();
    S->m->vt->forward(S->m, &b, emb, out);
    be->zero(drows, (size_t)nu * (size_t)d * sizeof *drows);
    if (S->bce)
        loss_bce(be, T, d, out, nu, rows, pos, neg, scale, du, drows, &count);
    else
        loss_sampled_softmax(be, T, d, R, S->tau, S->normalize, out, nu, rows, pos, neg, scale,
                             du, drows, &count);
    model_zero_grads(S->m);
    S->m->vt->backward(S->m, &b, du, demb);
    be->synchronize();
    double dt = clock_seconds() - t0;

    free(offsets);
    free(ts);
    free(keys);
    free(emb);
    free(rows);
    free(pos);
    free(neg);
    free(out);
    free(du);
    free(demb);
    free(drows);
    return dt;
}

/* The batch of sequences of length L that runs for at least --min-ms. */
static int64_t batch_size(const struct cal_setup *S, const struct cal_opts *o, int64_t L)
{
    int64_t B = 1, Bmax = CAL_MAX_TOKENS / L > 0 ? CAL_MAX_TOKENS / L : 1;
    for (;;) {
        double t = time_step(S, L, B);
        if (t >= o->min_s || B >= Bmax)
            break;
        double want = t > 0 ? ceil((double)B * 1.2 * o->min_s / t) : 2.0 * (double)B;
        int64_t next = want > (double)Bmax ? Bmax : (int64_t)want;
        B = next > 2 * B ? next : 2 * B;
        B = B < Bmax ? B : Bmax;
    }
    time_step(S, L, B); /* warm-up at the final size (buffers grown) */
    return B;
}

/* Solve the k x k system A x = y (Gaussian elimination with pivoting);
 * returns -1 if singular. */
static int solve(int k, double A[3][3], double *y, double *x)
{
    for (int c = 0; c < k; c++) {
        int p = c;
        for (int r = c + 1; r < k; r++)
            if (fabs(A[r][c]) > fabs(A[p][c]))
                p = r;
        if (fabs(A[p][c]) < 1e-300)
            return -1;
        for (int j = 0; j < k; j++) {
            double t = A[c][j];
            A[c][j] = A[p][j];
            A[p][j] = t;
        }
        double t = y[c];
        y[c] = y[p];
        y[p] = t;
        for (int r = c + 1; r < k; r++) {
            double f = A[r][c] / A[c][c];
            for (int j = c; j < k; j++)
                A[r][j] -= f * A[c][j];
            y[r] -= f * y[c];
        }
    }
    for (int c = k - 1; c >= 0; c--) {
        double s = y[c];
        for (int j = c + 1; j < k; j++)
            s -= A[c][j] * x[j];
        x[c] = s / A[c][c];
    }
    return 0;
}

/* Non-negative least squares of t[n] ~ c0 + a L + b L^2 on relative errors:
 * the best non-negative unconstrained fit over the 7 subsets of terms. */
static void fit_cost(const int64_t *L, const double *t, int n, struct cost_model *m)
{
    double best = INFINITY;
    m->c0 = m->a = m->b = 0;
    for (int mask = 1; mask < 8; mask++) {
        int idx[3], k = 0;
        for (int j = 0; j < 3; j++)
            if (mask & (1 << j))
                idx[k++] = j;
        double A[3][3] = {{0}}, y[3] = {0}, x[3] = {0};
        for (int i = 0; i < n; i++) {
            double f[3] = {1.0 / t[i], (double)L[i] / t[i], (double)L[i] * (double)L[i] / t[i]};
            for (int p = 0; p < k; p++) {
                y[p] += f[idx[p]]; /* target: t / t = 1 */
                for (int q = 0; q < k; q++)
                    A[p][q] += f[idx[p]] * f[idx[q]];
            }
        }
        if (solve(k, A, y, x))
            continue;
        double coef[3] = {0, 0, 0};
        int ok = 1;
        for (int p = 0; p < k; p++) {
            coef[idx[p]] = x[p];
            ok &= x[p] >= 0;
        }
        if (!ok)
            continue;
        double sse = 0;
        for (int i = 0; i < n; i++) {
            double e = (coef[0] + coef[1] * (double)L[i] + coef[2] * (double)L[i] * (double)L[i]) /
                           t[i] - 1.0;
            sse += e * e;
        }
        if (sse < best) {
            best = sse;
            m->c0 = coef[0];
            m->a = coef[1];
            m->b = coef[2];
        }
    }
}

static void parse_args(struct cal_opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->points = 8;
    o->reps = 5;
    o->ranks_per_node = 1;
    o->min_len = 8;
    o->min_s = 0.050;
    o->overrides = xmalloc((size_t)(argc ? argc : 1) * sizeof *o->overrides);
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            cal_usage(stdout);
            exit(0);
        }
        if (strncmp(a, "--", 2)) {
            cli_file_or_override("calibrate", a, &o->file, o->overrides, &o->noverrides);
            continue;
        }
        const char *names[] = {"--points", "--min-length", "--reps", "--min-ms",
                               "--ranks-per-node"};
        const char *val = NULL;
        int k = cli_option("calibrate", argc, argv, &i, names, (int)(sizeof names / sizeof *names),
                           &val);
        if (k < 0)
            fatal("calibrate: unknown option '%s' (see freescale calibrate --help)", a);
        switch (k) {
        case 0: o->points = (int)cli_count("--points", val, 2, CAL_MAX_POINTS); break;
        case 1: o->min_len = cli_count("--min-length", val, 1, 1000000); break;
        case 2: o->reps = (int)cli_count("--reps", val, 1, CAL_MAX_REPS); break;
        case 3: o->min_s = cli_number("--min-ms", val, 0, 60000) / 1000.0; break;
        case 4: o->ranks_per_node = (int)cli_count("--ranks-per-node", val, 1, 4096); break;
        default: fatal("calibrate: unknown option '%s' (see freescale calibrate --help)", a);
        }
    }
    if (!o->file) {
        cal_usage(stderr);
        fatal("calibrate: a parameter file is required");
    }
}

int calibrate_main(int argc, char **argv)
{
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1)
            fatal("'freescale calibrate' is serial: run it without mpirun/srun (%s=%s)",
                  vars[i], v);
    }
    struct cal_opts o;
    parse_args(&o, argc, argv);
    static struct params p;
    char err[PARAM_ERR_MAX];
    params_defaults(&p);
    if (params_read_file(&p, o.file, err, sizeof err))
        fatal("%s", err);
    for (int i = 0; i < o.noverrides; i++)
        if (params_override(&p, o.overrides[i], "command line", err, sizeof err))
            fatal("%s", err);

    struct model_conf mc;
    cost_model_conf(&p, &mc);
    /* the dataset, when readable, tells whether the time bias is used and
     * bounds the unique item rows of a step */
    int64_t nu_cap = 10000;
    const char *note = "";
    struct dataset ds;
    char derr[4400];
    if (params_str(&p, P_data_path)[0] &&
        dataset_open(&ds, params_str(&p, P_data_path), derr, sizeof derr) == 0) {
        mc.time_bias = mc.time_bias && ds.has_timestamps;
        nu_cap = ds.num_items > 0 ? ds.num_items : 1;
        dataset_close(&ds);
    } else {
        note = mc.type == MODEL_HSTU && mc.time_bias ? " (no dataset read: time bias assumed on)"
                                                     : "";
    }
    const int64_t N = mc.max_len;
    struct model m;
    const uint64_t seed = (uint64_t)params_i64(&p, P_train_seed);
    if (model_init(&m, &mc, &backend_cpu, seed, err, sizeof err))
        fatal("%s", err);
    struct cal_setup S = {
        .m = &m, .d = mc.d, .bce = !strcmp(params_str(&p, P_train_loss), "bce"),
        .normalize = mc.type == MODEL_HSTU, .tau = (float)params_f64(&p, P_train_temperature),
        .nu_cap = nu_cap, .seed = seed};
    S.R = S.bce ? 1 : (int)params_i64(&p, P_train_negatives);
    int threads = blas_set_threads(o.ranks_per_node);

    /* lengths: geometric from lo = min(min_len, max(1, N / 4)) to N, rounded,
     * distinct */
    int64_t Ls[CAL_MAX_POINTS];
    int n = 0;
    int64_t lo = N / 4 > 1 ? N / 4 : 1;
    lo = o.min_len < lo ? o.min_len : lo;
    for (int k = 0; k < o.points; k++) {
        double x = o.points == 1 ? (double)N
                                 : (double)lo * pow((double)N / (double)lo,
                                                    (double)k / (double)(o.points - 1));
        int64_t L = (int64_t)floor(x + 0.5);
        L = L < lo ? lo : L > N ? N : L;
        if (n == 0 || L > Ls[n - 1])
            Ls[n++] = L;
    }

    printf("freescale calibrate: %s d=%d layers=%d heads=%d, max_seq_len %lld, loss %s "
           "(R=%d)%s, dropout %g%s\n",
           params_str(&p, P_model_type), mc.d, mc.layers, mc.heads, (long long)N,
           params_str(&p, P_train_loss), S.R, mc.type == MODEL_HSTU && mc.time_bias ?
           ", time bias" : "", (double)mc.dropout, note);
    printf("backend cpu, %d BLAS thread%s (%s); forward + loss + backward, fastest of %d, "
           ">= %.0f ms per run\n\n",
           threads, threads == 1 ? "" : "s", blas_corename() ? blas_corename() : "?", o.reps,
           o.min_s * 1e3);
    fflush(stdout);

    double t_us[CAL_MAX_POINTS];
    int64_t Bs[CAL_MAX_POINTS];
    double t0 = clock_seconds();
    for (int i = 0; i < n; i++) {
        Bs[i] = batch_size(&S, &o, Ls[i]);
        t_us[i] = INFINITY;
    }
    for (int r = 0; r < o.reps; r++)
        for (int i = 0; i < n; i++) {
            double t = 1e6 * time_step(&S, Ls[i], Bs[i]) / (double)Bs[i];
            t_us[i] = t < t_us[i] ? t : t_us[i];
        }
    double elapsed = clock_seconds() - t0;
    model_free(&m);

    struct cost_model fit, flops;
    fit_cost(Ls, t_us, n, &fit);
    cost_model_auto(&mc, S.R, S.bce, &flops);
    /* the FLOP model scaled to the measurements (least squares on relative errors) */
    double sfy = 0, sff = 0, mean = 0, ss_tot = 0, ss_res = 0, worst = 0;
    for (int i = 0; i < n; i++) {
        double f = cost_of(&flops, Ls[i]) / t_us[i];
        sfy += f;
        sff += f * f;
        mean += t_us[i] / n;
    }
    double us_per_flop = sff > 0 ? sfy / sff : 0;
    printf("%7s %7s %14s %14s %8s %16s\n", "L", "batch", "measured us", "fitted us", "error",
           "auto (scaled) us");
    for (int i = 0; i < n; i++) {
        double f = cost_of(&fit, Ls[i]);
        double e = (f - t_us[i]) / t_us[i];
        worst = fabs(e) > worst ? fabs(e) : worst;
        ss_res += (f - t_us[i]) * (f - t_us[i]);
        ss_tot += (t_us[i] - mean) * (t_us[i] - mean);
        printf("%7lld %7lld %14.3f %14.3f %+7.1f%% %16.3f\n", (long long)Ls[i],
               (long long)Bs[i], t_us[i], f, 100 * e, us_per_flop * cost_of(&flops, Ls[i]));
    }
    double r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
    r2 = r2 < 0 ? 0 : r2;
    printf("\nfit: c(L) = c0 + a L + b L^2 microseconds per sequence:\n"
           "  c0 = %.6g, a = %.6g, b = %.6g   R^2 = %.6f, worst error %.1f%% "
           "(%.1f s of timing)\n",
           fit.c0, fit.a, fit.b, r2, 100 * worst, elapsed);
    if (r2 < 0.95)
        log_warn("calibrate: the fit is poor (R^2 %.3f): the timings are noisy (other work on "
                 "this machine?); rerun, perhaps with more --reps", r2);
    char fs[256];
    cost_model_format(&flops, fs, sizeof fs);
    printf("auto (FLOP counts): %s; scaled to this machine: %.3g GFLOP/s\n", fs,
           us_per_flop > 0 ? 1e-3 / us_per_flop : 0.0);
    if (fit.a > 0 && flops.a > 0)
        printf("b / a: measured %.4g, auto %.4g (the attention's share of the cost)\n",
               fit.b / fit.a, flops.b / flops.a);
    printf("\n# paste into the parameter file (microseconds per sequence on this machine):\n"
           "[parallel]\ncost_model = %.6g,%.6g,%.6g\n",
           fit.c0, fit.a, fit.b);
    free(o.overrides);
    return 0;
}
