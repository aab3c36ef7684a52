/* rec_out: the file 'freescale recommend' writes, CSV or HDF5 by the name's
 * ending (.csv; .h5 or .hdf5), on one process (rank 0), under a temporary
 * name renamed when complete (rec_file.h).
 *
 * CSV: a header line "user,rank,item,score", then per user (in list order)
 * one line per recommended item, rank 1..K, best first; user and item in
 * the dataset's original ids (quoted as RFC 4180 when they hold a comma,
 * quote or line break); score with 9 significant digits (a float exactly).
 * A user with fewer than K candidates left has fewer lines.
 *
 * HDF5 (n users, K = --top):
 *   /             attrs format = "freescale-recs", version = 1, k, step,
 *                 checkpoint, dataset, model_type, user_ids, item_ids
 *                 ("int" | "string" | "dense": the type of /users, /items)
 *   /users        [n]     original user ids (int64, or UTF-8 strings)
 *   /user_index   [n]     int64 dense user index (row of the dataset,
 *                         and of export's /user_embeddings)
 *   /items        [n, K]  original item ids, best first
 *   /item_index   [n, K]  int64 dense item ids 1..num_items (row - 1 of
 *                         export's /item_embeddings); 0 = no item
 *   /scores       [n, K]  float32 scores; -inf where there is no item
 * Slots without an item (fewer than K candidates) hold 0 / "" in /items. */
#ifndef FS_REC_OUT_H
#define FS_REC_OUT_H

#include <stdint.h>

#include "eval/rec_ids.h"

struct rec_out;

/* 1 if path names a CSV file, 0 for HDF5, -1 for neither (the caller
 * refuses it). */
int rec_out_format(const char *path);

/* Open path's temporary for n users of K items each. The metadata strings
 * go to the HDF5 attributes. ids must outlive the writer. */
struct rec_out *rec_out_open(const char *path, int64_t n, int K, const struct rec_ids *users,
                             const struct rec_ids *items, const char *checkpoint,
                             const char *dataset, const char *model_type, int64_t step);
/* The next m users: dense users[m], items ids[m, K] (0 = none), scores[m, K]. */
void rec_out_write(struct rec_out *o, int64_t m, const int64_t *users, const int64_t *ids,
                   const float *scores);
/* Complete, close and rename into place (all n users written). */
void rec_out_close(struct rec_out *o);

#endif
