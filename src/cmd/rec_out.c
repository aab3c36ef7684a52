/* rec_out: recommend's CSV and HDF5 output; see rec_out.h. */
#include "cmd/rec_out.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "cmd/rec_file.h"

struct rec_out {
    char path[4096];
    struct rec_file file;                      /* the output being written */
    struct comm *c;                            /* every rank writes (HDF5); rank 0 (CSV) */
    int csv, K;
    int64_t n, done;                           /* users; CSV: written so far */
    const struct rec_ids *users, *items;
    FILE *f;                                   /* CSV */
    hid_t d_users, d_uidx, d_items, d_iidx, d_scores; /* HDF5 */
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

void rec_csv_field(FILE *f, const char *s)
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
            rec_csv_field(o->f, u);
            fprintf(o->f, ",%d,", j + 1);
            rec_csv_field(o->f, rec_ids_text(o->items, id, ib, sizeof ib));
            fprintf(o->f, ",%.9g\n", (double)scores[i * o->K + j]);
        }
    }
    if (ferror(o->f))
        rec_fatal("%s: write error (disk full?)", o->path);
}

/* --- HDF5 ----------------------------------------------------------------------- */

static const char *const NAMES[5] = {"users", "user_index", "items", "item_index", "scores"};

static void h5_close_all(struct rec_out *o)
{
    hid_t *d[5] = {&o->d_users, &o->d_uidx, &o->d_items, &o->d_iidx, &o->d_scores};
    for (int i = 0; i < 5; i++) {
        h5io_close_obj(&o->file.h, *d[i]);
        *d[i] = -1;
    }
}

/* Rank 0 creates the file with its attributes and empty datasets; then
 * every rank opens it (MPI-IO) and the datasets. */
static void h5_open(struct rec_out *o, const char *checkpoint, const char *dataset,
                    const char *model_type, int64_t step)
{
    struct h5io *h = &o->file.h;
    if (o->c->rank == 0) {
        rec_h5_create(&o->file);
        const hid_t f = h->f;
        h5io_attr_utf8(h, f, "format", "freescale-recs");
        h5io_attr_i64(h, f, "version", 1);
        h5io_attr_i64(h, f, "k", o->K);
        h5io_attr_i64(h, f, "step", step);
        h5io_attr_utf8(h, f, "checkpoint", checkpoint);
        h5io_attr_utf8(h, f, "dataset", dataset);
        h5io_attr_utf8(h, f, "model_type", model_type);
        h5io_attr_utf8(h, f, "user_ids", rec_ids_kind_name(o->users));
        h5io_attr_utf8(h, f, "item_ids", rec_ids_kind_name(o->items));
        hid_t tu = rec_ids_h5_type(o->users, h), ti = rec_ids_h5_type(o->items, h);
        o->d_users = rec_h5_dset(&o->file, f, NAMES[0], tu, o->n, 0);
        o->d_uidx = rec_h5_dset(&o->file, f, NAMES[1], H5T_STD_I64LE, o->n, 0);
        o->d_items = rec_h5_dset(&o->file, f, NAMES[2], ti, o->n, o->K);
        o->d_iidx = rec_h5_dset(&o->file, f, NAMES[3], H5T_STD_I64LE, o->n, o->K);
        o->d_scores = rec_h5_dset(&o->file, f, NAMES[4], H5T_IEEE_F32LE, o->n, o->K);
        h5io_close_obj(h, tu);
        h5io_close_obj(h, ti);
        h5_close_all(o);
        rec_h5_close(&o->file);
    }
    rec_h5_reopen(&o->file, o->c);
    o->t_users = rec_ids_h5_type(o->users, h);
    o->t_items = rec_ids_h5_type(o->items, h);
    hid_t *d[5] = {&o->d_users, &o->d_uidx, &o->d_items, &o->d_iidx, &o->d_scores};
    for (int i = 0; i < 5; i++)
        *d[i] = rec_h5_open(&o->file, NAMES[i]);
}

