/* checkpoint: HDF5 checkpoints that do not depend on the rank count.
 *
 *   /               attrs format = "freescale-ckpt", version = 1, step,
 *                   adam_t, best_epoch, best_val (validation NDCG@10),
 *                   num_items, model_type, dim, layers, heads,
 *                   max_seq_len, time_bias, emb_optimizer, params (the
 *                   effective parameters, as text)
 *   /dense/NAME     float32 [n]   dense parameters (and /dense_m, /dense_v:
 *                                 their AdamW moments)
 *   /emb/items/weight  float32 [num_items + 1, d]  rows in global id order
 *   /emb/items/state   float32 [num_items + 1, s]  sparse optimizer state
 *   /emb/items/steps   int64 [num_items + 1]       lazy Adam step counts
 *
 * All randomness is keyed by (seed, epoch, sample), so the step number is
 * the whole data cursor. Rank 0 writes under a temporary name and renames
 * when complete; the table rows come from the first embedding group in
 * blocks. On resume every rank reads its own shard with a strided
 * hyperslab, whatever the rank count was when the file was written. */
#ifndef FS_CHECKPOINT_H
#define FS_CHECKPOINT_H

#include <stddef.h>

#include "train/train.h"

void checkpoint_write(struct trainer *tr, const char *path);
/* Load path into tr (built for the current parameters); a file that does
 * not match them is refused with fatal() naming the mismatch. */
void checkpoint_read(struct trainer *tr, const char *path);

/* The newest checkpoint DIR/ckpt-STEP.h5 (largest STEP) into path[len];
 * 0 if found, -1 if the directory holds none. Temporaries never match. */
int checkpoint_newest(const char *dir, char *path, size_t len);

#endif
