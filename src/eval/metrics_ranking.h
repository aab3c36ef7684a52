/* metrics_ranking: the metrics of a ranking evaluation, exact over all ranks
 * (doc/ranking.md): the (user, labels, scores) records of every
 * candidate are gathered to rank 0 in the order of the evaluated users'
 * list (the same on any rank count), computed there in that order and
 * broadcast, so they repeat bit for bit whatever P is.
 *
 * Per binary task, over the candidates with that task's label (score =
 * the logit z, p = sigmoid(z)):
 *   AUC       the probability that a positive scores above a negative,
 *             ties counted half, over every pair (sorted scores, groups
 *             of equal scores: not a histogram approximation);
 *   GAUC      the per-user AUC averaged with weights = the user's
 *             candidates, over users with both classes;
 *   logloss   mean of softplus(z) - y z; NE = logloss / H(p), the entropy
 *             of the candidates' positive rate p (NaN when p is 0 or 1);
 *   accuracy  the fraction with (z >= 0) == y.
 * Per regression task (score = the prediction): MSE and MAE. */
#ifndef FS_METRICS_RANKING_H
#define FS_METRICS_RANKING_H

#include <stdint.h>
#include <stdio.h>

#include "base/metrics.h"
#include "comm/comm.h"
#include "data/batch_ranking.h"

struct task_metrics {
    int64_t n;               /* candidates with a label */
    int64_t pos;             /* of which positive (binary) */
    double auc, gauc, logloss, ne, accuracy;
    int64_t gauc_users;      /* users in the GAUC */
    double mse, mae;
};

struct rank_metrics {
    int K;
    int64_t candidates, users;
    struct task_metrics t[RANK_MAX_TASKS];
};

/* An evaluation's records (host memory): candidate i of user user[i]. */
struct rank_records {
    int K;
    int64_t n, cap;
    int64_t *user;           /* [n] dataset user index */
    float *label;            /* [n, K] NaN: missing */
    double *score;           /* [n, K] binary: logit; regression: prediction */
};

void rank_records_init(struct rank_records *r, int K);
void rank_records_free(struct rank_records *r);
/* Append one candidate. */
void rank_records_add(struct rank_records *r, int64_t user, const float *label,
                      const double *score);
/* Append every rank's records of group COMM_DP to rank 0's `all`, in rank
 * order (collective); local is emptied. */
void rank_records_gather(struct comm *c, struct rank_records *local, struct rank_records *all);

/* The metrics of records r (users contiguous), binary[k] per task. */
void metrics_ranking_compute(const struct rank_records *r, const int *binary,
                             struct rank_metrics *m);
/* AUC of n (score, label in {0, 1}) pairs, ties counted half; NaN without
 * both classes. (Exposed for tests.) */
double metrics_auc(int64_t n, const double *score, const float *label);

/* "like AUC 0.7712 GAUC 0.6543 NE 0.8765 logloss 0.6012 acc 0.6934 | rating
 * MSE 0.8123 MAE 0.7012 (9818 candidates, 610 users)" */
void rank_metrics_format(const struct rank_metrics *m, const char *const *names,
                         const int *binary, char *buf, size_t len);
/* TASK.auc, TASK.gauc, TASK.ne, TASK.logloss, TASK.accuracy (binary),
 * TASK.mse, TASK.mae (regression), candidates, eval_users. */
void rank_metrics_json(const struct rank_metrics *m, const char *const *names,
                       const int *binary, struct metrics_line *l);
/* Rank 0: the records as csv rows task,user,label,score into path
 * (written as path.tmp, renamed). */
void rank_records_dump(const struct rank_records *r, const char *const *names,
                       const char *path);

#endif
