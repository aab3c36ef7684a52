/* ckpt_train: the training run's side of its checkpoints (see
 * ckpt_train.h): the checkpoint directory and the resume at start, the
 * writes after steps. Which run a checkpoint belongs to: ckpt_run.c; the
 * file itself: ckpt.c, ckpt_read.c. */
#include "ckpt/ckpt_train.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/metrics.h"
#include "comm/comm_fail.h"
#include "ckpt/ckpt.h"
#include "ckpt/ckpt_run.h"
#include "train/preempt.h"
#include "train/watchdog.h"
#include "ckpt/ckpt_dyn.h"
#include "data/window_files.h"

/* The bytes of a checkpoint of this run: every table's rows (the item
 * table, the feature tables), their optimizer state and step counts, the
 * dense parameters and their two moments. A dynamic table (ckpt_dyn.c)
 * writes the rows it holds, each with its id, last use and use count: at
 * most its capacity, and at most the distinct ids it can meet, the
 * dataset's item list (window files: the union of those of the files
 * present now; a followed stream's later files are not known) or a
 * feature's cardinality; said in *assume (rank 0 reads the files). */
static double checkpoint_bytes(struct trainer *tr, char *assume, size_t len)
{
    double dense = 0, emb = 0;
    size_t at = 0;
    assume[0] = '\0';
    for (int i = 0; i < tr->m.nparams; i++)
        dense += (double)tr->m.params[i].n;
    for (int k = 0; k < tr->reg.n; k++) {
        const struct emb_table *t = &tr->reg.tables[k];
        const double rows = (double)t->conf.rows + 1;
        if (!t->dyn)
            emb += rows * ((double)(t->width + t->state_floats) * 4.0 + (t->steps ? 8.0 : 0.0));
        else {
            char err[1024], what[160];
            int64_t ids = t->conf.rows; /* a dense dataset's items, a feature's cardinality */
            if (t == tr->items && tr->files &&
                (ids = window_files_distinct_items(tr->files, err, sizeof err)) >= 0) {
                snprintf(what, sizeof what, "the %lld distinct ids of the %d files present now",
                         (long long)ids, tr->files->n);
            } else if (t == tr->items && tr->files) { /* the first window's, read already */
                ids = tr->ds.num_items;
                snprintf(what, sizeof what, "the first window's %lld ids (the files: %.80s)",
                         (long long)ids, err);
            } else if (t == tr->items) {
                ids = tr->ds.num_items;
                snprintf(what, sizeof what, "the dataset's %lld distinct ids", (long long)ids);
            } else
                snprintf(what, sizeof what, "the feature's %lld values", (long long)ids);
            const int64_t cap = t->conf.dyn.capacity;
            if (cap > 0 && cap < ids)
                snprintf(what, sizeof what, "embedding.capacity %lld", (long long)cap);
            emb += ckpt_dyn_bytes(t, cap > 0 && cap < ids ? cap : ids); /* as written */
            if (at < len)
                at += (size_t)snprintf(assume + at, len - at, "%s'%s' at %s", at ? "; " : "",
                                       t->conf.name, what);
        }
    }
    if (at > 0 && at < len)
        snprintf(assume + at, len - at, ", at most");
    /* each dense tensor and its moments: a dataset each, ~0.6 kB of header */
    return emb + 3.0 * (dense * 4.0 + 600.0 * (double)tr->m.nparams);
}

/* output.checkpoint_dir: not a file, not another run's, for a fresh run
 * none of an earlier start of this run, and with keep_best no best.h5 of
 * another run (rank 0, before the banner; a refusal ends every rank with
 * one message). */
void train_ckpt_check_dir(struct trainer *tr)
{
    char err[2400] = "";
    int bad = 0;
    if (tr->c->rank == 0 && tr->conf.checkpoint_dir[0]) {
        struct ckpt_run run;
        ckpt_run_identity(tr, &run);
        bad = ckpt_run_check(tr->conf.checkpoint_dir, &run, tr->conf.shared_dir, err,
                             sizeof err) ||
              (!tr->conf.resume[0] &&
               ckpt_run_check_fresh(tr->conf.checkpoint_dir, &run, err, sizeof err)) ||
              (tr->conf.keep_best &&
               ckpt_run_check_best(tr->conf.checkpoint_dir, &run, err, sizeof err));
    }
    comm_fail_agree(tr->c, bad, err);
}

/* Seconds to draw the initial values of this rank's rows (timed on 16384),
 * what the first checkpoint does for the rows never trained. */
static double draw_seconds(const struct trainer *tr)
{
    const struct emb_table *t = tr->items;
    const int64_t n = t->local_rows < 16384 ? t->local_rows : 16384;
    float *row = xmalloc((size_t)t->width * sizeof *row);
    const double t0 = clock_seconds();
    for (int64_t i = 0; i < n; i++)
        emb_init_row_n(&t->conf, 1 + i, row, t->width);
    const double dt = clock_seconds() - t0;
    free(row);
    return n > 0 ? dt / (double)n * (double)t->local_rows : 0;
}

/* Verifying a candidate checkpoint is collective (checkpoint_verify_all:
 * every rank reads its share of the blocks) while rank 0 alone chooses:
 * rank 0 sends each path it wants verified (verify_path, ckpt_run_choose's
 * verifier), the others follow (verify_follow) until the empty path. */
#define CKPT_PATH_MAX 4300

