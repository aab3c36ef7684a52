/* ckpt_read: verifying and loading checkpoints; see ckpt.h.
 *
 * A checkpoint is input like any other: every attribute and dataset used is
 * checked for its class, size, rank and shape before anything is read into
 * a buffer (data/h5io.h), and its values for their range, with the file and
 * the object named in the error. Verification reads every dataset back in
 * blocks (checkpoint_verify_all: each rank its share of the blocks): HDF5
 * verifies each chunk's Fletcher-32 checksum (and the metadata checksums of
 * the v2 headers) on the way, and every float must be finite. Loading
 * opens the file on every rank together through MPI-IO; each rank reads
 * its share of every table's rows and passes them to their shards
 * (ckpt_rows.c), whatever the rank count was when the file was
 * written. */
#include "ckpt/ckpt.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/check.h"
#include "base/log.h"
#include "data/dataset.h"
#include "ckpt/ckpt_priv.h"
#include "ckpt/ckpt_dyn.h"
#include "train/bias_rows.h"
#include "train/watchdog.h"

#define VERIFY_BLOCK_VALUES ((int64_t)1 << 20)
#define MAX_STEP ((int64_t)1 << 52) /* any real run: the planner's indices stay far below */

/* The progress counters: step, adam_t (<= step), best_epoch (-1 .. step),
 * best_val (-1 or an NDCG in [0, 1]). */
struct ckpt_counters {
    int64_t step, adam_t, best_epoch;
    double best_val;
};

static int read_counters(hid_t f, const char *file, struct ckpt_counters *k, char *err,
                         size_t len)
{
    if (h5io_attr_read_range(f, file, "step", 0, MAX_STEP, &k->step, err, len) ||
        h5io_attr_read_range(f, file, "adam_t", 0, k->step, &k->adam_t, err, len) ||
        h5io_attr_read_range(f, file, "best_epoch", -1, k->step, &k->best_epoch, err, len) ||
        h5io_attr_read_f64(f, file, "best_val", &k->best_val, err, len))
        return -1;
    if (!(k->best_val == -1 || (k->best_val >= 0 && k->best_val <= 1)))
        return errorf(err, len, "%s: attribute 'best_val' = %g is not -1 or an NDCG in [0, 1]",
                      file, k->best_val);
    return 0;
}

/* --- verification ------------------------------------------------------------- */

/* What a verifying process checks: its share (blocks part, part + nparts,
 * ...) of every dataset's rows. */
struct verify {
    hid_t f;
    const char *file;
    int64_t version;
    int part, nparts;
    char *err;
    size_t len;
    const char *group; /* of verify_member */
    int n;             /* members seen */
};

/* Read this process's blocks of dataset name [rows(, cols)] back:
 * checksums verified by HDF5, floats finite. */
static int verify_dataset(struct verify *v, const char *name, H5T_class_t cls, int rank)
{
    int64_t any[2] = {-1, -1}, dims[2] = {1, 1};
    char *err = v->err;
    const size_t len = v->len;
    const char *file = v->file;
    hid_t d = h5io_dset_open(v->f, file, name, cls, rank, any, dims, H5P_DEFAULT, err, len);
    if (d < 0)
        return -1;
    int rc = 0;
    if (v->version >= 2 && !h5io_has_checksum(d))
        rc = errorf(err, len, "%s: dataset %s has no checksum (Fletcher-32 filter)", file, name);
    const int64_t cols = rank == 2 ? dims[1] : 1, rows = dims[0];
    const int64_t chunk = h5io_dset_chunk_rows(d) > 0 ? h5io_dset_chunk_rows(d) : 1;
    int64_t step = cols > 0 && cols < VERIFY_BLOCK_VALUES ? VERIFY_BLOCK_VALUES / cols : 1;
    step = step > chunk ? step / chunk * chunk : chunk; /* whole chunks: each read once */
    double *buf = xmalloc((size_t)(step * (cols ? cols : 1)) * sizeof *buf);
    for (int64_t r = v->part * step; rc == 0 && r < rows && cols > 0; r += v->nparts * step) {
        const int64_t n = r + step < rows ? step : rows - r;
        watchdog_beat("in", "a checkpoint verification");
        if (h5io_read_rows(NULL, d, H5T_NATIVE_DOUBLE, r, 1, n, rank == 2 ? cols : 0, buf))
            rc = errorf(err, len, "%s: dataset %s: rows %lld..%lld cannot be read (checksum "
                        "mismatch: the file is damaged)", file, name,
                        (long long)r, (long long)(r + n - 1));
        for (int64_t i = 0; rc == 0 && i < n * cols; i++)
            if (!isfinite(buf[i]))
                rc = errorf(err, len, "%s: dataset %s: value %g at row %lld is not finite",
                            file, name, buf[i], (long long)(r + i / cols));
    }
    free(buf);
    h5io_close_obj(NULL, d);
    return rc;
}

