/* plan: 'freescale plan', the load-balance planner (doc/balance.md).
 *
 *   freescale plan FILE.in [section.key=value ...] --batch-per-rank N
 *                  [--ranks P1,P2,...] [--steps S] [--lengths DIST]
 *                  [--noise SIGMA] [--csv OUT.csv] [--png OUT.png]
 *
 * Predicts, without running anything in parallel, the bubble fraction of
 * each balance mode (none, lpt, kk) at each rank count, from the
 * distribution of training-sequence lengths and the cost model
 * (parallel.cost_model, or its FLOP-count default; cost.h).
 *
 * Lengths: the training inputs of a user with L events are
 * n = min(L - h - 1, data.max_seq_len), h = 2 (data.split = loo) or 1
 * (hstu), exactly as the trainer builds them (data/batch.c); users with
 * n < 1 are not trained on and are skipped. The users' L come from the
 * dataset's /offsets (data.path), or from --lengths DIST, which has the
 * meaning of 'data gen --length' (fixed:L, uniform:A,B, lognormal:MU,SIGMA,
 * pareto:XM,ALPHA, from:FILE.h5): user lengths as 'data gen' would draw
 * them (2^20 draws make the pool), then cut the same way.
 *
 * Simulation (weak scaling): at P ranks each step draws a global batch of
 * P N sequences from the pool, uniformly with replacement (keyed by
 * train.seed, P and the step), predicts each one's cost c(L), assigns the
 * batch with balance_assign() (parallel.balance_equal_count honoured,
 * equal rank speeds) and takes balance_bubble(): bubble
 * sum_r (T - t_r) / (P T), imbalance max / mean. The figures are means
 * over S steps; by default S = ceil(2^16 / (P N)) clamped to [3, 100], so
 * that every rank count sees at least ~65536 sequences (100 steps at
 * small P) while 4096 ranks of 32 stay at 3 steps (kk ~0.5 s each).
 * The reduction of a mode is 1 - bubble_mode / bubble_none (0 for none,
 * and 0 when none has no bubble).
 *
 * The cost model is taken as exact unless --noise SIGMA is given: then
 * each sequence's actual time is its predicted cost times
 * exp(SIGMA z - SIGMA^2 / 2), z standard normal (mean 1; SIGMA ~ the
 * relative error that 'freescale calibrate' reports, or the step-to-step
 * jitter of a machine): the balancers see the predictions, the bubble is
 * that of the actual times.
 *
 * Splitting (parallel.split_long = auto, split_long.h): lpt and kk then
 * balance the pieces of split_plan() on the step's lengths, with the
 * trainer's split_conf (split_conf_from_params: split_threshold,
 * split_fraction, split_kv_cost, debug.split_chunks), and their bubble is
 * that of the pieces' costs (which include the key/value rows a chunk
 * receives). none stays unsplit (the baseline), and a row "kk-whole" (kk
 * without splitting) is added. Extra columns: "time", the predicted step
 * time T = max_r t_r relative to none's (summed over the steps: splitting
 * adds the chunks' c0 and key/value costs to the work, so a smaller
 * bubble is not by itself a shorter step); "cut", sequences cut into
 * chunks per step; "p2p/step", the bytes sent point-to-point per step:
 * split_p2p_rows() (key/value rows between different ranks in one layer's
 * forward) x model.layers x 2 (keys and values) x 2 (forward values and
 * backward gradients) x model.dim x 4 bytes (fp32). The CSV gains the
 * columns time,cut,p2p_bytes after the five of the unsplit run.
 *
 * Network (--net, plan_net.h): the step time at each rank count split
 * into compute, bubble and exposed communication per parallel.overlap mode,
 * for the configured parallel.balance, from a network model and the
 * exchange's bytes per token measured in a run (--exchange).
 *
 * Serial: no MPI is started (it runs the same plainly or under
 * mpirun -np 1); several ranks are refused. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "balance/balance.h"
#include "balance/split_long.h"
#include "base/check.h"
#include "base/clock.h"
#include "cli/cli.h"
#include "balance/cost.h"
#include "data/dataset.h"
#include "base/log.h"
#include "base/params.h"
#include "model/model.h"
#include "backend/backend_cpu.h"
#include "tools/plan_mem.h"
#include "tools/plan_net.h"
#include "tools/plan_pool.h"
#include "tools/plan_tools.h"
#include "base/rng.h"

#define PLAN_MAX_RANKS 65536
#define PLAN_MAX_COUNTS 64
#define PLAN_MAX_BATCH (1LL << 24) /* sequences in one simulated global batch */
#define PLAN_NMODES 3              /* none, lpt, kk (enum balance_mode) */
#define PLAN_KK_WHOLE PLAN_NMODES  /* with splitting: kk on whole sequences */
#define PLAN_NROWS (PLAN_NMODES + 1)

enum { KEY_STEP = 0x73746570 }; /* purpose for rng_key */

