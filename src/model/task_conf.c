/* task_conf: the task of a run, from the parameters and the dataset; see
 * task.h. */
#include "model/task.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/factor_walk.h"
#include "base/check.h"
#include "data/pools.h"

/* s[0 .. n) without surrounding blanks into out[cap]; its length, or -1
 * when it does not fit. */
static int trimmed(const char *s, size_t n, char *out, size_t cap)
{
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n >= cap)
        return -1;
    memcpy(out, s, n);
    out[n] = 0;
    return (int)n;
}

static int number(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return s[0] && !*end && !errno && isfinite(*v) ? 0 : -1;
}

/* A number in [0, 1e9] or auto (*is_auto = 1, *v untouched) of parameter
 * `name`: 0, or -1 + err naming it. */
static int number_or_auto(const char *name, const char *s, double *v, int *is_auto, char *err,
                          size_t errlen)
{
    *is_auto = !strcmp(s, "auto");
    if (*is_auto)
        return 0;
    if (number(s, v) || *v < 0 || *v > 1e9)
        return errorf(err, errlen, "%s = '%s': a number in [0, 1e9] or auto", name, s);
    return 0;
}

/* model.bias_prior: auto, a number (the item and the user rows' prior) or
 * "I,U" (the item rows' I, the user rows' U), each in [0, 1e9]; unset:
 * train.baseline_prior for both. 0, or -1 + err naming it. */
static int parse_bias_prior(const char *s, struct task_conf *tc, char *err, size_t errlen)
{
    if (!s[0] || !strcmp(s, "auto")) {
        tc->prior_auto = s[0] != 0;
        return 0;
    }
    char buf[64];
    const char *comma = strchr(s, ',');
    const size_t n = comma ? (size_t)(comma - s) : strlen(s);
    if (n < sizeof buf) {
        memcpy(buf, s, n);
        buf[n] = 0;
    }
    double i = -1, u = -1;
    if (n >= sizeof buf || number(buf, &i) || (comma && number(comma + 1, &u)))
        i = -1;
    if (!comma)
        u = i;
    if (!(i >= 0 && i <= 1e9 && u >= 0 && u <= 1e9))
        return errorf(err, errlen, "model.bias_prior = '%s': a number in [0, 1e9] (the item "
                      "and the user rows'), two (\"I,U\": the item rows', the user rows') or "
                      "auto", s);
    tc->bias_prior = i;
    tc->bias_prior_user = u;
    return 0;
}

static int valid_name(const char *s)
{
    if (!s[0])
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '-'))
            return 0;
    return 1;
}

int task_expr_parse(const char *expr, struct task_spec *t)
{
    static const struct {
        const char *s;
        enum label_op op;
    } ops[] = {{">=", LOP_GE}, {"<=", LOP_LE}, {"==", LOP_EQ}, {"!=", LOP_NE},
               {">", LOP_GT},  {"<", LOP_LT}};
    const char *at = NULL;
    size_t k = 0;
    for (const char *p = expr; *p && !at; p++)
        for (k = 0; k < sizeof ops / sizeof *ops; k++)
            if (!strncmp(p, ops[k].s, strlen(ops[k].s))) {
                at = p;
                break;
            }
    char x[64];
    if (!at) {
        t->op = t->kind == TASK_BINARY ? LOP_NONZERO : LOP_VALUE;
        return trimmed(expr, strlen(expr), t->column, sizeof t->column) > 0 &&
                       valid_name(t->column) ? 0 : -1;
    }
    if (t->kind == TASK_REGRESSION)
        return -1;
    t->op = ops[k].op;
    if (trimmed(expr, (size_t)(at - expr), t->column, sizeof t->column) <= 0 ||
        !valid_name(t->column))
        return -1;
    const char *rhs = at + strlen(ops[k].s);
    if (trimmed(rhs, strlen(rhs), x, sizeof x) <= 0)
        return -1;
    if (!number(x, &t->x))
        return 0;
    if ((t->op != LOP_EQ && t->op != LOP_NE) || !valid_name(x)) /* a word: == or != */
        return -1;
    snprintf(t->word, sizeof t->word, "%s", x);
    t->x = 1;
    return 0;
}

