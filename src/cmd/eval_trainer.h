/* eval_trainer: a trainer as evaluation sees it (eval/eval_ctx.h): its
 * data, splits, task and item table, and the one inference forward
 * (train/infer.h) as the context's hooks. */
#ifndef FS_CMD_EVAL_TRAINER_H
#define FS_CMD_EVAL_TRAINER_H

#include "eval/eval_ctx.h"
#include "train/train.h"

/* ev refers to tr (not copied): valid while tr is. */
void eval_ctx_of(struct trainer *tr, struct eval_ctx *ev);

#endif
