/* score: the score command; see score.h. */
#include "cmd/score.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "cli/cli.h"
#include "comm/comm_fail.h"
#include "cmd/eval_trainer.h"
#include "eval/eval_ranking.h"
#include "eval/platt.h"
#include "cmd/rec_file.h"
#include "cmd/rec_out.h"
#include "cmd/recommend.h"
#include "train/infer.h"
#include "train/watchdog.h"

struct score_opts {
    struct rec_cmd cmd;
    const char *pairs, *out;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np P freescale score CKPT.h5 [FILE.in] [section.key=value ...]\n"
            "           --pairs PAIRS.csv -o OUT.csv|OUT.h5\n"
            "\n"
            "Every (user, item) pair of PAIRS.csv, in the dataset's original ids, scored for\n"
            "every task of a ranking model from the user's whole history. Without FILE.in the\n"
            "parameters stored in the checkpoint are used (overrides apply on top).\n"
            "  --pairs FILE     a header line user,item or user,item,time (or the dataset's\n"
            "                   names: userId,movieId[,timestamp]; other columns ignored),\n"
            "                   then one pair a line (time: the candidate's timestamp,\n"
            "                   integer seconds)\n"
            "  -o, --output F   F.csv: user,item,TASK... (probabilities of binary tasks,\n"
            "                   values of regression tasks); F.h5: /users, /items,\n"
            "                   /scores [n, tasks], /logits (doc/training.md)\n"
            "  -h, --help       this text\n");
}

static void parse_args(int argc, char **argv, struct score_opts *o)
{
    static const char *const names[] = {"--pairs", "-o", "--output"};
    memset(o, 0, sizeof *o);
    o->cmd.tool = "score";
    o->cmd.overrides = xmalloc((size_t)argc * sizeof *o->cmd.overrides);
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            exit(0);
        }
        int k = cli_option("score", argc, argv, &i, names, 3, &v);
        if (k == 0)
            o->pairs = v;
        else if (k == 1 || k == 2)
            o->out = v;
        else
            rec_cmd_word(&o->cmd, argv[i]);
    }
    if (!o->cmd.ckpt) {
        usage(stderr);
        fatal("score: no checkpoint given");
    }
    if (!o->pairs)
        fatal("score: no pairs given (--pairs PAIRS.csv)");
    if (!o->out)
        fatal("score: no output file given (-o OUT.csv or -o OUT.h5)");
    if (rec_out_format(o->out) < 0)
        fatal("score: -o %s: the name must end in .csv, .h5 or .hdf5", o->out);
}

/* --- the pairs ------------------------------------------------------------------ */

struct pairs {
    int64_t n;
    int64_t *user, *item, *ts; /* [n] dense; ts NULL without a time column */
};

/* Split s at commas into at most max fields (trimmed); their count. */
static int fields(char *s, char **f, int max)
{
    int n = 0;
    for (;;) {
        char *c = strchr(s, ',');
        if (n == max)
            return max + 1;
        if (c)
            *c = 0;
        while (*s == ' ' || *s == '\t')
            s++;
        char *e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
            *--e = 0;
        f[n++] = s;
        if (!c)
            return n;
        s = c + 1;
    }
}

#define PAIR_MAX_COLS 64

