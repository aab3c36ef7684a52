/* task_retrieval: the retrieval task's loss (train.loss), against the rows
 * of the item table the step looked up after its inputs; see task.h (the
 * maths: loss.h, loss_full.h). The full softmax talks to the emb group, so
 * it runs outside the compute window. No head: backward has nothing to do
 * (the loss wrote du). */
#include <stdlib.h>

#include "backend/mirror.h"
#include "base/check.h"
#include "data/batch_window.h"
#include "model/loss.h"
#include "model/loss_full.h"
#include "model/task.h"

/* The conf and, for the stream schedule's positions without a target, the
 * targets' row indexes with those set to -1 (host, then be's memory). */
struct retrieval_priv {
    struct retrieval_conf rc;
    int64_t *pos, cap;
    struct mirror pos_be;
};

/* The loss's index of each position's target row: inv + T, or a copy with
 * the positions without a target at -1 (unsupervised, loss.h). */
static const int64_t *target_rows(struct retrieval_priv *r, struct task_step *st)
{
    const int64_t T = st->T;
    if (!st->no_target)
        return st->inv + T;
    if (T > r->cap) {
        r->cap = T;
        r->pos = xrealloc(r->pos, (size_t)T * sizeof *r->pos);
    }
    const size_t bytes = (size_t)(T ? T : 1) * sizeof *r->pos;
    st->be->to_host(r->pos, st->inv + T, (size_t)T * sizeof *r->pos);
    for (int64_t i = 0; i < T; i++)
        if (st->no_target[i])
            r->pos[i] = -1;
    const int64_t *p = mirror_bind(&r->pos_be, st->be, &backend_cpu, r->pos, bytes);
    mirror_up(&r->pos_be, 0, (size_t)T * sizeof *r->pos);
    return p;
}

static void retrieval_loss(struct task *t, struct task_step *st)
{
    struct retrieval_priv *r = t->priv;
    const struct retrieval_conf *rc = &r->rc;
    const struct backend_ops *be = st->be;
    const int64_t T = st->T;
    if (rc->loss == LOSS_FULL) { /* acc: backend memory, added to on the host (a device: a copy) */
        int64_t counted = 0;
        const double loss = loss_full_softmax(be, st->c, T, st->d, rc->temperature,
                                              rc->normalize_items, st->out, st->targets,
                                              st->nuniq, st->rows, st->shard, st->scale, st->du,
                                              st->drows, &counted);
        double *a = backend_host_begin(be, st->acc, 2 * sizeof(double), 1);
        a[0] += loss;
        a[1] += (double)counted;
        backend_host_end(be, st->acc, a, 2 * sizeof(double), 1);
        return;
    }
    const int64_t *pos = target_rows(r, st);
    comm_compute_begin();
    if (st->xrows) /* exact sums: one sequence at a time (host memory: acc too) */
        loss_exact_acc(be, st->ws, rc->loss == LOSS_BCE, st->B, st->offsets, st->d, rc->R,
                       rc->temperature,
                       rc->normalize_items, st->out, st->nuniq, st->rows, st->logq, pos,
                       st->inv + 2 * T, st->scale, st->du, st->acc, st->xrows, st->xbad,
                       st->xloss);
    else if (rc->loss == LOSS_BCE)
        loss_bce_acc(be, T, st->d, st->out, st->nuniq, st->rows, pos, st->inv + 2 * T,
                     st->scale, st->du, st->drows, st->acc);
    else
        loss_sampled_softmax_acc(be, st->ws, T, st->d, rc->R, rc->temperature,
                                 rc->normalize_items, st->out, st->nuniq, st->rows, st->logq,
                                 pos, st->inv + 2 * T, st->scale, st->du, st->drows,
                                 st->acc);
    comm_compute_end();
}

static void retrieval_batch(const struct task *t, const struct task_data *d, uint64_t epoch,
                            const int64_t *users, const int64_t *p0, const int64_t *p1, int64_t n,
                            struct seq_batch *sb)
{
    (void)t;
    if (d->stream) /* split_long is refused with the stream schedule: no pieces */
        batch_window_train(d->ds, d->rsplit, d->N, d->with_ts, d->seed, epoch, users, n, sb);
    else
        batch_train(d->ds, d->split, d->N, d->with_ts, d->seed, epoch, users, p0, p1, n, sb);
}

/* the events before the split's held-out ones and the target, at most N */
static int64_t retrieval_train_tokens(const struct task *t, const struct task_data *d, int64_t u)
{
    (void)t;
    if (d->stream) {
        int64_t first, sup;
        return batch_window_inputs(d->rsplit, d->ds, d->N, u, &first, &sup) + d->context;
    }
    const int64_t L = dataset_length(d->ds, u) - split_holdout(d->split) - 1;
    return (L < d->N ? L : d->N) + d->context;
}

static void retrieval_free(struct task *t)
{
    struct retrieval_priv *r = t->priv;
    if (r) {
        free(r->pos);
        mirror_free(&r->pos_be);
    }
    free(t->priv);
    t->priv = NULL;
}

static const struct task_ops retrieval_ops = {
    .name = "retrieval",
    .target_rows = 1,
    .normalised = 0,
    .batch = retrieval_batch,
    .labels = NULL,
    .train_tokens = retrieval_train_tokens,
    .loss = retrieval_loss,
    .backward = NULL,
    .losses = NULL,
    .free = retrieval_free,
};

void task_retrieval_init(struct task *t, const struct retrieval_conf *rc)
{
    struct retrieval_priv *c = xcalloc(1, sizeof *c);
    c->rc = *rc;
    t->ops = &retrieval_ops;
    t->conf = NULL;
    t->priv = c;
}
