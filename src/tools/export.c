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
 *                                   strings; dense: 1..num_items)
 *   /user_embeddings   float32 [num_users, d]  row u: the model's output
 *                      after user u's whole history (the most recent
 *                      max_seq_len events), what recommend ranks with;
 *                      zeros for a user without events
 *   /user_map          [num_users]  original user ids (dense: 0..U-1)
 *   /dense/NAME        float32 [rows, cols] (vectors [n]) every dense
 *                      parameter of the model by its name
 *   /head/...          ranking (attribute task = "ranking"): the MLP head,
 *                      w0 .. wL [in, out], b0 .. bL [out], mean, std [K]
 *                      (write_head below)
 *
 * Score of user u and item i as recommend computes it:
 *   s = U[u] . E[i] / max(|E[i]|, item_norm_eps)  if item_norm, else U[u] . E[i]
 * Rank 0 writes, under a temporary name renamed at the end: the table in
 * blocks looked up from the shards, the user vectors round by round. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "cli/cli.h"
#include "eval/rec_file.h"
#include "eval/rec_ids.h"
#include "eval/recommend.h"
#include "model/loss.h"
#include "train/step_feat.h"

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
        else if (argv[i][0] == '-')
            fatal("export: unknown option '%s' (see 'freescale export --help')", argv[i]);
        else if (!cmd->ckpt)
            cmd->ckpt = argv[i];
        else
            cli_file_or_override("export", argv[i], &cmd->file, cmd->overrides,
                                 &cmd->noverrides);
    }
    if (!cmd->ckpt) {
        usage(stderr);
        fatal("export: no checkpoint given");
    }
    if (!*out)
        fatal("export: no output file given (-o MODEL.h5)");
}

/* /item_embeddings: rank 0 looks the rows up block by block (the other
 * ranks take part in each lookup with no ids). */
static void write_items(struct trainer *tr, hid_t f)
{
    const int d = tr->conf.d, root = tr->c->rank == 0;
    const int64_t ni = tr->ds.num_items;
    hid_t ds = root ? rec_h5_create(f, "item_embeddings", H5T_IEEE_F32LE, ni, d) : -1;
    int64_t *ids = xmalloc((size_t)ITEM_BLOCK * sizeof *ids);
    float *rows = xmalloc((size_t)ITEM_BLOCK * (size_t)d * sizeof *rows);
    for (int64_t a = 0; a < ni; a += ITEM_BLOCK) {
        int64_t n = root ? (ni - a < ITEM_BLOCK ? ni - a : ITEM_BLOCK) : 0;
        for (int64_t i = 0; i < n; i++)
            ids[i] = a + 1 + i;
        emb_exchange_free(emb_lookup(tr->items, tr->c, ids, n, rows, NULL));
        if (tr->feat) /* the representation the items are scored by (collective) */
            step_feat_item_rows(tr, ids, n, rows);
        if (root)
            rec_h5_write_rows(ds, H5T_NATIVE_FLOAT, a, n, d, rows);
    }
    if (root)
        REC_H5(H5Dclose(ds));
    free(ids);
    free(rows);
}

/* /user_embeddings: the users with events in rounds; rank 0 writes each
 * run of consecutive user indexes with one hyperslab (the rest stay 0). */
static void write_users(struct trainer *tr, hid_t f)
{
    struct comm *c = tr->c;
    const int d = tr->conf.d, root = c->rank == 0;
    hid_t ds = root ? rec_h5_create(f, "user_embeddings", H5T_IEEE_F32LE, tr->ds.num_users, d)
                    : -1;
    int64_t *users;
    const int64_t n = rec_users_with_events(&tr->ds, &users);
    struct rec_plan pl;
    rec_plan_init(&pl, n, c->size, REC_BATCH, REC_ROUND);
    int64_t *counts = xmalloc((size_t)c->size * 2 * sizeof *counts), *cd = counts + c->size;
    for (int64_t k = 0; k < pl.rounds; k++) {
        int64_t lo, cnt, total = 0;
        rec_plan_span(&pl, k, c->rank, &lo, &cnt);
        float *u = xmalloc((size_t)(cnt ? cnt : 1) * (size_t)d * sizeof *u);
        rec_user_vectors(tr, &pl, users, lo, cnt, u, NULL, NULL);
        comm_gather_i64(c, COMM_WORLD, cnt, counts, 0);
        if (root)
            for (int r = 0; r < c->size; r++) {
                total += counts[r];
                cd[r] = counts[r] * d;
            }
        float *gu = root ? xmalloc((size_t)(total ? total : 1) * (size_t)d * sizeof *gu) : NULL;
        comm_gatherv(c, COMM_WORLD, COMM_F32, u, cnt * d, gu, cd, 0);
        if (root) { /* the round is the list positions [k0, k0 + total) */
            const int64_t k0 = rec_plan_first(&pl, k);
            for (int64_t a = 0, b; a < total; a = b) {
                for (b = a + 1; b < total && users[k0 + b] == users[k0 + b - 1] + 1; b++)
                    ;
                rec_h5_write_rows(ds, H5T_NATIVE_FLOAT, users[k0 + a], b - a, d, gu + a * d);
            }
        }
        free(u);
        free(gu);
    }
    if (root)
        REC_H5(H5Dclose(ds));
    free(counts);
    free(users);
}

