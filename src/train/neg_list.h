/* neg_list: uniform negatives over an item list (a raw-id dataset's
 * sorted /items/ids, doc/data.md), where ids 1 .. N mean nothing.
 *
 * Position i's R draws are the dense sampler's (model/loss.h:
 * loss_sample_negatives over n items, keyed by (seed, epoch, pos_keys[i])
 * alone) mapped through the list: draw j in 1 .. n becomes list[j - 1].
 * So they do not depend on the rank count or on which other positions are
 * in the call, only ids of the list are drawn, and a list 1 .. N gives
 * the dense draws exactly (a raw dataset whose ids are an increasing map
 * of a dense one's draws the same rows). */
#ifndef FS_NEG_LIST_H
#define FS_NEG_LIST_H

#include <stdint.h>

/* neg_ids[T * R] from list[n] (n >= 1, else fatal). */
void neg_list_sample(uint64_t seed, uint64_t epoch, const uint64_t *pos_keys, int64_t T, int R,
                     const int64_t *list, int64_t n, int64_t *neg_ids);

#endif
