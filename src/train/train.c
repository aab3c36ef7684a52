/* train: the trainer, its start-up and release; see train.h (the training
 * command's loop: cmd/train_main.c).
 *
 * Start-up resolves the configuration (train_conf.c), opens the dataset,
 * builds the model, the item table and the dense optimizer (the resume
 * from a checkpoint: ckpt/ckpt_train.c). */
#include "train/train.h"
#include "train/train_dyn.h"

#include <errno.h>
#include <glob.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend/blas.h"
#include "backend/devstats.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/exact.h"
#include "base/log.h"
#include "base/tmpguard.h"
#include "comm/comm_fail.h"
#include "data/stream_follow.h"
#include "data/window.h"
#include "data/window_files.h"
#include "train/backend_check.h"
#include "train/bias_ids.h"
#include "train/bias_rows.h"
#include "train/placement.h"
#include "train/train_cache.h"
#include "train/preempt.h"
#include "train/step_feat.h"
#include "train/step_task.h"
#include "train/watchdog.h"

/* --- start-up ------------------------------------------------------------------- */

int trainer_window(struct trainer *tr, int64_t t0, int64_t t1, char *err, size_t errlen)
{
    if (tr->ds.file > 0)
        dataset_close(&tr->ds);
    memset(&tr->ds, 0, sizeof tr->ds);
    int64_t users, events;
    if (window_files_write(tr->files, tr->witems, t0, t1, (int64_t)tr->conf.N - 1, tr->wpath,
                           &users, &events, err, errlen))
        return -1;
    /* from the rename to the unlink, the file is removed if this rank ends (its temporary
     * before was guarded by the writer) */
    tmpguard_begin(tr->wpath, 0);
    const int rc = dataset_open(&tr->ds, tr->wpath, err, errlen);
    unlink(tr->wpath); /* read through the open file: nothing left behind, even by a crash */
    tmpguard_end();
    /* data.history_files = H: the files before the H that precede the
     * window's first are read no more (this window's or a later one's):
     * closed, so that at most H + the window's stay open */
    const struct stream_files *s = tr->files;
    int first = 0;
    while (first < s->n && s->f[first].t_last < t0)
        first++;
    if (s->history_files > 0 && first > s->history_files)
        stream_files_release(tr->files, first - s->history_files);
    if (rc ||
        !(tr->ds.user_keys = dataset_read_map(&tr->ds, "user_map", err, errlen)))
        return -1;
    struct task_conf *tc = &tr->conf.task; /* the label columns: this dataset's */
    if (task_pools_resolve(tc, &tr->ds, err, errlen)) /* data.pools' too */
        return -1;
    for (int i = 0; i < tc->labels.n; i++)
        if (!(tc->labels.c[i].f = dataset_feat_find(&tr->ds, DS_EVENTS, tc->t[i].column)))
            return errorf(err, errlen, "train.tasks: task %s: %s has no /events/%s", tc->t[i].name,
                          tr->files->f[0].path, tc->t[i].column);
    if (step_feat_window(tr, err, errlen)) /* its item and user features */
        return -1;
    if (tr->bias_ids) /* model.bias's rows of this window's items and users */
        return bias_ids_window(tr->bias_ids, &tr->ds, err, errlen) ? -1
               : (bias_rows_map(tr->bias, tr->bias_ids->imap, tr->bias_ids->nimap,
                                tr->bias_ids->umap, tr->bias_ids->numap), 0);
    return 0;
}

/* train.follow with data.path a glob that matches no file yet: wait for
 * its first complete file as the stream waits for later ones (rank 0 looks
 * every 0.25 s and tells the others), at most train.follow_timeout; at
 * the timeout there is nothing to train, an error. */
