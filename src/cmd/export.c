/* export: 'mpirun -np P freescale export CKPT.h5 [FILE.in]
 * [section.key=value ...] -o MODEL.h5': a trained model as plain arrays
 * for NumPy and other tools.
 *
 *   /                  attrs format = "freescale-model", version = 1,
 *                      model_type ("hstu" | "sasrec"), dim, layers, heads,
 *                      max_seq_len, num_items, num_users, step, checkpoint,
 *                      dataset, loss ("softmax" | "bce"), temperature (the
 *                      training softmax's tau; scores below do not use it),
 *                      item_norm (1: items are scored by their L2-normalised
 *                      rows, HSTU; 0: by the raw rows, SASRec),
 *                      item_norm_eps (the norm's floor), user_ids, item_ids
 *                      ("int" | "string" | "dense": the type of the maps)
 *   /item_embeddings   float32 [num_items, d]  row i: dense item id i + 1,
 *                                              the table as trained (raw), plus
 *                                              the item's pooled features with
 *                                              features.item (what is scored)
 *   /item_map          [num_items]  original item ids (int64 or UTF-8
 *                                   strings; dense: 1..num_items; a raw
 *                                   dataset: its sorted /items/ids)
 *   /user_embeddings   float32 [num_users, d]  row u: the model's output
 *                      after user u's whole history (the most recent
 *                      max_seq_len events), what recommend ranks with;
 *                      zeros for a user without events
 *   /user_map          [num_users]  original user ids (dense: 0..U-1)
 *   /dense/NAME        float32 [rows, cols] (vectors [n]) every dense
 *                      parameter of the model by its name
 *   /head/...          ranking (attribute task = "ranking"): the MLP head,
 *                      w0 .. wL [in, out], b0 .. bL [out], mean, std [K]
 *                      (write_head below); with model.recency its
 *                      half-life (attribute recency, else 0) and the
 *                      items' centres centre [num_items + 1, K]
 *
 * Score of user u and item i as recommend computes it:
 *   s = U[u] . E[i] / max(|E[i]|, item_norm_eps)  if item_norm, else U[u] . E[i]
 * Written under a temporary name renamed at the end: rank 0 writes the
 * attributes and the dense parameters, then every rank its own rows through
 * MPI-IO: its share of the maps, its shard of the table, its users'
 * vectors round by round (rec_file.h). */
#include "cmd/export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "cli/cli.h"
#include "comm/comm_fail.h"
#include "cmd/rec_file.h"
#include "cmd/rec_ids.h"
#include "cmd/recommend.h"
#include "model/loss.h"
#include "train/bias_rows.h"
#include "train/infer.h"

#define ITEM_BLOCK ((int64_t)1 << 15) /* table rows per lookup */

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np P freescale export CKPT.h5 [FILE.in] [section.key=value ...] "
               "-o MODEL.h5\n"
               "\n"
               "The item table (/item_embeddings, /item_map), every user's vector after the\n"
               "whole history (/user_embeddings, /user_map) and the dense parameters\n"
               "(/dense/NAME) as HDF5 arrays; the layout is in doc/training.md. Without\n"
               "FILE.in the parameters stored in the checkpoint are used.\n");
}

static void parse_args(int argc, char **argv, struct rec_cmd *cmd, const char **out)
{
    static const char *const names[] = {"-o", "--output"};
    memset(cmd, 0, sizeof *cmd);
    cmd->tool = "export";
    cmd->overrides = xmalloc((size_t)argc * sizeof *cmd->overrides);
    *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            exit(0);
        }
        if (cli_option("export", argc, argv, &i, names, 2, &v) >= 0)
            *out = v;
        else
            rec_cmd_word(cmd, argv[i]);
    }
    if (!cmd->ckpt) {
        usage(stderr);
        fatal("export: no checkpoint given");
    }
    if (!*out)
        fatal("export: no output file given (-o MODEL.h5)");
}

/* /item_embeddings: every rank of the first embedding group writes its
 * shard's rows (ids shard, shard + G, ...: rows id - 1, strided), in blocks
 * of ITEM_BLOCK; the other ranks take part in each write with none. */
