/* eval: evaluation driver; see eval.h. */
#include "eval/eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "base/check.h"
#include "eval/eval_ranking.h"
#include "train/step_feat.h"
#include "train/train_dyn.h"

#define EVAL_CHUNK 256 /* users per forward pass */

void train_user_vectors(struct trainer *tr, const struct seq_batch *b, float *out)
{
    const struct backend_ops *be = tr->be;
    const int d = tr->conf.d;
    size_t td = (size_t)(b->T ? b->T : 1) * (size_t)d * sizeof(float);
    float *emb = xmalloc(td);
    emb_exchange_free(emb_lookup(tr->items, tr->c, b->items, b->T, emb, NULL));
    const struct batch eb = {.B = b->B, .T = b->T, .offsets = b->offsets, .ts = b->ts,
                             .row_keys = b->keys, .train = 0};
    struct batch mb = eb;
    struct tokens *tk = NULL;
    if (tr->feat) { /* the tokens with their features (step_feat.h; collective) */
        float *x;
        tk = step_feat_inputs(tr, b, emb, &eb, &mb, &x);
        free(emb);
        emb = x;
        td = (size_t)(mb.T ? mb.T : 1) * (size_t)d * sizeof(float);
    }
    void *own_emb, *own_y;
    const float *demb = backend_upload(be, emb, td, &own_emb);
    float *y = be->alloc(td);
    if (mb.T > 0)
        tr->m.vt->forward(&tr->m, &mb, demb, y);
    const float *hy = backend_download(be, y, td, &own_y);
    for (int64_t i = 0; i < b->B; i++) /* the last token of each sequence */
        memcpy(out + i * d, hy + (mb.offsets[i + 1] - 1) * d, (size_t)d * sizeof *out);
    free(own_y);
    be->free(y);
    be->free(own_emb);
    free(emb);
    if (tk) {
        tokens_free(tk);
        free(tk);
    }
}

/* eval_conf's item hook: an item's representation includes its features. */
static void item_rows_hook(void *ctx, const int64_t *ids, int64_t n, float *rows)
{
    step_feat_item_rows(ctx, ids, n, rows);
}

void eval_conf_items(struct trainer *tr, struct eval_conf *ec)
{
    ec->item_rows = tr->feat ? item_rows_hook : NULL;
    ec->item_ctx = tr;
}

void eval_split(struct trainer *tr, int test, struct eval_metrics *out)
{
    struct comm *c = tr->c;
    const int d = tr->conf.d;
    int64_t *users;
    int64_t n = split_eval_users(&tr->ds, tr->conf.split, test, &users);
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
        batch_eval(&tr->ds, tr->conf.split, test, tr->conf.N, tr->with_ts, users + lo + a, b - a, &sb);
        train_user_vectors(tr, &sb, u + a * d);
        hist = xrealloc(hist, (size_t)(nh + sb.hist_off[sb.B] + 1) * sizeof *hist);
        for (int64_t i = 0; i < sb.B; i++) {
            targets[a + i] = sb.targets[sb.offsets[i + 1] - 1];
            hist_off[a + i + 1] = nh + sb.hist_off[i + 1];
        }
        memcpy(hist + nh, sb.hist, (size_t)sb.hist_off[sb.B] * sizeof *hist);
        nh += sb.hist_off[sb.B];
        batch_free(&sb);
    }
    struct eval_conf conf = {.normalize_items = tr->conf.normalize_items};
    eval_conf_items(tr, &conf);
    struct eval_queries q = {.n = nq, .u = u, .targets = targets, .hist_off = hist_off,
                             .hist_ids = hist};
    int64_t *rank = xmalloc((size_t)(nq ? nq : 1) * sizeof *rank);
    eval_rank_queries(tr->items, c, &backend_cpu, &conf, &q, rank, NULL, NULL);
    eval_metrics_init(out);
    for (int64_t i = 0; i < nq; i++)
        eval_metrics_add(out, rank[i]);
    eval_metrics_reduce(out, c);
    free(rank);
    free(u);
    free(targets);
    free(hist_off);
    free(hist);
    free(users);
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

/* --- either task ------------------------------------------------------------------ */

void eval_run(struct trainer *tr, int test, struct eval_result *out)
{
    memset(out, 0, sizeof *out);
    out->ranking = tr->conf.task.type == TASK_RANKING;
    train_dyn_view_begin(tr); /* a dynamic item table: read as a dense one */
    if (out->ranking)
        eval_ranking_split(tr, test, &out->k);
    else
        eval_split(tr, test, &out->r);
    train_dyn_view_end(tr);
}

/* A ranking metric where lower is better maps to 1 / (1 + value): higher
 * is better and the score stays in [0, 1] (checkpoints' best_val). */
double eval_select(const struct trainer *tr, const struct eval_result *e)
{
    if (!e->ranking)
        return e->r.ndcg[0];
    const struct task_metrics *m = &e->k.t[tr->conf.task.select];
    const enum task_metric w = tr->conf.task.select_metric;
    const double v = w == TM_AUC ? m->auc : w == TM_GAUC ? m->gauc : w == TM_ACCURACY
                     ? m->accuracy : w == TM_NE ? m->ne : w == TM_LOGLOSS ? m->logloss
                     : w == TM_MSE ? m->mse : m->mae;
    if (isnan(v) || v < 0)
        return -1;
    return w < TM_NE ? v : 1.0 / (1.0 + v);
}

double eval_select_value(const struct trainer *tr, double score)
{
    if (tr->conf.task.type != TASK_RANKING || tr->conf.task.select_metric < TM_NE || score <= 0)
        return score;
    return 1.0 / score - 1.0;
}

const char *eval_select_name(const struct trainer *tr)
{
    static char name[64];
    static const char *const shown[TM_COUNT] = {"AUC", "GAUC", "accuracy", "NE", "logloss",
                                                "MSE", "MAE"};
    if (tr->conf.task.type != TASK_RANKING)
        return "NDCG@10";
    snprintf(name, sizeof name, "%s %s", tr->conf.task.t[tr->conf.task.select].name,
             shown[tr->conf.task.select_metric]);
    return name;
}

void eval_result_format(const struct trainer *tr, const struct eval_result *e, char *buf,
                        size_t len)
{
    if (!e->ranking) {
        eval_metrics_format(&e->r, buf, len);
        return;
    }
    const char *names[RANK_MAX_TASKS];
    int binary[RANK_MAX_TASKS];
    eval_ranking_names(tr, names, binary);
    rank_metrics_format(&e->k, names, binary, buf, len);
}

void eval_result_json(const struct trainer *tr, const struct eval_result *e,
                      struct metrics_line *l)
{
    if (!e->ranking) {
        eval_metrics_json(&e->r, l);
        return;
    }
    const char *names[RANK_MAX_TASKS];
    int binary[RANK_MAX_TASKS];
    eval_ranking_names(tr, names, binary);
    rank_metrics_json(&e->k, names, binary, l);
}
