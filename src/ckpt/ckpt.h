/* ckpt: HDF5 checkpoints that do not depend on the rank count.
 *
 *   /               attrs format = "freescale-ckpt", version = 2, step,
 *                   adam_t, best_epoch, best_val (validation NDCG@10),
 *                   num_items, model_type, dim, layers, heads,
 *                   max_seq_len, time_bias, emb_optimizer, params (the
 *                   effective parameters, as text), run_id, run_params,
 *                   written_ns (the run and the write order: ckpt_run.h),
 *                   val_epoch (epochs at the last validation, -1: none);
 *                   every attribute scalar
 *   /dense/NAME     float32 [n]   dense parameters (and /dense_m, /dense_v:
 *                                 their AdamW moments)
 *   /emb/items/weight  float32 [num_items + 1, d]  rows in global id order
 *   /emb/items/state   float32 [num_items + 1, s]  sparse optimizer state
 *   /emb/items/steps   int64 [num_items + 1]       lazy Adam step counts
 *
 * /emb/NAME/...: the same for every table of the registry.
 *
 * Every dataset is chunked with a Fletcher-32 checksum per chunk (version
 * 2; version 1 files, without, are still read). All randomness is keyed by
 * (seed, epoch, sample), so the step number is the whole data cursor. The
 * file is written under a temporary name by every rank together through
 * MPI-IO, each rank its share of the table rows (output.checkpoint_write =
 * collective; = gathered: by rank 0 from rows gathered to it), fsynced and
 * renamed when complete; any write failure on any rank removes the
 * temporary file, keeps the checkpoints already there and ends the job
 * with the path and the errno text. On resume the ranks read the file
 * together, each its share of the rows, which go to the shards that own
 * them, whatever the rank count and embedding group were when the file
 * was written (ckpt_rows.c). */
#ifndef FS_CKPT_H
#define FS_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "train/train.h"

/* Write path (collective: every rank calls it). */
void checkpoint_write(struct trainer *tr, const char *path);
/* Load path into tr (built for the current parameters); a file that does
 * not match them, or whose attributes and datasets are not of the class,
 * rank, shape and range written, is refused with fatal() naming the file
 * and the object. Collective. */
void checkpoint_read(struct trainer *tr, const char *path);
/* checkpoint_read's checks of path against tr's model, table and dataset,
 * without loading (rank 0, so that every rank can end on one message):
 * 0, or -1 with err. */
int checkpoint_compatible(const struct trainer *tr, const char *path, char *err, size_t errlen);
/* Check path without loading it (one process, no MPI): an HDF5 file with
 * this format and version whose datasets all read back (checksums
 * verified) with finite values. 0, or -1 with err saying what failed. */
int checkpoint_verify(const char *path, char *err, size_t errlen);
/* The same check with the work spread over the ranks of c (collective:
 * each reads its share of every dataset's blocks): 0 on every rank, or -1
 * on every rank with err the first failing rank's message. */
int checkpoint_verify_all(struct comm *c, const char *path, char *err, size_t errlen);

/* What writing or reading a checkpoint cost: checkpoint_io_begin before
 * (every rank: resets the peak memory mark, starts the clock),
 * checkpoint_io_end after (collective) into buf: "B GB in S s (R GB/s);
 * peak memory rank 0 M MiB, others up to N MiB" (B: path's size). */
struct checkpoint_io {
    double t0;
    int peak_ok;
};
void checkpoint_io_begin(struct checkpoint_io *io);
void checkpoint_io_end(struct checkpoint_io *io, struct comm *c, const char *path, char *buf,
                       size_t len);

/* What a checkpoint says of its run (ckpt_run.h), from its attributes
 * alone (one process, no MPI; the datasets are not read): run_id and
 * run_params ("" when absent: written before checkpoints recorded their
 * run), written_ns (0 when absent) and step. 0, or -1 with err. */
struct ckpt_identity {
    int64_t step, written_ns;
    char run_id[32];
    char run_params[2048];
};
int checkpoint_identity(const char *path, struct ckpt_identity *id, char *err, size_t errlen);
/* The parameters the run that wrote path trained with (attribute params:
 * "section.key=value" lines), from its attributes alone (one process):
 * heap text, or NULL with err (not a checkpoint, or none stored). */
char *checkpoint_params(const char *path, char *err, size_t errlen);

#endif
