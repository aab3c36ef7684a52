/* recommend: 'mpirun -np P freescale recommend CKPT.h5 [FILE.in]
 * [section.key=value ...] --top K -o OUT.csv|OUT.h5 [--users FILE]'.
 *
 * For every user with at least one event (or those --users lists, in its
 * order) the K best items after the user's whole history, the history
 * excluded from the candidates as in evaluation, written in the dataset's
 * original ids (rec_out.h). Distributed like evaluation: the user vectors
 * of a round (recommend.h) are ranked against the sharded item table
 * (eval_retrieval_topk: every owner scores its shard, the lists are merged);
 * then the K scores of each list are recomputed exactly (a double dot
 * product with the looked-up row: the ranking's blocked gemm may round
 * differently with the shard layout) and the list re-sorted by them. An
 * HDF5 output is written by every rank, its own lists at their positions
 * (MPI-IO); a CSV output by rank 0, which gathers each round in rank order
 * (list order) and appends it. The same file on any P. */
#include "cmd/recommend.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "cli/cli.h"
#include "comm/comm_fail.h"
#include "cmd/eval_trainer.h"
#include "eval/eval.h"
#include "eval/eval_retrieval.h"
#include "train/infer.h"
#include "train/train_dyn.h"
#include "cmd/rec_file.h"
#include "cmd/rec_ids.h"
#include "cmd/rec_out.h"
#include "model/loss.h"
#include "train/watchdog.h"

#define DEFAULT_TOPK 10

struct rec_opts {
    struct rec_cmd cmd;
    int K;
    int64_t batch, round;
    const char *out, *users_file;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np P freescale recommend CKPT.h5 [FILE.in] [section.key=value ...]\n"
            "           [--top K] -o OUT.csv|OUT.h5 [--users FILE]\n"
            "\n"
            "The top-K items of every user after the user's whole history (history\n"
            "excluded), with scores, in the dataset's original ids. Without FILE.in the\n"
            "parameters stored in the checkpoint are used (overrides apply on top).\n"
            "  --top K          items per user, 1..%d (default %d)\n"
            "  -o, --output F   F.csv: lines user,rank,item,score (rank from 1);\n"
            "                   F.h5: /users, /items [n, K], /scores [n, K] (doc/training.md)\n"
            "  --users FILE     only these users, one original id per line, in that order\n"
            "  --batch N        users per forward pass (default %d)\n"
            "  --round N        users per round over all ranks (default %d): rank 0 holds\n"
            "                   N x K results at a time (the output does not depend on it)\n"
            "  -h, --help       this text\n",
            EVAL_MAX_TOPK, DEFAULT_TOPK, REC_BATCH, REC_ROUND);
}

static void parse_args(int argc, char **argv, struct rec_opts *o)
{
    static const char *const names[] = {"--top", "-o", "--output", "--users", "--batch",
                                        "--round"};
    memset(o, 0, sizeof *o);
    o->cmd.tool = "recommend";
    o->cmd.overrides = xmalloc((size_t)argc * sizeof *o->cmd.overrides);
    o->K = DEFAULT_TOPK;
    o->batch = REC_BATCH;
    o->round = REC_ROUND;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            exit(0);
        }
        int k = cli_option("recommend", argc, argv, &i, names, 6, &v);
        if (k == 0)
            o->K = (int)cli_count("recommend: --top", v, 1, EVAL_MAX_TOPK);
        else if (k == 1 || k == 2)
            o->out = v;
        else if (k == 3)
            o->users_file = v;
        else if (k == 4)
            o->batch = cli_count("recommend: --batch", v, 1, 1 << 20);
        else if (k == 5)
            o->round = cli_count("recommend: --round", v, 1, (int64_t)1 << 22);
        else
            rec_cmd_word(&o->cmd, argv[i]);
    }
    if (!o->cmd.ckpt) {
        usage(stderr);
        fatal("recommend: no checkpoint given");
    }
    if (!o->out)
        fatal("recommend: no output file given (-o OUT.csv or -o OUT.h5)");
    if (rec_out_format(o->out) < 0)
        fatal("recommend: -o %s: the name must end in .csv, .h5 or .hdf5", o->out);
}

