/* task_retrieval: the retrieval task's loss (train.loss), against the rows
 * of the item table the step looked up after its inputs; see task.h (the
 * maths: loss.h, loss_full.h). The full softmax talks to the emb group, so
 * it runs outside the compute window. No head: backward has nothing to do
 * (the loss wrote du). */
#include <stdlib.h>

#include "backend/mirror.h"
#include "backend/stage.h"
#include "base/check.h"
#include "data/batch_window.h"
#include "model/loss.h"
#include "model/loss_full.h"
#include "model/task.h"

static size_t at_least1(int64_t n) { return (size_t)(n > 0 ? n : 1); }

/* The conf and, for the stream schedule's positions without a target, the
 * targets' row indexes with those unset (be's memory), made from the
 * positions' flags uploaded through a pinned stage (no host wait). */
struct retrieval_priv {
    struct retrieval_conf rc;
    struct mirror mask;        /* the flags [T] */
    struct mirror pos;         /* [T] the row indexes */
    struct stage *st;          /* a device's uploads, else NULL */
    const struct backend_ops *st_be;
};

/* The loss's index of each position's target row: inv + T, or on be a
 * copy with the positions without a target at -1 (unsupervised, loss.h). */
static const int64_t *target_rows(struct retrieval_priv *r, struct task_step *st)
{
    const int64_t T = st->T;
    if (!st->no_target)
        return st->inv + T;
    const struct backend_ops *be = st->be;
    if (!backend_is_host(be) && r->st_be != be) {
        stage_free(r->st);
        r->st = stage_new(be);
        r->st_be = be;
    }
    const uint8_t *mask = mirror_bind(&r->mask, be, &backend_cpu, st->no_target, at_least1(T));
    mirror_up_async(&r->mask, backend_is_host(be) ? NULL : r->st, 0, (size_t)T);
    int64_t *pos = mirror_bind(&r->pos, be, be, NULL, at_least1(T) * sizeof *pos);
    be->index_mask(T, st->inv + T, mask, pos);
    return pos;
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
        loss_exact_acc(be, st->ws, rc->loss == LOSS_BCE, rc->shared, st->B, st->offsets, st->d,
                       rc->R, rc->temperature,
                       rc->normalize_items, st->out, st->nuniq, st->rows, st->logq, pos,
                       st->inv + 2 * T, st->scale, st->du, st->acc, st->xrows, st->xbad,
                       st->xloss);
    else if (rc->loss == LOSS_BCE)
        loss_bce_acc(be, T, st->d, st->out, st->nuniq, st->rows, pos, st->inv + 2 * T,
                     st->scale, st->du, st->drows, st->acc);
    else
        loss_sampled_softmax_acc(be, st->ws, rc->shared, T, st->d, rc->R, rc->temperature,
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
        mirror_free(&r->mask);
        mirror_free(&r->pos);
        stage_free(r->st);
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
