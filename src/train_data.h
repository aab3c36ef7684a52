/* train_data: the training and evaluation views of a sequence dataset.
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
#ifndef FS_TRAIN_DATA_H
#define FS_TRAIN_DATA_H

#include <stdint.h>

#include "dataset.h"

enum split_mode { SPLIT_LOO, SPLIT_HSTU };

/* A jagged batch of sequences: inputs with their next-item targets. */
struct seq_batch {
    int64_t B, T;
    int64_t *users;     /* [B] dataset user index */
    int64_t *offsets;   /* [B + 1] */
    int64_t *items;     /* [T] input item ids */
    int64_t *targets;   /* [T] next item (train) or 0; eval: target at the last position */
    int64_t *ts;        /* [T] timestamps, or NULL */
    uint64_t *keys;     /* [T] per-token random key */
    int64_t *hist_off;  /* eval only: [B + 1] CSR of the whole history to exclude */
    int64_t *hist;      /* eval only */
};

/* Events a user keeps out of training: 2 (loo) or 1 (hstu). */
int split_holdout(enum split_mode mode);
/* Users with at least one training pair (length >= holdout + 2); returns
 * their count and the list (heap). */
int64_t split_train_users(const struct dataset *ds, enum split_mode mode, int64_t **users);
/* Users that can be evaluated on split 'test' (1) or 'validation' (0). */
int64_t split_eval_users(const struct dataset *ds, enum split_mode mode, int test,
                         int64_t **users);

/* perm[n]: the order of the n training users in epoch e (Fisher-Yates
 * keyed by (seed, epoch)). */
void split_permutation(uint64_t seed, uint64_t epoch, int64_t n, int64_t *perm);

/* Read and assemble the training batch of users[B]. */
void batch_train(const struct dataset *ds, enum split_mode mode, int N, int with_ts,
                 uint64_t seed, uint64_t epoch, const int64_t *users, int64_t B,
                 struct seq_batch *b);
/* Read and assemble an evaluation batch: history before the target of the
 * split (test or validation), truncated to N; targets[last] = the target;
 * the whole history is kept in hist for exclusion. */
void batch_eval(const struct dataset *ds, enum split_mode mode, int test, int N, int with_ts,
                const int64_t *users, int64_t B, struct seq_batch *b);
void batch_free(struct seq_batch *b);

#endif
