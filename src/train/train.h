/* train: the trainer, the state of a run that the step, the checkpoints
 * (ckpt/) and the commands (cmd/: train's loop in train_main.c) share;
 * evaluation sees it through cmd/eval_trainer.c (doc/architecture.md). */
#ifndef FS_TRAIN_H
#define FS_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "backend/backend.h"
#include "backend/device.h"
#include "base/params.h"
#include "comm/comm.h"
#include "data/batch.h"
#include "data/dataset.h"
#include "embedding/emb_exchange.h"
#include "model/flops_mlperf.h"
#include "model/model.h"
#include "model/task.h"
#include "model/task_bias.h"
#include "train/dense_optim.h"
#include "train/gputime.h"
#include "train/planner.h"
#include "train/steptime.h"
#include "train/train_conf.h"

struct step_state;
struct train_feat;

/* model.bias_prior = auto and model.recency = auto's choice
 * (train/step_bias_search.c) made once for the trainers of one run:
 * train.tune's candidates and the run itself (cmd/train_tune.c). It
 * depends on the data, the split and the tasks only, not on the rates or
 * the dropout that the candidates vary. The first start-up (step_bias_init)
 * with it not made searches and keeps its choice and lines here; the later
 * ones take the choice and say the lines again. */
struct bias_choice {
    int made;
    double prior, prior_user, recency; /* the task's (task_conf) after the search */
    char said[6144];                   /* the search's lines (log_keep) */
};

struct trainer {
    /* configuration, resolved once at start-up */
    struct train_conf conf;
    struct params *p;          /* the parameters themselves, for checkpoints */
    /* resources */
    struct comm *c;
    const struct backend_ops *be;
    struct device_choice dev;
    struct dataset ds;         /* a stream of window files: the window's (trainer_window) */
    struct stream_files *files; /* data.path as window files (stream schedule), else NULL */
    struct window_items *witems; /* their items so far (data/window_files.h) */
    struct bias_ids *bias_ids; /* model.bias over them: its rows by raw id (train/bias_ids.h) */
    char wpath[4200];          /* the window dataset's scratch file */
    int with_ts;               /* timestamps used: data.timestamps and the dataset has them */
    int64_t n_train, *train_users;
    struct rsplit rsplit;      /* ranking: the split (data.split) */
    /* the model, its item table and the dense optimizer */
    struct model m;
    struct emb_registry reg;
    struct emb_table *items;
    struct train_feat *feat;   /* the features (train/step_feat.h), NULL without (ranking:
                                  always, the labels are features of the actions) */
    struct task task;          /* what the model is trained for (model/task.h) */
    struct task_data tdata;    /* what its batches and costs read (task_setup_init) */
    float bias_uscale[RANK_MAX_TASKS]; /* model.recency: each task's user-term scale of the
                                          start-up fit (train/step_bias.c), else 1 */
    struct bias_events *bias_events; /* model.recency = auto in a stream: every user's events in
                                        memory while a window's choice reads them (step_bias_pass.h),
                                        else NULL */
    struct bias_choice *bias_choice; /* the start-up's auto choice shared with other trainers of
                                        the run (set before trainer_build), or NULL: its own */
    struct dense_optim optim;
    struct bias_rows *bias;    /* model.bias's rows, sharded (train/bias_rows.h), or NULL */
    struct rank_bias_rows bias_hooks; /* the task's way to them (model/task_bias.h) */
    /* the step's own state (overlap, buffers, dense all-reduce): train_step.c */
    struct step_state *state;
    /* progress: kept in checkpoints */
    int64_t step, epoch;
    double best_val;           /* best validation NDCG@10 (ranking: train.select's AUC) so
                                  far (-1: none) */
    int64_t best_epoch;        /* its epoch (-1: none) */
    int64_t val_epoch;         /* epochs done at the last validation (-1: none) */
    int64_t windows;           /* train.schedule = stream: windows trained (the next one's
                                  index; cmd/train_stream.c) */
    int64_t n_windows;         /* and the stream's windows (0: not a stream, or not known:
                                  train.follow without data.stream_end) */
    struct stream_avg {        /* the stream's running average: sums of the shown metrics
                                  over the windows of 0 .. windows - 1 with both the model's
                                  and the baseline's figure (cmd/train_stream.c;
                                  checkpointed, so that a resume continues it) */
        int64_t n[RANK_MAX_TASKS], nb[RANK_MAX_TASKS]; /* windows in the sums (the same) */
        double model[RANK_MAX_TASKS], base[RANK_MAX_TASKS];
        int64_t nw, first, last; /* windows in any task's sums, the first and the last */
    } avg;
    int64_t files_before;      /* window files: the files with events before the last trained
                                  window's end (checkpointed; -1: not known) */
    /* the divergence guard (guard.h): steps whose update was dropped */
    int64_t skipped;
    int skip_now;              /* this step's update is dropped (1 sparse and dense, 2 dense) */
    double sparse_sq, dense_sq; /* the last step's sums of squares of the gradients (guard.h) */
    /* reporting */
    FILE *metrics;
    struct steptime st;
    struct flop_model flops;   /* the model's FLOPs per token and pair (cost.h) */
    struct flops_mlperf mlperf; /* ranking: MLPerf DLRMv4's count too (model/flops_mlperf.h) */
    int mlperf_on;             /* ... reported (task.type = ranking) */
    double peak_gflops;        /* the job's peak: the sum of the ranks' (device.peak_tflops) */
    int64_t ipc_mark;          /* comm counters' IPC bytes at the last progress line */
    int64_t xsent_mark[4];     /* ... and ids, rows, gradients to other nodes, dense bytes */
    struct gputime gt;         /* device-side phase timers (gputime.h) */
};