static int verify_member(const char *name, void *data)
{
    struct verify *v = data;
    char full[512];
    snprintf(full, sizeof full, "%s/%s", v->group, name);
    v->n++;
    return verify_dataset(v, full, H5T_FLOAT, 1);
}

/* Every member of group (a dataset [n] of floats). */
static int verify_group(struct verify *v, const char *group)
{
    v->group = group;
    v->n = 0;
    int rc = h5io_members(v->f, v->file, group, verify_member, v, v->err, v->len);
    if (rc == 0 && v->n == 0)
        return errorf(v->err, v->len, "%s: group %s is empty", v->file, group);
    return rc ? -1 : 0;
}

/* /emb/NAME: weight, and state and steps where present. */
static int verify_table(const char *name, void *data)
{
    struct verify *v = data;
    char ds[300];
    snprintf(ds, sizeof ds, "/emb/%s/weight", name);
    if (verify_dataset(v, ds, H5T_FLOAT, 2))
        return -1;
    snprintf(ds, sizeof ds, "/emb/%s/state", name);
    if (h5io_exists(v->f, ds) && verify_dataset(v, ds, H5T_FLOAT, 2))
        return -1;
    snprintf(ds, sizeof ds, "/emb/%s/steps", name);
    if (h5io_exists(v->f, ds) && verify_dataset(v, ds, H5T_INTEGER, 1))
        return -1;
    static const char *const dyn[3] = {"ids", "last", "freq"}; /* a dynamic table's */
    for (int k = 0; k < 3; k++) {
        snprintf(ds, sizeof ds, "/emb/%s/%s", name, dyn[k]);
        if (h5io_exists(v->f, ds) && verify_dataset(v, ds, H5T_INTEGER, 1))
            return -1;
    }
    snprintf(ds, sizeof ds, "/emb/%s/prob", name);
    if (h5io_exists(v->f, ds) && verify_dataset(v, ds, H5T_INTEGER, 2))
        return -1;
    return 0;
}

static int verify_open(struct verify *v)
{
    char format[64];
    const char *path = v->file;
    if (dataset_h5_attrs_check(v->f, path, "/", v->err, v->len) ||
        h5io_attr_read_str(v->f, path, "format", format, sizeof format, v->err, v->len) ||
        h5io_attr_read_i64(v->f, path, "version", &v->version, v->err, v->len))
        return -1;
    if (strcmp(format, CKPT_FORMAT))
        return errorf(v->err, v->len, "%s: attribute 'format' is '%s', expected '%s'", path,
                      format, CKPT_FORMAT);
    if (v->version < 1 || v->version > CKPT_VERSION)
        return errorf(v->err, v->len, "%s: version %lld, this program reads versions 1 to %d",
                      path, (long long)v->version, CKPT_VERSION);
    struct ckpt_counters k;
    if (read_counters(v->f, path, &k, v->err, v->len))
        return -1;
    static const char *groups[] = {"/dense", "/dense_m", "/dense_v"};
    for (int i = 0; i < 3; i++)
        if (verify_group(v, groups[i]))
            return -1;
    return h5io_members(v->f, path, "/emb", verify_table, v, v->err, v->len) ? -1 : 0;
}

