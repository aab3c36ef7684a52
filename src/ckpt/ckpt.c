/* ckpt: writing rank-count-independent HDF5 checkpoints; see
 * ckpt.h (reading and verification: ckpt_read.c; the table
 * rows: ckpt_rows.c; which run a checkpoint belongs to, listing and
 * retention: ckpt_run.c).
 *
 * The file DIR/ckpt-STEP.h5.tmp.HOST.PID (HOST, PID: rank 0's) is written by every
 * rank together through MPI-IO (output.checkpoint_write = collective: each
 * rank writes its share of every table's rows; attributes and dense
 * parameters once), or by rank 0 alone from rows gathered to it (=
 * gathered, the former path). It is fsynced, renamed into place by rank 0
 * and the directory fsynced; only then are this run's checkpoints beyond
 * output.keep_checkpoints deleted (ckpt_run.c). Any failure on any rank on the way (no
 * space left, permission, I/O error) removes the temporary file and ends
 * the job with the path and the cause from errno (or MPI-IO's error text):
 * the checkpoints already there are never touched. Every dataset is
 * chunked with HDF5's Fletcher-32 checksum, and the file uses the v2
 * object headers whose metadata HDF5 checksums too. */
#include "ckpt/ckpt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/tmpguard.h"
#include "cli/cli.h"
#include "ckpt/ckpt_priv.h"
#include "ckpt/ckpt_run.h"
#include "ckpt/ckpt_dyn.h"
#include "train/bias_rows.h"

/* --- failing cleanly ----------------------------------------------------------- */

/* The file being written (every rank, or rank 0 alone). */
struct ck_out {
    const char *path; /* the checkpoint's final name */
    char tmp[4200];   /* the temporary file written */
    struct h5io h;
    float *bias[3];   /* model.bias's rows gathered (bias_gather): values, m, v; or NULL */
};

/* model.bias's rows (train/bias_rows.h), brought up to date and gathered
 * whole on rank 0 (collective) for its header: each part item
 * [bias_items, K] then user [bias_users, K]. */
static void bias_gather(struct trainer *tr, struct ck_out *o)
{
    if (!tr->bias)
        return;
    const struct task_conf *tc = &tr->conf.task;
    const int64_t ni = tc->bias_items * tc->n, nu = tc->bias_users * tc->n;
    const int root = tr->c->g[COMM_DP].rank == 0;
    for (int part = 0; part < 3; part++) {
        o->bias[part] = root ? xmalloc((size_t)(ni + nu) * sizeof *o->bias[part]) : NULL;
        bias_rows_full(tr->bias, part, 0, o->bias[part], root ? o->bias[part] + ni : NULL);
    }
}

/* what failed (a call, or a description: h5io's record, or `what` with
 * errno e); removes the temporary file and ends the job. A rank that fails
 * under MPI-IO ends the others too (the close is collective: never
 * attempted). */
static void __attribute__((noreturn)) ck_die(struct ck_out *o, const char *what, int e)
{
    h5io_abandon(&o->h);
    unlink(o->tmp);
    tmpguard_end();
    if (e != 0)
        fatal("checkpoint %s: cannot write %s: %s (%s); the temporary file was removed, "
              "earlier checkpoints are kept",
              o->path, o->tmp, strerror(e), what);
    fatal("checkpoint %s: cannot write %s (%s); the temporary file was removed, earlier "
          "checkpoints are kept",
          o->path, o->tmp, what);
}

/* h5io's on_fail: every HDF5 call of the writer */
static void ck_fail(struct h5io *h)
{
    char what[512];
    ck_die(h->ctx, h5io_failure(h, what, sizeof what), h->errnum);
}

/* --- writing ---------------------------------------------------------------- */

int ckpt_parts(const struct emb_table *t, struct ckpt_part part[3])
{
    int n = 0;
    part[n++] = (struct ckpt_part){CKPT_WEIGHT, "weight", t->width,
                                   (size_t)t->width * sizeof(float), 1};
    if (t->state_floats)
        part[n++] = (struct ckpt_part){CKPT_STATE, "state", t->state_floats,
                                       (size_t)t->state_floats * sizeof(float), 1};
    if (t->steps)
        part[n++] = (struct ckpt_part){CKPT_STEPS, "steps", 0, sizeof(int64_t), 0};
    return n;
}

hid_t ckpt_mem_type(const struct ckpt_part *p)
{
    return p->is_float ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT64;
}

hid_t ckpt_file_type(const struct ckpt_part *p)
{
    return p->is_float ? H5T_IEEE_F32LE : H5T_STD_I64LE;
}

