/* checkpoint: rank-count-independent HDF5 checkpoints; see checkpoint.h. */
#include "train/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/check.h"
#include "base/log.h"

#define CKPT_FORMAT "freescale-ckpt"
#define CKPT_VERSION 1
#define BLOCK_ROWS ((int64_t)1 << 15)

/* --- small HDF5 helpers ---------------------------------------------------- */

static void attr_i64(hid_t f, const char *name, int64_t v)
{
    hid_t s, a;
    H5_CHECK(s = H5Screate(H5S_SCALAR));
    H5_CHECK(a = H5Acreate2(f, name, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT));
    H5_CHECK(H5Awrite(a, H5T_NATIVE_INT64, &v));
    H5_CHECK(H5Aclose(a));
    H5_CHECK(H5Sclose(s));
}

static void attr_f64(hid_t f, const char *name, double v)
{
    hid_t s, a;
    H5_CHECK(s = H5Screate(H5S_SCALAR));
    H5_CHECK(a = H5Acreate2(f, name, H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT));
    H5_CHECK(H5Awrite(a, H5T_NATIVE_DOUBLE, &v));
    H5_CHECK(H5Aclose(a));
    H5_CHECK(H5Sclose(s));
}

static void attr_str(hid_t f, const char *name, const char *v)
{
    hid_t t, s, a;
    H5_CHECK(t = H5Tcopy(H5T_C_S1));
    H5_CHECK(H5Tset_size(t, strlen(v) + 1));
    H5_CHECK(s = H5Screate(H5S_SCALAR));
    H5_CHECK(a = H5Acreate2(f, name, t, s, H5P_DEFAULT, H5P_DEFAULT));
    H5_CHECK(H5Awrite(a, t, v));
    H5_CHECK(H5Aclose(a));
    H5_CHECK(H5Sclose(s));
    H5_CHECK(H5Tclose(t));
}

static int read_attr_i64(hid_t f, const char *name, int64_t *v)
{
    if (H5Aexists(f, name) <= 0)
        return -1;
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    int rc = a < 0 || H5Aread(a, H5T_NATIVE_INT64, v) < 0 ? -1 : 0;
    if (a >= 0)
        H5Aclose(a);
    return rc;
}

