/* ckpt_dyn: dynamic tables in checkpoints (see ckpt_dyn.c):
 * ids with their rows, optimizer state and eviction statistics, written
 * collectively, re-hashed to their owners on any rank count when read.
 * k: the table's index in tr->reg. */
#ifndef FS_CHECKPOINT_DYN_H
#define FS_CHECKPOINT_DYN_H

#include "data/h5io.h"
#include "train/train.h"

/* Collective, before the header: every dynamic table's rows per rank. */
void ckpt_dyn_count(struct trainer *tr);
/* The bytes dynamic table t takes in a full checkpoint when it holds rows
 * rows (and the shared one), chunks and headers included (the estimate
 * before training, ckpt_train.c; the probation list left out). */
double ckpt_dyn_bytes(const struct emb_table *t, int64_t rows);
/* Rank 0, in the header: table k's group /emb/NAME and its datasets. */
void ckpt_dyn_create(struct trainer *tr, struct h5io *h, hid_t emb, int k);
/* Collective (the file every rank opened): table k's rows. */
void ckpt_dyn_write(struct trainer *tr, struct h5io *h, int k);
/* Collective: table k's rows from the file path every rank opened. */
void ckpt_dyn_read(struct trainer *tr, const struct h5io *h, const char *path, int k);

/* Delta checkpoints (ckpt_delta.c; output.checkpoint_delta_every = K): ckpt_dyn_chain
 * records path (a checkpoint written or resumed from) as the chain's last
 * and marks the dynamic tables (rows used and ids evicted since are the
 * next delta's); ckpt_delta_due: step is a multiple of K, after the
 * chain's last; ckpt_delta_save writes DIR/delta-STEP.h5: everything a
 * full checkpoint holds but a dynamic table's rows, of which only those
 * used since the chain's last checkpoint and the ids evicted since
 * (collective); ckpt_dyn_header (rank 0, in the header): the previous
 * file's name and step; ckpt_delta_prev (collective, at the start of
 * checkpoint_read): a delta's chain (verified, the same run, in order)
 * read first. */
void ckpt_dyn_chain(struct trainer *tr, const char *path);
/* The write in progress is a delta (1) or not (0): ckpt_delta.c. */
void ckpt_dyn_set_delta(int on);
int ckpt_dyn_delta_mode(void);
int ckpt_delta_due(const struct trainer *tr, int64_t total);
void ckpt_delta_save(struct trainer *tr);
void ckpt_dyn_header(struct h5io *h, hid_t f);
void ckpt_delta_prev(struct trainer *tr, const char *path);
/* train.resume = auto chose resume (a full checkpoint): the newest delta of
 * its chain in the directory instead, the links verified in order (a
 * refused one ends the chain before it, said; collective). */
void ckpt_delta_auto(struct trainer *tr, char *resume, size_t len);

#endif
