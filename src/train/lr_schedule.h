/* lr_schedule: the decay of the learning rates after the warmup
 * (train.lr_schedule), the same factor for the dense parameters (AdamW,
 * dense_optim.c) and every embedding table's sparse optimizer
 * (train_step.c): a function of the global step alone, so a resumed run
 * takes the same rates as an uninterrupted one. */
#ifndef FS_LR_SCHEDULE_H
#define FS_LR_SCHEDULE_H

#include <stdint.h>

enum lr_schedule { LR_CONSTANT, LR_COSINE, LR_LINEAR };

/* The factor at global step `step` (0-based) of a run of `total` steps
 * with `warmup` warmup steps: 1 during the warmup and with constant; after
 * it, with p = (step - warmup) / (total - warmup) in [0, 1):
 *   cosine  (1 + cos(pi p)) / 2        linear  1 - p */
double lr_schedule_factor(enum lr_schedule s, int64_t step, int64_t warmup, int64_t total);
/* "constant" | "cosine" | "linear" -> the schedule (anything else: constant). */
enum lr_schedule lr_schedule_parse(const char *s);
const char *lr_schedule_name(enum lr_schedule s);

#endif