struct plan_opts {
    const char *file, *ranks_text, *lengths, *csv, *png;
    int nranks, ranks[PLAN_MAX_COUNTS];
    int64_t per_rank, steps;
    double noise;
    int noverrides;
    char **overrides;
    struct plan_net net;
    const char *intra;
    struct plan_mem mem;
    double samples; /* --samples: time to this many samples (0: not asked) */
};

/* Figures of one rank count; with splitting off only the first
 * PLAN_NMODES entries are used. time: sum over the steps of T = max_r t_r
 * (actual times); cut: sequences cut per step; p2p: bytes per step. */
struct plan_row {
    int ranks;
    int64_t steps;
    double bubble[PLAN_NROWS], imbalance[PLAN_NROWS], time[PLAN_NROWS];
    double cut, p2p[PLAN_NROWS];
};

/* What the simulation needs besides the pool and the cost model. */
struct plan_sim {
    int64_t per_rank;
    int equal_count;
    double noise;
    uint64_t seed;
    const struct split_conf *sc;  /* NULL: no splitting */
    double p2p_row_bytes;         /* bytes per key/value row a layer sends */
};

static const char *row_name(int m)
{
    return m == PLAN_KK_WHOLE ? "kk-whole" : balance_name((enum balance_mode)m);
}

static void plan_usage(FILE *out)
{
    fprintf(out,
            "usage: freescale plan FILE.in [section.key=value ...] --batch-per-rank N\n"
            "                      [--ranks P1,P2,...] [--steps S] [--lengths DIST]\n"
            "                      [--noise SIGMA] [--csv OUT.csv] [--png OUT.png]\n"
            "\n"
            "Predict the bubble fraction of parallel.balance = none, lpt and kk at each\n"
            "rank count (weak scaling: N sequences per rank), from the training lengths\n"
            "of data.path (or --lengths) and parallel.cost_model (auto = FLOP counts).\n"
            "\n"
            "  --batch-per-rank N  sequences per rank and step (required)\n"
            "  --ranks LIST        rank counts in 1..65536 (default 8,16,...,4096)\n"
            "  --steps S           simulated steps per rank count (default\n"
            "                      ceil(65536 / (P N)) clamped to [3, 100])\n"
            "  --lengths DIST      user lengths instead of data.path: fixed:L, uniform:A,B,\n"
            "                      lognormal:MU,SIGMA, pareto:XM,ALPHA, from:FILE.h5\n"
            "                      (as 'data gen --length'); cut to data.max_seq_len\n"
            "  --noise SIGMA       actual time = cost x lognormal noise of relative spread\n"
            "                      SIGMA (default 0: the cost model is exact)\n"
            "  --csv OUT.csv       ranks,mode,bubble,imbalance,reduction (with\n"
            "                      parallel.split_long=auto also time,cut,p2p_bytes)\n"
            "  --png OUT.png       bubble fraction against ranks (needs gnuplot)\n"
            "\n"
            "Network model (doc/scaling.md): step time = compute + bubble + exposed\n"
            "communication per parallel.overlap mode, for parallel.balance; per phase\n"
            "the wire time of what a mode runs behind compute exposes max(0, wire -\n"
            "compute) (chunk 1 of the rows behind the forward, the gradients behind the\n"
            "backward, prefetch's rows behind the host work too; doc/overlap.md \"The\n"
            "bound\"):\n"
            "  --net BW[,LAT]      inter-node bandwidth per GPU and latency (400gbit,5us)\n"
            "  --intra BW          intra-node bandwidth per GPU (default 450GB)\n"
            "  --gpus-per-node G   (default 8)\n"
            "  --exchange FILE     metrics of a training run of this configuration (its\n"
            "  --exchange-ranks P0 rows and gradient bytes per token) at P0 >= 2 ranks\n"
            "  --gflops R          compute rate per GPU when parallel.cost_model = auto\n"
            "                      (FLOPs); else the cost model is in microseconds\n"
            "  --eff E             share of the inter-node bandwidth that carries payload\n"
            "                      (1; fitted with LAT on measured runs: doc/scaling.md)\n"
            "  --split SF,SB       the forward's and the backward's shares of the compute,\n"
            "                      the rest host work (1/3,2/3: the model's FLOP split)\n"
            "  --hide H            share of what a mode can hide that it hides (1)\n"
            "  --collision C       prefetch: share of the rows that come late (0)\n"
            "\n"
            "With parallel.split_long=auto, lpt and kk balance the pieces of the split\n"
            "sequences (parallel.split_threshold, split_fraction, split_kv_cost, as the\n"
            "trainer cuts them); none stays unsplit and a row kk-whole (kk without\n"
            "splitting) is added. Extra columns: time (predicted step time, max over the\n"
            "ranks, relative to none), cut (sequences cut per step), p2p/step (bytes sent\n"
            "point-to-point per step: key/value rows between ranks x model.layers x 2\n"
            "(keys and values) x 2 (forward values, backward gradients) x model.dim x 4).\n"
            "\n"
            "Memory and time to quality (doc/scaling.md, \"Memory per rank\"):\n"
            "  --memory            print each rank count's memory per rank: the tables'\n"
            "                      shards with their optimizer state, the dense parameters\n"
            "                      with Adam's, the HSTU's workspace for the batch\n"
            "  --tables LIST       the tables for --memory: NAME:ROWS[:DIM][:dyn],...\n"
            "                      (ROWS as 1e8 is accepted; DIM default model.dim; dyn: a\n"
            "                      dynamic table's pool); default the item table of\n"
            "                      data.path's items\n"
            "  --samples N         with --net: the time to train on N samples at each rank\n"
            "                      count and overlap mode (ceil(N / (P x batch)) steps)\n");
}

