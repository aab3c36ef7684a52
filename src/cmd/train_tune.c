/* train_tune: train.tune, the learning rates and dropout chosen on the
 * validation events (train_tune.h).
 *
 * The search, coordinate-wise as model.bias_prior's and model.recency's
 * (train/step_bias_search.c): the rates x 1/3, 1, 3, 10 (train.lr,
 * embedding.lr and a set features.lr and model.factors_lr together: a geometric grid of ratio
 * ~3 that reaches 1e-2 from Adam's 1e-3) at the given dropout, then
 * model.dropout 0, 0.2, 0.4 at the chosen rates; a candidate already run
 * is not run again. Each candidate is a trainer of its own from a copy of the
 * parameters: the run's epochs (train.tune_epochs: fewer) with its
 * patience and learning-rate schedule, validated after every epoch; its
 * score is its best validation (eval_select); the highest wins, the first
 * of equals. No checkpoint, no metrics file, no test. The candidates say
 * only their result (log_mute): the run says its set-up once.
 *
 * The start-up choice of model.bias_prior = auto and model.recency = auto
 * (train/step_bias_search.c: the data's, not the rates') is made once, by
 * the first candidate, and taken by the others and the run (struct
 * bias_choice). model.factors_lr = auto's candidates (train.lr x 1, 3, 10,
 * 30, 100) are runs alike, after train.tune's choice.
 *
 * A resumed run (train.resume = PATH, or auto with a checkpoint of this run
 * in output.checkpoint_dir) does not search again: its checkpoint's stored
 * parameters hold the rates and dropout its first start chose, which it
 * takes and says so. The directory's refusals (ckpt_train.h) come before
 * any candidate's run. */
#include "cmd/train_tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "ckpt/ckpt.h"
#include "ckpt/ckpt_run.h"
#include "ckpt/ckpt_train.h"
#include "cmd/eval_trainer.h"
#include "comm/comm_fail.h"
#include "eval/eval.h"
#include "train/planner.h"
#include "train/train.h"

static void set(struct params *p, const char *sec, const char *key, double v)
{
    char val[64], err[PARAM_ERR_MAX];
    snprintf(val, sizeof val, "%.6g", v);
    if (params_set(p, sec, key, val, "train.tune", err, sizeof err))
        fatal("train.tune: %s", err); /* within the table's range: checked by train_tune */
}

/* model.factors_lr as a number: 0 when not set (or auto, not chosen yet) */
static double factors_lr(const struct params *p)
{
    return strtod(params_str(p, P_model_factors_lr), NULL);
}

/* p's rates = base's x f: train.lr, embedding.lr, and features.lr and
 * model.factors_lr where set */
static void scale_rates(struct params *p, const struct params *base, double f)
{
    set(p, "train", "lr", f * params_f64(base, P_train_lr));
    set(p, "embedding", "lr", f * params_f64(base, P_embedding_lr));
    if (params_f64(base, P_features_lr) > 0)
        set(p, "features", "lr", f * params_f64(base, P_features_lr));
    if (factors_lr(base) > 0)
        set(p, "model", "factors_lr", f * factors_lr(base));
}

/* One candidate's run: the rates x f, dropout d; returns its best
 * validation score (eval_select), *epoch its epoch, logged after label
 * (NULL: train.tune's, the factor and the dropout). */
