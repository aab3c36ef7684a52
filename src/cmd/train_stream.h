/* train_stream: train.schedule = stream, the loop over time windows
 * (doc/training.md, "Streaming"): for each window in time order, the
 * current model evaluated on its events (test-then-train, beside the
 * smoothed baselines fitted on the events before it), then trained once
 * on them (each active user's history before the window, then its window
 * events as targets), a line per window, a checkpoint after it. */
#ifndef FS_TRAIN_STREAM_H
#define FS_TRAIN_STREAM_H

#include "train/train.h"

/* After trainer_build: the stream's windows resolved against the dataset,
 * the checkpoint to resume loaded (train_ckpt_start), the windows from
 * tr->windows on trained. Returns the command's exit code (0, or
 * PREEMPT_EXIT_CODE when a signal stopped it). Collective. */
int train_stream_run(struct trainer *tr);

#endif
