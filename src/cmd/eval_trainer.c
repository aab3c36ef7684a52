/* eval_trainer: a trainer's evaluation context; see eval_trainer.h. */
#include "cmd/eval_trainer.h"

#include <stdlib.h>

#include "base/log.h"
#include "cli/cli.h"
#include "eval/eval_ranking.h"
#include "train/infer.h"
#include "train/train_dyn.h"

static void user_vectors(void *inf, const struct seq_batch *b, float *out)
{
    infer_user_vectors(inf, b, out);
}

static void predict(void *inf, const struct seq_batch *b, double *pred)
{
    infer_predict(inf, b, pred);
}

static void item_rows(void *inf, const int64_t *ids, int64_t n, float *rows)
{
    infer_item_rows(inf, ids, n, rows);
}

static int64_t history_tokens(void *inf, int64_t events)
{
    return infer_history_tokens(inf, events);
}

static struct emb_table *view_begin(void *inf)
{
    struct trainer *tr = inf;
    train_dyn_view_begin(tr);
    return tr->items;
}
static void view_end(void *inf) { train_dyn_view_end(inf); }
static const float *view_shared(void *inf)
{
    (void)inf;
    return train_dyn_view_shared();
}

static int calibration(void *inf, double *ab)
{
    struct trainer *tr = inf;
    return task_ranking_calibration(&tr->task, ab);
}

static void set_calibration(void *inf, const double *ab)
{
    struct trainer *tr = inf;
    task_ranking_set_calibration(&tr->task, ab);
}

void eval_ctx_of(struct trainer *tr, struct eval_ctx *ev)
{
    const struct train_conf *cf = &tr->conf;
    *ev = (struct eval_ctx){.c = tr->c, .ds = &tr->ds, .split = cf->split,
                            .rsplit = &tr->rsplit, .task = &cf->task, .N = cf->N, .d = cf->d,
                            .with_ts = tr->with_ts, .normalize_items = cf->normalize_items,
                            .items = tr->items, .inf = tr, .user_vectors = user_vectors,
                            .predict = predict, .item_rows = tr->feat ? item_rows : NULL,
                            .history_tokens = history_tokens, .view_begin = view_begin,
                            .view_end = view_end, .view_shared = view_shared};
    if (cf->task.calibrate) { /* model.calibrate: ranking's head.calib */
        ev->calibration = calibration;
        ev->set_calibration = set_calibration;
    }
}

void eval_trainer_reserve(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    const int64_t N = cf->N;
    int64_t seq = N, T = 0, K = 0; /* a sequence's tokens; the evaluation's batch */
    if (tr->feat) { /* ranking's tokens: contextual ones, two an event with interleave */
        const int64_t h = infer_history_tokens(tr, N); /* N - 1 events */
        seq = h + (N > 1 ? h - infer_history_tokens(tr, N - 1) : 1); /* and one more */
        if (cf->task.type == TASK_RANKING)
            rank_chunk_bound(h, &T, &K);
    }
    const int64_t train = cf->batch_size * seq;
    T = T > train ? T : train;
    const int64_t before = cli_proc_status_kib("VmRSS");
    model_reserve(&tr->m, T, T, K);
    if (tr->task.ops && tr->task.ops->reserve) /* ranking's head: a row a token at most */
        tr->task.ops->reserve(&tr->task, T);
    const int64_t after = cli_proc_status_kib("VmRSS");
    const int head = tr->task.ops && tr->task.ops->reserve;
    if (before >= 0 && after >= 0)
        log_info("stream: the model's%s buffers sized for batches of %lld tokens%s at once "
                 "(%.0f MiB per rank): the most a window's training or evaluation takes, so "
                 "that the memory stays flat", head ? " and the head's" : "", (long long)T,
                 K ? " and the evaluation's key rows" : "", (double)(after - before) / 1024.0);
}