/* A dataset [rows(, cols)] in checksummed chunks of about 1 MiB. */
static hid_t create_checksummed(struct ck_out *o, hid_t loc, const char *name, hid_t type,
                                int64_t rows, int64_t cols)
{
    const struct h5io_layout lay = {
        .chunk_rows = h5io_chunk_rows(type, rows, cols), .checksum = 1};
    return h5io_dset(&o->h, loc, name, type, rows, cols, &lay);
}

/* GROUP/NAME = h [n] */
static void write_flat(struct ck_out *o, hid_t g, const char *name, const float *h, int64_t n)
{
    hid_t d = create_checksummed(o, g, name, H5T_IEEE_F32LE, n, 0);
    h5io_write_rows(&o->h, d, H5T_NATIVE_FLOAT, 0, 1, n, 0, h);
    h5io_close_obj(&o->h, d);
}

/* /GROUP/NAME for every dense parameter (which: NULL = the weights, else
 * the optimizer's moments: part 1 the first, 2 the second), and
 * model.bias's rows (bias_gather) as the dense bias.item and bias.user
 * they replace: the layout depends neither on the rank count nor on how
 * the rows are held (a checkpoint of the dense way reads the same). */
static void write_dense(struct ck_out *o, const char *group, struct trainer *tr,
                        float *const *which, int part)
{
    hid_t g = h5io_group(&o->h, o->h.f, group);
    for (int i = 0; i < tr->m.nparams; i++) {
        struct dense_tensor *t = &tr->m.params[i];
        float *h = xmalloc((size_t)t->n * sizeof *h);
        tr->be->to_host(h, which ? which[i] : t->w, (size_t)t->n * sizeof *h);
        write_flat(o, g, t->name, h, t->n);
        free(h);
    }
    if (o->bias[part]) {
        const struct task_conf *tc = &tr->conf.task;
        const int64_t ni = tc->bias_items * tc->n, nu = tc->bias_users * tc->n;
        write_flat(o, g, "bias.item", o->bias[part], ni);
        write_flat(o, g, "bias.user", o->bias[part] + ni, nu);
    }
    h5io_close_obj(&o->h, g);
}

/* The tables' datasets /emb/NAME/PART, left open in d[table][part]. */
static void create_tables(struct trainer *tr, struct ck_out *o, hid_t d[][3])
{
    hid_t emb = h5io_group(&o->h, o->h.f, "/emb");
    for (int k = 0; k < tr->reg.n; k++) {
        struct emb_table *t = &tr->reg.tables[k];
        if (t->dyn) { /* ids and rows (ckpt_dyn.c) */
            ckpt_dyn_create(tr, &o->h, emb, k);
            continue;
        }
        struct ckpt_part part[3];
        const int np = ckpt_parts(t, part);
        hid_t g = h5io_group(&o->h, emb, t->conf.name);
        for (int j = 0; j < np; j++)
            d[k][j] = create_checksummed(o, g, part[j].name, ckpt_file_type(&part[j]),
                                         t->conf.rows + 1, part[j].cols);
        h5io_close_obj(&o->h, g);
    }
    h5io_close_obj(&o->h, emb);
}

/* Rank 0: create the temporary file and write everything but the table
 * rows (the tables' datasets are created, left open in d). */