static hid_t create_2d(hid_t f, const char *name, hid_t type, int64_t rows, int64_t cols)
{
    hsize_t dims[2] = {(hsize_t)rows, (hsize_t)cols};
    hid_t s, d;
    H5_CHECK(s = H5Screate_simple(cols > 0 ? 2 : 1, dims, NULL));
    H5_CHECK(d = H5Dcreate2(f, name, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5_CHECK(H5Sclose(s));
    return d;
}

/* Write rows [r0, r0 + n) (of cols values, cols 0 = 1-D) of dataset d. */
static void write_rows(hid_t d, hid_t mem_type, int64_t r0, int64_t n, int64_t cols,
                       const void *buf)
{
    int nd = cols > 0 ? 2 : 1;
    hsize_t start[2] = {(hsize_t)r0, 0}, count[2] = {(hsize_t)n, (hsize_t)cols};
    hid_t fs, ms;
    H5_CHECK(fs = H5Dget_space(d));
    H5_CHECK(ms = H5Screate_simple(nd, count, NULL));
    H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
    H5_CHECK(H5Dwrite(d, mem_type, ms, fs, H5P_DEFAULT, buf));
    H5_CHECK(H5Sclose(ms));
    H5_CHECK(H5Sclose(fs));
}

/* --- writing ---------------------------------------------------------------- */

/* Gather the table rows of block [a, b) from the first embedding group to
 * its rank 0 and write them there. */
static void write_table(struct trainer *tr, hid_t dw, hid_t dst, hid_t dsteps)
{
    struct comm *c = tr->c;
    struct emb_table *t = tr->items;
    const int G = t->G, d = t->conf.dim, sf = (int)t->state_floats;
    const int root = c->g[COMM_EMB].rank == 0 && c->rank == 0;
    float *w = xmalloc((size_t)BLOCK_ROWS * (size_t)(d + sf) * sizeof *w), *st = w + BLOCK_ROWS * d;
    int64_t *steps = xmalloc((size_t)BLOCK_ROWS * sizeof *steps);
    float *gw = root ? xmalloc((size_t)BLOCK_ROWS * (size_t)(d + sf) * sizeof *gw) : NULL;
    float *gst = root ? gw + BLOCK_ROWS * d : NULL;
    int64_t *gsteps = root ? xmalloc((size_t)BLOCK_ROWS * sizeof *gsteps) : NULL;
    float *ow = root ? xmalloc((size_t)BLOCK_ROWS * (size_t)(d + sf) * sizeof *ow) : NULL;
    float *ost = root ? ow + BLOCK_ROWS * d : NULL;
    int64_t *osteps = root ? xmalloc((size_t)BLOCK_ROWS * sizeof *osteps) : NULL;
    int64_t *counts = xmalloc((size_t)G * 3 * sizeof *counts), *cw = counts + G, *cs = counts + 2 * G;
    const int64_t rows = t->conf.rows + 1; /* ids 0 .. rows - 1, 0 = padding */
    for (int64_t a = 0; a < rows; a += BLOCK_ROWS) {
        int64_t b = a + BLOCK_ROWS < rows ? a + BLOCK_ROWS : rows, n = 0;
        for (int64_t id = a + ((t->shard - a % G) + G) % G; id < b; id += G, n++) {
            if (id == 0) {
                memset(w + n * d, 0, (size_t)d * sizeof *w);
            } else {
                memcpy(w + n * d, emb_shard_slot(t, id), (size_t)d * sizeof *w);
            }
            int64_t slot = id / G;
            if (sf)
                memcpy(st + n * sf, t->state + slot * sf, (size_t)sf * sizeof *st);
            steps[n] = t->steps ? t->steps[slot] : 0;
        }
        comm_gather_i64(c, COMM_EMB, n, counts, 0);
        if (root)
            for (int q = 0; q < G; q++) {
                cw[q] = counts[q] * d;
                cs[q] = counts[q] * sf;
            }
        comm_gatherv(c, COMM_EMB, COMM_F32, w, n * d, gw, cw, 0);
        if (sf)
            comm_gatherv(c, COMM_EMB, COMM_F32, st, n * sf, gst, cs, 0);
        comm_gatherv(c, COMM_EMB, COMM_I64, steps, n, gsteps, counts, 0);
        if (!root)
            continue;
        /* interleave: shard q holds ids = q mod G in ascending order */
        int64_t base = 0;
        for (int q = 0; q < G; q++) {
            int64_t first = a + ((q - a % G) + G) % G;
            for (int64_t k = 0; k < counts[q]; k++) {
                int64_t r = first + k * G - a;
                memcpy(ow + r * d, gw + (base + k) * d, (size_t)d * sizeof *ow);
                if (sf)
                    memcpy(ost + r * sf, gst + (base + k) * sf, (size_t)sf * sizeof *ost);
                osteps[r] = gsteps[base + k];
            }
            base += counts[q];
        }
        write_rows(dw, H5T_NATIVE_FLOAT, a, b - a, d, ow);
        if (sf)
            write_rows(dst, H5T_NATIVE_FLOAT, a, b - a, sf, ost);
        if (dsteps >= 0)
            write_rows(dsteps, H5T_NATIVE_INT64, a, b - a, 0, osteps);
    }
    free(w);
    free(steps);
    free(gw);
    free(gsteps);
    free(ow);
    free(osteps);
    free(counts);
}

static void write_dense(hid_t f, const char *group, struct trainer *tr, float *const *which)
{
    hid_t g;
    H5_CHECK(g = H5Gcreate2(f, group, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    for (int i = 0; i < tr->m.nparams; i++) {
        struct dense_tensor *t = &tr->m.params[i];
        float *h = xmalloc((size_t)t->n * sizeof *h);
        tr->be->to_host(h, which ? which[i] : t->w, (size_t)t->n * sizeof *h);
        hid_t d = create_2d(g, t->name, H5T_IEEE_F32LE, t->n, 0);
        write_rows(d, H5T_NATIVE_FLOAT, 0, t->n, 0, h);
        H5_CHECK(H5Dclose(d));
        free(h);
    }
    H5_CHECK(H5Gclose(g));
}

void checkpoint_write(struct trainer *tr, const char *path)
{
    struct comm *c = tr->c;
    const int in_first_group = c->rank < tr->items->G; /* world ranks 0..G-1 */
    hid_t f = -1, dw = -1, dst = -1, dsteps = -1;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (c->rank == 0) {
        f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        if (f < 0)
            fatal("checkpoint %s: cannot create %s (directory missing or not writable?)", path, tmp);
        const struct model_conf *mc = &tr->m.conf;
        attr_str(f, "format", CKPT_FORMAT);
        attr_i64(f, "version", CKPT_VERSION);
        attr_i64(f, "step", tr->step);
        attr_i64(f, "adam_t", dense_optim_steps(&tr->optim));
        attr_i64(f, "num_items", tr->ds.num_items);
        attr_i64(f, "model_type", mc->type);
        attr_i64(f, "dim", mc->d);
        attr_i64(f, "layers", mc->layers);
        attr_i64(f, "heads", mc->heads);
        attr_i64(f, "max_seq_len", mc->max_len);
        attr_i64(f, "time_bias", mc->time_bias);
        attr_i64(f, "emb_optimizer", tr->items->conf.optim.kind);
        attr_i64(f, "best_epoch", tr->best_epoch);
        attr_f64(f, "best_val", tr->best_val);
        char *text = params_serialize(tr->p);
        attr_str(f, "params", text);
        free(text);
        write_dense(f, "/dense", tr, NULL);
        write_dense(f, "/dense_m", tr, dense_optim_moments(&tr->optim, 0));
        write_dense(f, "/dense_v", tr, dense_optim_moments(&tr->optim, 1));
        hid_t g1, g2;
        H5_CHECK(g1 = H5Gcreate2(f, "/emb", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        H5_CHECK(g2 = H5Gcreate2(g1, "items", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        int64_t rows = tr->ds.num_items + 1;
        dw = create_2d(g2, "weight", H5T_IEEE_F32LE, rows, tr->items->conf.dim);
        if (tr->items->state_floats)
            dst = create_2d(g2, "state", H5T_IEEE_F32LE, rows, tr->items->state_floats);
        if (tr->items->steps)
            dsteps = create_2d(g2, "steps", H5T_STD_I64LE, rows, 0);
        H5_CHECK(H5Gclose(g2));
        H5_CHECK(H5Gclose(g1));
    }
    if (in_first_group)
        write_table(tr, dw, dst, dsteps);
    if (c->rank == 0) {
        H5_CHECK(H5Dclose(dw));
        if (dst >= 0) H5_CHECK(H5Dclose(dst));
        if (dsteps >= 0) H5_CHECK(H5Dclose(dsteps));
        if (H5Fclose(f) < 0) {
            unlink(tmp);
            fatal("checkpoint %s: writing %s failed (disk full?)", path, tmp);
        }
        if (rename(tmp, path) != 0) {
            int e = errno;
            unlink(tmp);
            fatal("checkpoint %s: cannot rename %s into place: %s", path, tmp, strerror(e));
        }
    }
    comm_barrier(c);
}

/* --- reading ---------------------------------------------------------------- */

static void expect_attr(hid_t f, const char *path, const char *name, int64_t want,
                        const char *what)
{
    int64_t v;
    if (read_attr_i64(f, name, &v))
        fatal("checkpoint %s: missing attribute '%s' (not a freescale checkpoint?)", path, name);
    if (v != want)
        fatal("checkpoint %s: %s = %lld in the checkpoint, %lld in this run: it belongs to "
              "another model or dataset",
              path, what, (long long)v, (long long)want);
}

static void read_dense(hid_t f, const char *path, const char *group, struct trainer *tr,
                       float *const *which)
{
    for (int i = 0; i < tr->m.nparams; i++) {
        struct dense_tensor *t = &tr->m.params[i];
        char name[128];
        snprintf(name, sizeof name, "%s/%s", group, t->name);
        if (H5Lexists(f, group, H5P_DEFAULT) <= 0 || H5Lexists(f, name, H5P_DEFAULT) <= 0)
            fatal("checkpoint %s: no dense parameter %s: it belongs to another model", path, name);
        hid_t d, s;
        hsize_t n = 0;
        H5_CHECK(d = H5Dopen2(f, name, H5P_DEFAULT));
        H5_CHECK(s = H5Dget_space(d));
        H5_CHECK(H5Sget_simple_extent_dims(s, &n, NULL));
        if ((int64_t)n != t->n)
            fatal("checkpoint %s: %s has %lld values, this model has %lld", path, name,
                  (long long)n, (long long)t->n);
        float *h = xmalloc((size_t)t->n * sizeof *h);
        if (H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, h) < 0)
            fatal("checkpoint %s: cannot read %s (truncated or corrupt?)", path, name);
        tr->be->to_device(which ? which[i] : t->w, h, (size_t)t->n * sizeof *h);
        free(h);
        H5_CHECK(H5Sclose(s));
        H5_CHECK(H5Dclose(d));
    }
}

/* This shard's rows: ids shard, shard + G, ... -> slots 0, 1, ... */
static void read_strided(hid_t f, const char *path, const char *name, hid_t mem_type,
                         int64_t cols, const struct emb_table *t, void *buf)
{
    if (H5Lexists(f, "/emb", H5P_DEFAULT) <= 0 || H5Lexists(f, "/emb/items", H5P_DEFAULT) <= 0 ||
        H5Lexists(f, name, H5P_DEFAULT) <= 0)
        fatal("checkpoint %s: missing %s", path, name);
    int64_t count = (t->conf.rows - t->shard) / t->G + 1;
    hid_t d, fs, ms;
    H5_CHECK(d = H5Dopen2(f, name, H5P_DEFAULT));
    H5_CHECK(fs = H5Dget_space(d));
    hsize_t dims[2] = {0, 0};
    H5_CHECK(H5Sget_simple_extent_dims(fs, dims, NULL));
    if ((int64_t)dims[0] != t->conf.rows + 1 || (cols > 0 && (int64_t)dims[1] != cols))
        fatal("checkpoint %s: %s has shape [%lld, %lld], expected [%lld, %lld]", path, name,
              (long long)dims[0], (long long)dims[1], (long long)t->conf.rows + 1,
              (long long)cols);
    int nd = cols > 0 ? 2 : 1;
    hsize_t start[2] = {(hsize_t)t->shard, 0}, stride[2] = {(hsize_t)t->G, 1};
    hsize_t cnt[2] = {(hsize_t)count, (hsize_t)cols};
    H5_CHECK(ms = H5Screate_simple(nd, cnt, NULL));
    H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, stride, cnt, NULL));
    if (H5Dread(d, mem_type, ms, fs, H5P_DEFAULT, buf) < 0)
        fatal("checkpoint %s: cannot read %s (truncated or corrupt?)", path, name);
    H5_CHECK(H5Sclose(ms));
    H5_CHECK(H5Sclose(fs));
    H5_CHECK(H5Dclose(d));
}

void checkpoint_read(struct trainer *tr, const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (access(path, R_OK) != 0)
        fatal("train.resume = %s: %s", path, strerror(errno));
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        fatal("train.resume = %s: not a readable HDF5 file (truncated or corrupt?)", path);
    const struct model_conf *mc = &tr->m.conf;
    expect_attr(f, path, "version", CKPT_VERSION, "version");
    expect_attr(f, path, "num_items", tr->ds.num_items, "num_items of the dataset");
    expect_attr(f, path, "model_type", mc->type, "model.type (0 hstu, 1 sasrec)");
    expect_attr(f, path, "dim", mc->d, "model.dim");
    expect_attr(f, path, "layers", mc->layers, "model.layers");
    expect_attr(f, path, "heads", mc->heads, "model.heads");
    expect_attr(f, path, "max_seq_len", mc->max_len, "data.max_seq_len");
    expect_attr(f, path, "time_bias", mc->time_bias, "time bias (timestamps in use)");
    expect_attr(f, path, "emb_optimizer", tr->items->conf.optim.kind,
                "embedding.optimizer (0 sgd, 1 adagrad, 2 adam)");
    int64_t adam_t;
    if (read_attr_i64(f, "step", &tr->step) || read_attr_i64(f, "adam_t", &adam_t) ||
        read_attr_i64(f, "best_epoch", &tr->best_epoch))
        fatal("checkpoint %s: missing step counters", path);
    dense_optim_set_steps(&tr->optim, adam_t);
    hid_t ab = H5Aexists(f, "best_val") > 0 ? H5Aopen(f, "best_val", H5P_DEFAULT) : -1;
    if (ab < 0 || H5Aread(ab, H5T_NATIVE_DOUBLE, &tr->best_val) < 0)
        fatal("checkpoint %s: missing attribute best_val", path);
    H5_CHECK(H5Aclose(ab));
    read_dense(f, path, "/dense", tr, NULL);
    read_dense(f, path, "/dense_m", tr, dense_optim_moments(&tr->optim, 0));
    read_dense(f, path, "/dense_v", tr, dense_optim_moments(&tr->optim, 1));
    struct emb_table *t = tr->items;
    read_strided(f, path, "/emb/items/weight", H5T_NATIVE_FLOAT, t->conf.dim, t, t->w);
    if (t->state_floats)
        read_strided(f, path, "/emb/items/state", H5T_NATIVE_FLOAT, t->state_floats, t,
                     t->state);
    if (t->steps)
        read_strided(f, path, "/emb/items/steps", H5T_NATIVE_INT64, 0, t, t->steps);
    memset(t->ready, 0xff, (size_t)(t->local_rows / 8 + 1)); /* every row is loaded */
    H5_CHECK(H5Fclose(f));
}

int checkpoint_newest(const char *dir, char *path, size_t len)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    long long best = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long long step;
        char tail[8];
        /* exactly ckpt-<digits>.h5 */
        if (sscanf(e->d_name, "ckpt-%lld.h%7s", &step, tail) == 2 && !strcmp(tail, "5") &&
            step > best) {
            char want[64];
            snprintf(want, sizeof want, "ckpt-%lld.h5", step);
            if (!strcmp(want, e->d_name))
                best = step;
        }
    }
    closedir(d);
    if (best < 0)
        return -1;
    snprintf(path, len, "%s/ckpt-%lld.h5", dir, best);
    return 0;
}
