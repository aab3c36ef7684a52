/* neg_list: negatives drawn from an item list; see neg_list.h. */
#include "train/neg_list.h"

#include "backend/loss_sample.h"
#include "base/check.h"

void neg_list_sample(uint64_t seed, uint64_t epoch, const uint64_t *pos_keys, int64_t T, int R,
                     const int64_t *list, int64_t n, int64_t *neg_ids)
{
    if (n < 1)
        fatal("negatives: the item list is empty (a raw dataset lists its items in /items/ids)");
    for (int64_t i = 0; i < T; i++) {
        int64_t *out = neg_ids + i * R;
        loss_negatives_row(seed, epoch, pos_keys[i], R, n, out);
        for (int r = 0; r < R; r++)
            out[r] = list[out[r] - 1];
    }
}
