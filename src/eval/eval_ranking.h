/* eval_ranking: the evaluation of a ranking model (train.task = ranking)
 * and what `score` shares with it.
 *
 * The users with candidates in the split (split_ranking.h) are cut into
 * chunks of consecutive users, about RANK_CHUNK_KEYS key rows of the
 * target-masked attention each (at most RANK_CHUNK_USERS users): the cut
 * depends on the data alone. In round k rank r evaluates chunk k P + r;
 * every candidate's labels and predictions are gathered to rank 0 per
 * round, in rank order, i.e. in the users' order, whatever P is
 * (metrics_ranking.h computes the metrics there). Collective over all ranks. */
#ifndef FS_EVAL_RANKING_H
#define FS_EVAL_RANKING_H

#include "eval/metrics_ranking.h"
#include "eval/eval_ctx.h"

#define RANK_CHUNK_USERS 64
#define RANK_CHUNK_KEYS ((int64_t)1 << 16)

/* Chunks of users[n] with ncand[i] candidates and hx[i] history tokens:
 * *start [chunks + 1] (heap); returns the number of chunks. */
int64_t rank_chunks(const int64_t *ncand, const int64_t *hx, int64_t n, int64_t **start);

/* Evaluate split test (1) or validation (0): the metrics on every rank. */
void eval_ranking_split(const struct eval_ctx *ev, int test, struct rank_metrics *out);
/* The baselines on split test: smoothed means of the labels of the events
 * before the split (global, item, user, additive user+item; prior =
 * train.baseline_prior), computed on rank 0 and broadcast. out[4] in that
 * order. Collective. */
void eval_ranking_baselines(const struct eval_ctx *ev, int test, struct rank_metrics *out);
/* The task names and kinds of the run, for the formatters. */
void eval_ranking_names(const struct eval_ctx *ev, const char **names, int *binary);

#endif