/* /dense/NAME: the model's parameters as it holds them. */
static void write_dense(struct trainer *tr, hid_t f)
{
    hid_t g;
    REC_H5(g = H5Gcreate2(f, "dense", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    for (int i = 0; i < tr->m.nparams; i++) {
        const struct dense_tensor *t = &tr->m.params[i];
        float *h = xmalloc((size_t)t->n * sizeof *h);
        tr->be->to_host(h, t->w, (size_t)t->n * sizeof *h);
        int two_d = t->rows > 1 && (int64_t)t->rows * t->cols == t->n;
        hid_t d = rec_h5_create(g, t->name, H5T_IEEE_F32LE, two_d ? t->rows : t->n,
                                two_d ? t->cols : 0);
        rec_h5_write_rows(d, H5T_NATIVE_FLOAT, 0, two_d ? t->rows : t->n, two_d ? t->cols : 0,
                          h);
        REC_H5(H5Dclose(d));
        free(h);
    }
    REC_H5(H5Gclose(g));
}

static void write_attrs(const struct trainer *tr, const struct rec_cmd *cmd, hid_t f,
                        const struct rec_ids *um, const struct rec_ids *im)
{
    const struct train_conf *cf = &tr->conf;
    rec_h5_attr_str(f, "format", "freescale-model");
    rec_h5_attr_i64(f, "version", 1);
    rec_h5_attr_str(f, "model_type", cf->model.type == MODEL_HSTU ? "hstu" : "sasrec");
    rec_h5_attr_i64(f, "dim", cf->d);
    rec_h5_attr_i64(f, "layers", cf->model.layers);
    rec_h5_attr_i64(f, "heads", cf->model.heads);
    rec_h5_attr_i64(f, "max_seq_len", cf->N);
    rec_h5_attr_i64(f, "num_items", tr->ds.num_items);
    rec_h5_attr_i64(f, "num_users", tr->ds.num_users);
    rec_h5_attr_i64(f, "step", tr->step);
    rec_h5_attr_str(f, "checkpoint", cmd->ckpt);
    rec_h5_attr_str(f, "dataset", cf->data_path);
    rec_h5_attr_str(f, "loss", cf->bce ? "bce" : "softmax");
    rec_h5_attr_f64(f, "temperature", params_f64(tr->p, P_train_temperature));
    rec_h5_attr_i64(f, "item_norm", cf->normalize_items);
    rec_h5_attr_f64(f, "item_norm_eps", (double)ITEM_NORM_EPS);
    rec_h5_attr_str(f, "user_ids", rec_ids_kind_name(um));
    rec_h5_attr_str(f, "item_ids", rec_ids_kind_name(im));
    rec_h5_attr_str(f, "task", cf->task.type == TASK_RANKING ? "ranking" : "retrieval");
}

/* Ranking: /head, the MLP over the item positions' outputs (model/task.h):
 * w0 .. wL [in, out], b0 .. bL [out], mean, std [K] (regression tasks'
 * prediction = mean + std z; binary: 0, 1), attributes tasks, kinds,
 * actions, hidden. */
static void write_head(struct trainer *tr, hid_t f)
{
    const struct task_conf *tc = &tr->conf.task;
    if (tc->type != TASK_RANKING)
        return;
    hid_t g;
    REC_H5(g = H5Gcreate2(f, "head", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
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
    rec_h5_attr_str(g, "tasks", tasks);
    rec_h5_attr_str(g, "kinds", kinds);
    rec_h5_attr_str(g, "actions", tc->actions == ACT_INTERLEAVE ? "interleave" : "sum");
    rec_h5_attr_str(g, "hidden", hidden);
    for (int i = 0; i < tr->m.nparams; i++) {
        const struct dense_tensor *t = &tr->m.params[i];
        if (strncmp(t->name, "head.", 5))
            continue;
        float *h = xmalloc((size_t)t->n * sizeof *h);
        tr->be->to_host(h, t->w, (size_t)t->n * sizeof *h);
        const int stats = !strcmp(t->name, "head.stats");
        const int two_d = t->rows > 1 && !stats;
        for (int part = 0; part < (stats ? 2 : 1); part++) {
            const char *name = stats ? (part ? "std" : "mean") : t->name + 5;
            const int64_t rows = two_d ? t->rows : stats ? tc->n : t->n;
            hid_t d = rec_h5_create(g, name, H5T_IEEE_F32LE, rows, two_d ? t->cols : 0);
            rec_h5_write_rows(d, H5T_NATIVE_FLOAT, 0, rows, two_d ? t->cols : 0,
                              h + part * tc->n);
            REC_H5(H5Dclose(d));
        }
        free(h);
    }
    REC_H5(H5Gclose(g));
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
    char err[1024];
    struct rec_file file;
    hid_t f = -1;
    if (c.rank == 0) {
        if (rec_ids_load(&um, &tr.ds, 0, err, sizeof err) ||
            rec_ids_load(&im, &tr.ds, 1, err, sizeof err))
            fatal("export: %s", err);
        rec_file_begin(&file, out);
        f = H5Fcreate(file.tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        if (f < 0)
            rec_fatal("%s: cannot create %s (directory missing or not writable?)", out, file.tmp);
        write_attrs(&tr, &cmd, f, &um, &im);
        rec_ids_h5_write(&im, f, "item_map");
        rec_ids_h5_write(&um, f, "user_map");
        write_dense(&tr, f);
        write_head(&tr, f);
    }
    write_items(&tr, f);
    write_users(&tr, f);
    if (c.rank == 0) {
        if (H5Fclose(f) < 0)
            rec_fatal("%s: writing failed (disk full?)", out);
        rec_file_commit(&file);
    }
    comm_barrier(&c);
    log_info("export: %lld items, %lld users, %d dense parameters -> %s",
             (long long)tr.ds.num_items, (long long)tr.ds.num_users, tr.m.nparams, out);
    free(cmd.overrides);
    rec_ids_free(&um);
    rec_ids_free(&im);
    trainer_free(&tr);
    comm_free(&c);
    return 0;
}