/* Process part of nparts verifies its share of path. */
static int verify_part(const char *path, int part, int nparts, char *err, size_t len)
{
    if (access(path, R_OK) != 0)
        return errorf(err, len, "%s: %s", path, strerror(errno));
    struct h5io h;
    if (h5io_open_read(&h, path, NULL, 0, err, len))
        return -1;
    struct verify v = {.f = h.f, .file = path, .part = part, .nparts = nparts, .err = err,
                       .len = len};
    int rc = verify_open(&v);
    h5io_close(&h);
    return rc;
}

int checkpoint_verify(const char *path, char *err, size_t len)
{
    return verify_part(path, 0, 1, err, len);
}

int checkpoint_verify_all(struct comm *c, const char *path, char *err, size_t len)
{
    int rc = verify_part(path, c->rank, c->size, err, len);
    /* the lowest failing rank's message, on every rank */
    const int64_t worst = comm_allreduce_max_i64(c, rc ? c->size - c->rank : 0);
    if (worst == 0)
        return 0;
    comm_bcast_bytes(c, err, len, c->size - (int)worst);
    return -1;
}

int checkpoint_identity(const char *path, struct ckpt_identity *id, char *err, size_t len)
{
    memset(id, 0, sizeof *id);
    struct h5io h;
    if (h5io_open_read(&h, path, NULL, 0, err, len))
        return -1;
    const hid_t f = h.f;
    char format[64];
    int rc = dataset_h5_attrs_check(f, path, "/", err, len) ||
             h5io_attr_read_str(f, path, "format", format, sizeof format, err, len) ||
             h5io_attr_read_range(f, path, "step", 0, MAX_STEP, &id->step, err, len);
    if (!rc && strcmp(format, CKPT_FORMAT))
        rc = errorf(err, len, "%s: attribute 'format' is '%s', expected '%s'", path, format,
                    CKPT_FORMAT);
    if (!rc && h5io_has_attr(f, "run_id"))
        rc = h5io_attr_read_str(f, path, "run_id", id->run_id, sizeof id->run_id, err, len) ||
             h5io_attr_read_str(f, path, "run_params", id->run_params, sizeof id->run_params,
                                err, len);
    if (!rc && h5io_has_attr(f, "written_ns"))
        rc = h5io_attr_read_i64(f, path, "written_ns", &id->written_ns, err, len);
    h5io_close(&h);
    return rc ? -1 : 0;
}

#define PARAMS_TEXT_MAX ((size_t)1 << 20)

char *checkpoint_params(const char *path, char *err, size_t len)
{
    struct ckpt_identity id; /* a checkpoint: format and step */
    if (checkpoint_identity(path, &id, err, len))
        return NULL;
    struct h5io h;
    if (h5io_open_read(&h, path, NULL, 0, err, len))
        return NULL;
    char *text = NULL;
    if (!h5io_has_attr(h.f, "params"))
        errorf(err, len, "%s stores no parameters (attribute 'params')", path);
    else if (h5io_attr_read_str(h.f, path, "params", text = xmalloc(PARAMS_TEXT_MAX),
                                PARAMS_TEXT_MAX, err, len)) {
        free(text);
        text = NULL;
    }
    h5io_close(&h);
    return text;
}

/* --- loading ---------------------------------------------------------------- */

