/* train_main: 'freescale train', the training command: the loop over the
 * steps and what comes between them (see train.c for the trainer itself).
 *
 * The loop runs global steps s = first .. total - 1: the planner says
 * which sequences of the step's global batch this rank trains on (and,
 * with parallel.overlap, which ones it trains on at s + 1, prepared during
 * step s), train_step() runs the step (one loss on any number of ranks),
 * then come the progress line and, at the end of an epoch, validation,
 * then the checkpoint (which records it). The run ends with validation,
 * its checkpoint and test, or early on a signal (preempt.c) with a
 * checkpoint. */
#include "cmd/train_main.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/devstats.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/metrics.h"
#include "cli/banner.h"
#include "cli/cli.h"
#include "ckpt/ckpt.h"
#include "ckpt/ckpt_dyn.h"
#include "ckpt/ckpt_train.h"
#include "cmd/train_report.h"
#include "cmd/train_stream.h"
#include "cmd/train_tune.h"
#include "cmd/eval_trainer.h"
#include "eval/eval.h"
#include "train/guard.h"
#include "train/step_task.h"
#include "train/preempt.h"
#include "train/train.h"
#include "train/watchdog.h"

/* train.keep_best: the best validation's checkpoint, DIR/best.h5 */
static void best_path(const struct trainer *tr, char *path, size_t len)
{
    snprintf(path, len, "%s/best.h5", tr->conf.checkpoint_dir);
}

/* Validation after `epochs` epochs; keeps the best NDCG@10 (ranking:
 * train.select's AUC; and with train.keep_best its checkpoint). */
static void validate(struct trainer *tr, int64_t epochs, double loss)
{
    struct eval_ctx ev;
    eval_ctx_of(tr, &ev);
    struct eval_result val;
    watchdog_beat("in", "validation");
    eval_run(&ev, 0, &val);
    train_report_eval(tr, "val", epochs, &val, loss);
    tr->val_epoch = epochs;
    if (eval_better(&ev, &val, tr->best_val)) {
        tr->best_val = eval_select(&ev, &val);
        tr->best_epoch = epochs;
        if (tr->conf.keep_best) {
            char path[4200];
            best_path(tr, path, sizeof path);
            checkpoint_write(tr, path);
            log_info("keep_best: validation %s %.4f at epoch %lld: %s", eval_select_name(&ev),
                     eval_select_value(&ev, tr->best_val), (long long)epochs, path);
        }
    }
}

/* model.bias's values over the training events and over the training and
 * validation events (train/step_task.h), computed once for the tests. */
struct test_bias {
    struct bias_values *from, *to;
};

/* The test evaluation, with model.bias's terms taking in the validation
 * labels for it. */
static void test_run(struct trainer *tr, const struct eval_ctx *ev, const struct test_bias *tb,
                     struct eval_result *test)
{
    float *saved = step_bias_shift(tr, tb->from, tb->to);
    eval_run(ev, 1, test);
    step_bias_restore(tr, saved);
}

/* train.keep_best: the last step's test is reported as test-last, then the
 * best validation's checkpoint is loaded and tested (into test). */
static void test_best(struct trainer *tr, const struct test_bias *tb, struct eval_result *test,
                      double loss)
{
    struct eval_ctx ev;
    eval_ctx_of(tr, &ev);
    train_report_eval(tr, "test-last", tr->epoch, test, loss);
    const int64_t step = tr->step, epoch = tr->epoch;
    char path[4200];
    best_path(tr, path, sizeof path);
    checkpoint_read(tr, path);
    log_info("keep_best: testing %s (epoch %lld, step %lld)", path, (long long)tr->best_epoch,
             (long long)tr->step);
    test_run(tr, &ev, tb, test);
    train_report_eval(tr, "test", tr->best_epoch, test, loss);
    tr->step = step;
    tr->epoch = epoch;
}

/* The test after the last step and its validation (and the popularity
 * baseline). */
static void final_evaluation(struct trainer *tr, struct eval_result *test, double loss)
{
    struct eval_ctx ev;
    eval_ctx_of(tr, &ev);
    watchdog_beat("in", "the test evaluation");
    const struct test_bias tb = {step_bias_values(tr, NULL, 0), step_bias_values(tr, NULL, 1)};
    test_run(tr, &ev, &tb, test);
    if (tr->conf.keep_best)
        test_best(tr, &tb, test, loss);
    else
        train_report_eval(tr, "test", tr->epoch, test, loss);
    if (tr->conf.baseline) {
        struct eval_result base[EVAL_MAX_BASELINES];
        const char *split[EVAL_MAX_BASELINES];
        watchdog_beat("in", "the baselines");
        const int n = eval_baselines(&ev, 1, base, split);
        for (int m = 0; m < n; m++)
            train_report_eval(tr, split[m], tr->epoch, &base[m], 0);
    }
    step_bias_values_free(tb.from);
    step_bias_values_free(tb.to);
}

