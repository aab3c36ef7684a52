/* eval_ranking: the evaluation of a ranking model (train.task = ranking)
 * and what `score` shares with it.
 *
 * The users with candidates in the split (split_ranking.h) are cut into
 * chunks of consecutive users, about RANK_CHUNK_KEYS key rows of the
 * target-masked attention and RANK_CHUNK_TOKENS tokens each (at most
 * RANK_CHUNK_USERS users; a user over them alone cut into parts of its
 * candidates): the cut depends on the data alone. In round k rank r evaluates chunk k P + r;
 * every candidate's labels and predictions are gathered to rank 0 per
 * round, in rank order, i.e. in the users' order, whatever P is
 * (metrics_ranking.h computes the metrics there). Collective over all ranks. */
#ifndef FS_EVAL_RANKING_H
#define FS_EVAL_RANKING_H

#include "eval/metrics_ranking.h"
#include "eval/eval_ctx.h"

#define RANK_CHUNK_USERS 64
#define RANK_CHUNK_KEYS ((int64_t)1 << 16)
#define RANK_CHUNK_TOKENS ((int64_t)1 << 13)

/* Chunks of users[n] with ncand[i] candidates and hx[i] history tokens:
 * *start [chunks + 1] (heap); returns the number of chunks. */
int64_t rank_chunks(const int64_t *ncand, const int64_t *hx, int64_t n, int64_t **start);

/* The largest batch of the evaluation when no history takes more than hmax
 * tokens: *T tokens (and segments), *K key rows of the target-masked
 * attention (a user's candidates are cut into parts to stay within the
 * chunk's bounds, eval_ranking.c): what the model's buffers need for it. */
void rank_chunk_bound(int64_t hmax, int64_t *T, int64_t *K);
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
