/* loss_sample: the keyed uniform negative sampler of one position (model/loss.h:
 * loss_sample_negatives), shared by the CPU (model/loss.c, the CPU
 * backend's sample_negatives) and the device kernel (cuda/exchange.cu), so
 * every backend draws the same negatives. */
#ifndef FS_LOSS_SAMPLE_H
#define FS_LOSS_SAMPLE_H

#include <stdint.h>

#include "base/rng.h"

#define LOSS_NEG_SITE 0x6e65676174697665ull /* "negative": the sampler's stream */

/* out[R]: R ids uniform in 1..num_items (num_items >= 1), keyed by (seed,
 * epoch, the position's key). */
static inline RNG_HD void loss_negatives_row(uint64_t seed, uint64_t epoch, uint64_t key, int R,
                                             int64_t num_items, int64_t *out)
{
    struct rng g;
    rng_init(&g, rng_key(rng_key(seed, epoch, key), LOSS_NEG_SITE, 0));
    for (int r = 0; r < R; r++)
        out[r] = 1 + (int64_t)rng_below(&g, (uint64_t)num_items);
}

#endif