/* "8,64,256" -> o->ranks; strict whole numbers in [1, PLAN_MAX_RANKS]. */
static void parse_ranks(struct plan_opts *o, const char *text)
{
    o->nranks = 0;
    const char *p = text;
    if (!*p)
        fatal("--ranks: empty list (expected rank counts such as 8,64,256)");
    for (;;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ',') || errno == ERANGE || *p == '+' || *p == ' ')
            fatal("--ranks: '%s' is not a comma-separated list of whole numbers", text);
        if (v < 1 || v > PLAN_MAX_RANKS)
            fatal("--ranks: %ld is out of range [1, %d]", v, PLAN_MAX_RANKS);
        if (o->nranks == PLAN_MAX_COUNTS)
            fatal("--ranks: more than %d rank counts", PLAN_MAX_COUNTS);
        o->ranks[o->nranks++] = (int)v;
        if (!*end)
            return;
        p = end + 1;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --- simulation ---------------------------------------------------------- */

static int64_t default_steps(int64_t n)
{
    int64_t s = (65536 + n - 1) / n;
    return s < 3 ? 3 : s > 100 ? 100 : s;
}

/* Row m's assignment of cost[n] (predicted) and actual[n], into row; the
 * step time T = max_r t_r is the imbalance times the mean load. */
static void sim_mode(struct plan_row *row, int m, enum balance_mode mode, int equal_count,
                     const double *cost, const double *actual, int64_t n, int P, int *owner,
                     double steps)
{
    double bub, imb, total = 0;
    balance_assign(mode, equal_count, cost, n, P, NULL, owner);
    balance_bubble(actual, n, P, owner, NULL, &bub, &imb);
    for (int64_t i = 0; i < n; i++)
        total += actual[i];
    row->bubble[m] += bub / steps;
    row->imbalance[m] += imb / steps;
    row->time[m] += imb * total / P;
}

/* Steps at P ranks: rows none, lpt, kk on whole sequences, or with
 * sim->sc none whole, lpt and kk on the pieces, and kk-whole. */
static void simulate(const struct pool *pl, const struct cost_model *cm, int P,
                     const struct plan_sim *sim, int64_t steps, struct plan_row *row)
{
    const int64_t n = (int64_t)P * sim->per_rank;
    const double noise = sim->noise;
    int64_t *len = xmalloc((size_t)n * sizeof *len);
    double *cost = xmalloc((size_t)n * sizeof *cost);
    double *actual = noise > 0 ? xmalloc((size_t)n * sizeof *actual) : cost;
    double *factor = noise > 0 ? xmalloc((size_t)n * sizeof *factor) : NULL;
    int64_t owner_cap = n;
    int *owner = xmalloc((size_t)owner_cap * sizeof *owner);
    double *pactual = NULL;
    struct split_pieces sp = {0};
    memset(row, 0, sizeof *row);
    row->ranks = P;
    row->steps = steps;
    for (int64_t s = 0; s < steps; s++) {
        struct rng r;
        rng_init(&r, rng_key(sim->seed, KEY_STEP ^ (uint64_t)P << 32, (uint64_t)s));
        for (int64_t i = 0; i < n; i++) {
            len[i] = pl->len[rng_below(&r, (uint64_t)pl->n)];
            cost[i] = cost_of(cm, len[i]);
        }
        if (noise > 0)
            for (int64_t i = 0; i < n; i++) {
                factor[i] = exp(noise * rng_normal(&r) - 0.5 * noise * noise);
                actual[i] = cost[i] * factor[i];
            }
        if (!sim->sc) {
            for (int m = 0; m < PLAN_NMODES; m++)
                sim_mode(row, m, (enum balance_mode)m, sim->equal_count, cost, actual, n, P,
                         owner, (double)steps);
            continue;
        }
        sim_mode(row, BALANCE_NONE, BALANCE_NONE, sim->equal_count, cost, actual, n, P, owner,
                 (double)steps);
        sim_mode(row, PLAN_KK_WHOLE, BALANCE_KK, sim->equal_count, cost, actual, n, P, owner,
                 (double)steps);
        split_plan(sim->sc, cm, len, n, P, &sp);
        row->cut += (double)sp.nsplit / (double)steps;
        if (sp.n > owner_cap) {
            owner_cap = sp.n;
            owner = xrealloc(owner, (size_t)owner_cap * sizeof *owner);
        }
        const double *pa = sp.cost;
        if (noise > 0) { /* a chunk takes its sequence's factor */
            pactual = xrealloc(pactual, (size_t)sp.n * sizeof *pactual);
            for (int64_t i = 0; i < sp.n; i++)
                pactual[i] = sp.cost[i] * factor[sp.pc[i].seq];
            pa = pactual;
        }
        for (int m = BALANCE_LPT; m <= BALANCE_KK; m++) {
            sim_mode(row, m, (enum balance_mode)m, sim->equal_count, sp.cost, pa, sp.n, P,
                     owner, (double)steps);
            row->p2p[m] += (double)split_p2p_rows(&sp, owner) * sim->p2p_row_bytes /
                           (double)steps;
        }
    }
    split_free(&sp);
    free(pactual);
    if (actual != cost)
        free(actual);
    free(factor);
    free(cost);
    free(len);
    free(owner);
}