static double candidate(struct comm *c, const struct params *base, double f, double d,
                        const char *label, struct bias_choice *bc, int64_t *epoch, char *name,
                        size_t nlen)
{
    struct params *p = xmalloc(sizeof *p);
    *p = *base;
    char err[PARAM_ERR_MAX];
    scale_rates(p, base, f);
    set(p, "model", "dropout", d);
    const char *off[][3] = {{"train", "keep_best", "off"}, {"output", "checkpoint_dir", ""},
                            {"output", "metrics", ""},     {"train", "resume", ""},
                            {"train", "baseline", "off"}};
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++)
        if (params_set(p, off[i][0], off[i][1], off[i][2], "train.tune", err, sizeof err))
            fatal("train.tune: %s", err);
    if (params_i64(base, P_train_tune_epochs) > 0 &&
        params_i64(base, P_train_tune_epochs) < params_i64(base, P_train_epochs))
        set(p, "train", "epochs", (double)params_i64(base, P_train_tune_epochs));
    struct trainer tr = {.c = c, .p = p, .best_val = -1, .best_epoch = -1, .val_epoch = -1,
                         .bias_choice = bc};
    log_mute(1); /* its set-up: the run's, said once by the run */
    trainer_open(&tr);
    trainer_build(&tr);
    const struct train_conf *cf = &tr.conf;
    struct planner pl;
    planner_init(&pl, &tr);
    const int64_t S = pl.steps_per_epoch;
    int64_t total = S * cf->epochs;
    if (cf->max_steps > 0 && cf->max_steps < total)
        total = cf->max_steps;
    tr.optim.conf.total_steps = total;
    steptime_init(&tr.st, cf->log_every, 0);
    struct eval_ctx ev;
    eval_ctx_of(&tr, &ev);
    const int lookahead = cf->overlap != OVERLAP_NONE;
    while (tr.step < total) {
        const struct step_plan *now = planner_plan(&pl, &tr, tr.step);
        const struct step_plan *next =
            lookahead && tr.step + 1 < total ? planner_plan(&pl, &tr, tr.step + 1) : NULL;
        int64_t tokens;
        train_step(&tr, now, next, &tokens);
        tr.step++;
        if (tr.step % S != 0 && tr.step != total)
            continue;
        const int64_t done = (tr.step + S - 1) / S;
        struct eval_result val;
        eval_run(&ev, 0, &val);
        if (eval_better(&ev, &val, tr.best_val)) {
            tr.best_val = eval_select(&ev, &val);
            tr.best_epoch = done;
        }
        if (cf->patience > 0 && done - tr.best_epoch >= cf->patience)
            break;
    }
    train_step_drain(&tr);
    planner_free(&pl);
    log_mute(0);
    const double best = tr.best_val;
    *epoch = tr.best_epoch;
    snprintf(name, nlen, "%s", eval_select_name(&ev));
    char said[80];
    if (!label)
        snprintf(said, sizeof said, "train.tune: rates x %.3g, dropout %g", f, d);
    if (best >= 0)
        log_info("%s: best validation %s %.4f at epoch %lld", label ? label : said, name,
                 eval_select_value(&ev, best), (long long)*epoch);
    trainer_free(&tr);
    free(p);
    return best;
}

/* What train.tune's choice sets, as the stored parameters name them */
static const char *const chosen_keys[] = {"train.lr", "embedding.lr", "features.lr",
                                          "model.factors_lr", "model.dropout"};
#define NCHOSEN (sizeof chosen_keys / sizeof *chosen_keys)

/* What a resumed run takes from its checkpoint's stored parameters instead
 * of searching again: keys[n] (n <= NCHOSEN); with flag, the checkpoint's
 * run must have searched too (its stored line of flag not flag_off). */
struct choice {
    const char *what; /* the setting searched, for messages: "train.tune = lr" */
    const char *flag, *flag_off;
    const char *const *keys;
    size_t n;
    void (*say)(const struct params *p, char *buf, size_t len); /* the choice taken, in words */
};

struct resumed {
    int found;             /* a checkpoint to resume: its choice in line[] */
    char path[4300];
    char line[NCHOSEN][PARAM_STR_MAX + 64]; /* "section.key=value" */
};

/* Line "key=value" of the stored parameters text into line; 0, or -1. */
static int stored_line(const char *text, const char *key, char *line, size_t len)
{
    const size_t k = strlen(key);
    for (const char *at = text; at && *at; at = strchr(at, '\n'), at = at ? at + 1 : NULL)
        if (!strncmp(at, key, k) && at[k] == '=') {
            snprintf(line, len, "%.*s", (int)strcspn(at, "\n"), at);
            return 0;
        }
    return -1;
}

/* Rank 0: the checkpoint the run resumes (r->found), its choice read. 0,
 * or -1 with err. */