/* Start-up of every command that runs the model (train, and the commands
 * that load a checkpoint): resolve the configuration from tr->p, build the
 * communicator groups, open the dataset, pick the device, build the model,
 * the item table, the dense optimizer and the step's state. tr->c and tr->p
 * must be set (banner_start), best_val and best_epoch at -1. Collective;
 * ends the job with a message on any bad input. */
void trainer_setup(struct trainer *tr);
/* trainer_setup in two: the inputs checked and opened (the configuration,
 * the groups, the dataset, the training users: an error there ends every
 * rank with one message, comm_fail.h), then everything else built. */
void trainer_open(struct trainer *tr);
void trainer_build(struct trainer *tr);
/* A stream of window files: tr->ds becomes window [t0, t1)'s dataset
 * (data/window_files.h). 0, or -1 + err naming the file. */
int trainer_window(struct trainer *tr, int64_t t0, int64_t t1, char *err, size_t errlen);
/* Release everything trainer_setup (or trainer_open alone) and the run
 * allocated (not tr->c). */
void trainer_free(struct trainer *tr);
/* End the job when the table of ec (sharded over the emb group unless
 * replicated) cannot fit this node's memory: its shard, optimizer state
 * and step counts, named with the dataset and the attribute sizing it. */
struct emb_table_conf;
void trainer_check_table(const struct trainer *tr, const struct emb_table_conf *ec);

/* The step's state: parallel.overlap, the dense all-reduce's transport, the
 * between-layers hook (collective: the transport is chosen together). */
void train_step_init(struct trainer *tr);
/* One step over this rank's share `now` of the global batch; returns the
 * global mean loss and the global token count. With parallel.overlap,
 * `next` (the following step's plan, NULL for none) is prepared during
 * this one. Collective. */
double train_step(struct trainer *tr, const struct step_plan *now, const struct step_plan *next,
                  int64_t *tokens);
/* Complete and drop a next-step input prepared ahead (before stopping);
 * collective like the step. */
void train_step_drain(struct trainer *tr);
void train_step_free(struct trainer *tr);

#endif