/* Attribute name = want; -1 with err naming what differs. */
static int expect_attr(hid_t f, const char *path, const char *name, int64_t want,
                       const char *what, char *err, size_t len)
{
    int64_t v;
    char e[1024];
    if (h5io_attr_read_i64(f, path, name, &v, e, sizeof e))
        return errorf(err, len, "checkpoint %s", e);
    if (v != want)
        return errorf(err, len, "checkpoint %s: %s = %lld in the checkpoint, %lld in this run: "
                      "it belongs to another model or dataset",
                      path, what, (long long)v, (long long)want);
    return 0;
}

/* GROUP/NAME [n] into v (host), checked finite. */
static void read_flat(const struct h5io *h, const char *path, const char *group,
                      const char *tname, float *v, int64_t n)
{
    char err[1024], name[128];
    snprintf(name, sizeof name, "%s/%s", group, tname);
    int64_t want[1] = {n}, got[1];
    hid_t d = h5io_dset_open(h->f, path, name, H5T_FLOAT, 1, want, got, H5P_DEFAULT, err,
                             sizeof err);
    if (d < 0)
        fatal("checkpoint %s (it belongs to another model?)", err);
    if (h5io_read_rows(NULL, d, H5T_NATIVE_FLOAT, 0, 1, n, 0, v)) /* independently */
        fatal("checkpoint %s: cannot read %s (truncated or corrupt?)", path, name);
    for (int64_t k = 0; k < n; k++)
        if (!isfinite(v[k]))
            fatal("checkpoint %s: %s[%lld] = %g is not finite", path, name, (long long)k, v[k]);
    h5io_close_obj(NULL, d);
}

/* model.bias over window files (train/bias_ids.h): its rows are numbered in
 * the order the files bring the items and users, so a run resumed with
 * more files than the checkpoint's run had holds its rows first: read
 * /GROUP/NAME [m <= n] into v [m], the rest of v left as it is. */
static void read_prefix(const struct h5io *h, const char *path, const char *group,
                        const char *tname, float *v, int64_t n)
{
    char err[1024], name[128];
    snprintf(name, sizeof name, "%s/%s", group, tname);
    int64_t want[1] = {-1}, got[1];
    hid_t d = h5io_dset_open(h->f, path, name, H5T_FLOAT, 1, want, got, H5P_DEFAULT, err,
                             sizeof err);
    if (d < 0)
        fatal("checkpoint %s (it belongs to another model?)", err);
    if (got[0] > n)
        fatal("checkpoint %s: %s has %lld values, more than the %lld of the window files now "
              "(model.bias's rows of every item and user of the files: a file of the run was "
              "removed?)", path, name, (long long)got[0], (long long)n);
    h5io_close_obj(NULL, d);
    read_flat(h, path, group, tname, v, got[0]);
}

/* /GROUP/NAME of every dense parameter, read whole by every rank (no
 * collective: the same few chunks on every rank); part as write_dense's
 * (ckpt.c): model.bias's rows take this rank's rows of bias.item and
 * bias.user, at the checkpoint's step. */
static void read_dense(const struct h5io *h, const char *path, const char *group,
                       struct trainer *tr, float *const *which, int part)
{
    for (int i = 0; i < tr->m.nparams; i++) {
        struct dense_tensor *t = &tr->m.params[i];
        float *v = xmalloc((size_t)t->n * sizeof *v);
        read_flat(h, path, group, t->name, v, t->n);
        tr->be->to_device(which ? which[i] : t->w, v, (size_t)t->n * sizeof *v);
        free(v);
    }
    if (tr->bias) {
        const struct task_conf *tc = &tr->conf.task;
        const int64_t ni = tc->bias_items * tc->n, nu = tc->bias_users * tc->n;
        float *v = xmalloc((size_t)(ni + nu) * sizeof *v);
        if (tr->bias_ids) { /* window files: the rows of files added since keep their start */
            bias_rows_full(tr->bias, part, 1, v, v + ni);
            read_prefix(h, path, group, "bias.item", v, ni);
            read_prefix(h, path, group, "bias.user", v + ni, nu);
        } else {
            read_flat(h, path, group, "bias.item", v, ni);
            read_flat(h, path, group, "bias.user", v + ni, nu);
        }
        if (!part)
            bias_rows_restart(tr->bias, dense_optim_steps(&tr->optim));
        bias_rows_load(tr->bias, part, v, v + ni);
        free(v);
    }
}