static void write_items(struct trainer *tr, struct rec_file *file, hid_t ds)
{
    struct emb_table *t = tr->items;
    const int G = t->G, d = tr->conf.d, mine = tr->c->rank < G;
    const int64_t ni = tr->ds.num_items, id0 = t->shard ? t->shard : G;
    const int64_t n = mine && id0 <= ni ? (ni - id0) / G + 1 : 0;
    const int64_t calls = ((ni + G - 1) / G + ITEM_BLOCK - 1) / ITEM_BLOCK; /* the same on all */
    float *rows = xmalloc((size_t)ITEM_BLOCK * (size_t)d * sizeof *rows);
    int64_t *ids = tr->feat ? xmalloc((size_t)ITEM_BLOCK * sizeof *ids) : NULL;
    for (int64_t b = 0; b < calls; b++) {
        const int64_t a = b * ITEM_BLOCK, k = a >= n ? 0 : n - a < ITEM_BLOCK ? n - a : ITEM_BLOCK;
        if (k)
            emb_table_get_slots(t, id0 / G + a, k, rows, NULL, NULL);
        if (tr->feat) { /* the representation the items are scored by (collective) */
            for (int64_t i = 0; i < k; i++)
                ids[i] = id0 + (a + i) * G;
            infer_item_rows(tr, ids, k, rows);
        }
        h5io_write_rows(&file->h, ds, H5T_NATIVE_FLOAT, k ? id0 - 1 + a * G : 0, G, k, d, rows);
    }
    free(ids);
    free(rows);
}

/* /user_embeddings: the users with events in rounds; every rank writes its
 * own users' rows (user indexes ascending; the rest stay 0). */
static void write_users(struct trainer *tr, struct rec_file *file, hid_t ds)
{
    struct comm *c = tr->c;
    const int d = tr->conf.d;
    int64_t *users;
    const int64_t n = rec_users_with_events(&tr->ds, &users);
    struct rec_plan pl;
    rec_plan_init(&pl, n, c->size, REC_BATCH, REC_ROUND);
    for (int64_t k = 0; k < pl.rounds; k++) {
        int64_t lo, cnt;
        rec_plan_span(&pl, k, c->rank, &lo, &cnt);
        float *u = xmalloc((size_t)(cnt ? cnt : 1) * (size_t)d * sizeof *u);
        rec_user_vectors(tr, &pl, users, lo, cnt, u, NULL, NULL);
        h5io_write_row_list(&file->h, ds, H5T_NATIVE_FLOAT, users + lo, cnt, d, u);
        free(u);
    }
    free(users);
}

/* /dense/NAME [rows, cols] = v (rank 0) */
static void write_matrix(struct rec_file *file, hid_t g, const char *name, int64_t rows,
                         int64_t cols, const float *v)
{
    hid_t dd = rec_h5_dset(file, g, name, H5T_IEEE_F32LE, rows, cols);
    h5io_write_rows(&file->h, dd, H5T_NATIVE_FLOAT, 0, 1, rows, cols, v);
    h5io_close_obj(&file->h, dd);
}

/* model.bias's rows held outside the model (train/bias_rows.h), gathered
 * whole on rank 0 (collective): item [bias_items, K] then user
 * [bias_users, K]; NULL without, and on the other ranks. */
static float *gather_bias(struct trainer *tr)
{
    if (!tr->bias)
        return NULL;
    const struct task_conf *tc = &tr->conf.task;
    const int64_t ni = tc->bias_items * tc->n;
    const int root = tr->c->g[COMM_DP].rank == 0;
    float *v = root ? xmalloc((size_t)(ni + tc->bias_users * tc->n) * sizeof *v) : NULL;
    bias_rows_full(tr->bias, 0, 0, v, root ? v + ni : NULL);
    return v;
}

/* /dense/NAME: the model's parameters as it holds them, and model.bias's
 * rows (bias: gather_bias's) as bias.item and bias.user (rank 0). */
static void write_dense(struct trainer *tr, struct rec_file *file, const float *bias)
{
    struct h5io *h = &file->h;
    hid_t g = h5io_group(h, h->f, "dense");
    if (bias) {
        const struct task_conf *tc = &tr->conf.task;
        write_matrix(file, g, "bias.item", tc->bias_items, tc->n, bias);
        write_matrix(file, g, "bias.user", tc->bias_users, tc->n, bias + tc->bias_items * tc->n);
    }
    for (int i = 0; i < tr->m.nparams; i++) {
        const struct dense_tensor *t = &tr->m.params[i];
        float *v = xmalloc((size_t)t->n * sizeof *v);
        tr->be->to_host(v, t->w, (size_t)t->n * sizeof *v);
        int two_d = t->rows > 1 && (int64_t)t->rows * t->cols == t->n;
        write_matrix(file, g, t->name, two_d ? t->rows : t->n, two_d ? t->cols : 0, v);
        free(v);
    }
    h5io_close_obj(h, g);
}

