/* ckpt_train: a training run and its checkpoints.
 *
 *   train_ckpt_check_dir  before anything is printed (rank 0 decides, every
 *                         rank ends on a refusal with one message):
 *                         output.checkpoint_dir is not a file, nor another
 *                         run's (ckpt_run.h)
 *   train_ckpt_start      the directory prepared (created, stale temporaries
 *                         removed, the write rate measured: what a
 *                         checkpoint costs, said before training), the
 *                         checkpoint train.resume names or auto finds
 *                         verified and loaded, the metrics file opened
 *   train_ckpt_save       DIR/ckpt-STEP.h5 written (its size and time said),
 *                         then output.keep_checkpoints applied
 * All collective. */
#ifndef FS_CKPT_TRAIN_H
#define FS_CKPT_TRAIN_H

#include "train/train.h"

void train_ckpt_check_dir(struct trainer *tr);
void train_ckpt_start(struct trainer *tr);
void train_ckpt_save(struct trainer *tr);

#endif