/* A run stopped by signal sig after tr->step: its checkpoint (save: not
 * yet written), then the metrics line. */
static void report_stop(struct trainer *tr, int sig, double loss, int save)
{
    if (save)
        train_ckpt_save(tr);
    struct metrics_line l;
    metrics_begin(&l, "stop");
    metrics_int(&l, "epoch", tr->epoch);
    metrics_int(&l, "step", tr->step);
    metrics_num(&l, "loss", loss);
    metrics_num(&l, "samples_per_s", 0);
    metrics_num(&l, "tokens_per_s", 0);
    metrics_int(&l, "signal", sig);
    metrics_int(&l, "exit_code", PREEMPT_EXIT_CODE);
    metrics_int(&l, "checkpoint", tr->conf.checkpoint_dir[0] ? 1 : 0);
    metrics_end(&l, tr->metrics);
}

/* --- the loop ---------------------------------------------------------------- */

/* Throughput counters of a logging interval. */
struct loop_clock {
    double start, last;     /* run start, last progress line */
    int64_t first_step;     /* the step this run started at */
    struct interval iv;     /* this interval's work (seconds set at the line) */
    struct split_stats split; /* this interval's */
};

/* After step tr->step: the progress line every train.log_every steps (and
 * at the end), which is also when balance_adapt learns. */
static void after_step(struct trainer *tr, struct planner *pl, struct loop_clock *lc,
                       struct step_stats *stats, double loss, int64_t total)
{
    const struct train_conf *cf = &tr->conf;
    if (steptime_trace_write(&tr->st, tr->c, cf->trace, 0))
        log_info("trace: %s (%lld steps; open in https://ui.perfetto.dev)", cf->trace,
                 (long long)cf->trace_steps);
    if (tr->step % cf->log_every != 0 && tr->step != total)
        return;
    steptime_collect(&tr->st, tr->c, stats);
    planner_adapt(pl, tr, stats);
    double now = clock_seconds();
    double eta = (now - lc->start) / (double)(tr->step - lc->first_step) *
                 (double)(total - tr->step);
    lc->iv.seconds = now - lc->last;
    train_report_progress(tr, stats, loss, &lc->iv, eta, total, &lc->split);
    lc->last = now;
    lc->iv = (struct interval){0};
}

/* After step tr->step of S per epoch: at the end of an epoch due for
 * validation (train.eval_every; not the last step's: the final one), the
 * validation; 1 when train.patience ends the run there. */
static int epoch_end(struct trainer *tr, int64_t S, int64_t total, double loss,
                     struct loop_clock *lc)
{
    struct eval_ctx ev;
    eval_ctx_of(tr, &ev);
    const struct train_conf *cf = &tr->conf;
    const int64_t done = tr->step / S; /* epochs completed */
    if (tr->step % S != 0 || cf->eval_every <= 0 || done % cf->eval_every != 0 ||
        tr->step >= total)
        return 0;
    double t_eval = clock_seconds();
    validate(tr, done, loss);
    lc->last += clock_seconds() - t_eval; /* throughput counts training only */
    struct devstats skip; /* the device counters count training only */
    devstats_take(&skip);
    if (cf->patience > 0 && done - tr->best_epoch >= cf->patience * cf->eval_every) {
        log_info("patience: no better validation %s in %lld validations (best %.4f at "
                 "epoch %lld): stopping after epoch %lld", eval_select_name(&ev),
                 (long long)cf->patience, eval_select_value(&ev, tr->best_val), (long long)tr->best_epoch,
                 (long long)done);
        return 1;
    }
    return 0;
}

/* Steps tr->step .. total - 1; returns the signal that stopped it early
 * (0: none). *loss: the last step's; *early: train.patience ended the run
 * right after a validation. */