static void follow_first(struct trainer *tr)
{
    const char *path = tr->conf.data_path;
    char pattern[4096], err[1400] = "", why[1024] = "";
    double timeout = 0;
    if (!params_i64(tr->p, P_train_follow) ||
        stream_follow_pattern(path, pattern, sizeof pattern, err, sizeof err) ||
        strcmp(pattern, path) || /* a list: its files come first (checked as ever) */
        stream_duration_parse("train.follow_timeout", params_str(tr->p, P_train_follow_timeout),
                              &timeout, err, sizeof err))
        return;
    int none = 0;
    if (tr->c->rank == 0) {
        glob_t g;
        const int rc = glob(pattern, 0, NULL, &g);
        none = rc == GLOB_NOMATCH;
        if (rc == 0)
            globfree(&g);
    }
    comm_bcast_bytes(tr->c, &none, sizeof none, 0);
    if (!none)
        return;
    log_info("train.follow: no file matches %s yet: waiting for the first one (%s%s)", pattern,
             timeout > 0 ? "train.follow_timeout " : "no train.follow_timeout",
             timeout > 0 ? params_str(tr->p, P_train_follow_timeout) : "");
    log_release(); /* the wait is seen as it happens */
    struct stream_files s = {0};
    const double t0 = clock_seconds();
    for (;;) {
        int code = FOLLOW_NONE, pending = 0;
        if (tr->c->rank == 0) {
            code = stream_follow_look(&s, pattern, &pending, why, sizeof why, err, sizeof err);
            if (code == FOLLOW_NONE && timeout > 0 && clock_seconds() - t0 >= timeout) {
                code = FOLLOW_ERROR;
                snprintf(err, sizeof err, "train.follow: no %sfile of %.300s arrived within "
                         "train.follow_timeout (%g s): nothing to train%s%.900s",
                         pending ? "complete " : "", pattern, timeout, pending ? ": " : "", why);
            }
        }
        comm_bcast_bytes(tr->c, &code, sizeof code, 0);
        comm_fail_agree(tr->c, code == FOLLOW_ERROR && tr->c->rank == 0, err);
        if (code == FOLLOW_NEW)
            break;
        const struct timespec ts = {0, 250000000}; /* a look every 0.25 s */
        nanosleep(&ts, NULL);
    }
    if (tr->c->rank == 0)
        log_info("train.follow: %s arrived after %.1f s", s.f[0].path, clock_seconds() - t0);
    stream_files_close(&s);
}

/* data.path as window files (data/stream_files.h): the stream schedule's,
 * with a dynamic item table (raw ids across files); tr->ds the first
 * window's dataset (data/window_files.h), every rank its own scratch copy. */
static void open_files(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    char err[1024] = "", msg[1100];
    int bad = 0;
    if (!cf->stream.on) {
        snprintf(err, sizeof err, "data.path = '%.700s' names window files (a list or a glob): "
                 "they are the stream schedule's (train.schedule = stream with data.window)",
                 cf->data_path);
        bad = 1;
    } else if (!cf->dyn.on) {
        snprintf(err, sizeof err, "data.path = '%.700s' names window files: their items are raw "
                 "ids, matched across files, which need a dynamic item table: use "
                 "embedding.dynamic = on", cf->data_path);
        bad = 1;
    }
    comm_fail_agree(tr->c, bad, err);
    follow_first(tr);
    tr->files = xcalloc(1, sizeof *tr->files);
    tr->witems = xcalloc(1, sizeof *tr->witems);
    tr->witems->want_items = cf->features.item; /* the features the windows carry */
    tr->witems->want_users = cf->features.user;
    bad = stream_files_open(tr->files, cf->data_path,
                            (int)params_i64(tr->p, P_data_history_files), err, sizeof err);
    snprintf(msg, sizeof msg, "%s%s", strncmp(err, "data.path", 9) ? "data.path: " : "", err);
    comm_fail_agree(tr->c, bad, msg);
    const char *dir = getenv("TMPDIR");
    snprintf(tr->wpath, sizeof tr->wpath, "%s/freescale-window-%ld-%d.h5",
             dir && dir[0] ? dir : "/tmp", (long)getpid(), tr->c->rank);
    int64_t t0 = 0, nw = 0;
    const struct stream_file *f = tr->files->f;
    bad = window_resolve(&cf->stream, f[0].t_first, f[tr->files->n - 1].t_last, &t0, &nw, err,
                         sizeof err) ||
          trainer_window(tr, t0, t0 + cf->stream.len, err, sizeof err);
    snprintf(msg, sizeof msg, "data.path: %s", err);
    comm_fail_agree(tr->c, bad, msg);
}

/* Open data.path: rank 0 first, so that a bad file gives one message; then
 * the others (a rank that cannot see the file is named). */
static void open_dataset(struct trainer *tr)
{
    char err[1024], msg[1100];
    const char *path = tr->conf.data_path;
    if (stream_files_is_list(path)) {
        open_files(tr);
        return;
    }
    int bad = tr->c->rank == 0 && (dataset_open(&tr->ds, path, err, sizeof err) ||
                                   dataset_refuse_raw(&tr->ds, tr->conf.dyn.on, err, sizeof err));
    snprintf(msg, sizeof msg, "data.path: %s", err);
    comm_fail_agree(tr->c, bad, msg);
    bad = tr->c->rank != 0 && dataset_open(&tr->ds, path, err, sizeof err);
    snprintf(msg, sizeof msg, "data.path: %s", err);
    comm_fail_agree(tr->c, bad, msg);
}

/* Whether t is a feature table (step_feat.h): looked up by emb_multi.c's
 * own exchange (MPI), never through the CUDA IPC mappings. */
static int feature_table(const struct trainer *tr, const struct emb_table *t)
{
    for (int k = 0; tr->feat && k < tr->feat->s.ntables; k++)
        if (tr->feat->tab[k] == t)
            return 1;
    return 0;
}

