/* eval_trainer: a trainer as evaluation sees it (eval/eval_ctx.h): its
 * data, splits, task and item table, and the one inference forward
 * (train/infer.h) as the context's hooks. */
#ifndef FS_CMD_EVAL_TRAINER_H
#define FS_CMD_EVAL_TRAINER_H

#include "eval/eval_ctx.h"
#include "train/train.h"

/* ev refers to tr (not copied): valid while tr is. */
void eval_ctx_of(struct trainer *tr, struct eval_ctx *ev);

/* Size the model's buffers now for the largest batch the stream schedule's
 * training (train.batch_size sequences of data.max_seq_len events on one
 * rank) and ranking evaluation (eval_ranking.h, rank_chunk_bound) can
 * give, so that a stream's memory does not creep up window by window as
 * its batches grow (model_reserve); its bytes per rank are logged.
 * Retrieval's evaluation batches (256 users a pass) are not in it. */
void eval_trainer_reserve(struct trainer *tr);

#endif