/* A subspace table (embedding.subspace_k > 0) stores c[i] of k values and
 * rebuilds its rows from F and U, which derive from the seed: the
 * checkpoint's k, basis and seed must be the run's; a plain table loads only
 * a plain checkpoint (subspace_k absent or 0). */
static int subspace_check(hid_t f, const char *path, const struct trainer *tr, char *err,
                          size_t len)
{
    const struct emb_table_conf *ec = &tr->items->conf;
    int64_t k = 0;
    char e[1024];
    if (h5io_has_attr(f, "subspace_k") &&
        h5io_attr_read_i64(f, path, "subspace_k", &k, e, sizeof e))
        return errorf(err, len, "checkpoint %s", e);
    if (k != ec->subspace_k && (k == 0 || ec->subspace_k == 0))
        return errorf(err, len, "checkpoint %s: %s, this run %s: a plain table and a "
                      "subspace-factorised one (embedding.subspace_k) hold different values; "
                      "resume with embedding.subspace_k = %lld",
                      path, k ? "a subspace table's checkpoint" : "a plain table's checkpoint",
                      ec->subspace_k ? "trains a subspace table" : "a plain table",
                      (long long)k);
    if (ec->subspace_k == 0)
        return 0;
    return expect_attr(f, path, "subspace_k", ec->subspace_k, "embedding.subspace_k", err,
                       len) ||
                   expect_attr(f, path, "subspace_basis", ec->subspace_identity,
                               "embedding.subspace_basis (0 random, 1 identity)", err, len) ||
                   expect_attr(f, path, "seed", (int64_t)tr->conf.seed,
                               "train.seed (the subspace table's F and U derive from it)", err,
                               len)
               ? -1
               : 0;
}

/* The file's model, table and dataset are the run's. */
static int compat_checks(hid_t f, const char *path, const struct trainer *tr, char *err,
                         size_t len)
{
    const struct model_conf *mc = &tr->m.conf;
    return (!tr->files && /* window files: the window's items (data/window_files.h) */
            expect_attr(f, path, "num_items", tr->ds.num_items, "num_items of the dataset", err,
                        len)) ||
                   expect_attr(f, path, "model_type", mc->type, "model.type (0 hstu, 1 sasrec)",
                               err, len) ||
                   expect_attr(f, path, "dim", mc->d, "model.dim", err, len) ||
                   expect_attr(f, path, "layers", mc->layers, "model.layers", err, len) ||
                   expect_attr(f, path, "heads", mc->heads, "model.heads", err, len) ||
                   expect_attr(f, path, "max_seq_len", mc->max_len, "data.max_seq_len", err,
                               len) ||
                   expect_attr(f, path, "time_bias", mc->time_bias,
                               "time bias (timestamps in use)", err, len) ||
                   expect_attr(f, path, "emb_optimizer", tr->items->conf.optim.kind,
                               "embedding.optimizer (0 sgd, 1 adagrad, 2 adam)", err, len) ||
                   subspace_check(f, path, tr, err, len)
               ? -1
               : 0;
}

int checkpoint_compatible(const struct trainer *tr, const char *path, char *err, size_t len)
{
    struct h5io h;
    char e[1024];
    if (h5io_open_read(&h, path, NULL, 0, e, sizeof e))
        return errorf(err, len, "train.resume = %s", e);
    int rc = compat_checks(h.f, path, tr, err, len);
    h5io_close(&h);
    return rc;
}

/* Every table of the checkpoint is one of the run's (h5io_members: the
 * first that is not, into name). */
struct extra_table {
    const struct trainer *tr;
    char name[128];
};

