/* rec_out: the file 'freescale recommend' writes, CSV or HDF5 by the name's
 * ending (.csv; .h5 or .hdf5), under a temporary name renamed when complete
 * (rec_file.h): CSV by rank 0 (from the lists gathered to it), HDF5 by
 * every rank together through MPI-IO, each its own lists' rows.
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
#include <stdio.h>

#include "comm/comm.h"
#include "cmd/rec_ids.h"

struct rec_out;

/* 1 if path names a CSV file, 0 for HDF5, -1 for neither (the caller
 * refuses it). */
int rec_out_format(const char *path);
/* One CSV field, quoted (RFC 4180) when it holds a comma, a quote or a line end. */
void rec_csv_field(FILE *f, const char *s);

/* Open path's temporary for n users of K items each; collective over c's
 * ranks (CSV: NULL on every rank but 0). The metadata strings go to the
 * HDF5 attributes. ids must outlive the writer (HDF5: on every rank). */
struct rec_out *rec_out_open(struct comm *c, const char *path, int64_t n, int K,
                             const struct rec_ids *users, const struct rec_ids *items,
                             const char *checkpoint, const char *dataset, const char *model_type,
                             int64_t step);
int rec_out_is_csv(const struct rec_out *o);
/* m users at list positions [row0, row0 + m): dense users[m], items ids[m,
 * K] (0 = none), scores[m, K]. CSV: in order, on rank 0; HDF5: every rank
 * its own (m = 0: none), collective. */
void rec_out_write(struct rec_out *o, int64_t row0, int64_t m, const int64_t *users,
                   const int64_t *ids, const float *scores);
/* Complete, close and rename into place (CSV: all n users written); collective for HDF5. */
void rec_out_close(struct rec_out *o);

#endif