/* Is name one of the '|'-separated words of set? */
static int one_of(const char *name, const char *set)
{
    for (const char *p = set;;) {
        const size_t n = strcspn(p, "|");
        if (strlen(name) == n && !strncmp(name, p, n))
            return 1;
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

#define PAIR_USER "user|userId|user_id|UserID"
#define PAIR_ITEM "item|movieId|itemId|item_id|MovieID"
#define PAIR_TIME "time|timestamp|Timestamp"

/* The header: the fields of the user, item and (optional, -1) time columns
 * among its n names; other columns are ignored (a ratings.csv scores as it
 * is). 0, or -1 when user or item is missing. */
static int pair_header(char **f, int n, int col[3])
{
    col[0] = col[1] = col[2] = -1;
    for (int i = 0; i < n; i++) {
        const int c = one_of(f[i], PAIR_USER) ? 0 : one_of(f[i], PAIR_ITEM) ? 1
                      : one_of(f[i], PAIR_TIME) ? 2 : -1;
        if (c >= 0 && col[c] < 0)
            col[c] = i;
    }
    return col[0] >= 0 && col[1] >= 0 ? 0 : -1;
}

/* Rank 0: read and check every pair. */
static void read_pairs(const char *path, struct rec_ids *um, struct rec_ids *im,
                       const struct dataset *ds, struct pairs *p)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fatal("score: --pairs %s: cannot open: %s", path, strerror(errno));
    char *line = NULL, *fl[PAIR_MAX_COLS + 1];
    size_t lcap = 0;
    int64_t cap = 0, lineno = 0;
    int cols = 0, col[3];
    memset(p, 0, sizeof *p);
    while (getline(&line, &lcap, f) >= 0) {
        lineno++;
        int n = fields(line, fl, PAIR_MAX_COLS);
        if (cols == 0) { /* the header */
            if (n > PAIR_MAX_COLS || pair_header(fl, n, col))
                fatal("%s:%lld: expected a header line naming the user and item columns: "
                      "user,item or user,item,time, or the dataset's (userId,movieId"
                      "[,timestamp]; other columns are ignored)", path, (long long)lineno);
            cols = n;
            continue;
        }
        if (n == 1 && !fl[0][0])
            continue; /* a blank line */
        if (n != cols)
            fatal("%s:%lld: %s%d field%s, expected %d as in the header", path,
                  (long long)lineno, n > PAIR_MAX_COLS ? "more than " : "",
                  n > PAIR_MAX_COLS ? PAIR_MAX_COLS : n, n == 1 ? "" : "s", cols);
        const char *us = fl[col[0]], *is = fl[col[1]], *ts = col[2] >= 0 ? fl[col[2]] : NULL;
        const int64_t u = rec_ids_find(um, us), it = rec_ids_find(im, is);
        if (u < 0)
            fatal("%s:%lld: user '%s' is not in the dataset %s", path, (long long)lineno, us,
                  ds->path);
        if (it < 0)
            fatal("%s:%lld: item '%s' is not in the dataset %s", path, (long long)lineno, is,
                  ds->path);
        if (dataset_length(ds, u) < 1)
            fatal("%s:%lld: user '%s' has no events in %s: no history to score from", path,
                  (long long)lineno, us, ds->path);
        char *end;
        errno = 0;
        long long t = ts ? strtoll(ts, &end, 10) : 0;
        if (ts && (errno || !ts[0] || *end))
            fatal("%s:%lld: time '%s' is not an integer (seconds)", path, (long long)lineno,
                  ts);
        if (p->n == cap) {
            cap = cap ? 2 * cap : 1024;
            p->user = xrealloc(p->user, (size_t)cap * sizeof *p->user);
            p->item = xrealloc(p->item, (size_t)cap * sizeof *p->item);
            if (ts)
                p->ts = xrealloc(p->ts, (size_t)cap * sizeof *p->ts);
        }
        p->user[p->n] = u;
        p->item[p->n] = it;
        if (ts)
            p->ts[p->n] = t;
        p->n++;
    }
    const int bad = ferror(f);
    fclose(f);
    free(line);
    if (bad)
        fatal("score: --pairs %s: read error", path);
    if (cols == 0)
        fatal("%s: empty (expected a header line user,item or user,item,time)", path);
    if (p->n == 0)
        fatal("score: --pairs %s holds no pairs", path);
}

struct pairs_arg {
    const struct score_opts *o;
    struct rec_ids *um, *im;
    const struct dataset *ds;
    struct pairs *pr;
};

/* comm_fail_run's fn on rank 0 (NULL elsewhere): the ids and the pairs */
static void read_pairs_arg(void *arg)
{
    struct pairs_arg *a = arg;
    if (!a)
        return;
    char err[1024];
    if (rec_ids_load(a->um, a->ds, 0, err, sizeof err) ||
        rec_ids_load(a->im, a->ds, 1, err, sizeof err))
        fatal("score: %s", err);
    read_pairs(a->o->pairs, a->um, a->im, a->ds, a->pr);
}

/* Broadcast the pairs from rank 0. */
static void bcast_pairs(struct comm *c, struct pairs *p)
{
    int64_t head[2] = {p->n, p->ts != NULL};
    comm_bcast_bytes(c, head, sizeof head, 0);
    if (c->rank != 0) {
        p->n = head[0];
        p->user = xmalloc((size_t)p->n * sizeof *p->user);
        p->item = xmalloc((size_t)p->n * sizeof *p->item);
        p->ts = head[1] ? xmalloc((size_t)p->n * sizeof *p->ts) : NULL;
    }
    comm_bcast_bytes(c, p->user, (size_t)p->n * sizeof *p->user, 0);
    comm_bcast_bytes(c, p->item, (size_t)p->n * sizeof *p->item, 0);
    if (head[1])
        comm_bcast_bytes(c, p->ts, (size_t)p->n * sizeof *p->ts, 0);
}

/* The pairs grouped by user, users in the order they first appear:
 * users[nu], order[n] the pairs (indexes), user q's at uoff[q] ..
 * uoff[q + 1]. */
static int64_t group(const struct pairs *p, int64_t num_users, int64_t **users, int64_t **uoff,
                     int64_t **order)
{
    int64_t *slot = xmalloc((size_t)(num_users ? num_users : 1) * sizeof *slot), nu = 0;
    for (int64_t u = 0; u < num_users; u++)
        slot[u] = -1;
    int64_t *cnt = xcalloc((size_t)p->n, sizeof *cnt);
    *users = xmalloc((size_t)p->n * sizeof **users);
    for (int64_t i = 0; i < p->n; i++) {
        if (slot[p->user[i]] < 0) {
            slot[p->user[i]] = nu;
            (*users)[nu++] = p->user[i];
        }
        cnt[slot[p->user[i]]]++;
    }
    *uoff = xmalloc((size_t)(nu + 1) * sizeof **uoff);
    (*uoff)[0] = 0;
    for (int64_t q = 0; q < nu; q++)
        (*uoff)[q + 1] = (*uoff)[q] + cnt[q];
    *order = xmalloc((size_t)p->n * sizeof **order);
    memset(cnt, 0, (size_t)p->n * sizeof *cnt);
    for (int64_t i = 0; i < p->n; i++) {
        const int64_t q = slot[p->user[i]];
        (*order)[(*uoff)[q] + cnt[q]++] = i;
    }
    free(cnt);
    free(slot);
    return nu;
}

/* --- the command ------------------------------------------------------------------ */

int score_main(int argc, char **argv)
{
    struct score_opts o;
    parse_args(argc, argv, &o);
    struct comm c;
    struct params p;
    struct trainer tr;
    rec_start(&o.cmd, &argc, &argv, &c, &p, &tr);
    const struct train_conf *cf = &tr.conf;
    /* the set-up's errors: every rank ends, one message (comm_fail_agree) */
    char msg[4400];
    snprintf(msg, sizeof msg, "score: %s is a retrieval model (train.task = retrieval): score "
             "needs a ranking model (for retrieval's top-K items: freescale recommend)",
             o.cmd.ckpt);
    comm_fail_agree(&c, cf->task.type != TASK_RANKING, msg);
    const int K = cf->task.n, P = c.size;
    struct rec_ids um = {0}, im = {0};
    struct pairs pr = {0};
    struct pairs_arg a = {&o, &um, &im, &tr.ds, &pr};
    comm_fail_run(&c, read_pairs_arg, c.rank == 0 ? &a : NULL); /* rank 0 reads */
    rec_file_check(&c, "score", o.out);
    log_release(); /* set up: what rec_start held */
    bcast_pairs(&c, &pr);
    int64_t *users, *uoff, *order;
    const int64_t nu = group(&pr, tr.ds.num_users, &users, &uoff, &order);
    /* the chunks, as evaluation cuts them */
    int64_t *ncand = xmalloc((size_t)nu * sizeof *ncand), *hx = xmalloc((size_t)nu * sizeof *hx);
    for (int64_t q = 0; q < nu; q++) {
        ncand[q] = uoff[q + 1] - uoff[q];
        hx[q] = infer_history_tokens(&tr, dataset_length(&tr.ds, users[q]));
    }
    int64_t *start;
    const int64_t nch = rank_chunks(ncand, hx, nu, &start), rounds = (nch + P - 1) / P;
    int64_t *citems = xmalloc((size_t)pr.n * sizeof *citems);
    int64_t *cts = pr.ts ? xmalloc((size_t)pr.n * sizeof *cts) : NULL;
    for (int64_t j = 0; j < pr.n; j++) {
        citems[j] = pr.item[order[j]];
        if (cts)
            cts[j] = pr.ts[order[j]];
    }
    double *all = c.rank == 0 ? xmalloc((size_t)(pr.n * K) * sizeof *all) : NULL;
    int64_t done = 0, *cnt = xmalloc((size_t)P * sizeof *cnt);
    for (int64_t r = 0; r < rounds; r++) {
        watchdog_step(r + 1);
        watchdog_beat("in", "a score round");
        const int64_t j = r * P + c.rank;
        const int64_t a = j < nch ? start[j] : 0, z = j < nch ? start[j + 1] : 0;
        struct seq_batch sb;
        int64_t *coff = xmalloc((size_t)(z - a + 1) * sizeof *coff);
        for (int64_t q = a; q <= z; q++)
            coff[q - a] = uoff[q] - uoff[a];
        batch_ranking_pairs(&tr.ds, &cf->task.labels, cf->N, tr.with_ts, users + a, z - a, coff,
                            citems + uoff[a], cts ? cts + uoff[a] : NULL, &sb);
        const int64_t mine = uoff[z] - uoff[a];
        double *pred = xmalloc((size_t)(mine * K > 0 ? mine * K : 1) * sizeof *pred);
        infer_predict(&tr, &sb, pred);
        comm_gather_i64(&c, COMM_WORLD, mine * K, cnt, 0);
        int64_t got = 0;
        for (int q = 0; c.rank == 0 && q < P; q++)
            got += cnt[q];
        comm_gatherv(&c, COMM_WORLD, COMM_F64, pred, mine * K,
                     c.rank == 0 ? all + done * K : NULL, cnt, 0);
        done += got / K;
        free(pred);
        free(coff);
        batch_free(&sb);
    }
    if (c.rank == 0) { /* back to the pairs' order */
        double *inorder = xmalloc((size_t)(pr.n * K) * sizeof *inorder);
        for (int64_t j = 0; j < pr.n; j++)
            memcpy(inorder + order[j] * K, all + j * K, (size_t)K * sizeof *inorder);
        const char *names[RANK_MAX_TASKS];
        int binary[RANK_MAX_TASKS];
        struct eval_ctx ev;
        eval_ctx_of(&tr, &ev);
        eval_ranking_names(&ev, names, binary);
        double ab[2 * RANK_MAX_TASKS];
        if (task_ranking_calibration(&tr.task, ab)) /* model.calibrate: as the test's */
            calib_apply(K, binary, ab, pr.n, inorder);
        const struct score_meta meta = {.checkpoint = o.cmd.ckpt, .dataset = cf->data_path,
                                        .step = tr.step, .K = K, .names = names,
                                        .binary = binary};
        score_write(o.out, &meta, &um, &im, pr.n, pr.user, pr.item, inorder);
        free(inorder);
    }
    comm_barrier(&c);
    log_info("score: %lld pairs of %lld users, %d task%s -> %s", (long long)pr.n, (long long)nu,
             K, K == 1 ? "" : "s", o.out);
    free(all);
    free(cnt);
    free(citems);
    free(cts);
    free(start);
    free(ncand);
    free(hx);
    free(users);
    free(uoff);
    free(order);
    free(pr.user);
    free(pr.item);
    free(pr.ts);
    free(o.cmd.overrides);
    rec_ids_free(&um);
    rec_ids_free(&im);
    trainer_free(&tr);
    comm_free(&c);
    return 0;
}