/* One entry NAME:KIND:EXPR[:WEIGHT] of train.tasks. */
static int parse_task(const char *text, const char *entry, size_t n, struct task_spec *t,
                      char *err, size_t errlen)
{
    char buf[256], *f[5];
    int nf = 0;
    if (trimmed(entry, n, buf, sizeof buf) < 0)
        return errorf(err, errlen, "train.tasks = %s: the entry '%.*s' is too long", text,
                      (int)n, entry);
    for (char *p = buf; nf < 5;) {
        f[nf++] = p;
        char *c = strchr(p, ':');
        if (!c)
            break;
        *c = 0;
        p = c + 1;
    }
    memset(t, 0, sizeof *t);
    t->weight = 1;
    char kind[32];
    if (nf < 3 || nf > 4 || trimmed(f[0], strlen(f[0]), t->name, sizeof t->name) <= 0 ||
        !valid_name(t->name) || trimmed(f[1], strlen(f[1]), kind, sizeof kind) < 0)
        return errorf(err, errlen, "train.tasks = %s: '%.*s' is not NAME:binary:COLUMN[OP X]"
                      "[:WEIGHT] or NAME:regression:COLUMN[:WEIGHT] (names of letters, digits, "
                      "'_' and '-')", text, (int)n, entry);
    if (!strcmp(kind, "binary"))
        t->kind = TASK_BINARY;
    else if (!strcmp(kind, "regression"))
        t->kind = TASK_REGRESSION;
    else
        return errorf(err, errlen, "train.tasks = %s: task %s: kind '%s' is not binary or "
                      "regression", text, t->name, kind);
    if (task_expr_parse(f[2], t))
        return errorf(err, errlen, "train.tasks = %s: task %s: '%s' is not %s", text, t->name,
                      f[2], t->kind == TASK_BINARY
                                ? "COLUMN, or COLUMN OP X with OP one of >= > <= < == != and "
                                  "X a number (e.g. rating>=4), or == and != with the name of a "
                                  "categorical column's value (event_type==like)"
                                : "a column name (a regression task's label is the value)");
    char w[64];
    if (nf == 4 && (trimmed(f[3], strlen(f[3]), w, sizeof w) <= 0 || number(w, &t->weight) ||
                    !(t->weight > 0)))
        return errorf(err, errlen, "train.tasks = %s: task %s: the weight '%s' is not a number "
                      "above 0", text, t->name, f[3]);
    return 0;
}

static int parse_tasks(const char *text, struct task_conf *tc, char *err, size_t errlen)
{
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, ",");
        if (tc->n == RANK_MAX_TASKS)
            return errorf(err, errlen, "train.tasks = %s: more than %d tasks", text,
                          RANK_MAX_TASKS);
        struct task_spec *t = &tc->t[tc->n];
        if (parse_task(text, p, n, t, err, errlen))
            return -1;
        for (int i = 0; i < tc->n; i++)
            if (!strcmp(tc->t[i].name, t->name))
                return errorf(err, errlen, "train.tasks = %s: task '%s' is defined twice", text,
                              t->name);
        tc->n++;
        p += n + (p[n] == ',');
    }
    return 0;
}

/* model.head: hidden widths "W1,W2,..." ("" = a linear head). */
static int parse_mlp(const char *text, struct task_conf *tc, char *err, size_t errlen)
{
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, ",");
        char w[32];
        double v;
        if (tc->nmlp == TASK_MAX_MLP || trimmed(p, n, w, sizeof w) <= 0 || number(w, &v) ||
            v < 1 || v > 65536 || v != floor(v))
            return errorf(err, errlen, "model.head = %s: expected at most %d hidden widths, "
                          "integers in 1 .. 65536, separated by commas (empty: a linear head)",
                          text, TASK_MAX_MLP);
        tc->mlp[tc->nmlp++] = (int)v;
        p += n + (p[n] == ',');
    }
    return 0;
}

const char *const task_metric_names[TM_COUNT] = {"auc", "gauc", "accuracy", "ne", "logloss",
                                                 "mse", "mae"};

/* train.select: TASK (a binary task's AUC) or TASK.METRIC; empty: the
 * first binary task's AUC (none without a binary task). */