/* --- the users ----------------------------------------------------------------- */

/* Rank 0: the dense indexes of the users --users lists, in its order. */
static int64_t read_users_file(const char *path, struct rec_ids *um, const struct dataset *ds,
                               int64_t **out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fatal("recommend: --users %s: cannot open: %s", path, strerror(errno));
    int64_t *first_line = xcalloc((size_t)(ds->num_users ? ds->num_users : 1), sizeof(int64_t));
    int64_t n = 0, cap = 1024, lineno = 0;
    int64_t *users = xmalloc((size_t)cap * sizeof *users);
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while ((len = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        char *s = line, *e = line + len;
        while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
            *--e = '\0';
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            continue; /* blank line */
        int64_t u = rec_ids_find(um, s);
        if (u < 0)
            fatal("%s:%lld: user '%s' is not in the dataset %s", path, (long long)lineno, s,
                  ds->path);
        if (dataset_length(ds, u) < 1)
            fatal("%s:%lld: user '%s' has no events in %s: nothing to recommend from", path,
                  (long long)lineno, s, ds->path);
        if (first_line[u])
            fatal("%s:%lld: user '%s' is listed twice (first at line %lld)", path,
                  (long long)lineno, s, (long long)first_line[u]);
        first_line[u] = lineno;
        if (n == cap)
            users = xrealloc(users, (size_t)(cap *= 2) * sizeof *users);
        users[n++] = u;
    }
    int bad = ferror(f);
    fclose(f);
    free(line);
    free(first_line);
    if (bad)
        fatal("recommend: --users %s: read error", path);
    if (n == 0)
        fatal("recommend: --users %s lists no users", path);
    *out = users;
    return n;
}

struct users_arg {
    const struct rec_opts *o;
    struct rec_ids *um;
    const struct dataset *ds;
    int64_t *users, n;
};

/* comm_fail_run's fn: read_users_file into a (NULL: nothing to do) */
static void read_users_arg(void *arg)
{
    struct users_arg *a = arg;
    if (a)
        a->n = read_users_file(a->o->users_file, a->um, a->ds, &a->users);
}

/* The list of users on every rank: rank 0 decides, then broadcasts. */
static int64_t user_list(struct trainer *tr, const struct rec_opts *o, struct rec_ids *um,
                         int64_t **users)
{
    struct users_arg a = {o, um, &tr->ds, NULL, 0};
    if (tr->c->rank == 0 && !o->users_file)
        a.n = rec_users_with_events(&tr->ds, &a.users);
    /* a bad --users file: rank 0's error, once (comm_fail_run) */
    comm_fail_run(tr->c, read_users_arg, tr->c->rank == 0 && o->users_file ? &a : NULL);
    int64_t n = a.n, *u = a.users;
    comm_bcast_bytes(tr->c, &n, sizeof n, 0);
    if (tr->c->rank != 0)
        u = xmalloc((size_t)(n ? n : 1) * sizeof *u);
    comm_bcast_bytes(tr->c, u, (size_t)n * sizeof *u, 0);
    *users = u;
    return n;
}

/* --- one round ------------------------------------------------------------------- */

struct cand {
    float s;
    int64_t id;
};

/* Exact scores of m top-K lists (u: [m, d], ids/scores: [m, K], id 0 =
 * padding): s = u . row / max(|row|, ITEM_NORM_EPS) (normalize_items) or
 * u . row, in double, then each list re-sorted best first, ties by the
 * smaller id, padding last. Collective (the rows are looked up). */
static void rescore(struct trainer *tr, int64_t m, int K, const float *u, int64_t *ids,
                    float *scores)
{
    const int d = tr->conf.d, norm = tr->conf.normalize_items;
    const int64_t n = m * K;
    int64_t *look = xmalloc((size_t)(n ? n : 1) * sizeof *look);
    for (int64_t i = 0; i < n; i++)
        look[i] = ids[i] ? ids[i] : 1; /* any valid row for the padding */
    float *rows = xmalloc((size_t)(n ? n : 1) * (size_t)d * sizeof *rows);
    emb_exchange_free(emb_lookup(tr->items, tr->c, look, n, rows, NULL));
    if (tr->feat) /* items are scored by their representation (collective) */
        infer_item_rows(tr, look, n, rows);
    struct cand *l = xmalloc((size_t)K * sizeof *l);
    for (int64_t i = 0; i < m; i++) {
        for (int j = 0; j < K; j++) {
            const float *r = rows + (i * K + j) * d, *q = u + i * d;
            double dot = 0, sq = 0;
            for (int k = 0; k < d; k++) {
                dot += (double)q[k] * (double)r[k];
                sq += (double)r[k] * (double)r[k];
            }
            double den = norm ? fmax(sqrt(sq), (double)ITEM_NORM_EPS) : 1.0;
            int64_t id = ids[i * K + j];
            l[j] = (struct cand){id ? (float)(dot / den) : -INFINITY, id};
        }
        for (int j = 1; j < K; j++) { /* insertion sort: K <= EVAL_MAX_TOPK */
            struct cand x = l[j];
            int k = j;
            for (; k > 0; k--) {
                struct cand y = l[k - 1];
                int worse = y.id == 0 ? x.id != 0
                            : x.id != 0 && (y.s < x.s || (y.s == x.s && y.id > x.id));
                if (!worse)
                    break;
                l[k] = y;
            }
            l[k] = x;
        }
        for (int j = 0; j < K; j++) {
            ids[i * K + j] = l[j].id;
            scores[i * K + j] = l[j].s;
        }
    }
    free(l);
    free(rows);
    free(look);
}

/* CSV: gather a round's results (list positions from first) to rank 0 in
 * rank order, which is list order, and append them. */
static void gather_round(struct comm *c, struct rec_out *out, int K, int64_t first, int64_t cnt,
                         const int64_t *users, const int64_t *ids, const float *scores)
{
    int64_t *counts = c->rank == 0 ? xmalloc((size_t)c->size * 2 * sizeof *counts) : NULL;
    comm_gather_i64(c, COMM_WORLD, cnt, counts, 0);
    int64_t total = 0, *ck = NULL;
    if (c->rank == 0) {
        ck = counts + c->size;
        for (int r = 0; r < c->size; r++) {
            total += counts[r];
            ck[r] = counts[r] * K;
        }
    }
    size_t tb = (size_t)(total ? total : 1);
    int64_t *gu = c->rank == 0 ? xmalloc(tb * sizeof *gu) : NULL;
    int64_t *gi = c->rank == 0 ? xmalloc(tb * (size_t)K * sizeof *gi) : NULL;
    float *gs = c->rank == 0 ? xmalloc(tb * (size_t)K * sizeof *gs) : NULL;
    comm_gatherv(c, COMM_WORLD, COMM_I64, users, cnt, gu, counts, 0);
    comm_gatherv(c, COMM_WORLD, COMM_I64, ids, cnt * K, gi, ck, 0);
    comm_gatherv(c, COMM_WORLD, COMM_F32, scores, cnt * K, gs, ck, 0);
    if (c->rank == 0)
        rec_out_write(out, first, total, gu, gi, gs);
    free(counts);
    free(gu);
    free(gi);
    free(gs);
}

int recommend_main(int argc, char **argv)
{
    struct rec_opts o;
    parse_args(argc, argv, &o);
    struct comm c;
    struct params p;
    struct trainer tr;
    rec_start(&o.cmd, &argc, &argv, &c, &p, &tr);
    /* the set-up's errors: every rank ends, one message (comm_fail_agree) */
    char err[1024] = "", msg[5200];
    snprintf(msg, sizeof msg, "recommend: %s is a ranking model (train.task = ranking): it "
             "scores given candidates, not the whole table: use freescale score --pairs",
             o.cmd.ckpt);
    comm_fail_agree(&c, tr.conf.task.type == TASK_RANKING, msg);
    const int d = tr.conf.d, K = o.K;
    struct rec_ids um = {0}, im = {0};
    /* the original ids: where they are written (rank 0 for CSV, every rank for HDF5) */
    const int csv = rec_out_format(o.out) == 1;
    int bad = (c.rank == 0 || !csv) && (rec_ids_load(&um, &tr.ds, 0, err, sizeof err) ||
                                        rec_ids_load(&im, &tr.ds, 1, err, sizeof err));
    snprintf(msg, sizeof msg, "recommend: %s", err);
    comm_fail_agree(&c, bad, msg);
    rec_file_check(&c, "recommend", o.out);
    int64_t *users;
    const int64_t n = user_list(&tr, &o, &um, &users);
    log_release(); /* set up: what rec_start held */
    struct rec_out *out = rec_out_open(&c, o.out, n, K, &um, &im, o.cmd.ckpt, tr.conf.data_path,
                                       tr.conf.model.type == MODEL_HSTU ? "hstu" : "sasrec",
                                       tr.step);
    struct rec_plan pl;
    rec_plan_init(&pl, n, c.size, o.batch, o.round);
    /* a dynamic item table: its ids without a row of their own score as one */
    struct eval_conf ec = {.normalize_items = tr.conf.normalize_items, .topk = K,
                           .shared_row = train_dyn_view_shared()};
    struct eval_ctx ev;
    eval_ctx_of(&tr, &ev);
    eval_conf_items(&ev, &ec);
    for (int64_t k = 0; k < pl.rounds; k++) {
        int64_t lo, cnt, *hist_off, *hist;
        watchdog_step(k + 1);
        watchdog_beat("in", "a recommend round");
        if (c.rank == tr.conf.hang_rank && k + 1 == tr.conf.hang_step)
            watchdog_debug_hang(); /* debug.hang_rank = R:ROUND */
        rec_plan_span(&pl, k, c.rank, &lo, &cnt);
        float *u = xmalloc((size_t)(cnt ? cnt : 1) * (size_t)d * sizeof *u);
        rec_user_vectors(&tr, &pl, users, lo, cnt, u, &hist_off, &hist);
        int64_t *ids = xmalloc((size_t)(cnt ? cnt : 1) * (size_t)K * sizeof *ids);
        float *scores = xmalloc((size_t)(cnt ? cnt : 1) * (size_t)K * sizeof *scores);
        const struct eval_queries q = {.n = cnt, .u = u, .hist_off = hist_off, .hist_ids = hist};
        eval_retrieval_topk(tr.items, &c, eval_retrieval_backend(tr.items), &ec, &q, ids, scores);
        rescore(&tr, cnt, K, u, ids, scores);
        if (csv)
            gather_round(&c, out, K, rec_plan_first(&pl, k), cnt, users + lo, ids, scores);
        else /* every rank its own rows, at their list positions */
            rec_out_write(out, lo, cnt, users + lo, ids, scores);
        free(u);
        free(hist_off);
        free(hist);
        free(ids);
        free(scores);
    }
    if (out)
        rec_out_close(out);
    comm_barrier(&c);
    log_info("recommend: top-%d items of %lld users -> %s", K, (long long)n, o.out);
    free(users);
    free(o.cmd.overrides);
    rec_ids_free(&um);
    rec_ids_free(&im);
    trainer_free(&tr);
    comm_free(&c);
    return 0;
}
