/* eval_ctx: what evaluation reads of a run (filled by the command that
 * evaluates: cmd/eval_trainer.c), so that eval/ does not depend on the
 * trainer: the data and the splits, the task, the item table, and the
 * model's inference forward (train/infer.h) through hooks on inf. */
#ifndef FS_EVAL_CTX_H
#define FS_EVAL_CTX_H

#include <stdint.h>

#include "comm/comm.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "data/split.h"
#include "data/split_ranking.h"
#include "data/batch_window.h"
#include "embedding/emb_table.h"
#include "model/task.h"

struct eval_ctx {
    struct comm *c;
    const struct dataset *ds;
    enum split_mode split;         /* retrieval: data.split */
    const struct rsplit *rsplit;   /* ranking: data.split */
    int window;                    /* retrieval in the stream schedule: rsplit's validation
                                      part [a, b) of each user are the targets, each ranked
                                      from the events before a (data/batch_window.h), the
                                      popularity counted over the events before a */
    const struct task_conf *task;  /* train.task and the ranking tasks */
    int N, d, with_ts;             /* data.max_seq_len, model.dim, timestamps used */
    int normalize_items;           /* the item rows L2-normalised in the score */
    struct emb_table *items;       /* the item table */
    /* the inference forward (train/infer.h), called with inf: collective */
    void *inf;
    void (*user_vectors)(void *inf, const struct seq_batch *b, float *out);
    void (*predict)(void *inf, const struct seq_batch *b, double *pred);
    /* rows [n, d] += the items' features; NULL without item features */
    void (*item_rows)(void *inf, const int64_t *ids, int64_t n, float *rows);
    /* ranking: the model tokens of a candidate's history of `events` events */
    int64_t (*history_tokens)(void *inf, int64_t events);
    /* around an evaluation (NULL: nothing): a dynamic item table's dense
     * view, which view_begin returns for the evaluation to read */
    struct emb_table *(*view_begin)(void *inf);
    void (*view_end)(void *inf);
    /* during it: the row of the view's items without one of their own (the
     * unadmitted row, eval_retrieval.h's shared_row), NULL: none; eval_run
     * sets items_shared from it */
    const float *(*view_shared)(void *inf);
    const float *items_shared;
    /* ranking with model.calibrate (eval/platt.h), else NULL: the
     * model's a [K], b [K] into ab (1: on), and a validation's fit stored */
    int (*calibration)(void *inf, double *ab);
    void (*set_calibration)(void *inf, const double *ab);
};

#endif
