/* step_task: the task of a run on the trainer's side; see step_task.h. */
#include "train/step_task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "comm/comm_fail.h"
#include "train/bias_ids.h"
#include "train/bias_rows.h"
#include "train/step_feat.h"
#include "train/train.h"

/* model.bias over window files: its rows keyed by raw id over every file
 * (train/bias_ids.h), sized so; what cannot follow them is refused. */
static void bias_files(struct trainer *tr)
{
    struct task_conf *tc = &tr->conf.task;
    if (!tr->files || !tc->bias)
        return;
    char err[1200] = "";
    const char *no = params_i64(tr->p, P_train_follow) ? "train.follow = on (a file that arrives "
                     "later may bring items and users the rows, made from the files present at "
                     "the start, do not hold)"
                     : tc->recency > 0 ? "model.recency (its items' centres are numbered by the "
                     "window's item list, which grows)"
                     : tc->factors > 0 ? "model.factors (its items' centres are numbered by the "
                     "window's item list, which grows)"
                     : params_i64(tr->p, P_debug_bias_dense) ? "debug.bias_dense (dense tables "
                     "numbered by the window's item list and users)" : NULL;
    if (no)
        snprintf(err, sizeof err, "model.bias = on over window files (data.path = %.300s) is "
                 "not supported with %s: use model.bias = off, or one dataset", tr->conf.data_path,
                 no);
    comm_fail_agree(tr->c, no != NULL, err);
    tr->bias_ids = xcalloc(1, sizeof *tr->bias_ids);
    const int bad = bias_ids_open(tr->bias_ids, tr->files, err, sizeof err) ||
                    bias_ids_window(tr->bias_ids, &tr->ds, err, sizeof err);
    comm_fail_agree(tr->c, bad, err);
    tc->bias_items = tr->bias_ids->ni + 1;
    tc->bias_users = tr->bias_ids->nu;
}

void task_setup_conf(struct trainer *tr)
{
    struct train_conf *cf = &tr->conf;
    if (cf->task.type != TASK_RANKING)
        return;
    /* every rank meets the same errors here: the first once (comm_fail_agree).
     * parallel.split_long: a chunk of a sequence after its first has the
     * earlier chunks' keys and values, not their tokens */
    char err[2600];
    snprintf(err, sizeof err, "train.task = ranking with parallel.split_long = auto and "
             "model.factors = %d: not supported (a position's factor terms are trained through "
             "the factor rows of every earlier event of its sequence, which another chunk holds): "
             "use model.factors = 0 or parallel.split_long = off", cf->task.factors);
    comm_fail_agree(tr->c, cf->split_long.on && cf->task.factors > 0, err);
    err[0] = 0;
    comm_fail_agree(tr->c, task_setup_ranking_conf(&cf->task, tr->p, &tr->ds, &tr->rsplit, err,
                                                   sizeof err) != 0, err);
    bias_files(tr);
}

void task_setup_model(struct trainer *tr)
{
    struct train_conf *cf = &tr->conf;
    if (cf->task.type != TASK_RANKING)
        return;
    /* sharded rows (train/bias_rows.h), not dense tensors */
    cf->task.bias_rows = cf->task.bias && !params_i64(tr->p, P_debug_bias_dense);
    task_ranking_params(&cf->task, &cf->model);
}

/* model.bias's rows, sharded over dp, at step 0 (a resume restarts them at
 * the checkpoint's step). */
static void bias_setup(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    const struct task_conf *tc = &cf->task;
    if (!tc->bias_rows)
        return;
    const struct dense_optim_conf *o = &cf->dense_optim;
    tr->bias = bias_rows_init(tr->c, tc->n, tc->bias_items, tc->bias_users, o->beta1, o->beta2,
                              o->eps, 0);
    if (tr->bias_ids) /* window files: the first window's numbers to the rows */
        bias_rows_map(tr->bias, tr->bias_ids->imap, tr->bias_ids->nimap, tr->bias_ids->umap,
                      tr->bias_ids->numap);
    bias_rows_hooks(tr->bias, &tr->bias_hooks);
    task_ranking_attach_bias(&tr->task, &tr->bias_hooks);
}

void task_setup_init(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    tr->tdata = (struct task_data){.ds = &tr->ds, .split = cf->split, .rsplit = &tr->rsplit,
                                   .N = cf->N, .with_ts = tr->with_ts, .seed = cf->seed,
                                   .context = tr->feat ? tr->feat->s.n_user : 0};
    if (cf->task.type != TASK_RANKING) {
        const struct retrieval_conf rc = {.loss = cf->loss, .R = cf->R,
                                          .normalize_items = cf->normalize_items,
                                          .temperature = cf->temperature,
                                          .shared = cf->shared_negatives > 0};
        task_retrieval_init(&tr->task, &rc);
        return;
    }
    double sums[3 * RANK_MAX_TASKS];
    char err[2600] = "";
    /* every rank reads every label: the same verdicts, once (comm_fail_agree) */
    comm_fail_agree(tr->c, task_setup_ranking(&tr->task, &cf->task, &tr->m, &tr->tdata,
                                              cf->data_path, params_str(tr->p, P_data_split),
                                              sums, err, sizeof err) != 0, err);
    bias_setup(tr);
    step_bias_init(tr);
    comm_fail_agree(tr->c, task_setup_ranking_labels(&cf->task, cf->data_path, sums, err,
                                                     sizeof err) != 0, err);
}

void task_teardown(struct trainer *tr)
{
    if (tr->task.ops && tr->task.ops->free)
        tr->task.ops->free(&tr->task);
    memset(&tr->task, 0, sizeof tr->task);
    bias_rows_free(tr->bias);
    tr->bias = NULL;
    rsplit_free(&tr->rsplit);
    task_conf_free(&tr->conf.task);
}
