/* score_out: the file `freescale score` writes (CSV or HDF5 by its name),
 * on rank 0, under a temporary name renamed when complete (rec_file.h);
 * see score.h for the layout. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "cmd/rec_file.h"
#include "cmd/rec_out.h"
#include "cmd/score.h"

/* What a pair's task scores: a binary task's probability, a regression's value. */
static double shown(const struct score_meta *m, int k, double pred)
{
    return m->binary[k] ? 1.0 / (1.0 + exp(-pred)) : pred;
}

static void write_csv(const char *path, const char *tmp, const struct score_meta *m,
                      const struct rec_ids *um, const struct rec_ids *im, int64_t n,
                      const int64_t *users, const int64_t *items, const double *pred)
{
    FILE *f = fopen(tmp, "w");
    if (!f)
        rec_fatal("%s: cannot create %s: %s", path, tmp, strerror(errno));
    fputs("user,item", f);
    for (int k = 0; k < m->K; k++)
        fprintf(f, ",%s", m->names[k]);
    fputc('\n', f);
    char ub[32], ib[32];
    for (int64_t i = 0; i < n; i++) {
        rec_csv_field(f, rec_ids_text(um, users[i], ub, sizeof ub));
        fputc(',', f);
        rec_csv_field(f, rec_ids_text(im, items[i], ib, sizeof ib));
        for (int k = 0; k < m->K; k++)
            fprintf(f, ",%.17g", shown(m, k, pred[i * m->K + k]));
        fputc('\n', f);
    }
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        rec_fatal("%s: write error (disk full?)", path);
}

static void write_h5(struct rec_file *f, const struct score_meta *m, const struct rec_ids *um,
                     const struct rec_ids *im, int64_t n, const int64_t *users,
                     const int64_t *items, const double *pred)
{
    struct h5io *h = &f->h;
    rec_h5_create(f); /* this rank alone; every call checked (rec_fatal) */
    char tasks[RANK_MAX_TASKS * 40] = "", kinds[RANK_MAX_TASKS * 12] = "";
    for (int k = 0; k < m->K; k++) {
        snprintf(tasks + strlen(tasks), sizeof tasks - strlen(tasks), "%s%s", k ? "," : "",
                 m->names[k]);
        snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s", k ? "," : "",
                 m->binary[k] ? "binary" : "regression");
    }
    h5io_attr_utf8(h, h->f, "format", "freescale-scores");
    h5io_attr_i64(h, h->f, "version", 1);
    h5io_attr_utf8(h, h->f, "tasks", tasks);
    h5io_attr_utf8(h, h->f, "kinds", kinds);
    h5io_attr_i64(h, h->f, "step", m->step);
    h5io_attr_utf8(h, h->f, "checkpoint", m->checkpoint);
    h5io_attr_utf8(h, h->f, "dataset", m->dataset);
    h5io_attr_utf8(h, h->f, "user_ids", rec_ids_kind_name(um));
    h5io_attr_utf8(h, h->f, "item_ids", rec_ids_kind_name(im));
    hid_t tu = rec_ids_h5_type(um, h), ti = rec_ids_h5_type(im, h);
    char *ub = xmalloc((size_t)n * rec_ids_h5_size(um));
    char *ib = xmalloc((size_t)n * rec_ids_h5_size(im));
    rec_ids_h5_fill(um, users, n, -1, ub);
    rec_ids_h5_fill(im, items, n, 0, ib);
    double *sc = xmalloc((size_t)(n * m->K) * sizeof *sc);
    for (int64_t i = 0; i < n * m->K; i++)
        sc[i] = shown(m, (int)(i % m->K), pred[i]);
    const struct {
        const char *name;
        hid_t ftype, mtype;
        int64_t cols;
        const void *data;
    } out[] = {
        {"users", tu, um->kind == REC_IDS_STRING ? tu : H5T_NATIVE_INT64, 0, ub},
        {"items", ti, im->kind == REC_IDS_STRING ? ti : H5T_NATIVE_INT64, 0, ib},
        {"user_index", H5T_STD_I64LE, H5T_NATIVE_INT64, 0, users},
        {"item_index", H5T_STD_I64LE, H5T_NATIVE_INT64, 0, items},
        {"scores", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, m->K, sc},
        {"logits", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, m->K, pred},
    };
    for (size_t i = 0; i < sizeof out / sizeof *out; i++) {
        hid_t d = rec_h5_dset(f, h->f, out[i].name, out[i].ftype, n, out[i].cols);
        h5io_write_rows(h, d, out[i].mtype, 0, 1, n, out[i].cols, out[i].data);
        h5io_close_obj(h, d);
    }
    h5io_close_obj(h, tu);
    h5io_close_obj(h, ti);
    free(sc);
    free(ub);
    free(ib);
    rec_h5_close(f);
}

void score_write(const char *path, const struct score_meta *m, const struct rec_ids *um,
                 const struct rec_ids *im, int64_t n, const int64_t *users, const int64_t *items,
                 const double *pred)
{
    struct rec_file f;
    rec_file_begin(&f, path, NULL); /* rank 0 alone */
    if (rec_out_format(path) == 1)
        write_csv(path, f.tmp, m, um, im, n, users, items, pred);
    else
        write_h5(&f, m, um, im, n, users, items, pred);
    rec_file_commit(&f, NULL);
}
