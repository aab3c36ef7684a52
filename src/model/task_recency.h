/* task_recency: the ranking logits' history terms (model.recency = H, a
 * half-life in events; task_ranking.c uses it). Each token t of a sequence
 * gets, per task j, a recency-weighted mean of the labels of the events
 * before it in its sequence:
 *   r_j(t) = sum_s l^a(s) v_j(s) / (sum_s l^a(s) + R0),  l = 2^(-1/H)
 * over the earlier events s with a label of task j, a(s) the events between
 * s and t (0 for the one just before), v_j = the label (a regression
 * label standardised as the head's) minus what s's item predicts of it:
 * the item's smoothed mean label (the per-item centres the trainer sets:
 * train/step_bias.c), or without them the training labels' mean; R0 =
 * RECENCY_PRIOR pseudo-events at 0 (a short history says little). Candidates (evaluation, score) take
 * their history's terms: the events before the first candidate. Then
 *   z[t, k] += sum_j A[k, j] r_j(t)
 * with A = bias.recency [K, K], a dense parameter of the model (replicated,
 * all-reduced, AdamW without decay), set at start-up by a fit on the
 * training events (train/step_bias.c). The terms are computed on the host
 * from the labels and uploaded; the product and A's gradient are GEMMs on
 * the model's backend. */
#ifndef FS_MODEL_TASK_RECENCY_H
#define FS_MODEL_TASK_RECENCY_H

#include <stdint.h>

#include "backend/backend.h"
#include "backend/mirror.h"
#include "data/batch_ranking.h"
#include "model/model.h"

#define RECENCY_PRIOR 3.0

/* How labels become the terms' values: v = (y - shift) / scale - centre per
 * task, the centre that of the event's item (centre [nitems, K]) or
 * centre0 (no centres, or an item outside them). */
struct recency_rule {
    int K;
    double lam;        /* 2^(-1/H) */
    double shift[RANK_MAX_TASKS], scale[RANK_MAX_TASKS], centre0[RANK_MAX_TASKS];
    const float *centre;
    int64_t nitems;
};

/* The value of label y of task k of an event of item i under rule. */
static inline double recency_value(const struct recency_rule *rule, int64_t i, int k, float y)
{
    const float *c = rule->centre && i >= 0 && i < rule->nitems ? rule->centre + i * rule->K
                                                                : NULL;
    return ((double)y - rule->shift[k]) / rule->scale[k] - (c ? c[k] : rule->centre0[k]);
}

/* out [T, K] (host): each token's terms over the earlier tokens of its
 * sequence (B sequences, offsets [B + 1]; items [T], labels [T, K], NaN
 * missing);
 * with ncand [B] (else NULL) the last ncand[b] tokens of sequence b take
 * the terms of the tokens before them all. */
void recency_terms(const struct recency_rule *rule, int64_t B, const int64_t *offsets,
                   const int64_t *ncand, const int64_t *items, const float *labels, float *out);

struct rank_recency {
    const struct backend_ops *be;      /* the model's */
    int K;
    struct dense_tensor *A;            /* NULL: model.recency = 0 */
    struct mirror r;                   /* [n, K] the last forward's terms, uploaded */
    int64_t n;
    struct stage *st;                  /* the uploads' pinned ring (the head's), or NULL */
};

/* Find bias.recency in m (on: fatal when absent). */
void rank_recency_init(struct rank_recency *rc, struct model *m, int K, int on);
/* z [n, K] (backend) += r [n, K] (host) A^T; keeps r for rank_recency_bwd. */
void rank_recency_fwd(struct rank_recency *rc, int64_t n, const float *r, float *z);
/* A's gradient += dz^T r of the last forward (dz [n, K], backend). */
void rank_recency_bwd(struct rank_recency *rc, int64_t n, const float *dz);
void rank_recency_free(struct rank_recency *rc);

#endif