static int verify_path(void *ctx, const char *path, char *err, size_t len)
{
    struct comm *c = ctx;
    char p[CKPT_PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    comm_bcast_bytes(c, p, sizeof p, 0);
    return checkpoint_verify_all(c, p, err, len);
}

static void verify_done(struct comm *c)
{
    char p[CKPT_PATH_MAX] = "";
    comm_bcast_bytes(c, p, sizeof p, 0);
}

static void verify_follow(struct comm *c)
{
    for (;;) {
        char p[CKPT_PATH_MAX], err[1024];
        comm_bcast_bytes(c, p, sizeof p, 0);
        if (!p[0])
            return;
        checkpoint_verify_all(c, p, err, sizeof err); /* rank 0 reports */
    }
}

/* train.resume: "" (afresh), "auto" (this run's newest complete checkpoint
 * in output.checkpoint_dir, if any) or a path, which must verify. Rank 0
 * prepares the checkpoint directory (created, stale temporaries removed,
 * write rate measured: how long a checkpoint takes) and chooses, every
 * rank verifying the candidates with it; a refusal ends every rank with
 * one message; every rank reads its share. The metrics file is opened
 * there too (appended to by a resumed run). */
void train_ckpt_start(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    const char *ckdir = cf->checkpoint_dir;
    char resume[4200] = "", err[2400] = "", verr[1024], made[4200] = "";
    const int is_auto = !strcmp(cf->resume, "auto");
    char assume[600] = "";
    const double bytes = tr->c->rank == 0 && ckdir[0] ? checkpoint_bytes(tr, assume,
                                                                         sizeof assume) : 0;
    double rate = 0;
    int bad = 0;
    struct ckpt_run run;
    if (tr->c->rank != 0) {
        verify_follow(tr->c);
    } else {
        if (ckdir[0] || cf->resume[0])
            ckpt_run_identity(tr, &run);
        if (ckdir[0]) {
            ckpt_run_missing(ckdir, made, sizeof made); /* removed again if refused */
            bad = ckpt_run_prepare_dir(ckdir, bytes, &rate, err, sizeof err) ||
                  ckpt_run_choose(ckdir, &run, is_auto, verify_path, tr->c, resume,
                                  sizeof resume, err, sizeof err);
        }
        if (!bad && !is_auto && cf->resume[0]) {
            snprintf(resume, sizeof resume, "%s", cf->resume);
            if (verify_path(tr->c, resume, verr, sizeof verr) != 0) {
                snprintf(err, sizeof err, "train.resume = %s (refused)", verr);
                bad = 1;
            }
        }
        verify_done(tr->c);
    }
    if (!bad && tr->c->rank == 0 && resume[0]) /* another model's: one message */
        bad = checkpoint_compatible(tr, resume, err, sizeof err) != 0;
    if (!bad && tr->c->rank == 0 && !is_auto && resume[0]) /* auto took one of this run's */
        bad = ckpt_run_check_resume(resume, &run, err, sizeof err) != 0;
    if (!bad && tr->c->rank == 0) /* appended to by a resumed run */
        bad = metrics_open(cf->metrics, resume[0] != '\0', &tr->metrics, err, sizeof err) != 0;
    if (!bad && tr->metrics) /* the run's parameters: on the terminal only with --verbose */
        params_json(tr->p, tr->metrics);
    if (bad && made[0]) /* a refused start leaves no directory of its own */
        ckpt_run_unmake(ckdir, made);
    comm_fail_agree(tr->c, bad, err);
    comm_bcast_bytes(tr->c, resume, sizeof resume, 0);
    if (is_auto && resume[0]) /* the deltas after it (ckpt_dyn.c) */
        ckpt_delta_auto(tr, resume, sizeof resume);
    if (is_auto && !resume[0])
        log_info("train.resume = auto: no checkpoint of this run in %s, starting afresh", ckdir);
    if (resume[0]) {
        struct checkpoint_io io;
        char cost[256];
        checkpoint_io_begin(&io);
        checkpoint_read(tr, resume);
        ckpt_dyn_chain(tr, resume); /* delta checkpoints follow it */
        checkpoint_io_end(&io, tr->c, resume, cost, sizeof cost);
        log_info("resumed from %s at step %lld (read %s)", resume, (long long)tr->step, cost);
    }
    if (tr->c->rank == 0 && ckdir[0] && rate > 0)
        preempt_advise(bytes, assume, rate, resume[0] ? 0 : draw_seconds(tr), ckdir);
}

void train_ckpt_save(struct trainer *tr)
{
    char path[4200];
    struct ckpt_run run;
    if (tr->c->rank == 0) { /* ckpt-STEP.h5, unless another run's has that name */
        ckpt_run_identity(tr, &run);
        ckpt_run_path(tr->conf.checkpoint_dir, &run, tr->step, path, sizeof path);
    }
    comm_bcast_bytes(tr->c, path, sizeof path, 0);
    watchdog_beat("in", "a checkpoint write");
    struct checkpoint_io io;
    char cost[256];
    checkpoint_io_begin(&io);
    checkpoint_write(tr, path);
    ckpt_dyn_chain(tr, path); /* delta checkpoints follow it */
    checkpoint_io_end(&io, tr->c, path, cost, sizeof cost);
    log_info("checkpoint %s (%s)", path, cost);
    if (tr->c->rank == 0)
        ckpt_run_retain(tr->conf.checkpoint_dir, &run, tr->conf.keep_checkpoints, path);
}
