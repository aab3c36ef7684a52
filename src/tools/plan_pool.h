/* plan_pool: the pool of training lengths that 'freescale plan' draws its
 * simulated batches from (plan.c): the users of a dataset's /offsets, or
 * PLAN_POOL_DRAWS users drawn from a distribution as 'data gen --length'
 * would draw them; each cut as the trainer cuts it (min(L - hold - 1, N),
 * users without a training input left out). User errors end in fatal(). */
#ifndef FS_PLAN_POOL_H
#define FS_PLAN_POOL_H

#include <stdint.h>

#define PLAN_POOL_DRAWS (1 << 20) /* user lengths drawn for --lengths */

struct pool {
    int64_t *len, n;
    int64_t num_items; /* the dataset's items (0 from --lengths) */
    char source[4400];
};

/* From the dataset at path (what names the source in errors: "data.path"
 * or "--lengths"). */
void pool_from_dataset(struct pool *pl, const char *what, const char *path, int hold,
                       int64_t N);
/* From --lengths text (fixed:L, uniform:A,B, lognormal:MU,SIGMA,
 * pareto:XM,ALPHA or from:FILE.h5), keyed by seed. */
void pool_from_dist(struct pool *pl, const char *text, int hold, int64_t N, uint64_t seed);

#endif
