/* tokens: the token assembly of a step or of an evaluation batch, in one
 * place for both models, training, evaluation, recommend and export
 * (doc/ranking.md, "What the model sees"):
 *
 *   item representation  rep_i = row_i + sum over item features f of
 *                        pool_f(i) P_f   (the item's input token and the
 *                        row the loss and the ranking score it by)
 *   event token          x_t = rep_{item_t} + sum over event features g of
 *                        row_g(value_t) P_g        (retrieval: actions none)
 *   actions (ranking)    a_t = sum over event features g of row_g(value_t)
 *                        P_g, the tasks' labels among them (schema.h: a
 *                        label is an event feature of 2 rows, binary, or 1
 *                        row times the standardised value, regression);
 *                        sum: x_t = rep_{item_t} + a_{t-1} (the previous
 *                        event's action; none at a sequence's first);
 *                        interleave: the tokens are rep_{item_0}, a_0,
 *                        rep_{item_1}, a_1, ... So a position never sees
 *                        its own labels.
 *   candidates           (evaluation, score; seq_batch.ncand) the last
 *                        tokens of a sequence: rep_{item} alone (sum:
 *                        + the last history event's action), all at the
 *                        position after the history; each attends to the
 *                        contextual and history tokens and to itself, not
 *                        to the other candidates (the target mask:
 *                        tokens_target.c builds it as a split batch)
 *   contextual tokens    C = the user features: token c of sequence b is
 *                        pool_c(user_b) P_c, in front of the sequence
 *                        (positions 0 .. C - 1; the events follow at C ..);
 *                        their outputs are never loss targets
 * pool_f(e) = the sum (or mean) of the rows of entity e's values of feature
 * f (0 = missing: no row), P_f the projection of a table narrower or wider
 * than d (else the identity). Without features nothing here runs.
 *
 * The caller looks the rows up (train/step_feat.c: one emb_multi lookup for
 * every table of the plan) and runs the model; this module is compute only,
 * on host memory (the CPU backend). Shapes: d = model width; the plan's
 * item entities n_items (the unique rows of the item exchange in training,
 * the tokens in evaluation); T event tokens of B sequences; Tx = T + B C
 * model tokens: B C contextual, the items and, interleaved, the actions of
 * the events that are not candidates. A training batch of pieces of split
 * sequences (seq_batch.pos0, parallel.split_long): a piece that starts
 * after position 0 has no contextual tokens (the first piece's, which the
 * later ones see as keys), and with summed actions its first event adds
 * the action of its lead (the event before it, an event entity after the
 * T tokens: its features and labels read with the batch); no candidates. */
#ifndef FS_MODEL_TOKENS_H
#define FS_MODEL_TOKENS_H

#include <stdint.h>

#include "data/batch.h"
#include "feature/feat_values.h"
#include "feature/schema.h"
#include "model/model.h"

#define TOKENS_MAX_TABLES (2 * DATASET_MAX_FEATURES)

/* One feature's entities and their requests. */
struct tok_feat {
    int64_t ne;        /* entities: item rows, event tokens or sequences */
    int64_t *off;      /* [ne + 1] their requests in req */
    int64_t *req;      /* the table ids requested (the values) */
    float *pool;       /* [ne, width] pooled rows */
    float *out;        /* [ne, d] pool P (= pool when not projected) */
    float *dout;       /* [ne, d] its gradient */
    float *P;          /* [width, d] the projection's rows (projected features) */
    float *w;          /* [nreq] weight of each request (NULL: 1) */
};

struct tok_target;     /* the target mask (tokens_target.c) */

struct tokens {
    const struct feat_schema *s;
    int d;
    struct tok_feat f[DATASET_MAX_FEATURES];
    const int64_t *req[TOKENS_MAX_TABLES]; /* per table: ids requested */
    int64_t nreq[TOKENS_MAX_TABLES];
    int64_t *proj_ids[DATASET_MAX_FEATURES]; /* 1 .. width of each projection */
    int64_t n_items;
    /* the model batch: B sequences of C contextual tokens and their events */
    int64_t B, T, C, Tx;
    int64_t Te;        /* event entities: the T event tokens, then the leads of a batch of
                          pieces (seq_batch.lead: their actions, sum) */
    int64_t *xoff;     /* [B + 1] */
    int64_t *xctx;     /* [B] row of sequence b's first contextual token, -1: none (a
                          piece of a split sequence after its first, which holds them) */
    int ctx_missing;   /* some xctx are -1 */
    int64_t *xts;      /* [Tx] or NULL */
    uint64_t *xkeys;   /* [Tx] */
    int64_t *xrow;     /* [T] row of event token t's item among the Tx */
    int64_t *xact;     /* interleave: [T] row of its action token (-1: none) */
    int64_t *aprev;    /* sum: [T] the event entity whose action token t adds (-1: none) */
    const int64_t *ncand; /* [B] candidates at the end of each sequence, or NULL */
    float *act;        /* actions: [Te, d] a_t */
    struct tok_target *tgt; /* the target mask's split batch (candidates), or NULL */
};

