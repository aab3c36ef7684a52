/* train_report: what a training run reports: the progress line and its
 * metrics (throughput, GFLOP/s and MFU, bubble, phases, wire bytes, device
 * counters and timers, split_long), evaluation and summary lines, and the
 * model FLOPs and peak behind MFU (doc/training.md). */
#ifndef FS_TRAIN_REPORT_H
#define FS_TRAIN_REPORT_H

#include <stdint.h>

#include "eval/eval.h"
#include "train/train.h"

/* parallel.split_long over a logging interval: the sequences cut, their
 * chunks, and the key/value byte counter at the interval's start. */
struct split_stats {
    int64_t steps, seqs, chunks, kv_mark;
};

/* A logging interval's work: its seconds, samples, tokens, attention
 * pairs and model FLOPs (all ranks), the FLOPs by MLPerf DLRMv4's count
 * (ranking; model/flops_mlperf.h), and its steps. */
struct interval {
    double seconds, samples, tokens, pairs, flops, mlperf_flops;
    int64_t steps;
};

/* The progress line and its metrics line (collective: every rank). */
void train_report_progress(struct trainer *tr, const struct step_stats *st, double loss,
                           const struct interval *iv, double eta, int64_t total,
                           struct split_stats *sx);
/* An evaluation's line and metrics line (split: "val", "test", ...). */
void train_report_eval(struct trainer *tr, const char *split, int64_t epoch,
                       const struct eval_result *em, double loss);
/* The run's last lines (test NULL: no final evaluation). */
void train_report_summary(struct trainer *tr, const struct eval_result *test, double loss,
                          int64_t steps_run, double secs);
/* tr->flops and tr->peak_gflops, logged (collective). */
void train_utilisation_setup(struct trainer *tr);
/* A step's model FLOPs (ours, and MLPerf DLRMv4's when reported) added to iv. */
void train_interval_flops(const struct trainer *tr, const struct step_plan *now,
                          struct interval *iv);

#endif
