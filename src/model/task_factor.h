/* task_factor: the ranking logits' factor terms (model.factors = F; with
 * model.bias, task_ranking.c uses it): a learned interaction of each
 * event's item with the label residuals of the events before it in its
 * sequence, the wide part's estimate of what the user likes of the item
 * (matrix factorisation with the user's factor taken from the history, as
 * in SVD++). Each item i has F factors f_i, rows of bias.factor
 * [num_items + 1, F]; token t of a sequence gets, per task j,
 *   vb_j(t) = sum_s v_j(s) / (n_j(t) + R0)
 *   z_j(t) = sum_s (v_j(s) - vb_j(t)) f_{i_s} / (n_j(t) + R0)
 *   h_j(t) = FACTOR_GAIN f_{i_t} . z_j(t)
 * over the earlier events s with a label of task j (n_j(t) of them), v_j
 * the residual of task_recency.h's rule (the label less its item's
 * smoothed mean) without the decay, R0 = RECENCY_PRIOR pseudo-events at 0:
 * the residuals centred on the user's (shrunk) mean, which the user's
 * bias row carries, so that the factors fit only what the user likes
 * more in some items than in others; with model.factor_ridge = lambda > 0
 * z_j(t) is instead the ridge fit of the same residuals on the same rows,
 *   z_j(t) = (lambda I + sum_s f_{i_s} f_{i_s}^T)^-1 sum_s (v_j(s) - vb_j(t)) f_{i_s}
 * (an F x F solve a token; F <= 16; the backward through the solve:
 * backend/factor_walk.h);
 * then z[t, k] += sum_j M[k, j] h_j(t) with M = bias.fmix [K, K].
 * With model.factor_feature (a single-valued categorical item feature,
 * e.g. the artist) the rows of bias.factor [cardinality, F] are the
 * feature's values' and item i's factors are f_i = the row of its value
 * (0: missing, a row of its own), which every event of every item with
 * that value trains; the walks see f as before.
 * Candidates (evaluation, score) take the history's sums: the events before
 * the first candidate. M starts at 0 (the logits start at the biases) and
 * the factors uniform in +-FACTOR_INIT; both are dense parameters
 * (replicated, all-reduced, AdamW without decay). In training the sums
 * and the factors' gradients are walks on the model's backend (backend.h:
 * factor_fwd, factor_bwd; backend/factor_walk.h), from the tokens' factor
 * rows gathered there and kept to the backward and the residual values
 * computed on the host and uploaded without a host wait: no host wait at
 * all; the product with M and M's gradient are fp32 GEMMs there
 * (evaluation's terms: the same walk on the host). */
#ifndef FS_MODEL_TASK_FACTOR_H
#define FS_MODEL_TASK_FACTOR_H

#include <stdint.h>

#include "backend/backend.h"
#include "backend/mirror.h"
#include "model/model.h"
#include "model/task_recency.h"

/* Adam moves a parameter by about its learning rate a step; the history
 * sums are means of residuals of about 0.5, so the gain keeps M of order 1
 * where the planted model's terms are (doc/ranking.md). */
#define FACTOR_GAIN 10.0f
#define FACTOR_INIT 0.5f

struct rank_factor {
    const struct backend_ops *be;      /* the model's */
    int K, F;
    double ridge;                      /* model.factor_ridge: 0 the shrunk mean, > 0 lambda */
    struct dense_tensor *fac, *mix;    /* NULL: model.factors = 0 */
    int64_t *value;                    /* host [nvalue]: model.factor_feature's row of each
                                        * item, or NULL (the item's own row) */
    int64_t nvalue;                    /* items value covers (nitems + 1) */
    int64_t *tv;                       /* host [cap]: the tokens' rows (value) */
    struct mirror items, h, v, off;    /* uploads: [n] rows, [n, K] terms (predict), [n, K]
                                        * residual values (double), [B + 1] offsets */
    float *rows;                       /* [cap, F] backend: the tokens' factor rows, kept
                                        * from the forward to the backward */
    float *dh;                         /* [cap, K] backend: dz M */
    float *wz, *ww, *wvb, *wh, *wdf;   /* backend: the walks' [cap, K, F] sums, [cap, K]
                                        * 1 / (n + R0), mean residuals, terms; [cap, F]
                                        * the rows' gradients */
    float *wai;                        /* backend: [cap, K, F, F] the ridge fit's A^-1
                                        * (ridge > 0, else NULL) */
    float *z, *w, *vb, *hh, *ai;       /* host: the same for rank_factor_terms */
    double *hv;                        /* host: [cap, K] the residual values */
    int64_t cap, n, B;                 /* the last training forward's rows and sequences */
    struct stage *st;                  /* the uploads' pinned ring (the head's), or NULL */
};

/* Find bias.factor and bias.fmix in m (F > 0: fatal when absent); ridge:
 * model.factor_ridge. */
void rank_factor_init(struct rank_factor *rf, struct model *m, int K, int F, double ridge);
/* model.factor_feature: item i's (1 .. nitems) row of bias.factor is
 * value[i - 1], checked against its rows (fatal: a caller's error); item 0
 * takes row 0. */
void rank_factor_set_values(struct rank_factor *rf, const int32_t *value, int64_t nitems);
/* Host terms out [T, K] of B sequences (offsets [B + 1], items [T],
 * labels [T, K], NaN missing; ncand [B] or NULL as recency_terms). */
void rank_factor_terms(struct rank_factor *rf, const struct recency_rule *rule, int64_t B,
                       const int64_t *offsets, const int64_t *ncand, const int64_t *items,
                       const float *labels, float *out);
/* z [n, K] (backend) += h [n, K] (host) M^T. */
void rank_factor_apply(struct rank_factor *rf, int64_t n, const float *h, float *z);
/* Training: the terms of a batch (no candidates) into z, kept with the
 * batch's arrays (borrowed) for rank_factor_bwd. */
void rank_factor_fwd(struct rank_factor *rf, const struct recency_rule *rule, int64_t B,
                     const int64_t *offsets, const int64_t *items, const float *labels,
                     float *z);
/* The gradients of M and of the factor rows from dz [n, K] (backend). */
void rank_factor_bwd(struct rank_factor *rf, const struct recency_rule *rule, int64_t n,
                     const float *dz);
void rank_factor_free(struct rank_factor *rf);

#endif