static double reduction(const struct plan_row *row, int m)
{
    if (m == BALANCE_NONE || row->bubble[BALANCE_NONE] <= 0)
        return 0.0;
    return 1.0 - row->bubble[m] / row->bubble[BALANCE_NONE];
}

/* --- outputs ------------------------------------------------------------- */

/* T of row m relative to none's (1 when none's is 0). */
static double rel_time(const struct plan_row *row, int m)
{
    return row->time[BALANCE_NONE] > 0 ? row->time[m] / row->time[BALANCE_NONE] : 1.0;
}

static int row_splits(int m) { return m == BALANCE_LPT || m == BALANCE_KK; }

/* split: the rows and columns of a run with splitting. */
static void write_csv(const char *path, const struct plan_row *rows, int nrows, int split)
{
    FILE *f = fopen(path, "w");
    if (!f)
        fatal("--csv: cannot write %s: %s", path, strerror(errno));
    fprintf(f, "ranks,mode,bubble,imbalance,reduction%s\n", split ? ",time,cut,p2p_bytes" : "");
    for (int i = 0; i < nrows; i++)
        for (int m = 0; m < (split ? PLAN_NROWS : PLAN_NMODES); m++) {
            fprintf(f, "%d,%s,%.6f,%.6f,%.6f", rows[i].ranks, row_name(m), rows[i].bubble[m],
                    rows[i].imbalance[m], reduction(&rows[i], m));
            if (split)
                fprintf(f, ",%.6f,%.2f,%.0f", rel_time(&rows[i], m),
                        row_splits(m) ? rows[i].cut : 0.0, rows[i].p2p[m]);
            fprintf(f, "\n");
        }
    if (ferror(f) | fclose(f))
        fatal("--csv: error writing %s: %s", path, strerror(errno));
}

/* The gnuplot program on PATH, into buf; 0 if there is none. */
static int find_gnuplot(char *buf, size_t len)
{
    const char *path = getenv("PATH");
    if (!path)
        return 0;
    while (*path) {
        size_t k = strcspn(path, ":");
        snprintf(buf, len, "%.*s/gnuplot", (int)(k ? k : 1), k ? path : ".");
        if (access(buf, X_OK) == 0)
            return 1;
        path += k + (path[k] == ':');
    }
    return 0;
}

static void write_png(const char *path, const char *gnuplot, const struct plan_row *rows,
                      int nrows, int64_t per_rank, int split)
{
    char tmp[4200], cmd[4400];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    snprintf(cmd, sizeof cmd, "'%s'", gnuplot);
    FILE *g = popen(cmd, "w");
    if (!g)
        fatal("--png: cannot run %s: %s", gnuplot, strerror(errno));
    fprintf(g, "set terminal png size 800,500\nset output '%s'\n", tmp);
    fprintf(g, "set logscale x 2\nset xlabel 'ranks'\nset ylabel 'predicted bubble fraction'\n"
               "set grid\nset key outside right\nset format y '%%g'\n"
               "set title 'freescale plan: %lld sequences per rank'\n", (long long)per_rank);
    /* balanced modes are orders of magnitude below none: a log y axis shows
     * them all, unless a bubble is 0 (equal costs) */
    const int nm = split ? PLAN_NROWS : PLAN_NMODES;
    int positive = 1;
    for (int i = 0; i < nrows; i++)
        for (int m = 0; m < nm; m++)
            positive &= rows[i].bubble[m] > 0;
    fprintf(g, positive ? "set logscale y 10\nset ylabel 'predicted bubble fraction (log scale)'\n"
                        : "set yrange [0:*]\n");
    for (int m = 0; m < nm; m++) {
        fprintf(g, "$row%d << EOD\n", m);
        for (int i = 0; i < nrows; i++)
            fprintf(g, "%d %.6f\n", rows[i].ranks, rows[i].bubble[m]);
        fprintf(g, "EOD\n");
    }
    fprintf(g, "plot ");
    for (int m = 0; m < nm; m++)
        fprintf(g, "%s$row%d with linespoints title '%s%s'", m ? ", " : "", m, row_name(m),
                split && row_splits(m) ? ", split" : "");
    fprintf(g, "\n");
    int st = pclose(g);
    if (st != 0) {
        unlink(tmp);
        fatal("--png: gnuplot failed (status %d) writing %s", st, path);
    }
    if (rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        fatal("--png: cannot write %s: %s", path, strerror(e));
    }
}

