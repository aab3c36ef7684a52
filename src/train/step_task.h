/* step_task: the task of a run on the trainer's side (model/task.h): its
 * start-up (what the training step, the planner and the commands then ask
 * of it are the task's ops: batch, labels, train_tokens, loss, backward).
 *
 * Start-up (trainer_setup), in this order (the task's own part:
 * model/task_setup.c):
 *   task_setup_conf   ranking: refusals of what cannot run here, then the
 *                     tasks' columns in the dataset, the split
 *                     (data.split), the log lines (before the features:
 *                     the labels become features)
 *   task_setup_model  ranking: the head's tensors into the model's conf
 *                     (before model_init)
 *   task_setup_init   tr->tdata, the task (tr->task): retrieval's loss, or
 *                     the head bound to the model, the regression labels'
 *                     statistics from the training events, model.bias
 * Ranking also needs the token assembly (step_feat.h), which then always
 * runs: the labels are event features of the actions. */
#ifndef FS_STEP_TASK_H
#define FS_STEP_TASK_H

#include <stdint.h>

struct trainer;
struct step_plan;
struct seq_batch;

void task_setup_conf(struct trainer *tr);
void task_setup_model(struct trainer *tr);
void task_setup_init(struct trainer *tr);
void task_teardown(struct trainer *tr);
/* model.bias: the biases' initial values from the training labels (the
 * smoothed user+item means; step_bias.c), after head.stats is set. */
void step_bias_init(struct trainer *tr);
/* The biases' initial values over each user's first events of split sp
 * (NULL: data.split's): its training events, or with val its training
 * and validation events; NULL without model.bias. */
struct bias_values;
struct rsplit;
struct bias_values *step_bias_values(struct trainer *tr, const struct rsplit *sp, int val);
void step_bias_values_free(struct bias_values *bv);
/* An evaluation that predicts after more events than the biases started
 * from (the test after the validation events, a stream's window after
 * the earlier ones): each row += its initial value over them (to) - over
 * the events it started from (from); a user row's change scaled as the
 * start-up fit scaled the row (model.recency), and the history terms'
 * item centres those of to. Returns the values before (NULL when either
 * is NULL) for step_bias_restore, which puts them back and frees them. */
float *step_bias_shift(struct trainer *tr, const struct bias_values *from,
                       const struct bias_values *to);
void step_bias_restore(struct trainer *tr, float *saved);
/* model.recency = auto in a stream, before window k: the half-life
 * (model/task_recency.h) chosen on the events of the windows just before
 * it (prev: the events before them train, theirs validate; the caller,
 * cmd/train_stream.c, takes window k - 1 and as many windows before it as
 * it takes to hold as many events as data.split's validation part [V,
 * stream start), which window 0 chooses on) among off (0) and 1 .. 256
 * doubling, by step_bias_search.c's start-up fit and loss, at the bias
 * prior chosen at start-up; then the history terms' matrix bias.recency
 * and the user rows' scales refitted at it on the events before window k
 * (now: its window split; off: the matrix zero, the scales 1), the
 * trained user rows moved by the change of scale times their start-up
 * values (from), and the task's half-life set. Returns the choice, or -1
 * when none was made (not model.recency = auto, or no labels in window
 * k - 1: the terms stay as they are). Every rank reads every user. */
double step_bias_window(struct trainer *tr, const struct bias_values *from,
                        const struct rsplit *prev, const struct rsplit *now);

#endif
