/* infer: the model's forward without training, the one that evaluation
 * (eval/), recommend, score and export (cmd/) all run: the batch's item
 * rows looked up, the tokens assembled when the run has features or ranks
 * (step_feat.h: contextual tokens, event features, actions, candidates),
 * the model's forward, its outputs back on the host. No dropout, no
 * gradients. All collective (the lookups): every rank calls them the same
 * number of times, with an empty batch if it has nothing.
 *
 *   infer_user_vectors  retrieval: the user vectors out[B, d], the output
 *                       at each sequence's last position
 *   infer_predict       ranking: pred [sum of b->ncand, tasks] (binary: the
 *                       logit; regression: the value) of the batch's
 *                       candidates, under the target mask (the head,
 *                       model/task.h)
 *   infer_item_rows     rows [n, d] of items ids[n] += their item features
 *                       (the representation a score is taken against)
 *
 * infer_forward is the shared part: f->y [f->mb.T, d] on the host, in the
 * token layout f->tk (NULL without features: the events are the tokens);
 * infer_free releases it. */
#ifndef FS_TRAIN_INFER_H
#define FS_TRAIN_INFER_H

#include <stdint.h>

#include "data/batch.h"
#include "model/model.h"
#include "model/tokens.h"

struct trainer;

struct infer {
    struct batch eb;     /* the events' batch */
    struct batch mb;     /* the model's batch (the token layout) */
    struct tokens *tk;   /* the token assembly, or NULL */
    const float *y;      /* [mb.T, d] the outputs (host) */
    float *x, *dy;       /* owned: the inputs (host), the outputs (backend) */
    void *own_x, *own_y; /* owned: the upload's and the download's copies */
};

void infer_forward(struct trainer *tr, const struct seq_batch *b, struct infer *f);
void infer_free(struct trainer *tr, struct infer *f);

void infer_user_vectors(struct trainer *tr, const struct seq_batch *b, float *out);
void infer_predict(struct trainer *tr, const struct seq_batch *b, double *pred);
void infer_item_rows(struct trainer *tr, const int64_t *ids, int64_t n, float *rows);
/* Ranking: the model tokens of a candidate's history of `events` events
 * (the chunking's cost): the contextual tokens + (2 with interleaved
 * actions, else 1) x min(events, N - 1). */
int64_t infer_history_tokens(const struct trainer *tr, int64_t events);

#endif
