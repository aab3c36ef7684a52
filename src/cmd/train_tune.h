/* train_tune: train.tune (doc/training.md, "Rates and dropout chosen on
 * validation"): the learning rates and model.dropout chosen by the run on
 * its own validation events before it trains, each candidate a run of its
 * own (the run's epochs and patience, no checkpoint, no test), the one of
 * the best validation metric kept (train.select's; retrieval: NDCG@10). */
#ifndef FS_CMD_TRAIN_TUNE_H
#define FS_CMD_TRAIN_TUNE_H

#include "base/params.h"
#include "comm/comm.h"
#include "train/train.h"

/* With train.tune != off: the candidates' runs, every one logged (its
 * result alone), then p's train.lr, embedding.lr (features.lr when set) and
 * model.dropout set to the choice; a resumed run takes those its
 * checkpoint stores instead (no search), and output.checkpoint_dir's
 * refusals come first. Collective (every rank the same choice). Nothing
 * otherwise. The same for model.factors_lr = auto (its rate). The
 * candidates' start-up choice of model.bias_prior = auto and model.recency
 * = auto is made once, by the first, into bc (made 0 when no candidate
 * ran): the run's trainer takes it (its tr->bias_choice). */
void train_tune(struct comm *c, struct params *p, struct bias_choice *bc);

#endif
