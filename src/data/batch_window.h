/* batch_window: the stream schedule's retrieval batches (cmd/train_stream.h;
 * doc/training.md, "Streaming"), over a window's split rs (split_ranking.h,
 * as the stream sets it):
 *   training    user u's newest N inputs before its window's end b
 *               (rs->bound[2u]), each predicting the next event; the
 *               positions whose next event comes before the window's start
 *               a (rs->from[u]) are inputs only: seq_batch.no_target;
 *   evaluation  one entry per (user, window event): the newest N events
 *               before the window's start (rs->bound[2u], the validation
 *               part [a, b) being the window's sampled events), the event as
 *               the target, the events before the window excluded. */
#ifndef FS_DATA_BATCH_WINDOW_H
#define FS_DATA_BATCH_WINDOW_H

#include <stdint.h>

#include "data/batch.h"
#include "data/dataset.h"
#include "data/split_ranking.h"

/* User u's training sequence: its inputs (returned), the first one's event
 * index (*first) and the positions with a target in the window (*sup). */
int64_t batch_window_inputs(const struct rsplit *rs, const struct dataset *ds, int N, int64_t u,
                            int64_t *first, int64_t *sup);
void batch_window_train(const struct dataset *ds, const struct rsplit *rs, int N, int with_ts,
                        uint64_t seed, uint64_t epoch, const int64_t *users, int64_t B,
                        struct seq_batch *b);
/* The evaluation's entries: every event of the validation part [a, b) of
 * rs of the users with a history (a > 0), as (user, event index) pairs in
 * user order; their number, the lists (heap), and the events left out
 * (users without a history) in *skipped. */
int64_t batch_window_entries(const struct rsplit *rs, const struct dataset *ds, int64_t **users,
                             int64_t **events, int64_t *skipped);
void batch_window_eval(const struct dataset *ds, const struct rsplit *rs, int N, int with_ts,
                       const int64_t *users, const int64_t *events, int64_t B,
                       struct seq_batch *b);

#endif
