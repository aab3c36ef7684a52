/* step_input: a step's input and the look-ahead ring; see step_input.h. */
#include "train/step_input.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "train/ctx_split.h"
#include "train/step_feat.h"
#include "train/step_neg.h"
#include "train/step_task.h"

int64_t step_input_ids(const struct step_ring *r, int64_t T)
{
    return r->targets ? T * (2 + r->tr->conf.R) + r->n_shard : T;
}

/* While the next step is read (in): this step's exchange moves, and its
 * held chunk 1 leaves once chunk 0 is done (emb_output_hold). */
static void progress_now(struct step_ring *r, const struct step_input *in)
{
    struct step_input *now = step_ring_now(r);
    if (now != in && now->ready)
        emb_exchange_progress(now->x);
}

/* model.recency's terms of a batch of pieces (split_long): a piece after
 * its sequence's first continues the walk over the earlier events, so the
 * terms come from its user's whole sequence (read again, as one batch of
 * those users), rows [its first event, + its events) of it. out [T, K]. */
static void piece_recency_terms(struct trainer *tr, const struct seq_batch *sb, uint64_t epoch,
                                float *out)
{
    const int K = tr->conf.task.n;
    int64_t n = 0;
    int64_t *users = xmalloc((size_t)(sb->B ? sb->B : 1) * sizeof *users);
    for (int64_t q = 0; q < sb->B; q++)
        if (sb->pos0[q] > 0)
            users[n++] = sb->users[q];
    struct seq_batch w;
    tr->task.ops->batch(&tr->task, &tr->tdata, epoch, users, NULL, NULL, n, &w);
    if (tr->ds.raw_ids)
        dataset_raw_numbers(&tr->ds, w.items, w.T);
    float *wt = xmalloc((size_t)((w.T ? w.T : 1) * K) * sizeof *wt);
    task_ranking_recency_terms(&tr->task, w.B, w.offsets, NULL, w.items, w.labels, wt);
    for (int64_t q = 0, j = 0; q < sb->B; q++) {
        if (sb->pos0[q] == 0)
            continue;
        const int64_t t0 = sb->offsets[q], L = sb->offsets[q + 1] - t0;
        const int64_t at = w.offsets[j] + (sb->ev0[q] - w.ev0[j]);
        if (w.users[j] != sb->users[q] || at < w.offsets[j] || at + L > w.offsets[j + 1])
            fatal("step_input: piece %lld of user %lld outside its sequence", (long long)q,
                  (long long)sb->users[q]);
        memcpy(out + t0 * K, wt + at * K, (size_t)(L * K) * sizeof *out);
        j++;
    }
    free(wt);
    free(users);
    batch_free(&w);
}

void step_input_read(struct step_ring *r, struct step_input *in, const struct step_plan *pl)
{
    struct trainer *tr = r->tr;
    const struct train_conf *cf = &tr->conf;
    struct emb_table *t = tr->items;
    const int pieces = pl->pieces.nsplit > 0; /* entries are pieces of sequences */
    tr->task.ops->batch(&tr->task, &tr->tdata, (uint64_t)pl->epoch, pl->users,
                        pieces ? pl->p0 : NULL, pieces ? pl->p1 : NULL, pl->n, &in->sb);
    progress_now(r, in);
    in->split = pieces ? ctx_split_new(tr->c, pl, &in->sb, cf->model.layers, &tr->st) : NULL;
    ctx_split_device(in->split, tr->be, tr->dev.direct, r->kv_stage);
    const int64_t T = in->sb.T, n_ids = step_input_ids(r, T);
    emb_ids_reserve(t, n_ids);
    emb_ids_put(t, 0, in->sb.items, T, tr->c->rank);
    if (!r->targets && tr->ds.raw_ids) { /* ranking's model.bias rows: by item number */
        in->item_nums = xmalloc((size_t)(T ? T : 1) * sizeof *in->item_nums);
        memcpy(in->item_nums, in->sb.items, (size_t)T * sizeof *in->item_nums);
        dataset_raw_numbers(&tr->ds, in->item_nums, T);
    }
    if (r->targets) { /* the targets, their negatives, the shard of train.loss = full */
        emb_ids_put(t, T, in->sb.targets, T, tr->c->rank);
        if (cf->loss == LOSS_FULL && tr->ds.raw_ids) { /* the full softmax's columns: item numbers */
            in->target_nums = xmalloc((size_t)(T ? T : 1) * sizeof *in->target_nums);
            memcpy(in->target_nums, in->sb.targets, (size_t)T * sizeof *in->target_nums);
            dataset_raw_numbers(&tr->ds, in->target_nums, T);
        }
        in->logq = step_neg_draw(tr, &in->sb, (uint64_t)pl->epoch);
        progress_now(r, in);
        emb_ids_put(t, T * (2 + cf->R), r->shard_ids, r->n_shard, tr->c->rank);
    }
    if (!r->targets && tr->conf.task.type == TASK_RANKING &&
        task_ranking_recency_on(&tr->task)) { /* the history terms: here, not in the loss */
        in->rterms = xmalloc((size_t)((T ? T : 1) * tr->conf.task.n) * sizeof *in->rterms);
        task_ranking_recency_terms(&tr->task, in->sb.B, in->sb.offsets, NULL,
                                   in->item_nums ? in->item_nums : in->sb.items, in->sb.labels,
                                   in->rterms);
        if (in->sb.pos0)
            piece_recency_terms(tr, &in->sb, (uint64_t)pl->epoch, in->rterms);
    }
    steptime_phase(&tr->st, PH_READ);
    progress_now(r, in);
    in->x = emb_input_dist_at(t, tr->c, n_ids, T, NULL);
    in->feat = step_feat_read(tr, &in->sb, in->x); /* without features: the identity */
    in->ready = 1;
    steptime_phase(&tr->st, PH_INPUT_DIST);
}

void step_input_release(struct step_input *in)
{
    emb_exchange_free(in->x);
    in->x = NULL;
    ctx_split_free(in->split);
    in->split = NULL;
    free(in->logq);
    in->logq = NULL;
    free(in->item_nums);
    free(in->target_nums);
    free(in->rterms);
    in->rterms = NULL;
    in->item_nums = in->target_nums = NULL;
    step_feat_free(in->feat);
    in->feat = NULL;
    batch_free(&in->sb);
    in->ready = in->prefetched = 0;
}

void step_ring_advance(struct step_ring *r)
{
    if (step_ring_next(r)->ready)
        r->cur = 1 - r->cur;
}

void step_ring_progress(struct step_ring *r)
{
    struct step_input *order[2] = {step_ring_next(r), step_ring_now(r)};
    for (int k = 0; k < 2; k++)
        if (order[k]->ready) {
            emb_exchange_progress(order[k]->x);
            step_feat_progress(order[k]->feat);
        }
}

void step_ring_drain(struct step_ring *r)
{
    for (int k = 0; k < 2; k++)
        if (r->in[k].ready)
            step_input_release(&r->in[k]);
    r->cur = 0;
}
