/* feat_values: the values of a run's features. Item and user features are
 * read whole at start-up (every rank holds them: a few values per item and
 * per user); event features are read per batch, the tokens of a sequence
 * being consecutive events of the file (seq_batch.ev0; with data.pools the
 * events seq_batch.ev names). Every value is
 * checked by the dataset reader (dataset_feat_*). */
#ifndef FS_FEATURE_VALUES_H
#define FS_FEATURE_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "data/batch.h"
#include "data/dataset.h"
#include "feature/schema.h"

/* The values of one item or user feature: entity e (user u, or item id - 1)
 * has val[off[e] .. off[e + 1]) (off NULL: val[e], one value). */
struct feat_column {
    int64_t n;
    int64_t *off;
    int32_t *val;
};

struct feat_values {
    struct feat_column col[DATASET_MAX_FEATURES]; /* per schema feature (events: empty) */
    int32_t *xitem[FEAT_MAX_CROSS][FEAT_CROSS_KEYS]; /* crosses' item columns: [num_items]
                                                        value of item row e (else NULL) */
    int64_t *xuser;          /* crosses with the key user: /user_map [num_users] (else NULL) */
};

/* Read the item and user features of s. 0, or -1 + err. */
int feat_values_load(struct feat_values *v, const struct feat_schema *s, const struct dataset *ds,
                     char *err, size_t errlen);
void feat_values_free(struct feat_values *v);

/* The values of entity e of feature i (items: e = id - 1): *vals, count. */
static inline int64_t feat_values_of(const struct feat_values *v, int i, int64_t e,
                                     const int32_t **vals)
{
    const struct feat_column *c = &v->col[i];
    if (!c->off) {
        *vals = c->val + e;
        return 1;
    }
    *vals = c->val + c->off[e];
    return c->off[e + 1] - c->off[e];
}

/* The event features' values of batch b's tokens: out[i] [b->T + b->nlead]
 * for every event feature i of s (others untouched), read sequence by
 * sequence from b->ev0, then those of b's leads (seq_batch.lead_ev).
 * fatal() on a bad file (naming the dataset and index). */
void feat_values_events(const struct feat_schema *s, const struct dataset *ds,
                        const struct seq_batch *b, int32_t *const *out);

#endif
