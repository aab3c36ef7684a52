/* step_neg: the negatives of a training step; see step_neg.h. */
#include "train/step_neg.h"

#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/check.h"
#include "model/loss.h"
#include "train/neg_list.h"
#include "train/train.h"

/* The global batch's targets (all ranks), sorted: the in-batch negatives'
 * population, the same whatever the rank count, in *n. Collective over dp. */
static int64_t *batch_targets_gather(struct comm *c, const struct seq_batch *sb, int64_t *n)
{
    const int P = c->g[COMM_DP].size;
    int64_t *cnt = xmalloc((size_t)P * sizeof *cnt);
    comm_allgather_i64(c, COMM_DP, sb->T, cnt);
    *n = 0;
    for (int r = 0; r < P; r++)
        *n += cnt[r];
    int64_t *all = xmalloc((size_t)(*n ? *n : 1) * sizeof(int64_t));
    comm_allgatherv(c, COMM_DP, COMM_I64, sb->targets, sb->T, all, cnt, COMM_PH_OTHER);
    loss_batch_targets_sort(all, *n);
    free(cnt);
    return all;
}

/* train.shared_negatives = S: every position draws with the key of the
 * first position of its block (positions [qS, qS + S) of its sequence), so
 * a block's positions have the same negatives; keys [T] (sb->keys when S =
 * 0). A sequence lies on one rank whole (parallel.split_long is refused
 * with S): the blocks do not depend on the ranks. */
static const uint64_t *shared_keys(const struct seq_batch *sb, int64_t S, uint64_t **own)
{
    *own = NULL;
    if (S < 1)
        return sb->keys;
    uint64_t *k = xmalloc((size_t)(sb->T ? sb->T : 1) * sizeof *k);
    for (int64_t b = 0; b < sb->B; b++)
        for (int64_t t = sb->offsets[b]; t < sb->offsets[b + 1]; t++)
            k[t] = sb->keys[sb->offsets[b] + (t - sb->offsets[b]) / S * S];
    *own = k;
    return k;
}

/* step_neg_draw with the positions' keys */
static float *step_neg_keyed(struct trainer *tr, const struct seq_batch *sb,
                             const uint64_t *keys, uint64_t epoch)
{
    const struct train_conf *cf = &tr->conf;
    const int64_t T = sb->T, I = tr->ds.num_items;
    const int R = cf->R, Ru = cf->negatives_from == NEG_UNIFORM ? R
                              : cf->negatives_from == NEG_MIXED ? R / 2 : 0;
    /* raw ids (dataset_raw.c): uniform over the item list /items/ids, on
     * the host, never over 1 .. N (no item's ids) */
    const int64_t *list = tr->ds.raw_ids ? tr->ds.item_list : NULL;
    if (Ru == R && list) {
        int64_t *neg = xmalloc((size_t)(T * R > 0 ? T * R : 1) * sizeof *neg);
        neg_list_sample(cf->seed, epoch, keys, T, R, list, I, neg);
        emb_ids_put(tr->items, 2 * T, neg, T * R, tr->c->rank);
        free(neg);
        return NULL;
    }
    if (Ru == R) {
        emb_ids_negatives(tr->items, 2 * T, cf->seed, epoch, keys, T, R, I);
        return NULL;
    }
    int64_t n_batch;
    int64_t *batch = batch_targets_gather(tr->c, sb, &n_batch);
    int64_t *neg = xmalloc((size_t)(T * R > 0 ? T * R : 1) * sizeof *neg);
    int64_t *u = xmalloc((size_t)(T * Ru > 0 ? T * Ru : 1) * sizeof *u);
    if (list)
        neg_list_sample(cf->seed, epoch, keys, T, Ru, list, I, u);
    else
        loss_sample_negatives(cf->seed, epoch, keys, T, Ru, I, u);
    for (int64_t i = 0; i < T; i++)
        memcpy(neg + i * R, u + i * Ru, (size_t)Ru * sizeof *u);
    free(u);
    loss_sample_in_batch(cf->seed, epoch, keys, T, R, Ru, batch, n_batch, neg);
    emb_ids_put(tr->items, 2 * T, neg, T * R, tr->c->rank);
    float *logq = xmalloc((size_t)(T ? T * (1 + R) : 1) * sizeof(float));
    for (int64_t k = 0; k < T * (1 + R); k++)
        logq[k] = loss_logq(k < T ? sb->targets[k] : neg[k - T], batch, n_batch, R, Ru, I);
    free(neg);
    free(batch);
    return logq;
}

float *step_neg_draw(struct trainer *tr, const struct seq_batch *sb, uint64_t epoch)
{
    uint64_t *own;
    const uint64_t *keys = shared_keys(sb, tr->conf.shared_negatives, &own);
    float *logq = step_neg_keyed(tr, sb, keys, epoch);
    free(own);
    return logq;
}
