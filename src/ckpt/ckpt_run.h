/* ckpt_run: which run a checkpoint belongs to, and what a run may do in its
 * output.checkpoint_dir (rank 0's side of the start and of the retention;
 * writing and reading: ckpt.c, ckpt_read.c).
 *
 * A run's identity is its dataset (users, items, events, timestamps, and a
 * hash of every user's sequence length) and the parameters that must not
 * change across a resume (the model's shape, the split, the loss and its
 * negatives, the batch size, the seed, the sparse optimizer: the list in
 * ckpt_run.c), as text (run_params, one "name = value" a line), and a
 * 64-bit FNV-1a hash of that text (run_id, 16 hex digits). Every checkpoint
 * records both and written_ns (the wall clock of its writing, ns: the write
 * order).
 *
 * A directory belongs to one run: train.resume = auto takes only the
 * checkpoints of this run, the newest by write order first, and says which
 * it took and why it skipped the others; a run whose directory holds
 * another run's checkpoints is refused, naming them and the way out
 * (another directory, or output.shared_dir = on); retention deletes only
 * this run's checkpoints and never the newest.
 *
 * Temporaries: a checkpoint is written as NAME.tmp.HOST.PID and renamed when
 * complete, so no name that resume looks at is ever half-written. At start
 * the ones whose writer no longer runs (HOST is this host and PID is gone)
 * are reported and removed; others of another host are reported only. */
#ifndef FS_CKPT_RUN_H
#define FS_CKPT_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "train/train.h"

#define CKPT_RUN_PARAMS_MAX 2048

struct ckpt_run {
    char id[17];                         /* 16 hex digits */
    char params[CKPT_RUN_PARAMS_MAX];    /* "name = value" lines */
};

/* This run's identity (tr's parameters and open dataset). */
void ckpt_run_identity(const struct trainer *tr, struct ckpt_run *run);
/* The wall clock in ns (written_ns). */
int64_t ckpt_run_now_ns(void);
/* The temporary name of final (PATH.tmp.HOST.PID) into tmp[len]. */
void ckpt_run_tmp_name(const char *final, char *tmp, size_t len);

/* Rank 0: where this run's checkpoint of step goes: DIR/ckpt-STEP.h5, or
 * DIR/ckpt-STEP-RUNID.h5 where another run's ckpt-STEP.h5 is (a shared
 * directory: it is never overwritten), or a file of that name whose
 * identity cannot be read (damaged, or not a checkpoint: left alone). */
void ckpt_run_path(const char *dir, const struct ckpt_run *run, int64_t step, char *path,
                   size_t len);

/* Rank 0, before anything is printed: a path that is not a directory, or
 * a directory holding another run's checkpoints (unless shared), refused.
 * 0, or -1 with err naming them and the way out. */
int ckpt_run_check(const char *dir, const struct ckpt_run *run, int shared, char *err,
                   size_t len);

/* Rank 0, before anything is printed, for a fresh run (train.resume
 * empty): dir holding checkpoints (or best.h5) of this run's identity,
 * written by an earlier start, is refused (the identity leaves out the
 * learning rate, the epochs, ...: a fresh run would overwrite them step
 * by step), naming them and the ways out (train.resume=auto, another
 * directory, moving them away). 0, or -1 with err. */
int ckpt_run_check_fresh(const char *dir, const struct ckpt_run *run, char *err, size_t len);

/* Rank 0, before anything is printed, with train.keep_best: DIR/best.h5
 * of another run (a shared directory) or unreadable is refused (keep_best
 * would overwrite it), naming the ways out. 0, or -1 with err. */
int ckpt_run_check_best(const char *dir, const struct ckpt_run *run, char *err, size_t len);

/* Rank 0, at start: create dir if missing, refuse a path that is not a
 * directory where a file can be created, report and remove stale
 * temporaries, and measure the write rate with a file of min(bytes, 64 MiB)
 * (written, fsynced, removed; *rate in bytes/s, 0 with a warning when that
 * write fails). 0, or -1 with err. */
int ckpt_run_prepare_dir(const char *dir, double bytes, double *rate, char *err, size_t len);
/* The first of dir and its parents, from the top, that does not exist yet
 * (what ckpt_run_prepare_dir would create) into top; "" when dir exists. */
void ckpt_run_missing(const char *dir, char *top, size_t len);
/* Undo the creation: remove dir and its parents up to top while empty (a
 * start refused after ckpt_run_prepare_dir leaves no empty directory). */
void ckpt_run_unmake(const char *dir, const char *top);

/* Rank 0, at start, train.resume = PATH (verified): the checkpoint's run
 * identity (its run_id and run_params attributes) must be this run's, as
 * train.resume = auto requires: a parameter of the identity on both sides
 * with another value is refused, and so is a name on one side only (a
 * dynamic table's line, the stream's, one added to the identity since, one
 * this build does not know) unless its value is what its absence means
 * (its parameter's default: a line written only when not the default, or
 * a checkpoint written before the line, which trained with the default).
 * Taken: another dataset (other events of the same items:
 * checkpoint_compatible checks their number), and a checkpoint written
 * before checkpoints recorded their run. 0, or -1 with err naming path and
 * what differs. */
int ckpt_run_check_resume(const char *path, const struct ckpt_run *run, char *err, size_t len);

/* Rank 0, at start, after ckpt_run_check: the checkpoint train.resume =
 * auto continues from (is_auto; path "" when there is none: start
 * afresh), the newest of this run's for which verify(ctx, PATH, err, len)
 * (checkpoint_verify, or a collective verification led by rank 0) returns
 * 0; says what it took and what it skipped. 0, or -1 with err (none of
 * this run's checkpoints verifies). */
int ckpt_run_choose(const char *dir, const struct ckpt_run *run, int is_auto,
                    int (*verify)(void *ctx, const char *path, char *err, size_t len), void *ctx,
                    char *path, size_t pathlen, char *err, size_t len);

/* Rank 0: this run's newest checkpoint in dir by write order whose
 * identity reads (not verified: ckpt_run_choose's first candidate; every
 * checkpoint of a run records what its start chose, train.tune's use)
 * into path. 0, or -1 (path "") when dir holds none. */
int ckpt_run_newest(const char *dir, const struct ckpt_run *run, char *path, size_t len);

/* Rank 0, after writing just_written: delete this run's checkpoints beyond
 * the keep newest by write order (keep 0: none); never just_written nor
 * another run's. */
void ckpt_run_retain(const char *dir, const struct ckpt_run *run, int64_t keep,
                     const char *just_written);

#endif