/* parallel.transport = copy-engine | kernel: the rows and gradients of the
 * tables in device memory that emb_exchange.c looks up (not the feature
 * tables) go through CUDA IPC between the ranks of a node too (emb_ipc.c),
 * MPI between nodes. auto leaves them on MPI (the dense all-reduce alone
 * takes IPC): this path is not yet verified on a GPU. Collective. */
static void table_transport(struct trainer *tr)
{
    const char *tp = tr->conf.transport;
    const int kernel = !strcmp(tp, "kernel");
    if (!kernel && strcmp(tp, "copy-engine") != 0)
        return;
    int n = 0;
    for (int i = 0; i < tr->reg.n; i++) {
        struct emb_table *t = &tr->reg.tables[i];
        if (!backend_has_ipc(t->be) || t->G < 2 || feature_table(tr, t)) /* host tables, */
            continue; /* feature tables: no IPC */
        char err[512], msg[700];
        int bad = emb_ipc_init(t, tr->c, kernel, err, sizeof err);
        snprintf(msg, sizeof msg, "parallel.transport = %s: embedding table '%s': %s", tp,
                 t->conf.name, err);
        comm_fail_agree(tr->c, bad, msg);
        n++;
    }
    int64_t local = 0;
    for (int p = 0; p < tr->c->g[COMM_EMB].size; p++)
        local += p != tr->c->g[COMM_EMB].rank && !comm_peer_remote(tr->c, COMM_EMB, p);
    if (n)
        log_info("parallel.transport: %s: embedding rows and gradients of %d device table%s "
                 "through CUDA IPC to %lld peer%s on this node, MPI to the others", tp, n,
                 n == 1 ? "" : "s", (long long)local, local == 1 ? "" : "s");
    else
        log_info("parallel.transport: %s: embedding exchanges by MPI (no table in device memory "
                 "shared by several ranks; embedding.placement=device moves them to IPC)", tp);
}

void trainer_check_table(const struct trainer *tr, const struct emb_table_conf *ec)
{
    if (ec->dyn.on)
        return; /* a pool that grows to embedding.capacity (train_dyn_describe) */
    const int64_t G = ec->replicated ? 1 : tr->c->g[COMM_EMB].size;
    const int width = ec->subspace_k > 0 ? ec->subspace_k : ec->dim;
    const double slots = (double)(ec->rows / G + 1);
    const double bytes = emb_shard_bytes(slots, width, ec->optim.kind, 0);
    const double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    const int items = !strcmp(ec->name, "items");
    char msg[1024];
    snprintf(msg, sizeof msg, "data.path = %s: %s = %lld: table '%s' needs %.4g GiB per rank "
             "(%.0f rows of %d floats and the %s state%s), more than this node's %.4g GiB of "
             "memory", tr->conf.data_path, items ? "attribute num_items"
                                                 : "attribute cardinality - 1",
             (long long)ec->rows, ec->name, bytes / 1073741824.0, slots, width,
             emb_optim_name(ec->optim.kind), ec->replicated ? ", replicated" : "",
             mem / 1073741824.0);
    comm_fail_agree(tr->c, mem > 0 && bytes > mem, msg); /* every rank checks every table */
}

void trainer_open(struct trainer *tr)
{
    struct train_conf *cf = &tr->conf;
    char err[1024] = "";
    int bad = train_conf_check(tr->p, tr->c->size, err, sizeof err) ||
              train_conf_resolve(tr->p, tr->c->size, cf, err, sizeof err);
    comm_fail_agree(tr->c, bad, err); /* every rank finds the same */
    if (comm_setup_groups(tr->c, cf->embedding_group, err, sizeof err))
        fatal("%s", err); /* checked above */
    open_dataset(tr);
    if (cf->task.type == TASK_RANKING)
        return; /* ranking's split: trainer_build, after the task's set-up */
    tr->n_train = split_train_users(&tr->ds, cf->split, &tr->train_users);
    snprintf(err, sizeof err, "%s: no user has enough events to train on (need >= %d)",
             cf->data_path, split_holdout(cf->split) + 2);
    comm_fail_agree(tr->c, tr->n_train == 0, err);
}

void trainer_setup(struct trainer *tr)
{
    trainer_open(tr);
    trainer_build(tr);
}

