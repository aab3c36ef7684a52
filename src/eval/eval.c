/* eval: evaluation driver; see eval.h. */
#include "eval/eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "backend/devstats.h"
#include "base/check.h"

#define EVAL_CHUNK 256 /* users per forward pass */

void eval_conf_items(const struct eval_ctx *ev, struct eval_conf *ec)
{
    ec->item_rows = ev->item_rows; /* an item's representation includes its features */
    ec->item_ctx = ev->inf;
}

void eval_split(const struct eval_ctx *ev, int test, struct eval_metrics *out)
{
    struct comm *c = ev->c;
    const int d = ev->d;
    int64_t *users, *events = NULL, skipped;
    int64_t n = ev->window ? batch_window_entries(ev->rsplit, ev->ds, &users, &events, &skipped)
                           : split_eval_users(ev->ds, ev->split, test, &users);
    int64_t lo = n * c->rank / c->size, hi = n * (c->rank + 1) / c->size, nq = hi - lo;
    /* user vectors in chunks (every rank takes part in the same number of
     * collective lookups), then one ranking call for all of them */
    int64_t rounds = comm_allreduce_max_i64(c, (nq + EVAL_CHUNK - 1) / EVAL_CHUNK);
    float *u = xmalloc((size_t)(nq ? nq : 1) * (size_t)d * sizeof *u);
    int64_t *targets = xmalloc((size_t)(nq ? nq : 1) * sizeof *targets);
    int64_t *hist_off = xmalloc((size_t)(nq + 1) * sizeof *hist_off), *hist = NULL, nh = 0;
    hist_off[0] = 0;
    for (int64_t r = 0; r < rounds; r++) {
        int64_t a = r * EVAL_CHUNK < nq ? r * EVAL_CHUNK : nq;
        int64_t b = a + EVAL_CHUNK < nq ? a + EVAL_CHUNK : nq;
        struct seq_batch sb;
        if (ev->window)
            batch_window_eval(ev->ds, ev->rsplit, ev->N, ev->with_ts, users + lo + a,
                              events + lo + a, b - a, &sb);
        else
            batch_eval(ev->ds, ev->split, test, ev->N, ev->with_ts, users + lo + a, b - a, &sb);
        ev->user_vectors(ev->inf, &sb, u + a * d);
        hist = xrealloc(hist, (size_t)(nh + sb.hist_off[sb.B] + 1) * sizeof *hist);
        for (int64_t i = 0; i < sb.B; i++) {
            targets[a + i] = sb.targets[sb.offsets[i + 1] - 1];
            hist_off[a + i + 1] = nh + sb.hist_off[i + 1];
        }
        memcpy(hist + nh, sb.hist, (size_t)sb.hist_off[sb.B] * sizeof *hist);
        nh += sb.hist_off[sb.B];
        batch_free(&sb);
    }
    struct eval_conf conf = {.normalize_items = ev->normalize_items,
                             .shared_row = ev->items_shared};
    eval_conf_items(ev, &conf);
    struct eval_queries q = {.n = nq, .u = u, .targets = targets, .hist_off = hist_off,
                             .hist_ids = hist};
    int64_t *rank = xmalloc((size_t)(nq ? nq : 1) * 2 * sizeof *rank), *ties = rank + nq;
    eval_retrieval_queries(ev->items, c, eval_retrieval_backend(ev->items), &conf, &q, rank, ties, NULL, NULL);
    eval_metrics_init(out);
    for (int64_t i = 0; i < nq; i++)
        eval_metrics_add(out, rank[i], ties[i]);
    eval_metrics_reduce(out, c);
    free(rank);
    free(u);
    free(targets);
    free(hist_off);
    free(hist);
    free(users);
    free(events);
}

void eval_metrics_json(const struct eval_metrics *m, struct metrics_line *l)
{
    char key[32];
    for (int i = 0; i < EVAL_NHR; i++) {
        snprintf(key, sizeof key, "hr@%d", eval_hr_k[i]);
        metrics_num(l, key, m->hr[i]);
    }
    for (int i = 0; i < EVAL_NNDCG; i++) {
        snprintf(key, sizeof key, "ndcg@%d", eval_ndcg_k[i]);
        metrics_num(l, key, m->ndcg[i]);
    }
    metrics_num(l, "mrr", m->mrr);
    metrics_int(l, "eval_users", m->count);
}