static int parse_select(const char *select, const char *tasks, struct task_conf *tc, char *err,
                        size_t errlen)
{
    char name[PARAM_STR_MAX];
    snprintf(name, sizeof name, "%s", select);
    char *dot = strchr(name, '.');
    if (dot)
        *dot++ = 0;
    tc->select_metric = TM_AUC;
    for (int i = 0; i < tc->n && select[0]; i++)
        if (!strcmp(tc->t[i].name, name))
            tc->select = i;
    for (int i = 0; i < tc->n && !select[0] && tc->select < 0; i++)
        if (tc->t[i].kind == TASK_BINARY)
            tc->select = i;
    if (select[0] && tc->select < 0)
        return errorf(err, errlen, "train.select = %s: no such task (train.tasks = %s)", select,
                      tasks);
    if (tc->select < 0)
        return 0;
    const int binary = tc->t[tc->select].kind == TASK_BINARY;
    if (!dot && !binary)
        return errorf(err, errlen, "train.select = %s: a regression task has no AUC to follow "
                      "(name a binary task, or %s.mse or %s.mae)", select, name, name);
    if (!dot)
        return 0;
    int m = 0;
    while (m < TM_COUNT && strcmp(task_metric_names[m], dot))
        m++;
    if (m == TM_COUNT || binary != (m < TM_MSE))
        return errorf(err, errlen, "train.select = %s: '%s' is not a metric of the %s task %s "
                      "(%s)", select, dot, binary ? "binary" : "regression", name,
                      binary ? "auc, gauc, accuracy, ne, logloss" : "mse, mae");
    tc->select_metric = (enum task_metric)m;
    return 0;
}

