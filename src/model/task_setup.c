/* task_setup: a run's task at start-up, from its configuration and the
 * open dataset; see task.h ("Start-up"). The trainer's side
 * (train/step_task.c) adds what depends on the run itself: the refusals
 * of what the backend or the parallel settings cannot run, and model.bias's
 * initial values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "data/pools.h"
#include "model/task.h"

#define STATS_USERS 4096 /* users per label read of the statistics */

/* Warn of the retrieval parameters set away from their defaults in a
 * ranking run (the ranking losses have no negatives and no temperature;
 * a warning, not a refusal: a retrieval file turned into a ranking run
 * on the command line keeps working). Rank 0 alone. */
static void warn_retrieval_only(const struct params *p)
{
    if (log_rank() != 0) /* every rank has the same parameters: one warning */
        return;
    static const enum param_id ids[] = {P_train_loss, P_train_negatives, P_train_negatives_from,
                                        P_train_temperature, P_train_shared_negatives};
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

/* model.factor_feature: the dataset's single-valued categorical item
 * feature of that name, or NULL + err naming the file and the key. */
static const struct dataset_feature *factor_feature(const struct task_conf *tc,
                                                    const struct dataset *ds, char *err,
                                                    size_t errlen)
{
    const char *name = tc->factor_feature;
    const struct dataset_feature *f = dataset_feat_find(ds, DS_ITEMS, name);
    if (!f) {
        const int ev = dataset_feat_find(ds, DS_EVENTS, name) != NULL;
        const int us = dataset_feat_find(ds, DS_USERS, name) != NULL;
        char have[512] = "";
        size_t at = 0;
        for (int i = 0; i < ds->nfeat && at + 1 < sizeof have; i++)
            if (ds->feat[i].kind == DS_ITEMS && !ds->feat[i].multi && !ds->feat[i].is_float)
                at += (size_t)snprintf(have + at, sizeof have - at, "%s%s", at ? ", " : "",
                                       ds->feat[i].name);
        char other[160] = "";
        if (ev || us)
            snprintf(other, sizeof other, "; /%s/%s is %s", ev ? "events" : "users", name,
                     ev ? "an events feature (one value per event, not per item)"
                        : "a user feature");
        errorf(err, errlen, "model.factor_feature = %s: %s has no item feature /items/%s%s (its "
               "single-valued categorical item features: %s)", name, ds->path, name, other,
               have[0] ? have : "none");
        return NULL;
    }
    if (f->multi || f->is_float) {
        errorf(err, errlen, "model.factor_feature = %s: /items/%s of %s is %s: the factor rows "
               "need one categorical value per item", name, name, ds->path,
               f->multi ? "multi-valued (a list per item)" : "a float feature");
        return NULL;
    }
    return f;
}

int task_setup_ranking_conf(struct task_conf *tc, const struct params *p,
                            const struct dataset *ds, struct rsplit *rs, char *err,
                            size_t errlen)
{
    warn_retrieval_only(p);
    if (task_conf_resolve(tc, ds, err, errlen) || rsplit_init(rs, &tc->split, ds, err, errlen))
        return -1;
    char line[512];
    for (int k = 0; k < tc->n; k++) {
        task_describe(&tc->t[k], line, sizeof line);
        log_info("task %s", line);
    }
    rsplit_describe(rs, line, sizeof line);
    log_info("ranking: data.split = %s; actions %s; head %d hidden layer%s%s", line,
             tc->actions == ACT_INTERLEAVE ? "interleaved" : "summed into the next item",
             tc->nmlp, tc->nmlp == 1 ? "" : "s",
             tc->bias ? "; per-item and per-user logit biases" : "");
    if (tc->pools) {
        const int64_t N = params_i64(p, P_data_max_seq_len);
        if (pools_per(tc->pools, N - 1) < 1)
            return errorf(err, errlen, "data.pools: %d pools need data.max_seq_len >= %d (an "
                          "evaluated history holds data.max_seq_len - 1 events, floor of that / "
                          "%d of each pool; this run: %lld)", tc->pools->n, tc->pools->n + 1,
                          tc->pools->n, (long long)N);
        task_pools_describe(tc->pools, line, sizeof line);
        log_info("ranking: histories from %d pools, the last %lld events of each in training "
                 "(%lld in an evaluated history): %s", tc->pools->n,
                 (long long)pools_per(tc->pools, N), (long long)pools_per(tc->pools, N - 1),
                 line);
    }
    tc->bias_items = ds->num_items + 1;
    tc->bias_users = ds->num_users;
    tc->factor_values = 0;
    if (tc->factor_feature && tc->factor_feature[0]) {
        const struct dataset_feature *f = factor_feature(tc, ds, err, errlen);
        if (!f)
            return -1;
        tc->factor_values = f->cardinality;
        if (f->cardinality > INT32_MAX)
            return errorf(err, errlen, "model.factor_feature = %s: /items/%s of %s has %lld "
                          "values: a dense tensor holds at most %d rows", tc->factor_feature,
                          f->name, ds->path, (long long)f->cardinality, INT32_MAX);
        log_info("ranking: factor rows keyed by /items/%s (one row a value: %lld)",
                 f->name, (long long)f->cardinality);
    }
    return 0;
}

/* The training labels' count, sum and sum of squares per task (every
 * rank reads them all: the same statistics on any rank count). */
static int64_t label_sums(const struct task_data *d, const struct label_conf *lc, double *sums)
{
    int64_t events = 0;
    const struct dataset *ds = d->ds;
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
            rsplit_bounds(d->rsplit, ds, u, &a, &b);
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

int task_setup_ranking(struct task *t, const struct task_conf *tc, struct model *m,
                       const struct task_data *d, const char *data_path, const char *split,
                       double *sums, char *err, size_t errlen)
{
    task_ranking_init(t, tc, m);
    if (label_sums(d, &tc->labels, sums) == 0) {
        snprintf(err, errlen, "data.split = %s: no training events are left in %s (every event "
                 "is a validation or test candidate): %s", split, data_path,
                 d->rsplit->conf.mode == RSPLIT_TIME
                     ? "choose a later T (data stats shows the dataset's time range)"
                     : "hold out fewer events per user");
        return -1;
    }
    task_ranking_set_stats(t, sums);
    if (tc->factor_values > 0) { /* each item's value of model.factor_feature */
        const struct dataset *ds = d->ds;
        const struct dataset_feature *f = factor_feature(tc, ds, err, errlen);
        if (!f)
            return -1;
        int32_t *v = xmalloc((size_t)(ds->num_items > 0 ? ds->num_items : 1) * sizeof *v);
        const int bad = dataset_feat_ints(ds, f, 0, ds->num_items, v, err, errlen);
        if (!bad)
            task_ranking_set_factor_values(t, v, ds->num_items);
        free(v);
        if (bad)
            return -1;
    }
    return 0;
}

int task_setup_ranking_labels(const struct task_conf *tc, const char *data_path,
                              const double *sums, char *err, size_t errlen)
{
    for (int k = 0; k < tc->n; k++) {
        const double n = sums[3 * k];
        log_info("task %s: %.0f training labels, mean %.6g", tc->t[k].name, n,
                 n > 0 ? sums[3 * k + 1] / n : 0.0);
        if (n == 0) {
            snprintf(err, errlen, "train.tasks: task %s has no label among the training events "
                     "of %s (every value of /events/%s there is missing)", tc->t[k].name,
                     data_path, tc->t[k].column);
            return -1;
        }
    }
    return 0;
}