static void write_attrs(const struct trainer *tr, const struct rec_cmd *cmd, struct h5io *h,
                        const struct rec_ids *um, const struct rec_ids *im)
{
    const struct train_conf *cf = &tr->conf;
    const hid_t f = h->f;
    h5io_attr_utf8(h, f, "format", "freescale-model");
    h5io_attr_i64(h, f, "version", 1);
    h5io_attr_utf8(h, f, "model_type", cf->model.type == MODEL_HSTU ? "hstu" : "sasrec");
    h5io_attr_i64(h, f, "dim", cf->d);
    h5io_attr_i64(h, f, "layers", cf->model.layers);
    h5io_attr_i64(h, f, "heads", cf->model.heads);
    h5io_attr_i64(h, f, "max_seq_len", cf->N);
    h5io_attr_i64(h, f, "num_items", tr->ds.num_items);
    h5io_attr_i64(h, f, "num_users", tr->ds.num_users);
    h5io_attr_i64(h, f, "step", tr->step);
    h5io_attr_utf8(h, f, "checkpoint", cmd->ckpt);
    h5io_attr_utf8(h, f, "dataset", cf->data_path);
    h5io_attr_utf8(h, f, "loss", cf->loss == LOSS_BCE ? "bce" : "softmax");
    h5io_attr_f64(h, f, "temperature", params_f64(tr->p, P_train_temperature));
    h5io_attr_i64(h, f, "item_norm", cf->normalize_items);
    h5io_attr_f64(h, f, "item_norm_eps", (double)ITEM_NORM_EPS);
    h5io_attr_utf8(h, f, "user_ids", rec_ids_kind_name(um));
    h5io_attr_utf8(h, f, "item_ids", rec_ids_kind_name(im));
    h5io_attr_utf8(h, f, "task", tr->task.ops->name);
}

/* Ranking: /head, the MLP over the item positions' outputs (model/task.h):
 * w0 .. wL [in, out], b0 .. bL [out], mean, std [K] (regression tasks'
 * prediction = mean + std z; binary: 0, 1), attributes tasks, kinds,
 * actions, hidden. Rank 0. */
static void write_task_head(struct trainer *tr, struct rec_file *file)
{
    const struct task_conf *tc = &tr->conf.task;
    if (tc->type != TASK_RANKING)
        return;
    struct h5io *h = &file->h;
    hid_t g = h5io_group(h, h->f, "head");
    char tasks[RANK_MAX_TASKS * 40] = "", kinds[RANK_MAX_TASKS * 12] = "", hidden[128] = "";
    for (int k = 0; k < tc->n; k++) {
        snprintf(tasks + strlen(tasks), sizeof tasks - strlen(tasks), "%s%s", k ? "," : "",
                 tc->t[k].name);
        snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s", k ? "," : "",
                 tc->t[k].kind == TASK_BINARY ? "binary" : "regression");
    }
    for (int l = 0; l < tc->nmlp; l++)
        snprintf(hidden + strlen(hidden), sizeof hidden - strlen(hidden), "%s%d", l ? "," : "",
                 tc->mlp[l]);
    h5io_attr_utf8(h, g, "tasks", tasks);
    h5io_attr_utf8(h, g, "kinds", kinds);
    h5io_attr_utf8(h, g, "actions", tc->actions == ACT_INTERLEAVE ? "interleave" : "sum");
    h5io_attr_utf8(h, g, "hidden", hidden);
    for (int i = 0; i < tr->m.nparams; i++) {
        const struct dense_tensor *t = &tr->m.params[i];
        if (strncmp(t->name, "head.", 5))
            continue;
        float *v = xmalloc((size_t)t->n * sizeof *v);
        tr->be->to_host(v, t->w, (size_t)t->n * sizeof *v);
        const int stats = !strcmp(t->name, "head.stats");
        const int two_d = t->rows > 1 && !stats;
        for (int part = 0; part < (stats ? 2 : 1); part++) {
            const char *name = stats ? (part ? "std" : "mean") : t->name + 5;
            const int64_t rows = two_d ? t->rows : stats ? tc->n : t->n;
            const int64_t cols = two_d ? t->cols : 0;
            hid_t d = rec_h5_dset(file, g, name, H5T_IEEE_F32LE, rows, cols);
            h5io_write_rows(h, d, H5T_NATIVE_FLOAT, 0, 1, rows, cols, v + part * tc->n);
            h5io_close_obj(h, d);
        }
        free(v);
    }
    /* model.recency: the half-life and the items' centres its terms need (from the
     * training labels at start-up; model/task_recency.h) */
    h5io_attr_f64(h, g, "recency", tc->recency);
    h5io_attr_i64(h, g, "factors", tc->factors);
    h5io_attr_f64(h, g, "factor_ridge", tc->factor_ridge); /* 0: the shrunk mean */
    h5io_attr_str(h, g, "factor_feature", tc->factor_feature ? tc->factor_feature : "");
    const float *centre = task_ranking_centres(&tr->task);
    if (centre) {
        hid_t d = rec_h5_dset(file, g, "centre", H5T_IEEE_F32LE, tc->bias_items, tc->n);
        h5io_write_rows(h, d, H5T_NATIVE_FLOAT, 0, 1, tc->bias_items, tc->n, centre);
        h5io_close_obj(h, d);
    }
    h5io_close_obj(h, g);
}