int task_conf_from_params(const struct params *p, struct task_conf *tc, char *err,
                          size_t errlen)
{
    memset(tc, 0, sizeof *tc);
    tc->type = !strcmp(params_str(p, P_train_task), "ranking") ? TASK_RANKING : TASK_RETRIEVAL;
    const char *tasks = params_str(p, P_train_tasks), *select = params_str(p, P_train_select);
    const char *split = params_str(p, P_data_split);
    tc->select = -1;
    if (number_or_auto("model.recency", params_str(p, P_model_recency), &tc->recency,
                       &tc->recency_auto, err, errlen))
        return -1;
    if (tc->recency_auto) /* a placeholder until the start-up choice (train/step_bias.c) */
        tc->recency = RECENCY_AUTO_START;
    const char *bp = params_str(p, P_model_bias_prior);
    tc->bias_prior = tc->bias_prior_user = params_f64(p, P_train_baseline_prior);
    if (parse_bias_prior(bp, tc, err, errlen))
        return -1;
    if (tc->type == TASK_RETRIEVAL) {
        if (params_i64(p, P_model_bias) || tc->recency > 0 || params_i64(p, P_model_factors) > 0 ||
            bp[0] || params_i64(p, P_debug_terms_only) ||
            strcmp(params_str(p, P_model_calibrate), "off"))
            return errorf(err, errlen, "%s: for train.task = ranking (this run: retrieval)",
                          params_i64(p, P_model_bias) ? "model.bias = on"
                          : tc->recency > 0           ? "model.recency"
                          : bp[0]                     ? "model.bias_prior"
                          : params_i64(p, P_model_factors) > 0 ? "model.factors"
                          : params_i64(p, P_debug_terms_only) ? "debug.terms_only = on"
                                                      : "model.calibrate");
        const char *pools = params_str(p, P_data_pools);
        if (tasks[0] || select[0] || pools[0])
            return errorf(err, errlen, "%s = %s: for train.task = ranking (this run: "
                          "retrieval)", tasks[0] ? "train.tasks" : select[0] ? "train.select"
                          : "data.pools", tasks[0] ? tasks : select[0] ? select : pools);
        if (strcmp(split, "loo") && strcmp(split, "hstu"))
            return errorf(err, errlen, "data.split = '%s': retrieval takes loo or hstu (last:K "
                          "and time:T split for train.task = ranking)", split);
        return 0;
    }
    if (!tasks[0])
        return errorf(err, errlen, "train.task = ranking needs train.tasks (e.g. "
                      "train.tasks = like:binary:rating>=4,rating:regression:rating)");
    if (parse_tasks(tasks, tc, err, errlen) ||
        parse_mlp(params_str(p, P_model_head), tc, err, errlen) ||
        rsplit_parse(split, &tc->split, err, errlen))
        return -1;
    if (parse_select(select, tasks, tc, err, errlen) ||
        task_pools_parse(params_str(p, P_data_pools), tc, err, errlen))
        return -1;
    tc->actions = !strcmp(params_str(p, P_model_actions), "interleave") ? ACT_INTERLEAVE
                                                                          : ACT_SUM;
    tc->bias = (int)params_i64(p, P_model_bias);
    if (tc->recency > 0 && !tc->bias)
        return errorf(err, errlen, "model.recency = %s needs model.bias = on (its terms are "
                      "fitted beside the per-item and per-user terms)",
                      params_str(p, P_model_recency));
    if (bp[0] && !tc->bias)
        return errorf(err, errlen, "model.bias_prior = %s needs model.bias = on", bp);
    tc->factors = (int)params_i64(p, P_model_factors);
    if (tc->factors > 0 && !tc->bias)
        return errorf(err, errlen, "model.factors = %d needs model.bias = on (its residuals are "
                      "the labels less the items' smoothed means)", tc->factors);
    tc->factor_ridge = params_f64(p, P_model_factor_ridge);
    if (tc->factor_ridge > 0 && (tc->factors == 0 || tc->factors > FACTOR_RIDGE_MAX_F))
        return errorf(err, errlen, "model.factor_ridge = %g needs model.factors in 1 .. %d (an "
                      "F x F solve a token; model.factors = %d)", tc->factor_ridge,
                      FACTOR_RIDGE_MAX_F, tc->factors);
    const char *flr = params_str(p, P_model_factors_lr);
    int flr_auto; /* auto: a number by now in a training run (cmd/train_tune.c) */
    tc->factors_lr = 0;
    if (number_or_auto("model.factors_lr", flr, &tc->factors_lr, &flr_auto, err, errlen))
        return -1;
    if ((flr_auto || tc->factors_lr > 0) && tc->factors == 0)
        return errorf(err, errlen, "model.factors_lr = %s needs model.factors > 0 (it is the "
                      "factor terms' rate)", flr);
    tc->factor_feature = params_str(p, P_model_factor_feature);
    tc->factor_values = 0; /* task_setup_ranking_conf, with the dataset */
    if (tc->factor_feature[0] && tc->factors == 0)
        return errorf(err, errlen, "model.factor_feature = %s%s%s%s needs model.factors > 0 (it "
                      "keys factor rows by an item feature)", tc->factor_feature,
                      p->origin[P_model_factor_feature][0] ? " (" : "",
                      p->origin[P_model_factor_feature],
                      p->origin[P_model_factor_feature][0] ? ")" : "");
    tc->terms_only = (int)params_i64(p, P_debug_terms_only);
    if (tc->terms_only && !tc->bias)
        return errorf(err, errlen, "debug.terms_only = on needs model.bias = on (without it "
                      "the logits would be a constant)");
    const char *cal = params_str(p, P_model_calibrate);
    tc->calibrate = !strcmp(cal, "platt") ? CALIB_PLATT : !strcmp(cal, "temperature")
                    ? CALIB_TEMPERATURE : CALIB_OFF;
    int nbinary = 0;
    for (int k = 0; k < tc->n; k++)
        nbinary += tc->t[k].kind == TASK_BINARY;
    if (tc->calibrate && !nbinary)
        return errorf(err, errlen, "model.calibrate = %s: train.tasks = %s has no binary "
                      "task (it maps a binary task's logit; a regression task's prediction "
                      "is not calibrated)", cal, tasks);
    tc->candidates = params_i64(p, P_data_candidates);
    tc->prior = params_f64(p, P_train_baseline_prior);
    tc->dump = params_str(p, P_debug_rank_dump);
    return 0;
}

/* The names of ds's event columns, for a message. */
void task_event_columns(const struct dataset *ds, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < ds->nfeat && at + 4 < len; i++)
        if (ds->feat[i].kind == DS_EVENTS)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", ds->feat[i].name);
    if (!buf[0])
        snprintf(buf, len, "none");
}