/* bytes as "12.3 MB" (powers of 1000) into buf[16]. */
static const char *fmt_bytes(double v, char *buf)
{
    const char *unit[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    int u = 0;
    while (v >= 999.5 && u < 5) {
        v /= 1000;
        u++;
    }
    snprintf(buf, 16, u ? "%.3g %s" : "%.0f %s", v, unit[u]);
    return buf;
}

/* The table's lines of one rank count. */
static void print_row(const struct plan_row *row, int64_t n, int split)
{
    for (int m = 0; m < (split ? PLAN_NROWS : PLAN_NMODES); m++) {
        if (m == 0)
            printf("%7d %9lld %6lld", row->ranks, (long long)n, (long long)row->steps);
        else
            printf("%7s %9s %6s", "", "", "");
        printf(split ? "  %-8s %9.5f %10.4f " : "  %-5s %9.5f %10.4f ", row_name(m),
               row->bubble[m], row->imbalance[m]);
        if (m == 0)
            printf("%10s", "-");
        else
            printf("%9.2f%%", 100.0 * reduction(row, m));
        if (split) {
            char b[16];
            printf(" %7.4f", rel_time(row, m));
            if (row_splits(m))
                printf(" %8.1f %11s", row->cut, fmt_bytes(row->p2p[m], b));
            else
                printf(" %8s %11s", "-", "-");
        }
        printf("\n");
    }
}

/* --- command line ---------------------------------------------------------- */

static void refuse_parallel(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1)
            fatal("'freescale plan' is serial: run it without mpirun/srun or with one rank "
                  "(%s=%s)", vars[i], v);
    }
}

/* --split SF,SB: two shares in [0, 1] whose sum is at most 1. */
static void parse_split(struct plan_net *n, const char *val)
{
    char *end;
    errno = 0;
    n->fwd_share = strtod(val, &end);
    if (end == val || *end != ',' || errno)
        fatal("--split: '%s': expected SF,SB (the forward's and the backward's shares)", val);
    const char *b = end + 1;
    n->bwd_share = strtod(b, &end);
    if (end == b || *end || errno || !(n->fwd_share >= 0) || !(n->bwd_share >= 0) ||
        n->fwd_share + n->bwd_share > 1 + 1e-9)
        fatal("--split: '%s': expected two shares >= 0 whose sum is at most 1", val);
}

/* Options "--name VALUE" or "--name=VALUE"; other words are overrides. */
static void parse_args(struct plan_opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->net.gpus_per_node = 8;
    o->net.hide = 1;
    o->net.eff = 1;
    o->net.fwd_share = 1.0 / 3;
    o->net.bwd_share = 2.0 / 3;
    o->ranks_text = "8,16,32,64,128,256,512,1024,2048,4096";
    o->overrides = xmalloc((size_t)(argc ? argc : 1) * sizeof *o->overrides);
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            plan_usage(stdout);
            exit(0);
        }
        if (strncmp(a, "--", 2)) {
            cli_file_or_override("plan", a, &o->file, o->overrides, &o->noverrides);
            continue;
        }
        if (!strcmp(a, "--memory")) { /* a flag */
            o->mem.on = 1;
            continue;
        }
        const char *names[] = {"--ranks", "--batch-per-rank", "--steps", "--lengths", "--csv",
                               "--png", "--noise", "--net", "--intra", "--gpus-per-node",
                               "--exchange", "--exchange-ranks", "--gflops", "--hide",
                               "--collision", "--eff", "--split", "--tables", "--samples"};
        const char *val = NULL;
        int k = cli_option("plan", argc, argv, &i, names, (int)(sizeof names / sizeof *names),
                           &val);
        if (k < 0)
            fatal("plan: unknown option '%s' (see freescale plan --help)", a);
        switch (k) {
        case 0: o->ranks_text = val; break;
        case 1: o->per_rank = cli_count("--batch-per-rank", val, 1, 1000000); break;
        case 2: o->steps = cli_count("--steps", val, 1, 1000000); break;
        case 3: o->lengths = val; break;
        case 4: o->csv = val; break;
        case 5: o->png = val; break;
        case 6: o->noise = cli_number("--noise", val, 0, 5); break;
        case 7: plan_net_parse_net(&o->net, val); break;
        case 8: o->intra = val; break;
        case 9: o->net.gpus_per_node = (int)cli_count("--gpus-per-node", val, 1, 1024); break;
        case 10: o->net.exchange = val; break;
        case 11: o->net.exchange_ranks = (int)cli_count("--exchange-ranks", val, 2, 1 << 20); break;
        case 12: o->net.gflops = cli_number("--gflops", val, 1e-6, 1e12); break;
        case 13: o->net.hide = cli_number("--hide", val, 0, 1); break;
        case 14: o->net.collision = cli_number("--collision", val, 0, 1); break;
        case 15: o->net.eff = cli_number("--eff", val, 1e-3, 1); break;
        case 16: parse_split(&o->net, val); break;
        case 17: plan_mem_parse_tables(&o->mem, val); break;
        case 18: o->samples = cli_number("--samples", val, 1, 1e15); break;
        default: fatal("plan: unknown option '%s' (see freescale plan --help)", a);
        }
    }
    if (!o->file) {
        plan_usage(stderr);
        fatal("plan: a parameter file is required");
    }
    if (!o->per_rank)
        fatal("plan: --batch-per-rank N is required (sequences per rank and step)");
    parse_ranks(o, o->ranks_text);
    for (int i = 0; i < o->nranks; i++)
        if ((int64_t)o->ranks[i] * o->per_rank > PLAN_MAX_BATCH)
            fatal("plan: %d ranks x %lld sequences is over %lld sequences per step",
                  o->ranks[i], (long long)o->per_rank, (long long)PLAN_MAX_BATCH);
    if (o->png && strchr(o->png, '\''))
        fatal("--png: the file name must not contain a single quote");
    if (!o->net.on && (o->intra || o->net.exchange || o->net.exchange_ranks || o->net.gflops))
        fatal("plan: --intra, --exchange, --exchange-ranks and --gflops belong to the network "
              "model: give --net BW[,LAT] too");
    if (o->mem.nt && !o->mem.on)
        fatal("plan: --tables belongs to --memory: give --memory too");
    if (o->samples > 0 && !o->net.on)
        fatal("plan: --samples needs the network model's step time: give --net BW[,LAT] too");
    if (o->net.on) {
        if (!o->net.exchange || !o->net.exchange_ranks)
            fatal("plan: --net needs --exchange FILE and --exchange-ranks P0 (the metrics of a "
                  "training run of this configuration at P0 >= 2 ranks: its bytes per token)");
        o->net.intra_Bps = plan_net_rate("--intra", o->intra ? o->intra : "450GB");
    }
}