static int train_loop(struct trainer *tr, int64_t total, int64_t *last_ckpt, double *loss,
                      struct loop_clock *lc, int *early)
{
    const struct train_conf *cf = &tr->conf;
    struct planner pl;
    planner_init(&pl, tr);
    const int64_t S = pl.steps_per_epoch;
    const int lookahead = cf->overlap != OVERLAP_NONE;
    struct step_stats stats = {0};
    int stop = 0;
    tr->epoch = tr->step / S;
    struct devstats setup; /* the counters count the steps, not the start-up */
    devstats_take(&setup);
    /* resumed from a checkpoint written at an epoch's end before its
     * validation (a stop): that validation first, as the run would have */
    if (tr->step > 0 && tr->val_epoch < tr->step / S)
        *early = epoch_end(tr, S, total, 0, lc); /* 1: patience ends the run there */
    while (tr->step < total && !*early) {
        tr->epoch = tr->step / S;
        watchdog_step(tr->step + 1);
        steptime_begin(&tr->st);
        if (tr->c->rank == cf->hang_rank && tr->step + 1 == cf->hang_step)
            watchdog_debug_hang(); /* debug.hang_rank */
        if (tr->c->rank == cf->signal_rank && tr->step + 1 == cf->signal_step)
            raise(SIGTERM); /* debug.signal_rank */
        const struct step_plan *now = planner_plan(&pl, tr, tr->step);
        const struct step_plan *next =
            lookahead && tr->step + 1 < total ? planner_plan(&pl, tr, tr->step + 1) : NULL;
        steptime_phase(&tr->st, PH_PLAN);
        int64_t tokens;
        *loss = train_step(tr, now, next, &tokens);
        steptime_end(&tr->st, now->cost);
        tr->step++;
        guard_after_step(tr, loss, tr->sparse_sq, tr->dense_sq);
        lc->iv.steps++;
        lc->iv.samples += (double)now->global_B;
        lc->iv.tokens += (double)tokens;
        lc->iv.pairs += now->pairs;
        train_interval_flops(tr, now, &lc->iv);
        lc->split.steps++;
        lc->split.seqs += now->pieces.nsplit;
        lc->split.chunks += now->pieces.n - (now->global_B - now->pieces.nsplit);
        after_step(tr, &pl, lc, &stats, *loss, total);
        if ((stop = preempt_requested(tr->c)) != 0)
            break; /* its checkpoint: train_main */
        /* the epoch's validation, then the checkpoint, which records it (the
         * last step's: train_main, after the final validation) */
        const int64_t validations = tr->val_epoch;
        if ((*early = epoch_end(tr, S, total, *loss, lc)) != 0)
            break;
        const int ckpt = cf->checkpoint_dir[0] && cf->checkpoint_every > 0 &&
                         tr->step % cf->checkpoint_every == 0 && tr->step < total;
        if (ckpt) {
            train_ckpt_save(tr);
            *last_ckpt = tr->step;
        } else if (ckpt_delta_due(tr, total)) /* output.checkpoint_delta_every */
            ckpt_delta_save(tr);
        /* a signal during a validation or a checkpoint: stop now, not a step later */
        if ((ckpt || tr->val_epoch != validations) && (stop = preempt_requested(tr->c)) != 0)
            break;
    }
    if (!stop && tr->step > 0) /* the epochs done, counting a partial last one */
        tr->epoch = (tr->step - 1) / S + 1;
    train_step_drain(tr); /* a next step prepared ahead is not run */
    if (steptime_trace_write(&tr->st, tr->c, cf->trace, 1)) /* fewer steps than trace_steps */
        log_info("trace: %s (%lld steps; open in https://ui.perfetto.dev)", cf->trace,
                 (long long)tr->step);
    free(stats.tau);
    free(stats.tau_cpu);
    free(stats.cost_sum);
    planner_free(&pl);
    return stop;
}

/* --- the command line (the idiom of recommend, score and export) ---------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np P freescale train FILE.in [section.key=value ...] "
               "[--verbose]\n"
               "\n"
               "Trains, validates, checkpoints and tests the model FILE.in describes\n"
               "(doc/training.md); overrides apply on top of FILE.in.\n"
               "  --verbose        print the effective parameters (output.metrics holds\n"
               "                   them always)\n"
               "  -h, --help       this text\n"
               "'freescale help params' lists every parameter, its default, range and "
               "meaning.\n");
}

/* The parameter file and the overrides (overrides[argc]); 0, or 2 after the
 * usage when none is given. */
static int parse_args(int argc, char **argv, const char **file, char **overrides, int *n)
{
    *file = NULL;
    *n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            exit(0);
        }
        if (argv[i][0] == '-')
            fatal("train: unknown option '%s' (see 'freescale train --help')", argv[i]);
        cli_file_or_override("train", argv[i], file, overrides, n);
    }
    if (!*file) {
        usage(stderr);
        return 2;
    }
    return 0;
}