static int find_resumed(const struct trainer *tr, const struct choice *ch, struct resumed *r,
                        char *err, size_t len)
{
    const char *resume = tr->conf.resume, *dir = tr->conf.checkpoint_dir;
    if (!strcmp(resume, "auto")) {
        struct ckpt_run run;
        ckpt_run_identity(tr, &run);
        if (!dir[0] || ckpt_run_newest(dir, &run, r->path, sizeof r->path))
            return 0; /* nothing to resume: a fresh start, which searches */
    } else
        snprintf(r->path, sizeof r->path, "%s", resume);
    char e[1024], flag[PARAM_STR_MAX + 64];
    char *text = checkpoint_params(r->path, e, sizeof e);
    if (!text)
        return errorf(err, len, "%s: train.resume = %s: %s", ch->what, resume, e);
    int rc = 0;
    if (ch->flag && (stored_line(text, ch->flag, flag, sizeof flag) ||
                     !strcmp(flag + strlen(ch->flag) + 1, ch->flag_off)))
        rc = errorf(err, len, "%s: %s was written by a run without %s: a resumed run goes on "
                    "at the rates and dropout it trained with; resume it without %s, or start "
                    "afresh", ch->what, r->path, ch->flag, ch->flag);
    for (size_t i = 0; i < ch->n && !rc; i++)
        if (stored_line(text, ch->keys[i], r->line[i], sizeof r->line[i]))
            rc = errorf(err, len, "%s: %s stores no %s", ch->what, r->path, ch->keys[i]);
    free(text);
    r->found = !rc;
    return rc;
}

/* The directory's refusals first, then for a resumed run its checkpoint's
 * choice set in p (every rank) and said: 1, or 0 when the run starts
 * afresh (the search follows). A trainer of its own opened (not built)
 * from p. */
static int resumed_choice(struct comm *c, struct params *p, const struct choice *ch)
{
    struct trainer tr = {.c = c, .p = p, .best_val = -1, .best_epoch = -1, .val_epoch = -1};
    struct resumed *r = xcalloc(1, sizeof *r);
    char err[2400] = "";
    log_mute(1);
    trainer_open(&tr);
    train_ckpt_check_dir(&tr);
    log_mute(0);
    int bad = c->rank == 0 && tr.conf.resume[0] && find_resumed(&tr, ch, r, err, sizeof err);
    trainer_free(&tr);
    comm_fail_agree(c, bad, err);
    comm_bcast_bytes(c, r, sizeof *r, 0);
    char origin[4400];
    snprintf(origin, sizeof origin, "%s (%s's choice, stored)", r->path, ch->what);
    for (size_t i = 0; i < ch->n && r->found && !bad; i++)
        bad = params_override(p, r->line[i], origin, err, sizeof err) != 0;
    comm_fail_agree(c, bad, err); /* the same on every rank */
    const int found = r->found;
    if (found) {
        char said[256];
        ch->say(p, said, sizeof said);
        log_info("%s: resumed from %s: the choice it trained with, not searched again: %s",
                 ch->what, r->path, said);
    }
    free(r);
    return found;
}

/* struct choice's say: train.tune's, model.factors_lr = auto's */
static void say_rates(const struct params *p, char *buf, size_t len)
{
    snprintf(buf, len, "train.lr %g, embedding.lr %g, dropout %g", params_f64(p, P_train_lr),
             params_f64(p, P_embedding_lr), params_f64(p, P_model_dropout));
}

static void say_factors_lr(const struct params *p, char *buf, size_t len)
{
    snprintf(buf, len, "%s", params_str(p, P_model_factors_lr));
}

#define TUNE_N 3  /* dropouts */
#define TUNE_NF 4 /* rate factors */

