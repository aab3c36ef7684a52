/* split: the training and evaluation views of a sequence dataset.
 *
 * Split (data.split): with loo (leave-one-out) a user's last event is the
 * test target and the second last the validation target; training uses the
 * events before them. With hstu (the HSTU research code's variant),
 * training uses all but the last event, and validation and test both target
 * the last. Within a training sequence every position predicts the next
 * event; histories are truncated to the most recent N = data.max_seq_len
 * inputs.
 *
 * Randomness is keyed by the sample, never by the rank: the epoch's order
 * of training users is a permutation keyed by (seed, epoch), and each token
 * carries the key (seed, epoch, user, position) that dropout and negative
 * sampling use. */
#ifndef FS_DATA_SPLIT_H
#define FS_DATA_SPLIT_H

#include <stdint.h>

#include "data/dataset.h"

enum split_mode { SPLIT_LOO, SPLIT_HSTU };

/* Events a user keeps out of training: 2 (loo) or 1 (hstu). */
int split_holdout(enum split_mode mode);
/* Users with at least one training pair (length >= holdout + 2); returns
 * their count and the list (heap). */
int64_t split_train_users(const struct dataset *ds, enum split_mode mode, int64_t **users);
/* The index of the target event of user u for an evaluation split (test
 * 1 or validation 0) within the user's events. */
int64_t split_eval_target(const struct dataset *ds, enum split_mode mode, int test, int64_t u);
/* Users that can be evaluated on split 'test' (1) or 'validation' (0). */
int64_t split_eval_users(const struct dataset *ds, enum split_mode mode, int test,
                         int64_t **users);

/* perm[n]: the order of the n training users in epoch e (Fisher-Yates
 * keyed by (seed, epoch)). */
void split_permutation(uint64_t seed, uint64_t epoch, int64_t n, int64_t *perm);

#endif
