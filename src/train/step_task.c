/* step_task: the task of a run on the trainer's side; see step_task.h. */
#include "train/step_task.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "train/step_feat.h"
#include "train/train.h"

void task_setup_conf(struct trainer *tr)
{
    struct train_conf *cf = &tr->conf;
    if (cf->task.type != TASK_RANKING)
        return;
    const int ctx_attn = cf->model.type == MODEL_HSTU ? tr->be->hstu_attn_ctx_fwd != NULL
                                                      : tr->be->sasrec_attn_ctx_fwd != NULL;
    if (!ctx_attn && (cf->final_eval || cf->eval_every > 0))
        fatal("train.task = ranking: the evaluation's target mask (each candidate attends to its "
              "history and itself) needs context-parallel attention, which the %s backend does "
              "not have: run with train.final_eval = off and train.eval_every = 0 (training "
              "alone), or device.type = cpu (doc/gpu.md)", tr->be->name);
    if (cf->split_long.on)
        fatal("train.task = ranking with parallel.split_long = auto: not supported (the action "
              "tokens and the target mask of a sequence cut into chunks): use one or the other");
    task_setup_ranking_conf(&cf->task, tr->p, &tr->ds, &tr->rsplit);
}

void task_setup_model(struct trainer *tr)
{
    struct train_conf *cf = &tr->conf;
    if (cf->task.type == TASK_RANKING)
        task_ranking_params(&cf->task, &cf->model);
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
                                          .temperature = cf->temperature};
        task_retrieval_init(&tr->task, &rc);
        return;
    }
    double sums[3 * RANK_MAX_TASKS];
    task_setup_ranking(&tr->task, &cf->task, &tr->m, &tr->tdata, cf->data_path,
                       params_str(tr->p, P_data_split), sums);
    step_bias_init(tr);
    task_setup_ranking_labels(&cf->task, cf->data_path, sums);
}

void task_teardown(struct trainer *tr)
{
    if (tr->task.ops && tr->task.ops->free)
        tr->task.ops->free(&tr->task);
    memset(&tr->task, 0, sizeof tr->task);
    rsplit_free(&tr->rsplit);
    task_conf_free(&tr->conf.task);
}
