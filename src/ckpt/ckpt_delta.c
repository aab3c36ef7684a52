/* ckpt_delta: delta checkpoints of dynamic tables
 * (output.checkpoint_delta_every; doc/embedding.md, "Dynamic tables"):
 * the chain of checkpoints a delta follows, its writing between full
 * checkpoints, and its reading (train.resume = a delta, or auto: the
 * newest full checkpoint and the verified deltas after it); see
 * ckpt_dyn.h. The rows a delta holds are ckpt_dyn.c's. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "ckpt/ckpt.h"
#include "ckpt/ckpt_dyn.h"
#include "train/watchdog.h"

static char chain_last[4400]; /* the chain's last checkpoint (full or delta) */
static int64_t chain_step;    /* and its step */

void ckpt_dyn_chain(struct trainer *tr, const char *path)
{
    snprintf(chain_last, sizeof chain_last, "%s", path);
    chain_step = tr->step;
    for (int k = 0; k < tr->reg.n; k++)
        if (tr->reg.tables[k].dyn)
            emb_dyn_delta_mark(&tr->reg.tables[k]);
}

int ckpt_delta_due(const struct trainer *tr, int64_t total)
{
    const int64_t K = params_i64(tr->p, P_output_checkpoint_delta_every);
    return K > 0 && tr->conf.checkpoint_dir[0] && chain_last[0] && tr->step % K == 0 &&
           tr->step < total && tr->step > chain_step;
}

void ckpt_delta_save(struct trainer *tr)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/delta-%lld.h5", tr->conf.checkpoint_dir, (long long)tr->step);
    watchdog_beat("in", "a checkpoint write");
    struct checkpoint_io io;
    char cost[256];
    checkpoint_io_begin(&io);
    ckpt_dyn_set_delta(1);
    checkpoint_write(tr, path);
    ckpt_dyn_set_delta(0);
    checkpoint_io_end(&io, tr->c, path, cost, sizeof cost);
    log_info("delta checkpoint %s after %s (%s)", path, chain_last, cost);
    ckpt_dyn_chain(tr, path);
}

/* The file name of path (after its last '/'). */
static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void ckpt_dyn_header(struct h5io *h, hid_t f)
{
    if (!ckpt_dyn_delta_mode())
        return;
    h5io_attr_str(h, f, "delta_prev", base_name(chain_last));
    h5io_attr_i64(h, f, "delta_prev_step", chain_step);
}

void ckpt_delta_prev(struct trainer *tr, const char *path)
{
    struct h5io h;
    char err[1024], prev[4200] = "", run[40] = "";
    int64_t prev_step = -1;
    if (h5io_open_read(&h, path, NULL, 0, err, sizeof err))
        return; /* checkpoint_read says why */
    const int delta = h5io_has_attr(h.f, "delta_prev");
    if (delta && (h5io_attr_read_str(h.f, path, "delta_prev", prev, sizeof prev, err, sizeof err) ||
                  h5io_attr_read_i64(h.f, path, "delta_prev_step", &prev_step, err, sizeof err)))
        fatal("checkpoint %s: %s", path, err);
    if (delta && h5io_has_attr(h.f, "run_id") &&
        h5io_attr_read_str(h.f, path, "run_id", run, sizeof run, err, sizeof err))
        fatal("checkpoint %s: %s", path, err);
    h5io_close(&h);
    if (!delta)
        return;
    char dir[4200], full[8500];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    snprintf(full, sizeof full, "%s/%s", slash ? dir : ".", prev);
    if (checkpoint_verify_all(tr->c, full, err, sizeof err))
        fatal("delta checkpoint %s follows %s, which is refused: %s; a delta holds only the rows "
              "changed since the checkpoint before it, so its chain must be whole: put %s back, "
              "or resume from a full checkpoint (ckpt-STEP.h5) of the run or a delta whose chain "
              "is whole (train.resume = auto finds the newest)", path, full, err, prev);
    struct ckpt_identity id;
    if (checkpoint_identity(full, &id, err, sizeof err))
        fatal("delta checkpoint %s follows %s: %s", path, full, err);
    if (id.step != prev_step || (run[0] && strcmp(id.run_id, run)))
        fatal("delta checkpoint %s follows step %lld of run %s, but %s is step %lld of run %s: "
              "not its chain (a delta of another run, or out of order)", path,
              (long long)prev_step, run, full, (long long)id.step, id.run_id);
    checkpoint_read(tr, full); /* its own chain first (said first: the lines in its order) */
    log_info("delta checkpoint %s: applied on top of %s", path, full);
}

/* A delta's link: the file it follows and that file's step; 0, or -1 when
 * it cannot be read or is no delta. */
static int delta_link(const char *path, char *prev, size_t len, int64_t *prev_step)
{
    struct h5io h;
    char err[1024];
    if (h5io_open_read(&h, path, NULL, 0, err, sizeof err))
        return -1;
    int rc = !h5io_has_attr(h.f, "delta_prev") ||
             h5io_attr_read_str(h.f, path, "delta_prev", prev, len, err, sizeof err) ||
             h5io_attr_read_i64(h.f, path, "delta_prev_step", prev_step, err, sizeof err);
    h5io_close(&h);
    return rc ? -1 : 0;
}

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void ckpt_delta_auto(struct trainer *tr, char *resume, size_t len)
{
    const char *dir = tr->conf.checkpoint_dir;
    struct ckpt_identity id;
    char err[1024];
    if (checkpoint_identity(resume, &id, err, sizeof err))
        return; /* checkpoint_read says why */
    DIR *d = opendir(dir);
    if (!d)
        return;
    int64_t *steps = NULL, n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        long long s;
        char tail[8];
        if (sscanf(e->d_name, "delta-%lld.h5%7s", &s, tail) != 1 || s <= id.step)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            steps = xrealloc(steps, (size_t)cap * sizeof *steps);
        }
        steps[n++] = s;
    }
    closedir(d);
    qsort(steps, (size_t)n, sizeof *steps, cmp_i64); /* the same order on every rank */
    char cur[4400];
    int64_t cur_step = id.step;
    snprintf(cur, sizeof cur, "%s", resume);
    for (int64_t i = 0; i < n; i++) {
        char path[4400], prev[4200];
        int64_t prev_step;
        snprintf(path, sizeof path, "%s/delta-%lld.h5", dir, (long long)steps[i]);
        if (delta_link(path, prev, sizeof prev, &prev_step)) {
            log_info("train.resume = auto: %s is left out: not a readable delta checkpoint", path);
            continue;
        }
        if (strcmp(prev, base_name(cur)) || prev_step != cur_step) { /* not a link of this chain */
            log_info("train.resume = auto: delta checkpoint %s is left out: it follows %s (step "
                     "%lld), not %s (step %lld), the chain's last link (an orphan: the delta it "
                     "follows is missing or refused, or another chain's)", path, prev,
                     (long long)prev_step, base_name(cur), (long long)cur_step);
            continue;
        }
        if (checkpoint_verify_all(tr->c, path, err, sizeof err)) {
            log_warn("train.resume = auto: delta checkpoint %s is refused (%s): the chain ends "
                     "at %s", path, err, cur);
            break;
        }
        snprintf(cur, sizeof cur, "%s", path);
        cur_step = steps[i];
    }
    free(steps);
    if (strcmp(cur, resume)) {
        log_info("train.resume = auto: %s and the delta checkpoints after it, to %s", resume, cur);
        snprintf(resume, len, "%s", cur);
    }
}
