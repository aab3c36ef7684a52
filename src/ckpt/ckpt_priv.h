/* ckpt_priv: what the checkpoint writer, reader and row movers share. */
#ifndef FS_CKPT_PRIV_H
#define FS_CKPT_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "data/h5io.h"
#include "train/train.h"

#define CKPT_FORMAT "freescale-ckpt"
/* 2: chunked datasets with Fletcher-32 checksums, v2 object headers;
 * 1: contiguous datasets, no checksums (still read) */
#define CKPT_VERSION 2

/* The stored parts of a table: /emb/NAME/weight [rows + 1, width] (float),
 * /emb/NAME/state [rows + 1, state_floats] (float, when the optimizer has
 * state), /emb/NAME/steps [rows + 1] (int64, lazy Adam). */
enum ckpt_kind { CKPT_WEIGHT, CKPT_STATE, CKPT_STEPS };
struct ckpt_part {
    enum ckpt_kind kind;
    const char *name;  /* "weight", "state", "steps" */
    int64_t cols;      /* 0: a vector */
    size_t row_bytes;  /* of one row in memory */
    int is_float;
};
/* The parts of t present (weight first); their number. */
int ckpt_parts(const struct emb_table *t, struct ckpt_part part[3]);
/* A part's memory and file types. */
hid_t ckpt_mem_type(const struct ckpt_part *p);
hid_t ckpt_file_type(const struct ckpt_part *p);

/* ckpt_rows.c: a table's rows between the shards and the datasets
 * d[part] (see there). ckpt_rows_write: collective over every rank (the
 * file opened by all through MPI-IO). ckpt_rows_gather: the first
 * embedding group's rows to rank 0, which writes (h on rank 0 only).
 * ckpt_rows_read: collective (d: of the file every rank opened); path names
 * the file in messages. */
void ckpt_rows_write(struct trainer *tr, struct h5io *h, struct emb_table *t, const hid_t *d);
void ckpt_rows_gather(struct trainer *tr, struct h5io *h, struct emb_table *t, const hid_t *d);
void ckpt_rows_read(struct trainer *tr, const char *path, struct emb_table *t, const hid_t *d);

#endif
