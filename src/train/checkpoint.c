/* checkpoint: writing rank-count-independent HDF5 checkpoints, listing and
 * retention; see checkpoint.h (reading and verification: checkpoint_read.c).
 *
 * Rank 0 writes DIR/ckpt-STEP.h5.tmp.HOST.PID, fsyncs it, renames it into
 * place and fsyncs the directory; only then are this run's checkpoints
 * beyond output.keep_checkpoints deleted (ckpt_run.c). Any failure on the way (no space left,
 * permission, I/O error) closes and removes the temporary file and ends the
 * job with the path and the cause from errno: the checkpoints already
 * there are never touched. Every dataset is chunked with HDF5's Fletcher-32
 * checksum, and the file uses the v2 object headers whose metadata HDF5
 * checksums too. */
#include "train/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/check.h"
#include "base/log.h"
#include "base/tmpguard.h"
#include "train/checkpoint_priv.h"
#include "train/ckpt_run.h"

#define BLOCK_ROWS ((int64_t)1 << 15)
#define CHUNK_BYTES ((int64_t)1 << 20)
#define COMPACT_MAX 4096 /* links and attributes kept in the object header */

/* --- failing cleanly ----------------------------------------------------------- */

/* The file rank 0 is writing. */
struct ck_out {
    const char *path; /* the checkpoint's final name */
    char tmp[4200];   /* the temporary file written */
    hid_t f;
};

/* HDF5 reports a failed write()/open() as "... errno = N, error message =
 * '...'" somewhere on its error stack: keep N. */
static herr_t find_errno(unsigned n, const H5E_error2_t *e, void *data)
{
    (void)n;
    const char *p = e->desc ? strstr(e->desc, "errno = ") : NULL;
    if (p && *(int *)data == 0)
        *(int *)data = atoi(p + 8);
    return 0;
}

static herr_t innermost(unsigned n, const H5E_error2_t *e, void *data)
{
    if (n == 0 && e->desc)
        snprintf(data, 256, "%s", e->desc);
    return 0;
}

/* what failed (a call, or a description); saved_errno: errno right after it.
 * Removes the temporary file and ends the job. */
static void __attribute__((noreturn)) ck_fail(struct ck_out *o, const char *what, int saved_errno)
{
    int e = 0;
    char desc[256] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, find_errno, &e);
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, innermost, desc);
    if (e == 0)
        e = saved_errno;
    if (o->f >= 0) {
        H5E_BEGIN_TRY { H5Fclose(o->f); } /* strong close degree: every object goes */
        H5E_END_TRY;
        o->f = -1;
    }
    unlink(o->tmp);
    tmpguard_end();
    if (e != 0)
        fatal("checkpoint %s: cannot write %s: %s (%s%s%s); the temporary file was removed, "
              "earlier checkpoints are kept",
              o->path, o->tmp, strerror(e), what, desc[0] ? ": " : "", desc);
    fatal("checkpoint %s: cannot write %s (%s%s%s); the temporary file was removed, earlier "
          "checkpoints are kept",
          o->path, o->tmp, what, desc[0] ? ": " : "", desc);
}

