/* data_gen_feat: the synthetic features of 'freescale data gen'
 * (--item-feature, --user-feature, --event-feature NAME:CARD[:K]): values
 * uniform in 1 .. CARD - 1, K > 1 making a multi-valued feature of 1 .. K
 * values per user or item; every value keyed by (seed, feature, entity,
 * index), so a file does not depend on the chunk size or on which other
 * features are written. */
#ifndef FS_DATA_GEN_FEAT_H
#define FS_DATA_GEN_FEAT_H

#include <stdint.h>

#include "data/dataset.h"

#define GEN_MAX_FEATURES 16

struct gen_feature {
    char name[DATASET_FEATURE_NAME];
    enum dataset_feat_kind kind;
    int64_t card;   /* values 1 .. card - 1 */
    int k;          /* values per entity at most (multi-valued when > 1) */
    int slot;       /* event features: the writer's index */
};

/* Parse NAME:CARD[:K] of option opt into f (fatal on a bad one). */
void gen_feature_parse(const char *opt, const char *text, enum dataset_feat_kind kind,
                       struct gen_feature *f);
/* Declare the event features (before the first append). */
void gen_features_declare(struct dataset_writer *w, struct gen_feature *f, int n);
/* The event features' values of users u0 .. u0 + nu - 1 (lengths[nu]),
 * appended after their events. */
void gen_features_events(struct dataset_writer *w, const struct gen_feature *f, int n,
                         uint64_t seed, int64_t u0, int64_t nu, const int64_t *lengths);
/* The user and item features, written whole (users, items: the counts). */
void gen_features_entities(struct dataset_writer *w, const struct gen_feature *f, int n,
                           uint64_t seed, int64_t users, int64_t items);

#endif
