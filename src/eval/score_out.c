/* score_out: the file `freescale score` writes (CSV or HDF5 by its name),
 * on rank 0, under a temporary name renamed when complete (rec_file.h);
 * see score.h for the layout. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "eval/rec_file.h"
#include "eval/rec_out.h"
#include "eval/score.h"

/* What a pair's task scores: a binary task's probability, a regression's value. */
static double shown(const struct score_meta *m, int k, double pred)
{
    return m->binary[k] ? 1.0 / (1.0 + exp(-pred)) : pred;
}

/* One CSV field, quoted when it needs to be. */
static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
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
        csv_field(f, rec_ids_text(um, users[i], ub, sizeof ub));
        fputc(',', f);
        csv_field(f, rec_ids_text(im, items[i], ib, sizeof ib));
        for (int k = 0; k < m->K; k++)
            fprintf(f, ",%.17g", shown(m, k, pred[i * m->K + k]));
        fputc('\n', f);
    }
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        rec_fatal("%s: write error (disk full?)", path);
}

static void write_h5(const char *path, const char *tmp, const struct score_meta *m,
                     const struct rec_ids *um, const struct rec_ids *im, int64_t n,
                     const int64_t *users, const int64_t *items, const double *pred)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t h = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (h < 0)
        rec_fatal("%s: cannot create %s (directory missing or not writable?)", path, tmp);
    char tasks[RANK_MAX_TASKS * 40] = "", kinds[RANK_MAX_TASKS * 12] = "";
    for (int k = 0; k < m->K; k++) {
        snprintf(tasks + strlen(tasks), sizeof tasks - strlen(tasks), "%s%s", k ? "," : "",
                 m->names[k]);
        snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s", k ? "," : "",
                 m->binary[k] ? "binary" : "regression");
    }
    rec_h5_attr_str(h, "format", "freescale-scores");
    rec_h5_attr_i64(h, "version", 1);
    rec_h5_attr_str(h, "tasks", tasks);
    rec_h5_attr_str(h, "kinds", kinds);
    rec_h5_attr_i64(h, "step", m->step);
    rec_h5_attr_str(h, "checkpoint", m->checkpoint);
    rec_h5_attr_str(h, "dataset", m->dataset);
    rec_h5_attr_str(h, "user_ids", rec_ids_kind_name(um));
    rec_h5_attr_str(h, "item_ids", rec_ids_kind_name(im));
    hid_t tu = rec_ids_h5_type(um), ti = rec_ids_h5_type(im);
    char *ub = xmalloc((size_t)n * rec_ids_h5_size(um));
    char *ib = xmalloc((size_t)n * rec_ids_h5_size(im));
    rec_ids_h5_fill(um, users, n, -1, ub);
    rec_ids_h5_fill(im, items, n, 0, ib);
    hid_t d = rec_h5_create(h, "users", tu, n, 0);
    rec_h5_write_rows(d, um->kind == REC_IDS_STRING ? tu : H5T_NATIVE_INT64, 0, n, 0, ub);
    REC_H5(H5Dclose(d));
    d = rec_h5_create(h, "items", ti, n, 0);
    rec_h5_write_rows(d, im->kind == REC_IDS_STRING ? ti : H5T_NATIVE_INT64, 0, n, 0, ib);
    REC_H5(H5Dclose(d));
    d = rec_h5_create(h, "user_index", H5T_STD_I64LE, n, 0);
    rec_h5_write_rows(d, H5T_NATIVE_INT64, 0, n, 0, users);
    REC_H5(H5Dclose(d));
    d = rec_h5_create(h, "item_index", H5T_STD_I64LE, n, 0);
    rec_h5_write_rows(d, H5T_NATIVE_INT64, 0, n, 0, items);
    REC_H5(H5Dclose(d));
    double *sc = xmalloc((size_t)(n * m->K) * sizeof *sc);
    for (int64_t i = 0; i < n * m->K; i++)
        sc[i] = shown(m, (int)(i % m->K), pred[i]);
    d = rec_h5_create(h, "scores", H5T_IEEE_F64LE, n, m->K);
    rec_h5_write_rows(d, H5T_NATIVE_DOUBLE, 0, n, m->K, sc);
    REC_H5(H5Dclose(d));
    d = rec_h5_create(h, "logits", H5T_IEEE_F64LE, n, m->K);
    rec_h5_write_rows(d, H5T_NATIVE_DOUBLE, 0, n, m->K, pred);
    REC_H5(H5Dclose(d));
    REC_H5(H5Tclose(tu));
    REC_H5(H5Tclose(ti));
    free(sc);
    free(ub);
    free(ib);
    if (H5Fclose(h) < 0)
        rec_fatal("%s: writing failed (disk full?)", path);
}

void score_write(const char *path, const struct score_meta *m, const struct rec_ids *um,
                 const struct rec_ids *im, int64_t n, const int64_t *users, const int64_t *items,
                 const double *pred)
{
    struct rec_file f;
    rec_file_begin(&f, path);
    if (rec_out_format(path) == 1)
        write_csv(path, f.tmp, m, um, im, n, users, items, pred);
    else
        write_h5(path, f.tmp, m, um, im, n, users, items, pred);
    rec_file_commit(&f);
}
