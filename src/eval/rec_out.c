/* rec_out: recommend's CSV and HDF5 output; see rec_out.h. */
#include "eval/rec_out.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "eval/rec_file.h"

struct rec_out {
    char path[4096];
    struct rec_file file;                      /* the output being written */
    int csv, K;
    int64_t n, done;
    const struct rec_ids *users, *items;
    FILE *f;                                   /* CSV */
    hid_t h5, d_users, d_uidx, d_items, d_iidx, d_scores; /* HDF5 */
    hid_t t_users, t_items;                    /* their file (= memory) types */
};

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

int rec_out_format(const char *path)
{
    if (ends_with(path, ".csv"))
        return 1;
    if (ends_with(path, ".h5") || ends_with(path, ".hdf5"))
        return 0;
    return -1;
}

/* --- CSV ------------------------------------------------------------------------ */

/* One field, quoted when it needs to be. */
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

static void csv_rows(struct rec_out *o, int64_t m, const int64_t *users, const int64_t *ids,
                     const float *scores)
{
    char ub[32], ib[32];
    for (int64_t i = 0; i < m; i++) {
        const char *u = rec_ids_text(o->users, users[i], ub, sizeof ub);
        for (int j = 0; j < o->K; j++) {
            int64_t id = ids[i * o->K + j];
            if (id == 0)
                break; /* padding comes last */
            csv_field(o->f, u);
            fprintf(o->f, ",%d,", j + 1);
            csv_field(o->f, rec_ids_text(o->items, id, ib, sizeof ib));
            fprintf(o->f, ",%.9g\n", (double)scores[i * o->K + j]);
        }
    }
    if (ferror(o->f))
        rec_fatal("%s: write error (disk full?)", o->path);
}

/* --- HDF5 ----------------------------------------------------------------------- */

static void h5_open(struct rec_out *o, const char *checkpoint, const char *dataset,
                    const char *model_type, int64_t step)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    o->h5 = H5Fcreate(o->file.tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (o->h5 < 0)
        rec_fatal("%s: cannot create %s (directory missing or not writable?)", o->path,
                  o->file.tmp);
    rec_h5_attr_str(o->h5, "format", "freescale-recs");
    rec_h5_attr_i64(o->h5, "version", 1);
    rec_h5_attr_i64(o->h5, "k", o->K);
    rec_h5_attr_i64(o->h5, "step", step);
    rec_h5_attr_str(o->h5, "checkpoint", checkpoint);
    rec_h5_attr_str(o->h5, "dataset", dataset);
    rec_h5_attr_str(o->h5, "model_type", model_type);
    rec_h5_attr_str(o->h5, "user_ids", rec_ids_kind_name(o->users));
    rec_h5_attr_str(o->h5, "item_ids", rec_ids_kind_name(o->items));
    o->t_users = rec_ids_h5_type(o->users);
    o->t_items = rec_ids_h5_type(o->items);
    o->d_users = rec_h5_create(o->h5, "users", o->t_users, o->n, 0);
    o->d_uidx = rec_h5_create(o->h5, "user_index", H5T_STD_I64LE, o->n, 0);
    o->d_items = rec_h5_create(o->h5, "items", o->t_items, o->n, o->K);
    o->d_iidx = rec_h5_create(o->h5, "item_index", H5T_STD_I64LE, o->n, o->K);
    o->d_scores = rec_h5_create(o->h5, "scores", H5T_IEEE_F32LE, o->n, o->K);
}

static void h5_rows(struct rec_out *o, int64_t m, const int64_t *users, const int64_t *ids,
                    const float *scores)
{
    const int64_t mk = m * o->K;
    hid_t mu = o->users->kind == REC_IDS_STRING ? o->t_users : H5T_NATIVE_INT64;
    hid_t mi = o->items->kind == REC_IDS_STRING ? o->t_items : H5T_NATIVE_INT64;
    char *ub = xmalloc((size_t)(m ? m : 1) * rec_ids_h5_size(o->users));
    char *ib = xmalloc((size_t)(mk ? mk : 1) * rec_ids_h5_size(o->items));
    rec_ids_h5_fill(o->users, users, m, -1, ub);
    rec_ids_h5_fill(o->items, ids, mk, 0, ib);
    rec_h5_write_rows(o->d_users, mu, o->done, m, 0, ub);
    rec_h5_write_rows(o->d_uidx, H5T_NATIVE_INT64, o->done, m, 0, users);
    rec_h5_write_rows(o->d_items, mi, o->done, m, o->K, ib);
    rec_h5_write_rows(o->d_iidx, H5T_NATIVE_INT64, o->done, m, o->K, ids);
    rec_h5_write_rows(o->d_scores, H5T_NATIVE_FLOAT, o->done, m, o->K, scores);
    free(ub);
    free(ib);
}

static void h5_close(struct rec_out *o)
{
    REC_H5(H5Dclose(o->d_users));
    REC_H5(H5Dclose(o->d_uidx));
    REC_H5(H5Dclose(o->d_items));
    REC_H5(H5Dclose(o->d_iidx));
    REC_H5(H5Dclose(o->d_scores));
    REC_H5(H5Tclose(o->t_users));
    REC_H5(H5Tclose(o->t_items));
    if (H5Fclose(o->h5) < 0)
        rec_fatal("%s: writing failed (disk full?)", o->path);
}

/* --- the writer -------------------------------------------------------------------- */

struct rec_out *rec_out_open(const char *path, int64_t n, int K, const struct rec_ids *users,
                             const struct rec_ids *items, const char *checkpoint,
                             const char *dataset, const char *model_type, int64_t step)
{
    struct rec_out *o = xcalloc(1, sizeof *o);
    if (strlen(path) >= sizeof o->path)
        fatal("%s: path too long", path);
    memcpy(o->path, path, strlen(path) + 1);
    o->csv = rec_out_format(path) == 1;
    o->K = K;
    o->n = n;
    o->users = users;
    o->items = items;
    rec_file_begin(&o->file, path);
    if (!o->csv) {
        h5_open(o, checkpoint, dataset, model_type, step);
        return o;
    }
    o->f = fopen(o->file.tmp, "w");
    if (!o->f)
        rec_fatal("%s: cannot create %s: %s", path, o->file.tmp, strerror(errno));
    fputs("user,rank,item,score\n", o->f);
    return o;
}

void rec_out_write(struct rec_out *o, int64_t m, const int64_t *users, const int64_t *ids,
                   const float *scores)
{
    if (o->done + m > o->n)
        rec_fatal("%s: %lld users written, %lld expected", o->path,
                       (long long)(o->done + m), (long long)o->n);
    if (o->csv)
        csv_rows(o, m, users, ids, scores);
    else
        h5_rows(o, m, users, ids, scores);
    o->done += m;
}

void rec_out_close(struct rec_out *o)
{
    if (o->done != o->n)
        rec_fatal("%s: %lld of %lld users written", o->path, (long long)o->done,
                       (long long)o->n);
    if (o->csv) {
        int bad = ferror(o->f);
        if (fclose(o->f) != 0 || bad)
            rec_fatal("%s: write error (disk full?)", o->path);
    } else {
        h5_close(o);
    }
    rec_file_commit(&o->file);
    free(o);
}
