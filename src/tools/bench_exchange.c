/* bench_exchange: 'freescale bench exchange', the embedding exchange
 * benchmark (in the spirit of the OSU and nccl-tests benchmarks).
 *
 * Every rank draws --ids ids from a Zipf(--zipf) popularity over --vocab
 * rows, then runs the forward exchange (lookup), a backward exchange with
 * a gradient per token and the sparse update, for --warmup + --iters steps.
 * It prints the median time of each stage (slowest rank), ids/s, GB/s sent
 * per rank, the de-duplication ratio and the memory per rank. With --check
 * every rank also keeps the unsharded reference table and compares:
 * lookups exactly before any update and to 1e-6 relative after, every row
 * of its shard to 1e-6 relative at the end. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/banner.h"
#include "base/clock.h"
#include "tools/bench_tools.h"
#include "base/check.h"
#include "cli/cli.h"
#include "comm/comm.h"
#include "comm/comm_fail.h"
#include "embedding/emb_reference.h"
#include "embedding/emb_exchange.h"
#include "base/params.h"
#include "comm/comm_params.h"
#include "base/rng.h"
#include "base/zipf.h"

#define CHECK_TOL 1e-6

struct bench_opts {
    int64_t vocab, ids, iters, warmup, seed, bad_id;
    int dim, check, has_bad_id;
    double zipf;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mpirun -np P freescale bench exchange [options] [section.key=value ...]\n"
            "\n"
            "Embedding exchange benchmark: lookups (ids to owners, rows back), gradients\n"
            "to owners and sparse updates of a table sharded over the ranks.\n"
            "  --vocab N        table rows (default 1e6)\n"
            "  --dim D          row width (default 64)\n"
            "  --ids N          ids per rank per step (default 1e5)\n"
            "  --zipf S         popularity skew of the ids, >= 0 (default 1.1)\n"
            "  --iters N        timed steps (default 10); --warmup N untimed (default 2)\n"
            "  --seed N         seed of ids, gradients and table (default 1)\n"
            "  --check          compare with an unsharded reference on every rank\n"
            "                   (needs vocab x dim floats per rank)\n"
            "  --bad-id ID      test hook: the last rank asks for ID in its first step\n"
            "overrides: parallel.embedding_group=G (ranks per shard group, default all),\n"
            "  embedding.optimizer=sgd|adagrad|adam, embedding.lr=X, embedding.weight_decay=X\n");
}

static void parse(int argc, char **argv, struct bench_opts *o, int *first_override)
{
    *o = (struct bench_opts){.vocab = 1000000, .ids = 100000, .iters = 10, .warmup = 2,
                             .seed = 1, .dim = 64, .zipf = 1.1};
    enum { O_VOCAB = 256, O_DIM, O_IDS, O_ZIPF, O_ITERS, O_WARMUP, O_SEED, O_CHECK, O_BAD };
    static const struct option longopts[] = {
        {"vocab", required_argument, NULL, O_VOCAB}, {"dim", required_argument, NULL, O_DIM},
        {"ids", required_argument, NULL, O_IDS},     {"zipf", required_argument, NULL, O_ZIPF},
        {"iters", required_argument, NULL, O_ITERS}, {"warmup", required_argument, NULL, O_WARMUP},
        {"seed", required_argument, NULL, O_SEED},   {"check", no_argument, NULL, O_CHECK},
        {"bad-id", required_argument, NULL, O_BAD},  {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 0;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (ch) {
        case O_VOCAB: o->vocab = cli_count("--vocab", optarg, 1, (int64_t)1 << 40); break;
        case O_DIM: o->dim = (int)cli_count("--dim", optarg, 1, 65536); break;
        case O_IDS: o->ids = cli_count("--ids", optarg, 0, (int64_t)1 << 31); break;
        case O_ZIPF: o->zipf = cli_number("--zipf", optarg, 0, 100); break;
        case O_ITERS: o->iters = cli_count("--iters", optarg, 1, 1000000); break;
        case O_WARMUP: o->warmup = cli_count("--warmup", optarg, 0, 1000000); break;
        case O_SEED: o->seed = cli_count("--seed", optarg, 0, INT64_MAX); break;
        case O_CHECK: o->check = 1; break;
        case O_BAD:
            o->bad_id = cli_count("--bad-id", optarg, INT64_MIN / 2, INT64_MAX / 2);
            o->has_bad_id = 1;
            break;
        case 'h': usage(stdout); exit(0);
        case ':': fatal("bench exchange: option '%s' needs a value", argv[optind - 1]);
        default: fatal("bench exchange: unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    *first_override = optind;
}

/* Ids of one rank in one step: Zipf ranks scattered over 1..vocab. */
static void draw_ids(const struct bench_opts *o, int64_t step, int rank, int64_t *ids)
{
    struct zipf z;
    zipf_init(&z, o->vocab, o->zipf);
    struct rng r;
    rng_init(&r, rng_key((uint64_t)o->seed, (uint64_t)step, (uint64_t)rank));
    uint64_t a = 2654435761u % (uint64_t)o->vocab, b = 40503u % (uint64_t)o->vocab;
    uint64_t x = a, y = (uint64_t)o->vocab; /* multiplier coprime to vocab */
    while (y) { uint64_t t = x % y; x = y; y = t; }
    if (x != 1 || a == 0)
        a = 1;
    for (int64_t i = 0; i < o->ids; i++) {
        uint64_t k = (uint64_t)zipf_sample(&z, &r) - 1;
        ids[i] = (int64_t)((unsigned __int128)k * a % (uint64_t)o->vocab + b) % o->vocab + 1;
    }
}

