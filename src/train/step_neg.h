/* step_neg: the negatives of a training step's positions
 * (train.negatives_from) and, with in-batch ones, their logQ correction
 * (model/loss.h), for train_step.c's read and loss. */
#ifndef FS_STEP_NEG_H
#define FS_STEP_NEG_H

#include <stdint.h>

struct trainer;
struct seq_batch;

/* The negatives of sb's T positions (keyed by the token) into the item
 * table's ids at 2T ([T, R], after the inputs and targets: emb_ids_put):
 * R uniform (drawn by the table's backend, where the ids are; raw ids:
 * from the dataset's item list, on the host: neg_list.h), R in-batch,
 * or R / 2 uniform then the rest in-batch (drawn on the host; collective
 * over dp: the global batch's targets are their population). Returns the
 * logQ correction of every target and negative token [T (1 + R)] (heap)
 * with in-batch negatives, else NULL. */
float *step_neg_draw(struct trainer *tr, const struct seq_batch *sb, uint64_t epoch);

#endif