/* The model's gradient arena in floats (its dense parameters), built on
 * the CPU. */
static double dense_floats(const struct params *p)
{
    struct model_conf mc;
    struct model m;
    char err[PARAM_ERR_MAX];
    cost_model_conf(p, &mc);
    if (model_init(&m, &mc, &backend_cpu, 1, err, sizeof err))
        fatal("%s", err);
    const double n = (double)m.ngrad;
    model_free(&m);
    return n;
}

/* The network model's inputs from the parameters: the dense all-reduce's
 * bytes (the model's gradient arena, built on the CPU), the input rows'
 * share, the measured bytes per token; and the cost model's unit. */
static void net_setup(struct plan_net *n, const struct params *p, int is_auto)
{
    if (is_auto && n->gflops <= 0)
        fatal("plan: --net with parallel.cost_model = auto (FLOP counts) needs --gflops R (the "
              "compute rate per GPU), or a cost model in microseconds ('freescale calibrate')");
    if (!is_auto && n->gflops > 0)
        fatal("plan: --gflops is for parallel.cost_model = auto; this cost model is taken in "
              "microseconds");
    n->dense_bytes = 4.0 * dense_floats(p);
    const int bce = !strcmp(params_str(p, P_train_loss), "bce");
    n->input_share = 1.0 / (2.0 + (bce ? 1.0 : (double)params_i64(p, P_train_negatives)));
    plan_net_read_exchange(n);
    if (n->ids_share <= 0) /* not in the metrics: an 8-byte id per fp32 row */
        n->ids_share = 8.0 / (4.0 * (double)params_i64(p, P_model_dim));
}

/* The exchange's bytes per token hold for the measured run's batch size. */
static void net_check_batch(const struct plan_net *n, int64_t per_rank)
{
    const double q = n->exchange_per_rank;
    if (q > 0 && fabs(q - (double)per_rank) > 0.1 * (double)per_rank)
        log_warn("plan: %s ran %.1f sequences per rank and step, --batch-per-rank is %lld: its "
                 "bytes per token (the rows de-duplicated within a rank's batch) may not hold; "
                 "measure at the planned batch", n->exchange, q, (long long)per_rank);
}