int task_column_decode(const struct dataset *ds, const struct dataset_feature *f,
                       const char *what, const char *word, double **out, char *err,
                       size_t errlen)
{
    if (word[0] && !f->has_map)
        return errorf(err, errlen, "%s: '%s' is a word, compared with the names of a "
                      "categorical column's values (its /feature_maps entry), which /events/%s "
                      "of %s lacks: compare its ids as numbers", what, word, f->name, ds->path);
    double *dec = xmalloc((size_t)f->cardinality * sizeof *dec);
    dec[0] = NAN;
    if (!f->has_map) { /* the ids are the values */
        for (int64_t k = 1; k < f->cardinality; k++)
            dec[k] = (double)k;
        *out = dec;
        return 0;
    }
    char **map = dataset_feat_map(ds, f, err, errlen);
    if (!map) {
        free(dec);
        return -1;
    }
    int found = 0;
    for (int64_t k = 1; word[0] && k < f->cardinality; k++) {
        dec[k] = !strcmp(map[k - 1], word);
        found |= dec[k] != 0;
    }
    if (word[0] && !found) {
        char names[512];
        size_t at = 0;
        names[0] = 0;
        for (int64_t k = 1; k < f->cardinality && at + 8 < sizeof names; k++)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", k > 1 ? ", " : "",
                                   map[k - 1]);
        errorf(err, errlen, "%s: /events/%s of %s has no value '%s' (its values: %s)", what,
               f->name, ds->path, word, names);
        free(map);
        free(dec);
        return -1;
    }
    for (int64_t k = 1; !word[0] && k < f->cardinality; k++)
        if (number(map[k - 1], &dec[k])) {
            errorf(err, errlen, "%s: /events/%s of %s is categorical and its value '%s' (id "
                   "%lld) is not a number: a comparison compares numbers", what, f->name, ds->path, map[k - 1], (long long)k);
            free(map);
            free(dec);
            return -1;
        }
    free(map);
    *out = dec;
    return 0;
}

int task_conf_resolve(struct task_conf *tc, const struct dataset *ds, char *err, size_t errlen)
{
    tc->labels.n = tc->n;
    for (int i = 0; i < tc->n; i++) {
        const struct task_spec *t = &tc->t[i];
        const struct dataset_feature *f = dataset_feat_find(ds, DS_EVENTS, t->column);
        if (!f) {
            char list[1024];
            task_event_columns(ds, list, sizeof list);
            return errorf(err, errlen, "train.tasks: task %s: %s has no /events/%s (its event "
                          "columns: %s; data import --event-cols keeps them%s)", t->name,
                          ds->path, t->column, list, ds->has_actions
                          ? "; its /actions (round(rating x 10), the retrieval's action "
                            "tokens) are no task's column: import again with --event-cols "
                            "rating:float (--format movielens keeps it by default)" : "");
        }
        if (t->kind == TASK_REGRESSION && !f->is_float)
            return errorf(err, errlen, "train.tasks: task %s: regression on /events/%s, a "
                          "categorical column (cardinality %lld) of %s: a regression label "
                          "needs a float column (import it as %s:float)", t->name, t->column,
                          (long long)f->cardinality, ds->path, t->column);
        struct label_col *c = &tc->labels.c[i];
        c->f = f;
        c->op = t->op;
        c->x = t->x;
        if (f->is_float && t->word[0])
            return errorf(err, errlen, "train.tasks: task %s: '%s' is a word and /events/%s of "
                          "%s a float column: a word compares with a categorical column's "
                          "value names", t->name, t->word, t->column, ds->path);
        if (!f->is_float) {
            char what[96];
            snprintf(what, sizeof what, "train.tasks: task %s", t->name);
            if (task_column_decode(ds, f, what, t->word, &tc->decode[i], err, errlen))
                return -1;
            c->decode = tc->decode[i];
        }
    }
    return task_pools_resolve(tc, ds, err, errlen);
}

void task_conf_free(struct task_conf *tc)
{
    if (tc->pools) {
        pools_free(tc->pools);
        free(tc->pools);
        tc->pools = tc->labels.pools = NULL;
    }
    for (int i = 0; i < RANK_MAX_TASKS; i++) {
        free(tc->decode[i]);
        tc->decode[i] = NULL;
    }
}

void task_describe(const struct task_spec *t, char *buf, size_t len)
{
    static const char *ops[] = {"", "!= 0", ">=", ">", "<=", "<", "==", "!="};
    if (t->kind == TASK_REGRESSION)
        snprintf(buf, len, "%s: regression on %s, weight %g", t->name, t->column, t->weight);
    else if (t->op == LOP_NONZERO)
        snprintf(buf, len, "%s: binary, %s != 0, weight %g", t->name, t->column, t->weight);
    else if (t->word[0])
        snprintf(buf, len, "%s: binary, %s %s %s, weight %g", t->name, t->column, ops[t->op],
                 t->word, t->weight);
    else
        snprintf(buf, len, "%s: binary, %s %s %g, weight %g", t->name, t->column, ops[t->op],
                 t->x, t->weight);
}