static int find_extra(const char *name, void *data)
{
    struct extra_table *x = data;
    if (emb_registry_find((struct emb_registry *)&x->tr->reg, name))
        return 0;
    snprintf(x->name, sizeof x->name, "%s", name);
    return 1;
}

/* Every table of the registry: its datasets, of the run's shapes, then
 * the rows (ckpt_rows.c). */
static void read_tables(struct trainer *tr, const struct h5io *h, const char *path)
{
    char err[1024];
    struct extra_table x = {.tr = tr};
    if (h5io_members(h->f, path, "/emb", find_extra, &x, err, sizeof err) < 0 && !x.name[0])
        fatal("checkpoint %s", err);
    if (x.name[0])
        fatal("checkpoint %s: it holds table /emb/%s, which this run does not train: resume "
              "with the features it was written with (its parameters: features.*)", path,
              x.name);
    for (int k = 0; k < tr->reg.n; k++) {
        struct emb_table *t = &tr->reg.tables[k];
        if (t->dyn) { /* ids and rows, re-hashed (ckpt_dyn.c) */
            ckpt_dyn_read(tr, h, path, k);
            continue;
        }
        struct ckpt_part part[3];
        hid_t d[3];
        const int np = ckpt_parts(t, part);
        char group[256], name0[300];
        snprintf(group, sizeof group, "/emb/%s", t->conf.name);
        if (!h5io_exists(h->f, group))
            fatal("checkpoint %s: no table %s: it was written by a run without this %s (the "
                  "features it trained are in its parameters: features.*)", path, group,
                  strncmp(t->conf.name, "proj.", 5) ? "table" : "feature width (a projection)");
        snprintf(name0, sizeof name0, "%s/ids", group);
        if (h5io_exists(h->f, name0)) /* ckpt_dyn.c */
            fatal("checkpoint %s: table %s was written as a dynamic table: resume with "
                  "embedding.dynamic = on (features.dynamic for a feature table)", path, group);
        for (int j = 0; j < np; j++) {
            char name[300];
            snprintf(name, sizeof name, "/emb/%s/%s", t->conf.name, part[j].name);
            int64_t want[2] = {t->conf.rows + 1, part[j].cols}, got[2];
            d[j] = h5io_dset_open(h->f, path, name, part[j].is_float ? H5T_FLOAT : H5T_INTEGER,
                                  part[j].cols > 0 ? 2 : 1, want, got, H5P_DEFAULT, err,
                                  sizeof err);
            if (d[j] < 0)
                fatal("checkpoint %s", err);
        }
        ckpt_rows_read(tr, path, t, d);
        for (int j = 0; j < np; j++)
            h5io_close_obj(NULL, d[j]);
    }
}