/* --- retrieval's evaluation ops ------------------------------------------------- */

static void retrieval_run(const struct eval_ctx *ev, int test, struct eval_result *out)
{
    eval_split(ev, test, &out->r);
}

static double retrieval_select(const struct eval_ctx *ev, const struct eval_result *e)
{
    (void)ev;
    return e->r.ndcg[0];
}

static double retrieval_select_value(const struct eval_ctx *ev, double score)
{
    (void)ev;
    return score;
}

static const char *retrieval_select_name(const struct eval_ctx *ev)
{
    (void)ev;
    return "NDCG@10";
}

static void retrieval_format(const struct eval_ctx *ev, const struct eval_result *e, char *buf,
                             size_t len)
{
    (void)ev;
    eval_metrics_format(&e->r, buf, len);
}

static void retrieval_json(const struct eval_ctx *ev, const struct eval_result *e,
                           struct metrics_line *l)
{
    (void)ev;
    eval_metrics_json(&e->r, l);
}

/* the most popular items (eval_popular.c) */
static int retrieval_baselines(const struct eval_ctx *ev, int test, struct eval_result *out,
                               const char **names)
{
    memset(out, 0, sizeof *out);
    eval_popular(ev, test, &out->r);
    names[0] = test ? "test-popular" : "val-popular";
    return 1;
}

const struct eval_ops eval_retrieval_ops = {
    .run = retrieval_run,
    .select = retrieval_select,
    .select_value = retrieval_select_value,
    .select_name = retrieval_select_name,
    .format = retrieval_format,
    .json = retrieval_json,
    .baselines = retrieval_baselines,
};

/* --- either task ------------------------------------------------------------------ */

const struct eval_ops *eval_ops_of(const struct eval_ctx *ev)
{
    return ev->task->type == TASK_RANKING ? &eval_ranking_ops : &eval_retrieval_ops;
}

void eval_run(const struct eval_ctx *ev, int test, struct eval_result *out)
{
    memset(out, 0, sizeof *out);
    struct devstats before, during; /* the evaluation's own device traffic */
    devstats_take(&before);
    struct eval_ctx e = *ev;
    if (ev->view_begin) /* a dynamic item table: read as a dense one */
        e.items = ev->view_begin(ev->inf);
    if (ev->view_shared) /* its items without a row of their own */
        e.items_shared = ev->view_shared(ev->inf);
    eval_ops_of(ev)->run(&e, test, out);
    if (ev->view_end)
        ev->view_end(ev->inf);
    devstats_take(&during);
    devstats_add(&before); /* the interval's counters go on without the evaluation's */
    out->h2d = comm_allreduce_max_f64(ev->c, COMM_DP, (double)during.h2d);
    out->d2h = comm_allreduce_max_f64(ev->c, COMM_DP, (double)during.d2h);
}

double eval_select(const struct eval_ctx *ev, const struct eval_result *e)
{
    return eval_ops_of(ev)->select(ev, e);
}

double eval_select_value(const struct eval_ctx *ev, double score)
{
    return eval_ops_of(ev)->select_value(ev, score);
}

const char *eval_select_name(const struct eval_ctx *ev)
{
    return eval_ops_of(ev)->select_name(ev);
}

int eval_better(const struct eval_ctx *ev, const struct eval_result *e, double best)
{
    return eval_select(ev, e) > best;
}

int eval_baselines(const struct eval_ctx *ev, int test, struct eval_result *out, const char **names)
{
    return eval_ops_of(ev)->baselines(ev, test, out, names);
}

void eval_result_format(const struct eval_ctx *ev, const struct eval_result *e, char *buf,
                        size_t len)
{
    eval_ops_of(ev)->format(ev, e, buf, len);
}

void eval_result_json(const struct eval_ctx *ev, const struct eval_result *e,
                      struct metrics_line *l)
{
    eval_ops_of(ev)->json(ev, e, l);
    metrics_num(l, "h2d_bytes", e->h2d);
    metrics_num(l, "d2h_bytes", e->d2h);
}