/* Run an HDF5 call of the writer; on failure, ck_fail. */
#define CK(o, call)                                                                      \
    do {                                                                                 \
        errno = 0;                                                                       \
        if ((call) < 0)                                                                  \
            ck_fail((o), #call, errno);                                                  \
    } while (0)

/* --- small HDF5 helpers ---------------------------------------------------- */

static void attr_write(struct ck_out *o, const char *name, hid_t file_type, hid_t mem_type,
                       const void *v)
{
    hid_t s, a;
    CK(o, s = H5Screate(H5S_SCALAR));
    CK(o, a = H5Acreate2(o->f, name, file_type, s, H5P_DEFAULT, H5P_DEFAULT));
    CK(o, H5Awrite(a, mem_type, v));
    CK(o, H5Aclose(a));
    CK(o, H5Sclose(s));
}

static void attr_i64(struct ck_out *o, const char *name, int64_t v)
{
    attr_write(o, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

static void attr_f64(struct ck_out *o, const char *name, double v)
{
    attr_write(o, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

static void attr_str(struct ck_out *o, const char *name, const char *v)
{
    hid_t t;
    CK(o, t = H5Tcopy(H5T_C_S1));
    CK(o, H5Tset_size(t, strlen(v) + 1));
    attr_write(o, name, t, t, v);
    CK(o, H5Tclose(t));
}

/* A dataset [rows] (cols 0) or [rows, cols] in chunks of about CHUNK_BYTES
 * (whole blocks of BLOCK_ROWS rows: rows of a power of two), each with its
 * Fletcher-32 checksum. */
static hid_t create_2d(struct ck_out *o, hid_t loc, const char *name, hid_t type, int64_t rows,
                       int64_t cols)
{
    hsize_t dims[2] = {(hsize_t)rows, (hsize_t)cols};
    int64_t per_row = (cols > 0 ? cols : 1) * (int64_t)H5Tget_size(type), crows = 1;
    while (crows * 2 * per_row <= CHUNK_BYTES && crows * 2 <= BLOCK_ROWS && crows * 2 <= rows)
        crows *= 2;
    hsize_t chunk[2] = {(hsize_t)crows, (hsize_t)cols};
    hid_t s, d, dcpl;
    CK(o, s = H5Screate_simple(cols > 0 ? 2 : 1, dims, NULL));
    CK(o, dcpl = H5Pcreate(H5P_DATASET_CREATE));
    CK(o, H5Pset_chunk(dcpl, cols > 0 ? 2 : 1, chunk));
    CK(o, H5Pset_fletcher32(dcpl));
    CK(o, d = H5Dcreate2(loc, name, type, s, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    CK(o, H5Pclose(dcpl));
    CK(o, H5Sclose(s));
    return d;
}

/* Write rows [r0, r0 + n) (of cols values, cols 0 = 1-D) of dataset d. */
static void write_rows(struct ck_out *o, hid_t d, hid_t mem_type, int64_t r0, int64_t n,
                       int64_t cols, const void *buf)
{
    int nd = cols > 0 ? 2 : 1;
    hsize_t start[2] = {(hsize_t)r0, 0}, count[2] = {(hsize_t)n, (hsize_t)cols};
    hid_t fs, ms;
    CK(o, fs = H5Dget_space(d));
    CK(o, ms = H5Screate_simple(nd, count, NULL));
    CK(o, H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL));
    CK(o, H5Dwrite(d, mem_type, ms, fs, H5P_DEFAULT, buf));
    CK(o, H5Sclose(ms));
    CK(o, H5Sclose(fs));
}

/* --- writing ---------------------------------------------------------------- */

/* The table's datasets (rank 0 only; -1 where absent). */
struct table_out {
    hid_t w, st, steps;
};

/* Gather the rows of table t block by block from the first embedding group
 * to its rank 0 and write them there (o: NULL on the other ranks); a
 * replicated table (G = 1) is written by rank 0 from its own copy. */
static void write_table(struct trainer *tr, struct ck_out *o, struct emb_table *t,
                        const struct table_out *to)
{
    struct comm *c = tr->c;
    const int G = t->G, d = t->width, sf = (int)t->state_floats; /* stored values per row */
    const int root = c->g[COMM_EMB].rank == 0 && c->rank == 0;
    const int alone = t->conf.replicated; /* no gather: rank 0 holds every row */
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
        const int64_t b = a + BLOCK_ROWS < rows ? a + BLOCK_ROWS : rows;
        const int64_t id0 = a + ((t->shard - a % G) + G) % G; /* this shard's ids: id0 + k G */
        const int64_t n = id0 < b ? (b - 1 - id0) / G + 1 : 0;
        /* slots id0 / G ..: any placement; the slot of id 0 holds zeros */
        emb_table_get_stored(t, id0 / G, n, w, sf ? st : NULL, steps);
        if (alone) {
            counts[0] = n;
            memcpy(gw, w, (size_t)(n * d) * sizeof *gw);
            if (sf)
                memcpy(gst, st, (size_t)(n * sf) * sizeof *gst);
            memcpy(gsteps, steps, (size_t)n * sizeof *gsteps);
        } else {
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
        }
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
        write_rows(o, to->w, H5T_NATIVE_FLOAT, a, b - a, d, ow);
        if (sf)
            write_rows(o, to->st, H5T_NATIVE_FLOAT, a, b - a, sf, ost);
        if (to->steps >= 0)
            write_rows(o, to->steps, H5T_NATIVE_INT64, a, b - a, 0, osteps);
    }
    free(w);
    free(steps);
    free(gw);
    free(gsteps);
    free(ow);
    free(osteps);
    free(counts);
}

/* A group whose links stay in its (checksummed) object header. */
static hid_t create_group(struct ck_out *o, hid_t loc, const char *name)
{
    hid_t gcpl, g;
    CK(o, gcpl = H5Pcreate(H5P_GROUP_CREATE));
    CK(o, H5Pset_link_phase_change(gcpl, COMPACT_MAX, COMPACT_MAX));
    CK(o, g = H5Gcreate2(loc, name, H5P_DEFAULT, gcpl, H5P_DEFAULT));
    CK(o, H5Pclose(gcpl));
    return g;
}

static void write_dense(struct ck_out *o, const char *group, struct trainer *tr,
                        float *const *which)
{
    hid_t g = create_group(o, o->f, group);
    for (int i = 0; i < tr->m.nparams; i++) {
        struct dense_tensor *t = &tr->m.params[i];
        float *h = xmalloc((size_t)t->n * sizeof *h);
        tr->be->to_host(h, which ? which[i] : t->w, (size_t)t->n * sizeof *h);
        hid_t d = create_2d(o, g, t->name, H5T_IEEE_F32LE, t->n, 0);
        write_rows(o, d, H5T_NATIVE_FLOAT, 0, t->n, 0, h);
        CK(o, H5Dclose(d));
        free(h);
    }
    CK(o, H5Gclose(g));
}

/* Rank 0: create the temporary file and write everything but the table
 * rows; every table's datasets (/emb/NAME: the item table, the feature
 * tables) are created, left open in to[k]. */
static void write_header(struct trainer *tr, struct ck_out *o, struct table_out *to)
{
    hid_t fapl;
    CK(o, fapl = H5Pcreate(H5P_FILE_ACCESS));
    /* superblock v3, v2 object headers, fixed-array chunk indices: HDF5
     * checksums all of the metadata */
    CK(o, H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST));
    CK(o, H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG));
    /* attributes and links in the object headers (checksummed), never in a
     * fractal heap (not checksummed: a damaged one crashes HDF5 1.10) */
    hid_t fcpl;
    CK(o, fcpl = H5Pcreate(H5P_FILE_CREATE));
    CK(o, H5Pset_attr_phase_change(fcpl, COMPACT_MAX, COMPACT_MAX));
    CK(o, H5Pset_link_phase_change(fcpl, COMPACT_MAX, COMPACT_MAX));
    errno = 0;
    o->f = H5Fcreate(o->tmp, H5F_ACC_TRUNC, fcpl, fapl);
    if (o->f < 0)
        ck_fail(o, "cannot create the file", errno);
    CK(o, H5Pclose(fapl));
    CK(o, H5Pclose(fcpl));
    const struct model_conf *mc = &tr->m.conf;
    attr_str(o, "format", CKPT_FORMAT);
    attr_i64(o, "version", CKPT_VERSION);
    attr_i64(o, "step", tr->step);
    attr_i64(o, "adam_t", dense_optim_steps(&tr->optim));
    attr_i64(o, "num_items", tr->ds.num_items);
    attr_i64(o, "model_type", mc->type);
    attr_i64(o, "dim", mc->d);
    attr_i64(o, "layers", mc->layers);
    attr_i64(o, "heads", mc->heads);
    attr_i64(o, "max_seq_len", mc->max_len);
    attr_i64(o, "time_bias", mc->time_bias);
    attr_i64(o, "emb_optimizer", tr->items->conf.optim.kind);
    attr_str(o, "rows_codec", emb_codec_name(tr->items->conf.rows_codec)); /* recorded, */
    attr_str(o, "grads_codec", emb_codec_name(tr->items->conf.grads_codec)); /* not checked */
    attr_i64(o, "subspace_k", tr->items->conf.subspace_k); /* /emb/items/weight: c[i] then */
    attr_i64(o, "subspace_basis", tr->items->conf.subspace_identity);
    attr_i64(o, "seed", (int64_t)tr->conf.seed); /* F and U of a subspace table derive from it */
    attr_i64(o, "best_epoch", tr->best_epoch);
    attr_f64(o, "best_val", tr->best_val);
    attr_i64(o, "val_epoch", tr->val_epoch);
    struct ckpt_run run; /* the run it belongs to, and the write order (ckpt_run.h) */
    ckpt_run_identity(tr, &run);
    attr_str(o, "run_id", run.id);
    attr_str(o, "run_params", run.params);
    attr_i64(o, "written_ns", ckpt_run_now_ns());
    char *text = params_serialize(tr->p);
    attr_str(o, "params", text);
    free(text);
    write_dense(o, "/dense", tr, NULL);
    write_dense(o, "/dense_m", tr, dense_optim_moments(&tr->optim, 0));
    write_dense(o, "/dense_v", tr, dense_optim_moments(&tr->optim, 1));
    hid_t g1 = create_group(o, o->f, "/emb");
    for (int k = 0; k < tr->reg.n; k++) {
        const struct emb_table *t = &tr->reg.tables[k];
        hid_t g2 = create_group(o, g1, t->conf.name);
        const int64_t rows = t->conf.rows + 1; /* ids 0 .. rows, 0 = padding */
        to[k].w = create_2d(o, g2, "weight", H5T_IEEE_F32LE, rows, t->width);
        to[k].st = t->state_floats
                       ? create_2d(o, g2, "state", H5T_IEEE_F32LE, rows, t->state_floats)
                       : -1;
        to[k].steps = t->steps ? create_2d(o, g2, "steps", H5T_STD_I64LE, rows, 0) : -1;
        CK(o, H5Gclose(g2));
    }
    CK(o, H5Gclose(g1));
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

/* Rank 0: close, fsync, rename into place, fsync the directory. */
static void finish_file(struct ck_out *o, const struct table_out *to, int ntables)
{
    for (int k = 0; k < ntables; k++) {
        CK(o, H5Dclose(to[k].w));
        if (to[k].st >= 0)
            CK(o, H5Dclose(to[k].st));
        if (to[k].steps >= 0)
            CK(o, H5Dclose(to[k].steps));
    }
    errno = 0;
    if (H5Fclose(o->f) < 0) {
        int e = errno;
        o->f = -1; /* the strong close degree released it, even on failure */
        ck_fail(o, "H5Fclose", e);
    }
    o->f = -1;
    if (fsync_path(o->tmp, O_RDONLY) != 0)
        ck_fail(o, "fsync", errno);
    if (rename(o->tmp, o->path) != 0)
        ck_fail(o, "rename into place", errno);
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
    const int in_first_group = c->rank < tr->items->G; /* world ranks 0..G-1 */
    struct ck_out out = {.path = path, .f = -1}, *o = c->rank == 0 ? &out : NULL;
    struct table_out to[EMB_MAX_TABLES];
    for (int k = 0; k < EMB_MAX_TABLES; k++)
        to[k] = (struct table_out){-1, -1, -1};
    ckpt_run_tmp_name(path, out.tmp, sizeof out.tmp); /* PATH.tmp.HOST.PID */
    if (o) {
        tmpguard_begin(out.tmp, 0); /* removed if rank 0 ends mid-write (not on SIGTERM:
                                       the preemption handler's) */
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* failures are reported by ck_fail */
        write_header(tr, o, to);
    }
    for (int k = 0; k < tr->reg.n; k++) { /* the item table, then the feature tables */
        struct emb_table *t = &tr->reg.tables[k];
        if (t->conf.replicated ? c->rank == 0 : in_first_group)
            write_table(tr, o, t, &to[k]);
    }
    if (o)
        finish_file(o, to, tr->reg.n);
    comm_barrier(c);
}