int train_main(int argc, char **argv)
{
    const char *file;
    char **overrides = xmalloc((size_t)argc * sizeof *overrides);
    int noverrides;
    if (parse_args(argc, argv, &file, overrides, &noverrides)) {
        free(overrides);
        return 2;
    }
    struct comm c;
    struct params p;
    banner_start(&c, &p, &argc, &argv, file, noverrides, overrides);
    free(overrides); /* applied (params_override copies the values) */
    log_dedupe(1); /* train.tune's trainers and this one warn alike: once */
    struct bias_choice *bc = xmalloc(sizeof *bc);
    train_tune(&c, &p, bc); /* train.tune: the rates and dropout chosen on validation */
    struct trainer tr = {.c = &c, .p = &p, .best_val = -1, .best_epoch = -1, .val_epoch = -1,
                         .bias_choice = bc};
    trainer_open(&tr); /* a bad parameter or dataset: the first thing on the screen */
    train_ckpt_check_dir(&tr); /* and a checkpoint directory of another run */
    banner_show(&c, &p);
    trainer_build(&tr);
    tr.bias_choice = NULL;
    free(bc);
    log_dedupe(0);
    if (tr.conf.task.calibrate) { /* fitted on the validation events: some are needed */
        int64_t *vu;
        const int64_t nv = rsplit_eval_users(&tr.rsplit, &tr.ds, 0, &vu);
        free(vu);
        if (nv == 0)
            fatal("model.calibrate = %s: data.split = %s leaves %s no validation events to "
                  "fit on (a split with a validation part is needed)",
                  params_str(&p, P_model_calibrate), params_str(&p, P_data_split),
                  tr.conf.data_path);
    }
    if (tr.conf.stream.on) { /* train.schedule = stream: the windows' loop */
        const int rc = train_stream_run(&tr);
        trainer_free(&tr);
        comm_free(&c);
        return rc;
    }
    const struct train_conf *cf = &tr.conf;
    const int64_t steps_per_epoch = (tr.n_train + cf->batch_size - 1) / cf->batch_size;
    int64_t total = steps_per_epoch * cf->epochs;
    if (cf->max_steps > 0 && cf->max_steps < total)
        total = cf->max_steps;
    log_info("train: %lld users, %lld items, %lld training users, %lld steps per epoch, %lld steps",
             (long long)tr.ds.num_users, (long long)tr.ds.num_items, (long long)tr.n_train,
             (long long)steps_per_epoch, (long long)total);
    tr.optim.conf.total_steps = total; /* train.lr_schedule's end */
    if (tr.optim.conf.schedule != LR_CONSTANT)
        log_info("train.lr_schedule = %s: the learning rates decay from step %lld to 0 at step "
                 "%lld", lr_schedule_name(tr.optim.conf.schedule),
                 (long long)tr.optim.conf.warmup_steps, (long long)total);
    train_ckpt_start(&tr);
    log_release(); /* set up: what it said, now that no error of the set-up can come first */
    train_utilisation_setup(&tr);
    watchdog_start((double)cf->timeout, c.rank, "step");
    preempt_install();
    steptime_init(&tr.st, cf->log_every, cf->trace[0] ? cf->trace_steps : 0);
    tr.st.trace_peers = cf->trace_peers && cf->trace[0];
    struct loop_clock lc = {.start = clock_seconds(), .first_step = tr.step};
    lc.last = lc.start;
    int64_t last_ckpt = -1;
    double loss = 0;
    int early = 0;
    int stop = train_loop(&tr, total, &last_ckpt, &loss, &lc, &early);
    /* the final validation before the final checkpoint, which records it */
    const int validated = early || !cf->final_eval || tr.val_epoch == tr.epoch;
    if (!stop && !validated)
        validate(&tr, tr.epoch, loss);
    if (stop) /* the metrics file says it first (mpirun, ending, may not pass the ranks' last
                 lines on, and SIGKILL may follow): the checkpoint, then this line */
        report_stop(&tr, stop, loss, cf->checkpoint_dir[0] && last_ckpt != tr.step);
    else if (cf->checkpoint_dir[0] && last_ckpt != tr.step)
        train_ckpt_save(&tr);
    if (stop) { /* preempted: the state is saved, no evaluation */
        if (!cf->checkpoint_dir[0])
            log_warn("stopped by signal %d without output.checkpoint_dir: nothing was saved",
                     stop);
        log_info("stopped by signal %d after step %lld; exit code %d: run again with "
                 "train.resume=auto to continue", stop, (long long)tr.step, PREEMPT_EXIT_CODE);
        trainer_free(&tr);
        comm_free(&c);
        return PREEMPT_EXIT_CODE;
    }
    struct eval_result test;
    if (cf->final_eval)
        final_evaluation(&tr, &test, loss);
    train_report_summary(&tr, cf->final_eval ? &test : NULL, loss, tr.step - lc.first_step,
                   clock_seconds() - lc.start);
    trainer_free(&tr);
    comm_free(&c);
    return 0;
}