static void print_net(const struct plan_net *n, const struct plan_row *rows, int nrows,
                      int bal, double mean_len, int64_t per_rank, double samples)
{
    double *step = xcalloc((size_t)nrows * PLAN_NET_MODES, sizeof *step);
    char b1[16], b2[16], b3[16];
    printf("\nnetwork model (balance %s): inter-node %s/s per GPU, latency %g us, intra-node "
           "%s/s, %d GPUs per node; exchange %.1f bytes per token (%s at %d ranks, %.1f "
           "sequences per rank, ids %.4f of the rows' bytes); dense all-reduce %s; eff %g, "
           "split %.3f/%.3f/%.3f (forward/backward/host), hide %g, collision %g\n",
           row_name(bal), fmt_bytes(n->inter_Bps, b1), 1e6 * n->latency_s,
           fmt_bytes(n->intra_Bps, b2), n->gpus_per_node, n->bytes_per_token, n->exchange,
           n->exchange_ranks, n->exchange_per_rank, n->ids_share, fmt_bytes(n->dense_bytes, b3),
           n->eff, n->fwd_share, n->bwd_share, 1 - n->fwd_share - n->bwd_share, n->hide,
           n->collision);
    printf("%7s %10s %9s %9s %9s %9s %9s  %-26s %-26s\n", "ranks", "compute", "bubble", "ids",
           "rows", "grads", "dense", "exposed none/prio/prefetch", "step none/prio/prefetch");
    for (int i = 0; i < nrows; i++) {
        struct plan_net_row r;
        const double T = rows[i].time[bal] / (double)rows[i].steps;
        const double mean = T / rows[i].imbalance[bal];
        plan_net_predict(n, rows[i].ranks, T, mean, mean_len * (double)per_rank, &r);
        printf("%7d %10.3f %9.3f %9.3f %9.3f %9.3f %9.3f  %8.3f %8.3f %8.3f  %8.3f %8.3f %8.3f\n",
               rows[i].ranks, r.compute_ms, r.bubble_ms, r.ids_ms, r.rows_ms, r.grads_ms, r.dense_ms,
               r.exposed_ms[0], r.exposed_ms[1], r.exposed_ms[2], r.step_ms[0], r.step_ms[1],
               r.step_ms[2]);
        for (int k = 0; k < PLAN_NET_MODES; k++)
            step[i * PLAN_NET_MODES + k] = r.step_ms[k];
    }
    printf("(milliseconds per step and rank; compute = the mean rank's model work, bubble = the "
           "slowest rank's lead over it; ids, rows, grads, dense = each exchange's wire time and "
           "latencies)\n");
    if (samples > 0) {
        printf("\ntime to %.4g samples (hours; ceil(samples / (ranks x %lld)) steps of the step "
               "time above):\n%7s %10s %10s %10s %10s\n", samples, (long long)per_rank, "ranks",
               "steps", "none", "prio", "prefetch");
        for (int i = 0; i < nrows; i++) {
            const double steps = ceil(samples / ((double)rows[i].ranks * (double)per_rank));
            printf("%7d %10.0f", rows[i].ranks, steps);
            for (int k = 0; k < PLAN_NET_MODES; k++)
                printf(" %10.3f", steps * step[i * PLAN_NET_MODES + k] / 3.6e6);
            printf("\n");
        }
    }
    free(step);
}