static void write_header(struct trainer *tr, struct ck_out *o, hid_t d[][3])
{
    h5io_create(&o->h, o->tmp, NULL, H5IO_CHECKSUMMED, ck_fail, o);
    struct h5io *h = &o->h;
    const hid_t f = h->f;
    const struct model_conf *mc = &tr->m.conf;
    h5io_attr_str(h, f, "format", CKPT_FORMAT);
    h5io_attr_i64(h, f, "version", CKPT_VERSION);
    h5io_attr_i64(h, f, "step", tr->step);
    h5io_attr_i64(h, f, "adam_t", dense_optim_steps(&tr->optim));
    h5io_attr_i64(h, f, "num_items", tr->ds.num_items);
    h5io_attr_i64(h, f, "model_type", mc->type);
    h5io_attr_i64(h, f, "dim", mc->d);
    h5io_attr_i64(h, f, "layers", mc->layers);
    h5io_attr_i64(h, f, "heads", mc->heads);
    h5io_attr_i64(h, f, "max_seq_len", mc->max_len);
    h5io_attr_i64(h, f, "time_bias", mc->time_bias);
    h5io_attr_i64(h, f, "emb_optimizer", tr->items->conf.optim.kind);
    h5io_attr_str(h, f, "rows_codec", emb_codec_name(tr->items->conf.rows_codec)); /* recorded, */
    h5io_attr_str(h, f, "grads_codec", emb_codec_name(tr->items->conf.grads_codec)); /* not checked */
    h5io_attr_i64(h, f, "subspace_k", tr->items->conf.subspace_k); /* /emb/items/weight: c[i] then */
    h5io_attr_i64(h, f, "subspace_basis", tr->items->conf.subspace_identity);
    h5io_attr_i64(h, f, "seed", (int64_t)tr->conf.seed); /* F and U of a subspace table derive from it */
    h5io_attr_i64(h, f, "best_epoch", tr->best_epoch);
    h5io_attr_f64(h, f, "best_val", tr->best_val);
    h5io_attr_i64(h, f, "val_epoch", tr->val_epoch);
    h5io_attr_i64(h, f, "stream_windows", tr->windows); /* train.schedule = stream */
    for (int t = 0; t < RANK_MAX_TASKS; t++) /* the stream's running average */
        if (tr->avg.n[t] || tr->avg.nb[t]) {
            char key[48];
            snprintf(key, sizeof key, "stream_avg_%d_n", t);
            h5io_attr_i64(h, f, key, tr->avg.n[t]);
            snprintf(key, sizeof key, "stream_avg_%d_nb", t);
            h5io_attr_i64(h, f, key, tr->avg.nb[t]);
            snprintf(key, sizeof key, "stream_avg_%d_model", t);
            h5io_attr_f64(h, f, key, tr->avg.model[t]);
            snprintf(key, sizeof key, "stream_avg_%d_base", t);
            h5io_attr_f64(h, f, key, tr->avg.base[t]);
        }
    if (tr->avg.nw) { /* the windows of the stream's mean */
        h5io_attr_i64(h, f, "stream_avg_windows", tr->avg.nw);
        h5io_attr_i64(h, f, "stream_avg_first", tr->avg.first);
        h5io_attr_i64(h, f, "stream_avg_last", tr->avg.last);
    }
    if (tr->files) /* window files: checked on resume (cmd/train_stream.c) */
        h5io_attr_i64(h, f, "stream_files_before", tr->files_before);
    if (tr->conf.task.type == TASK_RANKING && tr->conf.task.bias) /* model.recency: the user */
        for (int t = 0; t < tr->conf.task.n; t++) { /* rows' scale now (a stream's last choice) */
            char key[48];
            snprintf(key, sizeof key, "bias_uscale_%d", t);
            h5io_attr_f64(h, f, key, tr->bias_uscale[t]);
        }
    struct ckpt_run run; /* the run it belongs to, and the write order (ckpt_run.h) */
    ckpt_run_identity(tr, &run);
    h5io_attr_str(h, f, "run_id", run.id);
    h5io_attr_str(h, f, "run_params", run.params);
    h5io_attr_i64(h, f, "written_ns", ckpt_run_now_ns());
    ckpt_dyn_header(h, f); /* a delta checkpoint: the one it follows */
    char *text = params_serialize(tr->p);
    h5io_attr_str(h, f, "params", text);
    free(text);
    write_dense(o, "/dense", tr, NULL, 0);
    write_dense(o, "/dense_m", tr, dense_optim_moments(&tr->optim, 0), 1);
    write_dense(o, "/dense_v", tr, dense_optim_moments(&tr->optim, 1), 2);
    create_tables(tr, o, d);
}