void trainer_build(struct trainer *tr)
{
    struct train_conf *cf = &tr->conf;
    char err[1024];
    tr->with_ts = cf->use_timestamps && tr->ds.has_timestamps;
    cf->model.time_bias = tr->with_ts;
    device_select(tr->c, tr->p, &tr->dev);
    tr->be = tr->dev.be;
    comm_fail_agree(tr->c, backend_check(tr->be, cf, err, sizeof err), err);
    int threads = blas_set_threads(tr->c->g[COMM_NODE].size);
    log_info("backend %s: %d BLAS thread%s per rank (%d rank%s on this node)", tr->be->name,
             threads, threads == 1 ? "" : "s", tr->c->g[COMM_NODE].size,
             tr->c->g[COMM_NODE].size == 1 ? "" : "s");
    task_setup_conf(tr);
    step_feat_setup(tr); /* before the model: contextual tokens are positions */
    task_setup_model(tr);
    comm_fail_agree(tr->c, model_init(&tr->m, &cf->model, tr->be, cf->seed, err, sizeof err) != 0,
                    err);
    if (cf->exact_sums) { /* train.exact_sums: the dense gradients (backend_check: the rest) */
        model_exact_enable(&tr->m);
        log_info("train.exact_sums: %lld dense gradient values summed as %d int64 limbs each "
                 "(all-reduce %.1f kB a step, fp32's x %d), row gradients %d bytes a value on "
                 "the wire (x %d)",
                 (long long)tr->m.ngrad, EXACT_LIMBS,
                 (double)(tr->m.ngrad * EXACT_LIMBS + 1) * 8 / 1e3, 2 * EXACT_LIMBS,
                 4 * EXACT_LIMBS, EXACT_LIMBS);
    }
    /* a dataset of raw ids has no bound on them (a dynamic table: 0) */
    struct emb_table_conf ec = {.rows = tr->ds.raw_ids ? 0 : tr->ds.num_items, .dim = cf->d, .init = EMB_INIT_NORMAL,
                                .init_scale = cf->emb_init_std, .seed = cf->seed,
                                .optim = cf->emb_optim, .placement = train_placement(tr)};
    snprintf(ec.name, sizeof ec.name, "items");
    ec.rows_codec = cf->rows_codec;
    ec.grads_codec = cf->grads_codec;
    ec.subspace_k = cf->subspace_k;
    ec.subspace_identity = cf->subspace_identity;
    ec.dyn = cf->dyn;
    ec.exact = cf->exact_sums; /* the rows' gradients: exact sums (emb_exact.c) */
    train_cache_apply(tr, &ec); /* embedding.cache: device slots over the host shard */
    if (cf->node_size > 0) /* debug.node_size: the byte counters' nodes */
        comm_set_node_size(tr->c, (int)cf->node_size);
    trainer_check_table(tr, &ec);
    tr->items = emb_registry_add(&tr->reg, tr->c, &ec);
    step_feat_tables(tr);
    train_dyn_describe(tr);
    table_transport(tr);
    task_setup_init(tr);
    dense_optim_init(&tr->optim, &cf->dense_optim, &tr->m);
    if (cf->task.factors_lr > 0) { /* the factor terms' own rate, on train.lr's schedule */
        const float s = (float)(cf->task.factors_lr / cf->dense_optim.lr);
        struct dense_tensor *fac = model_param(&tr->m, "bias.factor");
        struct dense_tensor *mix = model_param(&tr->m, "bias.fmix");
        if (!fac || !mix)
            fatal("model.factors_lr: the model has no bias.factor or bias.fmix");
        fac->lr_scale = mix->lr_scale = s;
    }
    tr->optim.bias = tr->bias; /* model.bias's rows: clipped and stepped with the rest */
    train_step_init(tr);
    if (cf->task.type == TASK_RANKING) { /* the retrieval split: trainer_open */
        char err[8192];
        tr->n_train = rsplit_train_users(&tr->rsplit, &tr->ds, &tr->train_users);
        snprintf(err, sizeof err, "%s: no user has a training event under data.split = %s",
                 cf->data_path, params_str(tr->p, P_data_split));
        comm_fail_agree(tr->c, tr->n_train == 0, err); /* every rank finds the same */
    }
}

void trainer_free(struct trainer *tr)
{
    watchdog_stop();
    train_dyn_view_end(tr); /* recommend, score, export: the dense view of a dynamic table */
    train_step_free(tr);
    dense_optim_free(&tr->optim);
    emb_registry_free(&tr->reg);
    step_feat_teardown(tr);
    task_teardown(tr);
    model_free(&tr->m);
    free(tr->train_users);
    dataset_close(&tr->ds);
    if (tr->files) {
        stream_files_close(tr->files);
        window_items_free(tr->witems);
        free(tr->files);
        free(tr->witems);
        tr->files = NULL;
        tr->witems = NULL;
    }
    if (tr->bias_ids) {
        bias_ids_free(tr->bias_ids);
        free(tr->bias_ids);
        tr->bias_ids = NULL;
    }
    steptime_free(&tr->st);
    if (tr->metrics)
        fclose(tr->metrics);
    tr->metrics = NULL;
}
