/* eval: evaluation of the model being trained on the validation or test
 * split (leave-one-out targets, full ranking over all items with the
 * history excluded; eval_retrieval.h), and the metrics' JSON fields. */
#ifndef FS_EVAL_H
#define FS_EVAL_H

#include "eval/eval_retrieval.h"
#include "eval/metrics_ranking.h"
#include "base/metrics.h"
#include "eval/eval_ctx.h"

/* Evaluate every evaluable user (split test = 1, validation = 0), spread
 * over the ranks in contiguous blocks; out holds the global means.
 * Collective over all ranks. */
void eval_split(const struct eval_ctx *ev, int test, struct eval_metrics *out);
/* The most-popular-items baseline on the same split (eval_popular.c). */
void eval_popular(const struct eval_ctx *ev, int test, struct eval_metrics *out);
/* Set ec's item hook: with item features, items are scored by their
 * representation (row + item features: ev->item_rows). */
void eval_conf_items(const struct eval_ctx *ev, struct eval_conf *ec);
/* Add "hr@K", "ndcg@K" and "mrr" fields to a metrics line. */
void eval_metrics_json(const struct eval_metrics *m, struct metrics_line *l);

/* An evaluation of either task (train.task). */
struct eval_result {
    struct eval_metrics r;   /* retrieval */
    struct rank_metrics k;   /* ranking (eval_ranking.h) */
    /* bytes the evaluation copied host -> device and device -> host, the
     * largest over ranks (backend/devstats.h; 0 on the CPU backend) */
    double h2d, d2h;
};

/* The evaluation side of a task (its training side: model/task.h's
 * task_ops): one per task kind, chosen once by the run's train.task
 * (eval_ops_of). */
struct eval_ops {
    /* split test (1) or validation (0): the metrics accumulated on each
     * rank and reduced over all of them into out (collective) */
    void (*run)(const struct eval_ctx *ev, int test, struct eval_result *out);
    /* what train.keep_best and train.patience follow, as a score where
     * higher is better (checkpoints keep it: best_val, in [0, 1] or -1),
     * the metric's value of such a score, and the metric's name */
    double (*select)(const struct eval_ctx *ev, const struct eval_result *e);
    double (*select_value)(const struct eval_ctx *ev, double score);
    const char *(*select_name)(const struct eval_ctx *ev);
    /* the eval line's text and its metrics fields */
    void (*format)(const struct eval_ctx *ev, const struct eval_result *e, char *buf, size_t len);
    void (*json)(const struct eval_ctx *ev, const struct eval_result *e, struct metrics_line *l);
    /* train.baseline: the baselines on split test into out[] with their
     * eval lines' split names (at most EVAL_MAX_BASELINES); their number
     * (collective) */
    int (*baselines)(const struct eval_ctx *ev, int test, struct eval_result *out, const char **names);
};
#define EVAL_MAX_BASELINES 4
extern const struct eval_ops eval_retrieval_ops; /* eval.c */
extern const struct eval_ops eval_ranking_ops;   /* eval_ranking.c */
const struct eval_ops *eval_ops_of(const struct eval_ctx *ev);

/* Evaluate split test (1) or validation (0) as the run's task does.
 * Collective over all ranks. */
void eval_run(const struct eval_ctx *ev, int test, struct eval_result *out);
/* What train.keep_best and train.patience follow, higher is better:
 * NDCG@10, or ranking's train.select metric (AUC, GAUC, accuracy as they
 * are; NE, logloss, MSE, MAE as 1 / (1 + value); NaN: -1, never better);
 * its name. */
double eval_select(const struct eval_ctx *ev, const struct eval_result *e);
const char *eval_select_name(const struct eval_ctx *ev);
/* The metric's value of a score of eval_select (for messages). */
double eval_select_value(const struct eval_ctx *ev, double score);
/* Whether e is better than the best validation so far (best, a score of
 * eval_select; -1: none): keep_best's and patience's comparison. */
int eval_better(const struct eval_ctx *ev, const struct eval_result *e, double best);
/* The task's baselines (eval_ops.baselines); collective. */
int eval_baselines(const struct eval_ctx *ev, int test, struct eval_result *out, const char **names);
/* The eval line's text and its metrics fields. */
void eval_result_format(const struct eval_ctx *ev, const struct eval_result *e, char *buf,
                        size_t len);
void eval_result_json(const struct eval_ctx *ev, const struct eval_result *e,
                      struct metrics_line *l);

#endif
