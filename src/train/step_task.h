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

#endif