/* This rank's m users at list positions [row0, row0 + m) (collective). */
static void h5_rows(struct rec_out *o, int64_t row0, int64_t m, const int64_t *users,
                    const int64_t *ids, const float *scores)
{
    struct h5io *h = &o->file.h;
    const int64_t mk = m * o->K;
    hid_t mu = o->users->kind == REC_IDS_STRING ? o->t_users : H5T_NATIVE_INT64;
    hid_t mi = o->items->kind == REC_IDS_STRING ? o->t_items : H5T_NATIVE_INT64;
    char *ub = xmalloc((size_t)(m ? m : 1) * rec_ids_h5_size(o->users));
    char *ib = xmalloc((size_t)(mk ? mk : 1) * rec_ids_h5_size(o->items));
    rec_ids_h5_fill(o->users, users, m, -1, ub);
    rec_ids_h5_fill(o->items, ids, mk, 0, ib);
    h5io_write_rows(h, o->d_users, mu, row0, 1, m, 0, ub);
    h5io_write_rows(h, o->d_uidx, H5T_NATIVE_INT64, row0, 1, m, 0, users);
    h5io_write_rows(h, o->d_items, mi, row0, 1, m, o->K, ib);
    h5io_write_rows(h, o->d_iidx, H5T_NATIVE_INT64, row0, 1, m, o->K, ids);
    h5io_write_rows(h, o->d_scores, H5T_NATIVE_FLOAT, row0, 1, m, o->K, scores);
    free(ub);
    free(ib);
}

static void h5_close(struct rec_out *o)
{
    h5_close_all(o);
    h5io_close_obj(&o->file.h, o->t_users);
    h5io_close_obj(&o->file.h, o->t_items);
    rec_h5_close(&o->file);
}

/* --- the writer -------------------------------------------------------------------- */

struct rec_out *rec_out_open(struct comm *c, const char *path, int64_t n, int K,
                             const struct rec_ids *users, const struct rec_ids *items,
                             const char *checkpoint, const char *dataset, const char *model_type,
                             int64_t step)
{
    const int csv = rec_out_format(path) == 1;
    if (csv && c->rank != 0)
        return NULL;
    struct rec_out *o = xcalloc(1, sizeof *o);
    if (strlen(path) >= sizeof o->path)
        fatal("%s: path too long", path);
    memcpy(o->path, path, strlen(path) + 1);
    o->c = c;
    o->csv = csv;
    o->K = K;
    o->n = n;
    o->users = users;
    o->items = items;
    o->d_users = o->d_uidx = o->d_items = o->d_iidx = o->d_scores = -1;
    rec_file_begin(&o->file, path, csv ? NULL : c);
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

int rec_out_is_csv(const struct rec_out *o)
{
    return o->csv;
}

void rec_out_write(struct rec_out *o, int64_t row0, int64_t m, const int64_t *users,
                   const int64_t *ids, const float *scores)
{
    if (row0 < 0 || row0 + m > o->n || (o->csv && row0 != o->done))
        rec_fatal("%s: users %lld..%lld written, %lld expected", o->path, (long long)row0,
                  (long long)(row0 + m), (long long)o->n);
    if (o->csv)
        csv_rows(o, m, users, ids, scores);
    else
        h5_rows(o, row0, m, users, ids, scores);
    o->done += m;
}

void rec_out_close(struct rec_out *o)
{
    if (o->csv && o->done != o->n)
        rec_fatal("%s: %lld of %lld users written", o->path, (long long)o->done,
                  (long long)o->n);
    if (o->csv) {
        int bad = ferror(o->f);
        if (fclose(o->f) != 0 || bad)
            rec_fatal("%s: write error (disk full?)", o->path);
    } else {
        h5_close(o);
    }
    rec_file_commit(&o->file, o->csv ? NULL : o->c);
    free(o);
}
