/* eval: evaluation driver; see eval.h. */
#include "eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define EVAL_CHUNK 256 /* users per forward pass */

void train_user_vectors(struct trainer *tr, const struct seq_batch *b, float *out)
{
    const int d = tr->d;
    float *emb = xmalloc((size_t)(b->T ? b->T : 1) * (size_t)d * sizeof *emb);
    float *y = xmalloc((size_t)(b->T ? b->T : 1) * (size_t)d * sizeof *y);
    struct emb_exchange x;
    emb_lookup(tr->items, tr->c, b->items, b->T, emb, &x, NULL);
    emb_exchange_free(&x);
    struct batch mb = {.B = b->B, .T = b->T, .offsets = b->offsets, .ts = b->ts,
                       .row_keys = b->keys, .train = 0};
    if (b->T > 0)
        tr->m.vt->forward(&tr->m, &mb, emb, y);
    for (int64_t i = 0; i < b->B; i++)
        memcpy(out + i * d, y + (b->offsets[i + 1] - 1) * d, (size_t)d * sizeof *out);
    free(emb);
    free(y);
}

void eval_split(struct trainer *tr, int test, struct eval_metrics *out)
{
    struct comm *c = tr->c;
    int64_t *users;
    int64_t n = split_eval_users(&tr->ds, tr->split, test, &users);
    int64_t lo = n * c->rank / c->size, hi = n * (c->rank + 1) / c->size;
    /* every rank takes part in the same number of collective rounds */
    int64_t rounds = comm_allreduce_max_i64(c, (hi - lo + EVAL_CHUNK - 1) / EVAL_CHUNK);
    eval_metrics_init(out);
    struct eval_conf conf = {.normalize_items = tr->normalize_items};
    float *u = xmalloc((size_t)EVAL_CHUNK * (size_t)tr->d * sizeof *u);
    int64_t *targets = xmalloc(EVAL_CHUNK * sizeof *targets), *rank = xmalloc(EVAL_CHUNK * 8);
    for (int64_t r = 0; r < rounds; r++) {
        int64_t a = lo + r * EVAL_CHUNK, b = a + EVAL_CHUNK < hi ? a + EVAL_CHUNK : hi;
        if (b < a)
            b = a;
        struct seq_batch sb;
        batch_eval(&tr->ds, tr->split, test, tr->N, tr->with_ts, users + a, b - a, &sb);
        train_user_vectors(tr, &sb, u);
        for (int64_t i = 0; i < sb.B; i++)
            targets[i] = sb.targets[sb.offsets[i + 1] - 1];
        struct eval_queries q = {.n = sb.B, .u = u, .targets = targets,
                                 .hist_off = sb.hist_off, .hist_ids = sb.hist};
        eval_rank_queries(tr->items, c, tr->be, &conf, &q, rank, NULL, NULL);
        for (int64_t i = 0; i < sb.B; i++)
            eval_metrics_add(out, rank[i]);
        batch_free(&sb);
    }
    eval_metrics_reduce(out, c);
    free(u);
    free(targets);
    free(rank);
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