int plan_main(int argc, char **argv)
{
    refuse_parallel();
    struct plan_opts o;
    parse_args(&o, argc, argv);
    char gnuplot[4096];
    if (o.png && !find_gnuplot(gnuplot, sizeof gnuplot))
        fatal("--png needs gnuplot, which is not on PATH (Debian: apt-get install "
              "gnuplot-nox); run without --png or use --csv");

    static struct params p;
    char err[PARAM_ERR_MAX];
    params_defaults(&p);
    if (params_read_file(&p, o.file, err, sizeof err))
        fatal("%s", err);
    for (int i = 0; i < o.noverrides; i++)
        if (params_override(&p, o.overrides[i], "command line", err, sizeof err))
            fatal("%s", err);
    struct cost_model cm;
    struct split_conf sc;
    int is_auto;
    if (cost_model_from_params(&p, &cm, &is_auto, err, sizeof err) ||
        split_conf_from_params(&p, &cm, &sc, err, sizeof err))
        fatal("%s", err);
    const int split = sc.on;
    if (o.mem.on && strcmp(params_str(&p, P_model_type), "hstu"))
        fatal("plan: --memory models the HSTU's workspace; model.type is %s",
              params_str(&p, P_model_type));
    if (o.net.on) {
        net_setup(&o.net, &p, is_auto);
        net_check_batch(&o.net, o.per_rank);
    }

    const int64_t N = params_i64(&p, P_data_max_seq_len);
    const int hold = strcmp(params_str(&p, P_data_split), "hstu") ? 2 : 1;
    const uint64_t seed = (uint64_t)params_i64(&p, P_train_seed);
    const int equal = (int)params_i64(&p, P_parallel_balance_equal_count);
    struct pool pl = {0};
    if (o.lengths)
        pool_from_dist(&pl, o.lengths, hold, N, seed);
    else if (params_str(&p, P_data_path)[0])
        pool_from_dataset(&pl, "data.path", params_str(&p, P_data_path), hold, N);
    else
        fatal("plan: no lengths: set data.path to a dataset or give --lengths DIST");
    if (pl.n == 0)
        fatal("plan: %s has no user with a training input (at least %d events)", pl.source,
              hold + 2);

    /* summary of the pool: mean, max, and the cost share of the top 1% */
    double *c = xmalloc((size_t)pl.n * sizeof *c), total = 0, sumL = 0;
    int64_t maxL = 0;
    for (int64_t i = 0; i < pl.n; i++) {
        c[i] = cost_of(&cm, pl.len[i]);
        total += c[i];
        sumL += (double)pl.len[i];
        maxL = pl.len[i] > maxL ? pl.len[i] : maxL;
    }
    int64_t top = pl.n / 100 ? pl.n / 100 : 1;
    qsort(c, (size_t)pl.n, sizeof *c, cmp_double);
    double top_cost = 0;
    for (int64_t i = pl.n - top; i < pl.n; i++)
        top_cost += c[i];
    free(c);

    char cms[256];
    cost_model_format(&cm, cms, sizeof cms);
    printf("freescale plan: %s d=%lld layers=%lld, data.max_seq_len %lld, data.split %s\n",
           params_str(&p, P_model_type), (long long)params_i64(&p, P_model_dim),
           (long long)params_i64(&p, P_model_layers), (long long)N, params_str(&p, P_data_split));
    printf("cost model: %s (%s per sequence): %s\n",
           is_auto ? "auto, FLOP counts" : "parallel.cost_model", is_auto ? "FLOPs" : "its units",
           cms);
    printf("lengths: %s: %lld training sequences, mean %.1f, max %lld tokens; the longest 1%% "
           "carry %.1f%% of the cost\n",
           pl.source, (long long)pl.n, sumL / (double)pl.n, (long long)maxL,
           100.0 * top_cost / total);
    printf("weak scaling: %lld sequences per rank and step, drawn with replacement; "
           "balance_equal_count %s; seed %llu; ",
           (long long)o.per_rank, equal ? "on" : "off", (unsigned long long)seed);
    if (o.noise > 0)
        printf("actual times: cost x lognormal noise, sigma %g\n", o.noise);
    else
        printf("the cost model taken as exact\n");
    const int64_t dim = params_i64(&p, P_model_dim), layers = params_i64(&p, P_model_layers);
    const char *units = is_auto ? "FLOPs" : "cost model units";
    if (sc.force >= 2)
        printf("split_long: lpt and kk on pieces, every sequence cut into %d chunks "
               "(debug.split_chunks); ", sc.force);
    else if (split && sc.threshold > 0)
        printf("split_long: lpt and kk on pieces, sequences of predicted cost above %g %s cut; ",
               sc.threshold, units);
    else if (split)
        printf("split_long: lpt and kk on pieces, sequences of predicted cost above %g x the "
               "step's mean per rank cut; ", sc.fraction);
    if (split)
        printf("key/value row %g %s, chunks of >= %d positions; p2p = rows x %lld layers x 2 "
               "x 2 x d %lld x 4 bytes\n", sc.kv_cost, units, sc.min_chunk, (long long)layers,
               (long long)dim);
    printf("\n");
    if (split)
        printf("%7s %9s %6s  %-8s %9s %10s %10s %7s %8s %11s\n", "ranks", "batch", "steps",
               "mode", "bubble", "imbalance", "reduction", "time", "cut", "p2p/step");
    else
        printf("%7s %9s %6s  %-5s %9s %10s %10s\n", "ranks", "batch", "steps", "mode", "bubble",
               "imbalance", "reduction");
    fflush(stdout);

    const struct plan_sim sim = {
        .per_rank = o.per_rank,
        .equal_count = equal,
        .noise = o.noise,
        .seed = seed,
        .sc = split ? &sc : NULL,
        .p2p_row_bytes = 2.0 * 2.0 * 4.0 * (double)dim * (double)layers,
    };
    double t0 = clock_seconds();
    struct plan_row *rows = xcalloc((size_t)o.nranks, sizeof *rows);
    for (int i = 0; i < o.nranks; i++) {
        int64_t n = (int64_t)o.ranks[i] * o.per_rank;
        simulate(&pl, &cm, o.ranks[i], &sim, o.steps ? o.steps : default_steps(n), &rows[i]);
        print_row(&rows[i], n, split);
        fflush(stdout);
    }
    printf("\n(simulated in %.1f s; bubble = sum_r (T - t_r) / (P T) per step, imbalance = "
           "max / mean, means over the steps; reduction = 1 - bubble / bubble(none))\n",
           clock_seconds() - t0);
    if (split)
        printf("(split: lpt and kk balance the pieces, whose costs include the key/value rows "
               "received; time = step time max_r t_r / none's; cut = sequences cut per step; "
               "p2p/step = bytes sent point-to-point per step, forward values and backward "
               "gradients)\n");
    if (o.net.on)
        print_net(&o.net, rows, o.nranks,
                  split ? (int)BALANCE_KK : (int)params_i64(&p, P_parallel_balance),
                  sumL / (double)pl.n, o.per_rank, o.samples);
    if (o.mem.on)
        plan_mem_print(&o.mem, &p, o.ranks, o.nranks, o.per_rank, dense_floats(&p), pl.num_items);
    if (o.csv) {
        write_csv(o.csv, rows, o.nranks, split);
        printf("wrote %s\n", o.csv);
    }
    if (o.png) {
        write_png(o.png, gnuplot, rows, o.nranks, o.per_rank, split);
        printf("wrote %s\n", o.png);
    }
    free(rows);
    free(pl.len);
    free(o.overrides);
    plan_mem_free(&o.mem);
    return 0;
}
