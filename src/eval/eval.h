/* eval: evaluation of the model being trained on the validation or test
 * split (leave-one-out targets, full ranking over all items with the
 * history excluded; eval_rank.h), and the metrics' JSON fields. */
#ifndef FS_EVAL_H
#define FS_EVAL_H

#include "eval/eval_rank.h"
#include "base/metrics.h"
#include "train/train.h"

/* Evaluate every evaluable user (split test = 1, validation = 0), spread
 * over the ranks in contiguous blocks; out holds the global means.
 * Collective over all ranks. */
void eval_split(struct trainer *tr, int test, struct eval_metrics *out);
/* The most-popular-items baseline on the same split (eval_popular.c). */
void eval_popular(struct trainer *tr, int test, struct eval_metrics *out);
/* Set ec's item hook: with item features, items are scored by their
 * representation (row + item features; train/step_feat.h). */
void eval_conf_items(struct trainer *tr, struct eval_conf *ec);
/* Add "hr@K", "ndcg@K" and "mrr" fields to a metrics line. */
void eval_metrics_json(const struct eval_metrics *m, struct metrics_line *l);

#endif
