/* rec_start: the start-up of recommend and export from a checkpoint, and
 * the user vectors after each user's whole history in rounds; see
 * recommend.h. */
#include "cmd/recommend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/check.h"
#include "cli/banner.h"
#include "cli/cli.h"
#include "comm/comm_fail.h"
#include "data/dataset.h"
#include "data/h5io.h"
#include "cmd/rec_file.h"
#include "train/infer.h"
#include "ckpt/ckpt.h"
#include "train/watchdog.h"
#include "train/train_dyn.h"

/* --- the checkpoint's head ------------------------------------------------------ */

#define MAX_PARAMS_TEXT ((size_t)1 << 20)

/* Rank 0: the checkpoint must be a readable freescale checkpoint; its
 * stored parameters (heap text) into *params when want_params. 0, or -1
 * with err. */
static int check_checkpoint(const struct rec_cmd *cmd, int want_params, char **params,
                            char *err, size_t len)
{
    const char *path = cmd->ckpt;
    *params = NULL;
    if (access(path, R_OK) != 0)
        return errorf(err, len, "%s: checkpoint %s: %s", cmd->tool, path, strerror(errno));
    struct h5io h;
    char e[1024], format[64] = "";
    if (h5io_open_read(&h, path, NULL, 0, e, sizeof e))
        return errorf(err, len, "%s: checkpoint %s", cmd->tool, e);
    int rc = 0;
    if (dataset_h5_attrs_check(h.f, path, "/", e, sizeof e) ||
        (h5io_has_attr(h.f, "format") &&
         h5io_attr_read_str(h.f, path, "format", format, sizeof format, e, sizeof e)))
        rc = errorf(err, len, "%s: checkpoint %s", cmd->tool, e);
    else if (strcmp(format, "freescale-ckpt"))
        rc = errorf(err, len, "%s: %s is not a freescale checkpoint (attribute format = '%s', "
                    "expected 'freescale-ckpt')", cmd->tool, path, format[0] ? format : "(none)");
    else if (want_params && !h5io_has_attr(h.f, "params"))
        rc = errorf(err, len, "%s: checkpoint %s stores no parameters (attribute 'params'): "
                    "give FILE.in", cmd->tool, path);
    else if (want_params) {
        *params = xmalloc(MAX_PARAMS_TEXT);
        if (h5io_attr_read_str(h.f, path, "params", *params, MAX_PARAMS_TEXT, e, sizeof e))
            rc = errorf(err, len, "%s: checkpoint %s", cmd->tool, e);
    }
    h5io_close(&h);
    return rc;
}

/* --- the parameters -------------------------------------------------------------- */

static int readable(const char *path) { return access(path, R_OK) == 0; }

/* A relative data.path stored in the checkpoint names a file relative to
 * the folder training ran in. When it is not there from here, that folder
 * is found from the checkpoint's path and its stored (relative)
 * output.checkpoint_dir ("run/ck/best.h5" with checkpoint_dir "ck": "run"),
 * else the checkpoint's folder is tried. 0 (p's data.path resolved), or
 * -1 with err saying where the path came from and how to override it. */
static int stored_data_path(const struct rec_cmd *cmd, struct params *p, char *err, size_t len)
{
    const char *dp = params_str(p, P_data_path);
    char stored[4200];
    snprintf(stored, sizeof stored, "%s (stored parameters)", cmd->ckpt);
    if (!dp[0] || dp[0] == '/' || strcmp(p->origin[P_data_path], stored) || readable(dp))
        return 0;
    char dir[4096], cand[2][8300];
    snprintf(dir, sizeof dir, "%s", cmd->ckpt);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    int n = 0;
    const char *cd = params_str(p, P_output_checkpoint_dir);
    size_t dl = strlen(dir), cl = strlen(cd);
    while (cl > 1 && cd[cl - 1] == '/')
        cl--;
    if (cl && cd[0] != '/' && dl >= cl && !strncmp(dir + dl - cl, cd, cl) &&
        (dl == cl || dir[dl - cl - 1] == '/')) /* dir ends in the checkpoint_dir */
        snprintf(cand[n++], sizeof cand[0], "%.*s%s", (int)(dl - cl), dir, dp);
    snprintf(cand[n++], sizeof cand[0], "%s/%s", dir, dp);
    for (int k = 0; k < n; k++)
        if (readable(cand[k])) {
            char perr[PARAM_ERR_MAX], origin[4200];
            snprintf(origin, sizeof origin, "%s (stored data.path %s, relative to the "
                     "checkpoint)", cmd->ckpt, dp);
            log_info("%s: data.path = %s (stored in %s) is %s from here", cmd->tool, dp,
                     cmd->ckpt, cand[k]);
            if (params_set(p, "data", "path", cand[k], origin, perr, sizeof perr))
                return errorf(err, len, "%s: %s", cmd->tool, perr);
            return 0;
        }
    return errorf(err, len, "%s: data.path = %s came from the parameters stored in %s (relative "
                  "to the folder training ran in) and is not readable from here (nor as %s): "
                  "give data.path=PATH on the command line", cmd->tool, dp, cmd->ckpt, cand[0]);
}