static void draw_grads(const struct bench_opts *o, int64_t step, int rank, float *g, int64_t n)
{
    struct rng r;
    rng_init(&r, rng_key((uint64_t)o->seed ^ 0x5eed, (uint64_t)step, (uint64_t)rank));
    for (int64_t i = 0; i < n * o->dim; i++)
        g[i] = (float)(0.02 * rng_uniform(&r) - 0.01);
}

/* max over rows of |a - b|_inf / max(|b|_inf, tiny), rows of dim floats */
static double rel_error(const float *a, const float *b, int64_t rows, int dim)
{
    double worst = 0;
    for (int64_t i = 0; i < rows; i++) {
        double diff = 0, mag = 1e-30;
        for (int j = 0; j < dim; j++) {
            diff = fmax(diff, fabs((double)a[i * dim + j] - b[i * dim + j]));
            mag = fmax(mag, fabs((double)b[i * dim + j]));
        }
        worst = fmax(worst, diff / mag);
    }
    return worst;
}

int bench_exchange_main(int argc, char **argv)
{
    struct bench_opts o;
    int first;
    parse(argc, argv, &o, &first);
    struct comm c;
    comm_init(&c, &argc, &argv);
    banner_print(&c);
    struct params p;
    comm_params_load(&p, &c, NULL, argc - first, argv + first);
    char err[512] = "";
    /* every rank finds the same: one message (comm_fail_agree) */
    comm_fail_agree(&c, comm_setup_groups(&c, params_i64(&p, P_parallel_embedding_group), err,
                                          sizeof err) != 0, err);
    struct emb_table_conf conf = {.rows = o.vocab, .dim = o.dim, .init = EMB_INIT_UNIFORM,
                                  .init_scale = (float)(1.0 / sqrt(o.dim)), .seed = (uint64_t)o.seed};
    snprintf(conf.name, sizeof conf.name, "items");
    conf.optim = (struct emb_optim_conf){
        .kind = (enum emb_optimizer)emb_optim_parse(params_str(&p, P_embedding_optimizer)),
        .lr = (float)params_f64(&p, P_embedding_lr),
        .weight_decay = (float)params_f64(&p, P_embedding_weight_decay),
        .eps = 1e-8f, .beta1 = 0.9f, .beta2 = 0.999f};
    struct emb_registry reg = {0};
    struct emb_table *t = emb_registry_add(&reg, &c, &conf);
    const int G = t->G, P = c.size;
    log_info("bench exchange: %d ranks, embedding_group %d (%d replica%s), table '%s' %lld x %d "
             "fp32, %s, %lld ids/rank/step, zipf %.2f, %lld steps (median) after %lld warm-up%s",
             P, G, c.emb_groups, c.emb_groups == 1 ? "" : "s", conf.name, (long long)o.vocab,
             o.dim, emb_optim_name(conf.optim.kind), (long long)o.ids, o.zipf,
             (long long)o.iters, (long long)o.warmup, o.check ? ", checked" : "");

    struct emb_ref ref;
    if (o.check) { /* the reference holds the whole table on every rank */
        double need = (double)(o.vocab + 1) * o.dim *
                      (4.0 + 8.0 + 4.0 * (double)emb_optim_state_floats(conf.optim.kind, o.dim) / o.dim);
        double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) /
                      c.g[COMM_NODE].size;
        if (need > 0.8 * have)
            fatal("bench exchange --check: the unsharded reference needs %.1f GB per rank, this "
                  "node has %.1f GB per rank; use a smaller --vocab or --dim, or drop --check",
                  need / 1e9, have / 1e9);
        emb_ref_init(&ref, &conf);
    }
    int64_t *ids = xmalloc((size_t)(o.ids ? o.ids : 1) * sizeof *ids);
    float *out = xmalloc((size_t)(o.ids ? o.ids : 1) * (size_t)o.dim * sizeof(float));
    float *grad = xmalloc((size_t)(o.ids ? o.ids : 1) * (size_t)o.dim * sizeof(float));
    enum { NPH = 12 };
    static const char *names[NPH] = {"dedup", "counts", "ids", "gather", "rows", "expand",
                                     "grad_sum", "grads", "aggregate", "replica", "update", "step"};
    double *samples = xcalloc((size_t)(NPH * o.iters), sizeof(double));
    int64_t uniq_sum = 0, bytes_timed = 0;
    struct comm_counters timed = {0};
    double lookup_err = 0;
    int exact_first = 1;
    for (int64_t step = 0; step < o.warmup + o.iters; step++) {
        draw_ids(&o, step, c.rank, ids);
        if (o.has_bad_id && step == 0 && c.rank == P - 1 && o.ids > 0)
            ids[0] = o.bad_id;
        draw_grads(&o, step, c.rank, grad, o.ids);
        struct emb_times tm = {0};
        struct comm_counters before = c.counters;
        comm_barrier(&c);
        double t0 = clock_seconds();
        struct emb_exchange *x = emb_lookup(t, &c, ids, o.ids, out, &tm);
        emb_backward(t, &c, x, grad, &tm);
        double dt = clock_seconds() - t0;
        int64_t nuniq = emb_exchange_nuniq(x);
        emb_exchange_free(x);
        if (step >= o.warmup) {
            double v[NPH] = {tm.dedup, tm.counts, tm.ids, tm.gather, tm.rows, tm.expand,
                             tm.grad_sum, tm.grads, tm.aggregate, tm.replica, tm.update, dt};
            for (int ph = 0; ph < NPH; ph++)
                samples[ph * o.iters + step - o.warmup] = v[ph];
            uniq_sum += nuniq;
            for (int ph = 0; ph < COMM_NPHASES; ph++) {
                int64_t b = c.counters.bytes[ph] - before.bytes[ph];
                timed.bytes[ph] += b;
                timed.messages[ph] += c.counters.messages[ph] - before.messages[ph];
                if (ph != COMM_PH_OTHER)
                    bytes_timed += b;
            }
        }
        if (o.check) { /* every rank replays every rank's ids on the reference */
            float *want = xmalloc((size_t)(o.ids ? o.ids : 1) * (size_t)o.dim * sizeof(float));
            emb_ref_lookup(&ref, ids, o.ids, want);
            if (step == 0)
                exact_first &= o.ids == 0 || !memcmp(want, out, (size_t)o.ids * (size_t)o.dim * 4);
            lookup_err = fmax(lookup_err, rel_error(out, want, o.ids, o.dim));
            free(want);
            int64_t *counts = xmalloc((size_t)P * sizeof *counts), total = 0;
            comm_allgather_i64(&c, COMM_WORLD, o.ids, counts);
            for (int r = 0; r < P; r++)
                total += counts[r];
            int64_t *all_ids = xmalloc((size_t)(total ? total : 1) * sizeof *all_ids);
            float *all_g = xmalloc((size_t)(total ? total : 1) * (size_t)o.dim * sizeof(float));
            comm_allgatherv(&c, COMM_WORLD, COMM_I64, ids, o.ids, all_ids, counts, COMM_PH_OTHER);
            for (int r = 0; r < P; r++)
                counts[r] *= o.dim;
            comm_allgatherv(&c, COMM_WORLD, COMM_F32, grad, o.ids * o.dim, all_g, counts,
                            COMM_PH_OTHER);
            emb_ref_update(&ref, all_ids, total, all_g);
            free(all_ids);
            free(all_g);
            free(counts);
        }
    }

    /* figures: medians per rank, then the slowest rank */
    double med[NPH];
    for (int ph = 0; ph < NPH; ph++)
        med[ph] = comm_allreduce_max_f64(&c, COMM_WORLD, cli_median(samples + ph * o.iters,
                                                                      (int)o.iters));
    double total_ids = (double)P * (double)o.ids;
    double uniq_mean = comm_allreduce_sum_f64(&c, COMM_WORLD, (double)uniq_sum) / (double)o.iters / P;
    double bytes_step = comm_allreduce_sum_f64(&c, COMM_WORLD, (double)bytes_timed) / (double)o.iters / P;
    log_info("de-duplication: %lld ids -> %.0f unique per rank (ratio %.2f)", (long long)o.ids,
             uniq_mean, uniq_mean > 0 ? (double)o.ids / uniq_mean : 0.0);
    log_info("%-10s %10s   (median over steps, slowest rank)", "stage", "ms");
    for (int ph = 0; ph < NPH - 1; ph++)
        log_info("  %-10s %10.3f", names[ph], 1e3 * med[ph]);
    log_info("step       %10.3f ms   %.3g ids/s   %.3f GB/s sent per rank (%.3g MB/step)",
             1e3 * med[NPH - 1], total_ids / med[NPH - 1], bytes_step / med[NPH - 1] / 1e9,
             bytes_step / 1e6);
    char line[512];
    int len = snprintf(line, sizeof line, "sent per rank per step (mean):");
    for (int ph = 0; ph < COMM_PH_OTHER; ph++) {
        double b = comm_allreduce_sum_f64(&c, COMM_WORLD, (double)timed.bytes[ph]) / o.iters / P;
        double m = comm_allreduce_sum_f64(&c, COMM_WORLD, (double)timed.messages[ph]) / o.iters / P;
        const char *unit = b >= 1e6 ? "MB" : b >= 1e3 ? "kB" : "B";
        double scale = b >= 1e6 ? 1e6 : b >= 1e3 ? 1e3 : 1;
        len += snprintf(line + len, sizeof line - (size_t)len, " %s %.3g %s in %.3g msgs%s",
                        comm_phase_name((enum comm_phase)ph), b / scale, unit, m,
                        ph + 1 < COMM_PH_OTHER ? "," : "");
    }
    log_info("%s", line);
    /* memory: the shard versus the whole table */
    double shard = (double)t->local_rows * (double)o.dim * 4.0 * (1.0 + (double)t->state_floats / o.dim);
    double whole = (double)o.vocab * (double)o.dim * 4.0 * (1.0 + (double)t->state_floats / o.dim);
    int64_t *rss = xmalloc((size_t)P * 2 * sizeof *rss);
    comm_allgather_i64(&c, COMM_WORLD, cli_proc_status_kib("VmRSS"), rss);
    comm_allgather_i64(&c, COMM_WORLD, cli_proc_status_kib("VmHWM"), rss + P);
    log_info("memory: table + optimizer state %.1f MB, shard per rank %.1f MB (%.3f of it)",
             whole / 1e6, shard / 1e6, shard / whole);
    for (int r = 0; r < P && c.rank == 0; r++)
        log_info("  rank %d: RSS %.1f MB, peak %.1f MB", r, rss[r] / 1024.0, rss[P + r] / 1024.0);
    free(rss);

    if (o.check) {
        float *mine = xmalloc((size_t)o.dim * sizeof(float));
        double row_err = 0;
        for (int64_t id = t->shard ? t->shard : G; id <= o.vocab; id += G) {
            emb_shard_row(t, id, mine);
            row_err = fmax(row_err, rel_error(mine, ref.w + id * o.dim, 1, o.dim));
        }
        free(mine);
        row_err = comm_allreduce_max_f64(&c, COMM_WORLD, row_err);
        lookup_err = comm_allreduce_max_f64(&c, COMM_WORLD, lookup_err);
        int exact = comm_allreduce_sum_i64(&c, !exact_first) == 0;
        int ok = exact && lookup_err <= CHECK_TOL && row_err <= CHECK_TOL;
        log_info("check: first-step lookups %s; max relative error: lookups %.2e, rows %.2e "
                 "(tolerance %.0e): %s",
                 exact ? "exact" : "NOT exact", lookup_err, row_err, CHECK_TOL,
                 ok ? "PASS" : "FAIL");
        emb_ref_free(&ref);
        if (!ok)
            fatal("bench exchange: check failed");
    }
    free(samples);
    free(ids);
    free(out);
    free(grad);
    emb_registry_free(&reg);
    comm_free(&c);
    return 0;
}
