/* infer: the model's forward without training; see infer.h. */
#include "train/infer.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "train/step_feat.h"
#include "train/train.h"

void infer_forward(struct trainer *tr, const struct seq_batch *b, struct infer *f)
{
    const struct backend_ops *be = tr->be;
    const int d = tr->conf.d;
    memset(f, 0, sizeof *f);
    float *emb = xmalloc((size_t)(b->T ? b->T : 1) * (size_t)d * sizeof *emb);
    emb_exchange_free(emb_lookup(tr->items, tr->c, b->items, b->T, emb, NULL));
    f->eb = (struct batch){.B = b->B, .T = b->T, .offsets = b->offsets, .ts = b->ts,
                           .row_keys = b->keys, .train = 0};
    f->mb = f->eb;
    if (tr->feat) { /* the tokens with their features (step_feat.h; collective) */
        float *x;
        f->tk = step_feat_inputs(tr, b, emb, &f->eb, &f->mb, &x);
        free(emb);
        emb = x;
    }
    f->x = emb;
    const size_t xb = (size_t)(f->mb.T ? f->mb.T : 1) * (size_t)d * sizeof *emb;
    const float *dx = backend_upload(be, emb, xb, &f->own_x);
    f->dy = be->alloc(xb);
    if (f->mb.T > 0)
        tr->m.vt->forward(&tr->m, &f->mb, dx, f->dy);
    f->y = backend_download(be, f->dy, xb, &f->own_y);
}

void infer_free(struct trainer *tr, struct infer *f)
{
    free(f->own_y);
    tr->be->free(f->dy);
    tr->be->free(f->own_x);
    free(f->x);
    if (f->tk) {
        tokens_free(f->tk);
        free(f->tk);
    }
    memset(f, 0, sizeof *f);
}

void infer_user_vectors(struct trainer *tr, const struct seq_batch *b, float *out)
{
    const int d = tr->conf.d;
    struct infer f;
    infer_forward(tr, b, &f);
    for (int64_t i = 0; i < b->B; i++) /* the last token of each sequence */
        memcpy(out + i * d, f.y + (f.mb.offsets[i + 1] - 1) * d, (size_t)d * sizeof *out);
    infer_free(tr, &f);
}

/* The terms [nc, K] of b's candidates by one of the tasks' term functions. */
typedef void terms_fn(const struct task *t, int64_t B, const int64_t *offsets, const int64_t *ncand,
                      const int64_t *items, const float *labels, float *out);

static float *candidate_terms(struct trainer *tr, const struct seq_batch *b, int64_t nc,
                              terms_fn *fn)
{
    const int K = tr->conf.task.n;
    float *all = xmalloc((size_t)((b->T ? b->T : 1) * K) * sizeof *all);
    fn(&tr->task, b->B, b->offsets, b->ncand, b->items, b->labels, all);
    float *out = xmalloc((size_t)((nc ? nc : 1) * K) * sizeof *out);
    for (int64_t q = 0, i = 0; q < b->B; q++)
        for (int64_t t = b->offsets[q + 1] - b->ncand[q]; t < b->offsets[q + 1]; t++, i++)
            memcpy(out + i * K, all + t * K, (size_t)K * sizeof *out);
    free(all);
    return out;
}

void infer_predict(struct trainer *tr, const struct seq_batch *b, double *pred)
{
    const int d = tr->conf.d;
    struct infer f;
    infer_forward(tr, b, &f); /* ranking has tokens (step_feat_setup): f.tk is set */
    int64_t nc = 0;
    for (int64_t q = 0; q < b->B; q++)
        nc += b->ncand[q];
    float *xc = xmalloc((size_t)(nc ? nc : 1) * (size_t)d * sizeof *xc);
    int64_t *ci = xmalloc((size_t)(nc ? nc : 1) * 2 * sizeof *ci), *cu = ci + (nc ? nc : 1);
    for (int64_t q = 0, i = 0; q < b->B; q++)
        for (int64_t t = b->offsets[q + 1] - b->ncand[q]; t < b->offsets[q + 1]; t++, i++) {
            memcpy(xc + i * d, f.y + f.tk->xrow[t] * d, (size_t)d * sizeof *xc);
            ci[i] = b->items[t];
            cu[i] = b->users[q];
        }
    float *rt = NULL, *ft = NULL;
    if (task_ranking_recency_on(&tr->task)) /* each candidate's history terms */
        rt = candidate_terms(tr, b, nc, task_ranking_recency_terms);
    if (task_ranking_factor_on(&tr->task)) /* ... and factor terms */
        ft = candidate_terms(tr, b, nc, task_ranking_factor_terms);
    task_ranking_predict(&tr->task, nc, xc, ci, cu, rt, ft, pred);
    free(rt);
    free(ft);
    free(ci);
    free(xc);
    infer_free(tr, &f);
}

int64_t infer_history_tokens(const struct trainer *tr, int64_t events)
{
    const struct train_conf *cf = &tr->conf;
    const int m = cf->task.actions == ACT_INTERLEAVE ? 2 : 1;
    return tr->feat->s.n_user + m * (events < cf->N - 1 ? events : cf->N - 1);
}

void infer_item_rows(struct trainer *tr, const int64_t *ids, int64_t n, float *rows)
{
    step_feat_item_rows(tr, ids, n, rows);
}