/* Rank 0: p from FILE.in or the checkpoint's stored lines (those that
 * differ from the defaults, so that the dump shows where each came from),
 * then the overrides. 0, or -1 with err. */
static int params_of_command(const struct rec_cmd *cmd, struct params *p, char *stored,
                             char *err, size_t len)
{
    char origin[4200];
    params_defaults(p);
    if (cmd->file && params_read_file(p, cmd->file, err, len))
        return -1;
    if (!cmd->file) {
        struct params dp;
        params_defaults(&dp);
        char *defaults = params_serialize(&dp);
        snprintf(origin, sizeof origin, "%s (stored parameters)", cmd->ckpt);
        int rc = 0;
        char perr[PARAM_ERR_MAX];
        for (char *line = strtok(stored, "\n"); line && !rc; line = strtok(NULL, "\n")) {
            size_t l = strlen(line);
            const char *hit = strstr(defaults, line);
            int is_default = hit && (hit == defaults || hit[-1] == '\n') && hit[l] == '\n';
            if (!is_default && params_override(p, line, origin, perr, sizeof perr))
                rc = errorf(err, len, "%s: the parameters stored in %s no longer apply (%s): "
                            "give FILE.in", cmd->tool, cmd->ckpt, perr);
        }
        free(defaults);
        if (rc)
            return -1;
    }
    for (int i = 0; i < cmd->noverrides; i++)
        if (params_override(p, cmd->overrides[i], "command line", err, len))
            return -1;
    return cmd->file ? 0 : stored_data_path(cmd, p, err, len);
}

void rec_start(const struct rec_cmd *cmd, int *argc, char ***argv, struct comm *c,
               struct params *p, struct trainer *tr)
{
    comm_init(c, argc, argv);
    log_hold(); /* an error of the set-up first (base/log.h) */
    char *text = NULL, err[PARAM_ERR_MAX + 4400] = "";
    int bad = 0;
    if (c->rank == 0) { /* a bad checkpoint or parameter: every rank ends, one message */
        char *stored = NULL;
        bad = check_checkpoint(cmd, cmd->file == NULL, &stored, err, sizeof err) ||
              params_of_command(cmd, p, stored, err, sizeof err);
        free(stored);
    }
    comm_fail_agree(c, bad, err);
    banner_print(c);
    if (c->rank == 0) {
        text = params_serialize(p);
        banner_params(c, p); /* with --verbose */
    }
    comm_bcast_string(c, &text, 0);
    if (c->rank != 0) {
        params_defaults(p);
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
            if (params_override(p, line, "broadcast", err, sizeof err))
                fatal("%s", err);
    }
    free(text);
    memset(tr, 0, sizeof *tr);
    tr->c = c;
    tr->p = p;
    tr->best_val = -1;
    tr->best_epoch = -1;
    tr->val_epoch = -1;
    trainer_setup(tr);
    /* another model's or dataset's checkpoint: rank 0 checks, one message */
    bad = c->rank == 0 && checkpoint_compatible(tr, cmd->ckpt, err, sizeof err) != 0;
    comm_fail_agree(c, bad, err);
    checkpoint_read(tr, cmd->ckpt);
    train_dyn_view_begin(tr); /* a dynamic item table: read as a dense one */
    watchdog_start((double)tr->conf.timeout, c->rank, "round"); /* stopped by trainer_free */
    watchdog_beat("in", cmd->tool);
    log_info("%s: %s at step %lld; %lld users, %lld items (%s)", cmd->tool, cmd->ckpt,
             (long long)tr->step, (long long)tr->ds.num_users, (long long)tr->ds.num_items,
             tr->conf.data_path);
    /* held until the command's own set-up is done (rec_start.h) */
}

/* --- rounds ------------------------------------------------------------------------- */

void rec_plan_init(struct rec_plan *pl, int64_t n, int P, int64_t batch, int64_t round)
{
    if (batch < 1 || round < 1)
        fatal("rec_plan_init: batch %lld, round %lld", (long long)batch, (long long)round);
    int64_t chunks = (n + batch - 1) / batch;
    int64_t C = round / ((int64_t)P * batch), even = (chunks + P - 1) / P;
    C = C < even ? C : even;
    pl->P = P;
    pl->n = n;
    pl->batch = batch;
    pl->per_rank = C < 1 ? 1 : C;
    pl->rounds = (chunks + pl->per_rank * P - 1) / (pl->per_rank * P);
}

int64_t rec_plan_first(const struct rec_plan *pl, int64_t k)
{
    int64_t a = k * pl->P * pl->per_rank * pl->batch;
    return a < pl->n ? a : pl->n;
}