void checkpoint_read(struct trainer *tr, const char *path)
{
    if (access(path, R_OK) != 0)
        fatal("train.resume = %s: %s", path, strerror(errno));
    ckpt_delta_prev(tr, path); /* a delta checkpoint: its chain first (ckpt_dyn.c) */
    struct h5io h;
    char err[1024], format[64];
    if (h5io_open_read(&h, path, tr->c, H5IO_DIRECT, err, sizeof err))
        fatal("train.resume = %s", err);
    const hid_t f = h.f;
    if (dataset_h5_attrs_check(f, path, "/", err, sizeof err) ||
        h5io_attr_read_str(f, path, "format", format, sizeof format, err, sizeof err))
        fatal("checkpoint %s", err);
    if (strcmp(format, CKPT_FORMAT))
        fatal("checkpoint %s: attribute 'format' is '%s', expected '%s'", path, format,
              CKPT_FORMAT);
    int64_t version;
    if (h5io_attr_read_range(f, path, "version", 1, CKPT_VERSION, &version, err, sizeof err))
        fatal("checkpoint %s", err);
    char cerr[2048];
    if (compat_checks(f, path, tr, cerr, sizeof cerr))
        fatal("%s", cerr);
    struct ckpt_counters k;
    if (read_counters(f, path, &k, err, sizeof err))
        fatal("checkpoint %s", err);
    tr->step = k.step;
    dense_optim_set_steps(&tr->optim, k.adam_t);
    tr->best_epoch = k.best_epoch;
    tr->best_val = k.best_val;
    tr->val_epoch = -1; /* absent: written before it was recorded, validated again */
    if (h5io_has_attr(f, "val_epoch") &&
        h5io_attr_read_range(f, path, "val_epoch", -1, k.step, &tr->val_epoch, err, sizeof err))
        fatal("checkpoint %s", err);
    tr->windows = 0; /* absent: written before the stream schedule */
    if (h5io_has_attr(f, "stream_windows") &&
        h5io_attr_read_range(f, path, "stream_windows", 0, INT64_MAX, &tr->windows, err,
                             sizeof err))
        fatal("checkpoint %s", err);
    memset(&tr->avg, 0, sizeof tr->avg); /* absent: no window evaluated */
    for (int t = 0; t < RANK_MAX_TASKS; t++) {
        char kn[48], knb[48], km[48], kb[48];
        snprintf(kn, sizeof kn, "stream_avg_%d_n", t);
        snprintf(knb, sizeof knb, "stream_avg_%d_nb", t);
        snprintf(km, sizeof km, "stream_avg_%d_model", t);
        snprintf(kb, sizeof kb, "stream_avg_%d_base", t);
        if (h5io_has_attr(f, kn) &&
            (h5io_attr_read_range(f, path, kn, 0, tr->windows, &tr->avg.n[t], err, sizeof err) ||
             h5io_attr_read_range(f, path, knb, 0, tr->windows, &tr->avg.nb[t], err,
                                  sizeof err) ||
             h5io_attr_read_f64(f, path, km, &tr->avg.model[t], err, sizeof err) ||
             h5io_attr_read_f64(f, path, kb, &tr->avg.base[t], err, sizeof err)))
            fatal("checkpoint %s", err);
    }
    if (h5io_has_attr(f, "stream_avg_windows") && /* the windows of the mean */
        (h5io_attr_read_range(f, path, "stream_avg_windows", 0, tr->windows, &tr->avg.nw, err,
                              sizeof err) ||
         h5io_attr_read_range(f, path, "stream_avg_first", 0, tr->windows, &tr->avg.first, err,
                              sizeof err) ||
         h5io_attr_read_range(f, path, "stream_avg_last", 0, tr->windows, &tr->avg.last, err,
                              sizeof err)))
        fatal("checkpoint %s", err);
    tr->files_before = -1;
    if (h5io_has_attr(f, "stream_files_before") &&
        h5io_attr_read_range(f, path, "stream_files_before", 0, INT64_MAX, &tr->files_before,
                             err, sizeof err))
        fatal("checkpoint %s", err);
    for (int t = 0; t < RANK_MAX_TASKS; t++) { /* absent: the start-up fit's (step_bias_init) */
        char key[48];
        double v;
        snprintf(key, sizeof key, "bias_uscale_%d", t);
        if (!h5io_has_attr(f, key))
            continue;
        if (h5io_attr_read_f64(f, path, key, &v, err, sizeof err))
            fatal("checkpoint %s", err);
        if (!(v > -1e30 && v < 1e30))
            fatal("checkpoint %s: attribute %s = %g: not a finite scale", path, key, v);
        tr->bias_uscale[t] = (float)v;
    }
    read_dense(&h, path, "/dense", tr, NULL, 0);
    read_dense(&h, path, "/dense_m", tr, dense_optim_moments(&tr->optim, 0), 1);
    read_dense(&h, path, "/dense_v", tr, dense_optim_moments(&tr->optim, 1), 2);
    read_tables(tr, &h, path);
    if (h5io_close(&h))
        fatal("checkpoint %s: cannot close the file", path);
}
