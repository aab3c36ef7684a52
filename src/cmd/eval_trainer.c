/* eval_trainer: a trainer's evaluation context; see eval_trainer.h. */
#include "cmd/eval_trainer.h"

#include "train/infer.h"
#include "train/train_dyn.h"

static void user_vectors(void *inf, const struct seq_batch *b, float *out)
{
    infer_user_vectors(inf, b, out);
}

static void predict(void *inf, const struct seq_batch *b, double *pred)
{
    infer_predict(inf, b, pred);
}

static void item_rows(void *inf, const int64_t *ids, int64_t n, float *rows)
{
    infer_item_rows(inf, ids, n, rows);
}

static int64_t history_tokens(void *inf, int64_t events)
{
    return infer_history_tokens(inf, events);
}

static struct emb_table *view_begin(void *inf)
{
    struct trainer *tr = inf;
    train_dyn_view_begin(tr);
    return tr->items;
}
static void view_end(void *inf) { train_dyn_view_end(inf); }
static const float *view_shared(void *inf)
{
    (void)inf;
    return train_dyn_view_shared();
}

void eval_ctx_of(struct trainer *tr, struct eval_ctx *ev)
{
    const struct train_conf *cf = &tr->conf;
    *ev = (struct eval_ctx){.c = tr->c, .ds = &tr->ds, .split = cf->split,
                            .rsplit = &tr->rsplit, .task = &cf->task, .N = cf->N, .d = cf->d,
                            .with_ts = tr->with_ts, .normalize_items = cf->normalize_items,
                            .items = tr->items, .inf = tr, .user_vectors = user_vectors,
                            .predict = predict, .item_rows = tr->feat ? item_rows : NULL,
                            .history_tokens = history_tokens, .view_begin = view_begin,
                            .view_end = view_end, .view_shared = view_shared};
}