/* fsync path (a file or a directory); -1 with errno on failure. */
static int fsync_path(const char *path, int flags)
{
    int fd = open(path, flags);
    if (fd < 0)
        return -1;
    int rc = fsync(fd), e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* Close (collective under MPI-IO) and fsync: every writing rank flushes
 * what its node cached. */
static void close_file(struct ck_out *o)
{
    h5io_close(&o->h); /* a failure went to ck_fail */
    if (fsync_path(o->tmp, O_RDONLY) != 0)
        ck_die(o, "fsync", errno);
}

static void close_tables(struct trainer *tr, struct ck_out *o, hid_t d[][3])
{
    for (int k = 0; k < tr->reg.n; k++) {
        struct ckpt_part part[3];
        for (int j = 0, np = tr->reg.tables[k].dyn ? 0 : ckpt_parts(&tr->reg.tables[k], part);
             j < np; j++)
            h5io_close_obj(&o->h, d[k][j]);
    }
}

/* Every rank: the file rank 0 made, opened together through MPI-IO, and
 * every table's rows written into it (the datasets' storage is allocated
 * at the open). */
static void write_rows_collective(struct trainer *tr, struct ck_out *o)
{
    h5io_open_rw(&o->h, o->tmp, tr->c, H5IO_CHECKSUMMED | H5IO_DIRECT, ck_fail, o);
    hid_t d[EMB_MAX_TABLES][3];
    for (int k = 0; k < tr->reg.n; k++) {
        struct emb_table *t = &tr->reg.tables[k];
        if (t->dyn) {
            ckpt_dyn_write(tr, &o->h, k);
            continue;
        }
        struct ckpt_part part[3];
        for (int j = 0, np = ckpt_parts(t, part); j < np; j++) {
            char name[300];
            snprintf(name, sizeof name, "/emb/%s/%s", t->conf.name, part[j].name);
            d[k][j] = h5io_dset_reopen(&o->h, o->h.f, name);
        }
        ckpt_rows_write(tr, &o->h, t, d[k]);
    }
    close_tables(tr, o, d);
    close_file(o);
}

/* Rank 0: rename into place, fsync the directory. */
static void commit_file(struct ck_out *o)
{
    if (rename(o->tmp, o->path) != 0)
        ck_die(o, "rename into place", errno);
    tmpguard_end();
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", o->path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        slash[slash == dir] = '\0'; /* "/ckpt-1.h5" -> "/" */
    if (fsync_path(dir, O_RDONLY | O_DIRECTORY) != 0)
        log_warn("checkpoint %s: fsync of the directory %s failed: %s", o->path, dir,
                 strerror(errno));
}

void checkpoint_write(struct trainer *tr, const char *path)
{
    struct comm *c = tr->c;
    const int collective = !tr->conf.ckpt_gathered, root = c->rank == 0;
    struct ck_out out = {.path = path};
    hid_t d[EMB_MAX_TABLES][3];
    if (root) /* the temporary's name: PATH.tmp.HOST.PID of rank 0 */
        ckpt_run_tmp_name(path, out.tmp, sizeof out.tmp);
    comm_bcast_bytes(c, out.tmp, sizeof out.tmp, 0);
    ckpt_dyn_count(tr); /* dynamic tables: their rows per rank (collective) */
    if (root || collective)
        tmpguard_begin(out.tmp, 0); /* removed if this rank ends mid-write (not on SIGTERM:
                                       the preemption handler's) */
    /* rank 0 alone: the attributes, the dense parameters and the datasets
     * (a few hundred small HDF5 calls, not worth as many collectives) */
    bias_gather(tr, &out);
    if (root)
        write_header(tr, &out, d);
    for (int part = 0; part < 3; part++)
        free(out.bias[part]);
    if (collective) {
        if (root) {
            close_tables(tr, &out, d);
            close_file(&out);
        }
        comm_barrier(c); /* the header is complete (a failure there ended the job) */
        write_rows_collective(tr, &out);
    } else {
        for (int k = 0; k < tr->reg.n; k++)
            ckpt_rows_gather(tr, root ? &out.h : NULL, &tr->reg.tables[k], d[k]);
        if (root) {
            close_tables(tr, &out, d);
            close_file(&out);
        }
    }
    comm_barrier(c); /* every rank's part is on disk */
    if (root)
        commit_file(&out);
    else if (collective)
        tmpguard_end(); /* rank 0 removes it if the rename fails */
    comm_barrier(c);
}

/* --- what it cost ------------------------------------------------------------------ */

void checkpoint_io_begin(struct checkpoint_io *io)
{
    io->peak_ok = cli_peak_reset() == 0;
    io->t0 = clock_seconds();
}

void checkpoint_io_end(struct checkpoint_io *io, struct comm *c, const char *path, char *buf,
                       size_t len)
{
    const double s = clock_seconds() - io->t0;
    const int64_t peak = io->peak_ok ? cli_proc_status_kib("VmHWM") : -1;
    int64_t *all = xmalloc((size_t)c->size * sizeof *all), others = -1;
    comm_allgather_i64(c, COMM_WORLD, peak, all);
    for (int r = 1; r < c->size; r++)
        others = all[r] > others ? all[r] : others;
    struct stat st;
    const double gb = stat(path, &st) == 0 ? (double)st.st_size / 1e9 : 0;
    int n = snprintf(buf, len, "%.3f GB in %.2f s (%.2f GB/s)", gb, s, s > 0 ? gb / s : 0);
    if (all[0] >= 0 && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, "; peak memory rank 0 %.0f MiB", all[0] / 1024.0);
    if (others >= 0 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ", others up to %.0f MiB", others / 1024.0);
    free(all);
}
