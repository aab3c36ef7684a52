/* checkpoint_dyn: dynamic tables in checkpoints (see checkpoint_dyn.c):
 * ids with their rows, optimizer state and eviction statistics, written
 * collectively, re-hashed to their owners on any rank count when read.
 * k: the table's index in tr->reg. */
#ifndef FS_CHECKPOINT_DYN_H
#define FS_CHECKPOINT_DYN_H

#include "data/h5io.h"
#include "train/train.h"

/* Collective, before the header: every dynamic table's rows per rank. */
void ckpt_dyn_count(struct trainer *tr);
/* Rank 0, in the header: table k's group /emb/NAME and its datasets. */
void ckpt_dyn_create(struct trainer *tr, struct h5io *h, hid_t emb, int k);
/* Collective (the file every rank opened): table k's rows. */
void ckpt_dyn_write(struct trainer *tr, struct h5io *h, int k);
/* Collective: table k's rows from the file path every rank opened. */
void ckpt_dyn_read(struct trainer *tr, const struct h5io *h, const char *path, int k);

#endif
