/* step_rank: the task of a run on the trainer's side; see step_rank.h. */
#include "train/step_rank.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "comm/comm_fail.h"
#include "train/step_feat.h"
#include "train/train.h"

#define STATS_USERS 4096 /* users per label read of the statistics */

/* Warn of the retrieval parameters set away from their defaults in a
 * ranking run (the ranking losses have no negatives and no temperature;
 * a warning, not a refusal: a retrieval file turned into a ranking run
 * on the command line keeps working). */
static void warn_retrieval_only(const struct params *p)
{
    static const enum param_id ids[] = {P_train_loss, P_train_negatives, P_train_negatives_from,
                                        P_train_temperature};
    struct params *def = xmalloc(sizeof *def);
    params_defaults(def);
    for (size_t k = 0; k < sizeof ids / sizeof *ids; k++)
        if (p->v[ids[k]].i != def->v[ids[k]].i) /* the same bits: INT, CHOICE and FLOAT */
            log_warn("%s.%s = %s (%s) is a retrieval parameter (the next item against the "
                     "item table): train.task = ranking ignores it (its losses are the head's "
                     "on train.tasks)", param_defs[ids[k]].section, param_defs[ids[k]].key,
                     p->str[ids[k]], p->origin[ids[k]][0] ? p->origin[ids[k]] : "default");
    free(def);
}

void task_setup_conf(struct trainer *tr)
{
    struct train_conf *cf = &tr->conf;
    if (cf->task.type != TASK_RANKING)
        return;
    /* every rank meets the same errors here: the first once (comm_fail_agree) */
    char err[1024] = "train.task = ranking with parallel.split_long = auto: not supported (the "
                     "action tokens and the target mask of a sequence cut into chunks): use one "
                     "or the other";
    comm_fail_agree(tr->c, cf->split_long.on, err);
    warn_retrieval_only(tr->p);
    comm_fail_agree(tr->c, task_conf_resolve(&cf->task, &tr->ds, err, sizeof err) ||
                               rsplit_init(&tr->rsplit, &cf->task.split, &tr->ds, err, sizeof err),
                    err);
    char line[512];
    for (int k = 0; k < cf->task.n; k++) {
        task_describe(&cf->task.t[k], line, sizeof line);
        log_info("task %s", line);
    }
    rsplit_describe(&tr->rsplit, line, sizeof line);
    log_info("ranking: data.split = %s; actions %s; head %d hidden layer%s%s", line,
             cf->task.actions == ACT_INTERLEAVE ? "interleaved" : "summed into the next item",
             cf->task.nmlp, cf->task.nmlp == 1 ? "" : "s",
             cf->task.bias ? "; per-item and per-user logit biases" : "");
    cf->task.bias_items = tr->ds.num_items + 1;
    cf->task.bias_users = tr->ds.num_users;
}

void task_setup_model(struct trainer *tr)
{
    struct train_conf *cf = &tr->conf;
    if (cf->task.type == TASK_RANKING)
        task_ranking_params(&cf->task, &cf->model);
}

/* The training labels' count, sum and sum of squares per task (every
 * rank reads them all: the same statistics on any rank count). */
static int64_t label_sums(struct trainer *tr, double *sums)
{
    int64_t events = 0;
    const struct dataset *ds = &tr->ds;
    const struct label_conf *lc = &tr->conf.task.labels;
    const int K = lc->n;
    memset(sums, 0, (size_t)(3 * K) * sizeof *sums);
    float *lab = NULL;
    int64_t cap = 0;
    for (int64_t u0 = 0; u0 < ds->num_users; u0 += STATS_USERS) {
        const int64_t u1 = u0 + STATS_USERS < ds->num_users ? u0 + STATS_USERS : ds->num_users;
        const int64_t e0 = ds->offsets[u0], n = ds->offsets[u1] - e0;
        if (n * K > cap) {
            cap = n * K;
            lab = xrealloc(lab, (size_t)cap * sizeof *lab);
        }
        labels_read_events(ds, lc, e0, n, lab);
        for (int64_t u = u0; u < u1; u++) {
            int64_t a, b;
            rsplit_bounds(&tr->rsplit, ds, u, &a, &b);
            events += a;
            const float *y = lab + (ds->offsets[u] - e0) * K;
            for (int64_t e = 0; e < a; e++)
                for (int k = 0; k < K; k++)
                    if (!isnan(y[e * K + k])) {
                        sums[3 * k] += 1;
                        sums[3 * k + 1] += y[e * K + k];
                        sums[3 * k + 2] += (double)y[e * K + k] * y[e * K + k];
                    }
        }
    }
    free(lab);
    return events;
}

void task_setup_init(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    if (cf->task.type != TASK_RANKING) {
        const struct retrieval_conf rc = {.full = cf->full, .bce = cf->bce, .R = cf->R,
                                          .normalize_items = cf->normalize_items,
                                          .temperature = cf->temperature};
        task_retrieval_init(&tr->task, &rc);
        return;
    }
    task_ranking_init(&tr->task, &cf->task, &tr->m);
    double sums[3 * RANK_MAX_TASKS];
    char err[2600] = "";
    /* every rank reads every label: the same verdicts, once (comm_fail_agree) */
    snprintf(err, sizeof err, "data.split = %s: no training events are left in %s (every event "
             "is a validation or test candidate): %s", params_str(tr->p, P_data_split),
             cf->data_path, tr->rsplit.conf.mode == RSPLIT_TIME
                                ? "choose a later T (data stats shows the dataset's time range)"
                                : "hold out fewer events per user");
    comm_fail_agree(tr->c, label_sums(tr, sums) == 0, err);
    task_ranking_set_stats(&tr->task, sums);
    step_bias_init(tr);
    for (int k = 0; k < cf->task.n; k++) {
        const double n = sums[3 * k];
        log_info("task %s: %.0f training labels, mean %.6g", cf->task.t[k].name, n,
                 n > 0 ? sums[3 * k + 1] / n : 0.0);
        snprintf(err, sizeof err, "train.tasks: task %s has no label among the training "
                 "events of %s (every value of /events/%s there is missing)",
                 cf->task.t[k].name, cf->data_path, cf->task.t[k].column);
        comm_fail_agree(tr->c, n == 0, err);
    }
}

void task_teardown(struct trainer *tr)
{
    if (tr->task.ops && tr->task.ops->free)
        tr->task.ops->free(&tr->task);
    memset(&tr->task, 0, sizeof tr->task);
    rsplit_free(&tr->rsplit);
    task_conf_free(&tr->conf.task);
}

void step_rank_batch(struct trainer *tr, const struct step_plan *pl, struct seq_batch *sb)
{
    const struct train_conf *cf = &tr->conf;
    batch_rank_train(&tr->ds, &tr->rsplit, &cf->task.labels, cf->N, tr->with_ts, cf->seed,
                     (uint64_t)pl->epoch, pl->users, pl->n, sb);
}

int64_t step_rank_train_tokens(const struct trainer *tr, int64_t u)
{
    int64_t a, b;
    rsplit_bounds(&tr->rsplit, &tr->ds, u, &a, &b);
    const int64_t n = a < tr->conf.N ? a : tr->conf.N;
    const int m = tr->conf.task.actions == ACT_INTERLEAVE ? 2 : 1;
    return (tr->feat ? tr->feat->s.n_user : 0) + m * n;
}