/* Rank 0: the attributes, the dense parameters and the empty large
 * datasets (/item_map, /user_map, /item_embeddings, /user_embeddings). */
static void write_head(struct trainer *tr, const struct rec_cmd *cmd, struct rec_file *file,
                       const struct rec_ids *um, const struct rec_ids *im, const float *bias)
{
    struct h5io *h = &file->h;
    const int64_t ni = tr->ds.num_items, nu = tr->ds.num_users;
    rec_h5_create(file);
    write_attrs(tr, cmd, h, um, im);
    hid_t ti = rec_ids_h5_type(im, h), tu = rec_ids_h5_type(um, h);
    hid_t d[4] = {rec_h5_dset(file, h->f, "item_map", ti, ni, 0),
                  rec_h5_dset(file, h->f, "user_map", tu, nu, 0),
                  rec_h5_dset(file, h->f, "item_embeddings", H5T_IEEE_F32LE, ni, tr->conf.d),
                  rec_h5_dset(file, h->f, "user_embeddings", H5T_IEEE_F32LE, nu, tr->conf.d)};
    for (int i = 0; i < 4; i++)
        h5io_close_obj(h, d[i]);
    h5io_close_obj(h, ti);
    h5io_close_obj(h, tu);
    write_dense(tr, file, bias);
    write_task_head(tr, file);
    rec_h5_close(file);
}

int export_main(int argc, char **argv)
{
    struct rec_cmd cmd;
    const char *out;
    parse_args(argc, argv, &cmd, &out);
    struct comm c;
    struct params p;
    struct trainer tr;
    rec_start(&cmd, &argc, &argv, &c, &p, &tr);
    struct rec_ids um = {0}, im = {0};
    char err[1024] = "", msg[1100];
    /* the set-up's errors: every rank ends, one message (comm_fail_agree) */
    int bad = rec_ids_load(&um, &tr.ds, 0, err, sizeof err) ||
              rec_ids_load(&im, &tr.ds, 1, err, sizeof err);
    snprintf(msg, sizeof msg, "export: %s", err);
    comm_fail_agree(&c, bad, msg);
    rec_file_check(&c, "export", out);
    log_release(); /* set up: what rec_start held */
    struct rec_file file;
    rec_file_begin(&file, out, &c);
    float *bias = gather_bias(&tr);
    if (c.rank == 0)
        write_head(&tr, &cmd, &file, &um, &im, bias);
    free(bias);
    rec_h5_reopen(&file, &c); /* every rank, its own rows */
    hid_t d[4] = {rec_h5_open(&file, "item_map"), rec_h5_open(&file, "user_map"),
                  rec_h5_open(&file, "item_embeddings"), rec_h5_open(&file, "user_embeddings")};
    rec_ids_h5_write(&im, &file.h, d[0], c.rank, c.size);
    rec_ids_h5_write(&um, &file.h, d[1], c.rank, c.size);
    write_items(&tr, &file, d[2]);
    write_users(&tr, &file, d[3]);
    for (int i = 0; i < 4; i++)
        h5io_close_obj(&file.h, d[i]);
    rec_h5_close(&file);
    rec_file_commit(&file, &c);
    log_info("export: %lld items, %lld users, %d dense parameters -> %s",
             (long long)tr.ds.num_items, (long long)tr.ds.num_users,
             tr.m.nparams + (tr.bias ? 2 : 0), out);
    free(cmd.overrides);
    rec_ids_free(&um);
    rec_ids_free(&im);
    trainer_free(&tr);
    comm_free(&c);
    return 0;
}