/* train.tune */
static void tune_rates(struct comm *c, struct params *p, struct bias_choice *bc)
{
    const char *what = params_str(p, P_train_tune);
    if (!strcmp(what, "off"))
        return;
    char label[PARAM_STR_MAX + 16];
    snprintf(label, sizeof label, "train.tune = %s", what);
    const struct choice ch = {label, "train.tune", "off", chosen_keys, NCHOSEN, say_rates};
    if (resumed_choice(c, p, &ch))
        return;
    const int tune_lr = strstr(what, "lr") != NULL, tune_d = strstr(what, "dropout") != NULL;
    const double fs[TUNE_NF] = {1.0 / 3, 1, 3, 10}, ds[TUNE_N] = {0, 0.2, 0.4};
    const double d0 = params_f64(p, P_model_dropout);
    double score[TUNE_NF][TUNE_N + 1]; /* [rate][dropout]; [.][TUNE_N]: the given dropout */
    for (int i = 0; i < TUNE_NF; i++)
        for (int j = 0; j <= TUNE_N; j++)
            score[i][j] = -2; /* not run */
    char name[64] = "";
    int64_t ep;
    int fi = 1, dj = TUNE_N; /* the given rates and dropout */
    double best = -2;
    for (int i = tune_lr ? 0 : 1; i < (tune_lr ? TUNE_NF : 2); i++) {
        score[i][TUNE_N] = candidate(c, p, fs[i], d0, NULL, bc, &ep, name, sizeof name);
        if (score[i][TUNE_N] > best) {
            best = score[i][TUNE_N];
            fi = i;
        }
    }
    for (int j = 0; tune_d && j < TUNE_N; j++) {
        double s = ds[j] == d0 ? score[fi][TUNE_N] : -2;
        if (s == -2)
            s = score[fi][j] = candidate(c, p, fs[fi], ds[j], NULL, bc, &ep, name, sizeof name);
        if (s > best) {
            best = s;
            dj = j;
        }
    }
    if (best < 0)
        fatal("train.tune = %s: no candidate has a validation %s to choose on (a split with "
              "validation events is needed)", what, name);
    const double f = fs[fi], d = dj == TUNE_N ? d0 : ds[dj];
    struct params *base = xmalloc(sizeof *base);
    *base = *p;
    scale_rates(p, base, f);
    free(base);
    set(p, "model", "dropout", d);
    log_info("train.tune = %s: chosen rates x %.3g (train.lr %g, embedding.lr %g), dropout %g "
             "(validation %s)", what, f, params_f64(p, P_train_lr),
             params_f64(p, P_embedding_lr), d, name);
}

#define TUNE_NFL 5 /* model.factors_lr = auto: train.lr x these */

/* model.factors_lr = auto: the candidates at the (chosen) rates and
 * dropout, the factor terms' rate train.lr x 1, 3, 10, 30, 100 */
static void tune_factors_lr(struct comm *c, struct params *p, struct bias_choice *bc)
{
    if (strcmp(params_str(p, P_model_factors_lr), "auto") || params_i64(p, P_model_factors) == 0 ||
        !strcmp(params_str(p, P_train_schedule), "stream"))
        return; /* nothing to choose, or refused by the trainer (model.factors_lr = auto) */
    static const char *const key[] = {"model.factors_lr"};
    const struct choice ch = {"model.factors_lr = auto", NULL, NULL, key, 1, say_factors_lr};
    if (resumed_choice(c, p, &ch))
        return;
    const double fs[TUNE_NFL] = {1, 3, 10, 30, 100}, lr = params_f64(p, P_train_lr);
    const double d = params_f64(p, P_model_dropout);
    struct params *q = xmalloc(sizeof *q);
    char name[64] = "";
    int64_t ep;
    double best = -2;
    int bi = 0;
    for (int i = 0; i < TUNE_NFL; i++) {
        *q = *p;
        set(q, "model", "factors_lr", fs[i] * lr);
        char label[80];
        snprintf(label, sizeof label, "model.factors_lr = auto: candidate %g (train.lr x %g)",
                 fs[i] * lr, fs[i]);
        const double s = candidate(c, q, 1, d, label, bc, &ep, name, sizeof name);
        if (s > best) {
            best = s;
            bi = i;
        }
    }
    free(q);
    if (best < 0)
        fatal("model.factors_lr = auto: no candidate has a validation %s to choose on (a split "
              "with validation events is needed)", name);
    set(p, "model", "factors_lr", fs[bi] * lr);
    log_info("model.factors_lr = auto: chosen %s (train.lr x %g, the best validation %s)",
             params_str(p, P_model_factors_lr), fs[bi], name);
}

void train_tune(struct comm *c, struct params *p, struct bias_choice *bc)
{
    memset(bc, 0, sizeof *bc);
    tune_rates(c, p, bc);
    tune_factors_lr(c, p, bc);
}
