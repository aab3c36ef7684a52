/* score: 'mpirun -np P freescale score CKPT.h5 [FILE.in] [section.key=value
 * ...] --pairs PAIRS.csv -o OUT.csv|OUT.h5': every (user, item) pair of
 * PAIRS.csv, in the dataset's original ids, scored for every task of a
 * ranking model (train.task = ranking) from the user's whole history: the
 * item is a candidate after the user's most recent data.max_seq_len - 1
 * events, as evaluation scores a held-out event (eval_ranking.h).
 *
 * PAIRS.csv: a header line "user,item" or "user,item,time", then one pair
 * per line (time: integer seconds, the candidate's timestamp for the time
 * bias; without it, the time of the user's last event). Fields are
 * separated by commas (ids holding a comma cannot be given). A malformed
 * line, an unknown user or item, or a user without events ends the command
 * naming PAIRS.csv:LINE before anything is written.
 *
 * The pairs are grouped by user (in the order users first appear); the
 * users are cut into chunks as in evaluation (the same on any P), chunk k P
 * + r of round k on rank r, gathered to rank 0 in rank order. Output, in
 * the pairs' order (score_out.c):
 *   CSV   header user,item,TASK...; per pair the original ids, then per
 *         task the probability (binary) or the predicted value
 *         (regression), 17 significant digits
 *   HDF5  /users, /items (original ids), /user_index, /item_index (dense),
 *         /scores [n, K] float64 (as in the CSV), /logits [n, K] (binary
 *         tasks' logits, regression's predictions); attributes format =
 *         "freescale-scores", version, tasks (comma-separated), kinds,
 *         checkpoint, dataset, step
 * written under a temporary name, renamed when complete: the same file on
 * any number of ranks. */
#ifndef FS_SCORE_H
#define FS_SCORE_H

#include <stdint.h>

#include "data/batch_ranking.h"
#include "cmd/rec_ids.h"

int score_main(int argc, char **argv);

/* The output (score_out.c), rank 0: n pairs users[n], items[n] (dense),
 * pred [n, K] (binary: logits, regression: values), tasks' names and kinds. */
struct score_meta {
    const char *checkpoint, *dataset;
    int64_t step;
    int K;
    const char *const *names;
    const int *binary;
};
void score_write(const char *path, const struct score_meta *m, const struct rec_ids *um,
                 const struct rec_ids *im, int64_t n, const int64_t *users, const int64_t *items,
                 const double *pred);

#endif
