/* split: which events of a user train, validate and test; the epoch
 * permutation; see split.h. */
#include "data/split.h"

#include <stdlib.h>

#include "base/check.h"
#include "base/rng.h"

int split_holdout(enum split_mode mode) { return mode == SPLIT_LOO ? 2 : 1; }

int64_t split_train_users(const struct dataset *ds, enum split_mode mode, int64_t **users)
{
    int64_t *u = xmalloc((size_t)(ds->num_users ? ds->num_users : 1) * sizeof *u), n = 0;
    for (int64_t i = 0; i < ds->num_users; i++)
        if (dataset_length(ds, i) >= split_holdout(mode) + 2)
            u[n++] = i;
    *users = u;
    return n;
}

int64_t split_eval_target(const struct dataset *ds, enum split_mode mode, int test, int64_t u)
{
    int64_t L = dataset_length(ds, u);
    return mode == SPLIT_LOO && !test ? L - 2 : L - 1;
}

int64_t split_eval_users(const struct dataset *ds, enum split_mode mode, int test,
                         int64_t **users)
{
    int64_t *u = xmalloc((size_t)(ds->num_users ? ds->num_users : 1) * sizeof *u), n = 0;
    for (int64_t i = 0; i < ds->num_users; i++)
        if (split_eval_target(ds, mode, test, i) >= 1) /* at least one history event */
            u[n++] = i;
    *users = u;
    return n;
}

void split_permutation(uint64_t seed, uint64_t epoch, int64_t n, int64_t *perm)
{
    struct rng r;
    rng_init(&r, rng_key(seed, epoch, 0x7065726dull));
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below(&r, (uint64_t)i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