void rec_plan_span(const struct rec_plan *pl, int64_t k, int rank, int64_t *lo, int64_t *cnt)
{
    int64_t a = (k * pl->P + rank) * pl->per_rank * pl->batch, b = a + pl->per_rank * pl->batch;
    a = a < pl->n ? a : pl->n;
    b = b < pl->n ? b : pl->n;
    *lo = a;
    *cnt = b - a;
}

int64_t rec_users_with_events(const struct dataset *ds, int64_t **users)
{
    int64_t *u = xmalloc((size_t)(ds->num_users ? ds->num_users : 1) * sizeof *u), n = 0;
    for (int64_t i = 0; i < ds->num_users; i++)
        if (dataset_length(ds, i) > 0)
            u[n++] = i;
    *users = u;
    return n;
}

/* The batch of users[B] after their whole histories: inputs the most
 * recent N events (no targets, no dropout keys), hist the whole history. */
static void history_batch(const struct trainer *tr, const int64_t *users, int64_t B,
                          struct seq_batch *b)
{
    const struct dataset *ds = &tr->ds;
    const int N = tr->conf.N, with_ts = tr->with_ts;
    int64_t T = 0, H = 0, cap = 1;
    for (int64_t i = 0; i < B; i++) {
        int64_t L = dataset_length(ds, users[i]);
        if (L < 1)
            fatal("user %lld has no events to recommend from", (long long)users[i]);
        T += L < N ? L : N;
        H += L;
        cap = L > cap ? L : cap;
    }
    batch_alloc(b, B, T, with_ts, 1);
    memset(b->keys, 0, (size_t)(T ? T : 1) * sizeof *b->keys); /* no dropout */
    b->hist = xmalloc((size_t)(H ? H : 1) * sizeof *b->hist);
    int64_t *items = xmalloc((size_t)cap * sizeof *items);
    int64_t *ts = with_ts ? xmalloc((size_t)cap * sizeof *ts) : NULL;
    int64_t t = 0, h = 0;
    b->offsets[0] = b->hist_off[0] = 0;
    char err[1024];
    for (int64_t i = 0; i < B; i++) {
        int64_t u = users[i], L = dataset_length(ds, u);
        if (dataset_read_users(ds, u, u + 1, items, ts, NULL, err, sizeof err))
            rec_fatal("%s", err); /* the output being written goes first */
        dataset_raw_numbers(ds, items, L); /* a raw dataset: item numbers (the dense view) */
        int64_t n_in = L < N ? L : N, first = L - n_in; /* the most recent n_in events */
        memcpy(b->items + t, items + first, (size_t)n_in * sizeof *items);
        if (with_ts)
            memcpy(b->ts + t, ts + first, (size_t)n_in * sizeof *ts);
        t += n_in;
        memcpy(b->hist + h, items, (size_t)L * sizeof *items);
        h += L;
        b->users[i] = u;
        b->ev0[i] = ds->offsets[u] + first;
        b->offsets[i + 1] = t;
        b->hist_off[i + 1] = h;
    }
    free(items);
    free(ts);
    if (tr->task.ops->labels) /* ranking: the events' actions */
        tr->task.ops->labels(&tr->task, &tr->tdata, b);
}

void rec_user_vectors(struct trainer *tr, const struct rec_plan *pl, const int64_t *users,
                      int64_t lo, int64_t cnt, float *u, int64_t **hist_off, int64_t **hist)
{
    const int d = tr->conf.d;
    int64_t nh = 0, *ho = NULL, *hs = NULL;
    if (hist_off) {
        ho = xmalloc((size_t)(cnt + 1) * sizeof *ho);
        ho[0] = 0;
    }
    /* pl->per_rank chunks on every rank (empty ones too): the lookups are
     * collective */
    for (int64_t k = 0; k < pl->per_rank; k++) {
        int64_t a = k * pl->batch < cnt ? k * pl->batch : cnt;
        int64_t b = a + pl->batch < cnt ? a + pl->batch : cnt;
        struct seq_batch sb;
        history_batch(tr, users + lo + a, b - a, &sb);
        infer_user_vectors(tr, &sb, u + a * d);
        if (hist_off) {
            hs = xrealloc(hs, (size_t)(nh + sb.hist_off[sb.B] + 1) * sizeof *hs);
            memcpy(hs + nh, sb.hist, (size_t)sb.hist_off[sb.B] * sizeof *hs);
            for (int64_t i = 0; i < sb.B; i++)
                ho[a + i + 1] = nh + sb.hist_off[i + 1];
            nh += sb.hist_off[sb.B];
        }
        batch_free(&sb);
    }
    if (hist_off) {
        *hist_off = ho;
        *hist = hs ? hs : xmalloc(sizeof *hs);
    }
}

void rec_cmd_word(struct rec_cmd *cmd, char *word)
{
    if (word[0] == '-')
        fatal("%s: unknown option '%s' (see 'freescale %s --help')", cmd->tool, word, cmd->tool);
    else if (!cmd->ckpt)
        cmd->ckpt = word;
    else
        cli_file_or_override(cmd->tool, word, &cmd->file, cmd->overrides, &cmd->noverrides);
}
