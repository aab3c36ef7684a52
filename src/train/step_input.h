/* step_input: a training step's input and the look-ahead ring that holds
 * two of them (train_step.c runs the phases that use them). Reading an
 * input: this rank's sequences of a plan, the negatives of every position,
 * the ids of the lookup (inputs: chunk 0; targets, negatives and the full
 * softmax's shard ids: chunk 1) assembled in the table's memory, their
 * de-duplication and counts posted; with features their plan and lookups
 * too. With parallel.overlap != none the next step's input is read during
 * this step (the read-ahead): the ring's "next" slot; after the step it
 * becomes "now". */
#ifndef FS_STEP_INPUT_H
#define FS_STEP_INPUT_H

#include <stdint.h>

#include "train/train.h"

/* One step's input: this rank's sequences read, negatives drawn, ids
 * de-duplicated and their exchange posted. */
struct step_input {
    int ready;
    struct seq_batch sb;
    struct emb_exchange *x;
    struct ctx_split *split;   /* split_long: the keys/values of cut sequences, else NULL */
    float *logq;               /* in-batch negatives: [T (1 + R)] the logQ correction of
                                  the targets' and negatives' tokens, else NULL */
    struct step_feat *feat;    /* features: their plan and lookup (the identity without) */
    int64_t *item_nums;        /* ranking on a raw dataset: [T] the tokens' item numbers
                                  (dataset_raw_numbers: model.bias's rows), else NULL */
    int64_t *target_nums;      /* train.loss = full on a raw dataset: [T] the targets'
                                  item numbers (the full softmax's columns), else NULL */
    int prefetched;            /* overlap = prefetch: its rows were posted during the
                                  previous step (emb_prefetch_*), not by its lookup */
    float *rterms;             /* ranking with model.recency: [T, K] the tokens' history
                                  terms, made with the batch (task_step.rterms), else NULL */
};

/* The ring of this step's input and the next step's, and what reading one
 * needs (set by train_step_init, freed by train_step_free). */
struct step_ring {
    struct trainer *tr;
    int targets;               /* the task's loss reads target, negative (and shard) rows
                                  (task_ops.target_rows); else the inputs' alone */
    /* train.loss = full: the ids of this rank's shard, requested every step
     * after the inputs, targets and negatives (loss_full.h) */
    int64_t *shard_ids, n_shard;
    struct ctx_stage *kv_stage; /* split_long, staged on a device: pinned buffers per layer */
    struct step_input in[2];
    int cur;                   /* in[cur]: this step's */
};

static inline struct step_input *step_ring_now(struct step_ring *r) { return &r->in[r->cur]; }
static inline struct step_input *step_ring_next(struct step_ring *r)
{
    return &r->in[1 - r->cur];
}
/* After a step (its input released): the next step's input, if it was read
 * ahead, becomes this one. */
void step_ring_advance(struct step_ring *r);
/* Move what the inputs have in flight (the model's between-layers hook):
 * the next step's first, then this step's. */
void step_ring_progress(struct step_ring *r);
/* Release both inputs (a run's end, a drained schedule); the ring starts
 * afresh. */
void step_ring_drain(struct step_ring *r);

/* Ids a step requests for T tokens: inputs, targets, R negatives each, and
 * with train.loss = full this rank's shard (without targets: the inputs
 * alone). */
int64_t step_input_ids(const struct step_ring *r, int64_t T);
/* Read the input of plan pl into in (see the top); in->ready after. */
void step_input_read(struct step_ring *r, struct step_input *in, const struct step_plan *pl);
/* Free what in holds (its exchange, split, logQ, features, batch). */
void step_input_release(struct step_input *in);

#endif