/* Plan: the item features of items[n_items] (ids; NULL, 0: none), the
 * event features of b's tokens (evv[i] [T]: values of event feature i,
 * NULL for the others or without event features; evw[i] [T] their
 * weights, NULL: 1) and the user features of b's users; b may be NULL
 * when only item representations are wanted. The layout follows
 * s->actions and b->ncand. */
void tokens_plan(struct tokens *tk, const struct feat_schema *s, const struct feat_values *v,
                 const int64_t *items, int64_t n_items, const struct seq_batch *b,
                 int32_t *const *evv, float *const *evw);
void tokens_free(struct tokens *tk);

/* Forward of every feature from its table's rows: rows[k] [nuniq_k,
 * width_k] and inv[k] [nreq[k]] per table k (the lookup's unique rows and
 * inverse). */
void tokens_features_fwd(struct tokens *tk, const float *const *rows, const int64_t *const *inv);
/* rep[i] = base[i] + the item features of entity i, for i in [i0, i0 + n)
 * (base may be rep). */
void tokens_items_add(const struct tokens *tk, const float *base, float *rep, int64_t i0,
                      int64_t n);
/* The model's batch over the Tx tokens (b: the event tokens' batch); with
 * candidates, the target mask's (split) batch, kept in tk. */
void tokens_batch(struct tokens *tk, const struct batch *b, struct batch *mb);
/* tokens_target.c: build tk->tgt and mb's segments, and free it. */
void tokens_target_batch(struct tokens *tk, struct batch *mb);
void tokens_target_free(struct tokens *tk);
/* The target mask's key copies and their gradients' sums on backend be
 * (gather_rows, scatter_add_rows: the same rows in the same order), for a
 * model on a device; without it, host memory. */
void tokens_target_device(struct tokens *tk, const struct backend_ops *be);
/* x [Tx, d] from the event tokens' rows emb [T, d]: event features added
 * (or the actions), contextual tokens in front (x may be emb when Tx = T). */
void tokens_inputs(const struct tokens *tk, const float *emb, float *x);
/* The event tokens' rows of the model output: out_ev [T, d] from out_x [Tx, d]. */
void tokens_outputs(const struct tokens *tk, const float *out_x, float *out_ev);
/* The reverse: du_x [Tx, d] = du_ev at the event tokens, 0 at the contextual ones. */
void tokens_dout(const struct tokens *tk, const float *du_ev, float *du_x);

/* Backward of tokens_inputs: dx [Tx, d] -> demb [T, d] (the event tokens:
 * the gradient of their item rows; demb may be dx when Tx = T) and the
 * event and user features' dout (set here). */
void tokens_inputs_bwd(struct tokens *tk, const float *dx, float *demb);
/* Backward of tokens_items_add over all item entities: drep [n_items, d]
 * is the item features' dout. */
void tokens_items_bwd(struct tokens *tk, const float *drep);
/* Every table's gradient per unique row, gu[k] [nuniq[k], width_k] (set
 * here), from the douts, through the projections and the pooling. */
void tokens_features_bwd(struct tokens *tk, const float *const *rows, const int64_t *const *inv,
                         const int64_t *nuniq, float *const *gu);
/* The same with exact sums (train.exact_sums; base/exact.h): each entity's
 * contribution to a row added exactly to xg[k] [nuniq[k], width_k]
 * [EXACT_LIMBS] (zeroed by the caller), out of range counted in *bad.
 * Event and user features without a projection (backend_check refuses
 * the others). */
void tokens_features_bwd_exact(struct tokens *tk, const int64_t *const *inv, int64_t *const *xg,
                               int64_t *bad);

#endif
