/* data_stats_feat: the feature lines of 'freescale data stats': for each
 * feature of a version 2 dataset its kind, type and cardinality, and from
 * one pass over its values (every value checked, as dataset_feat_validate
 * does): values per entity, entities without a value, distinct values used
 * (categorical) or the range and mean (float). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "data/dataset.h"
#include "tools/data_tools.h"

#define FEAT_STATS_BLOCK ((int64_t)1 << 20)   /* entities per read */
#define FEAT_STATS_COUNTED ((int64_t)1 << 26) /* distinct values counted up to this cardinality */

static void feature_lines(const struct dataset *ds, const struct dataset_feature *f)
{
    char err[4400];
    const char *kind = dataset_feat_kind_name(f->kind);
    const char *entity = f->kind == DS_EVENTS ? "event" : f->kind == DS_USERS ? "user" : "item";
    if (f->is_float)
        printf("feature %s/%s: float\n", kind, f->name);
    else
        printf("feature %s/%s: categorical%s, cardinality %lld%s\n", kind, f->name,
               f->multi ? " multi-valued" : "", (long long)f->cardinality,
               f->has_map ? ", value map" : "");
    const int counted = !f->is_float && f->cardinality <= FEAT_STATS_COUNTED;
    uint8_t *seen = counted ? xcalloc((size_t)f->cardinality, 1) : NULL;
    int64_t *off = xmalloc((size_t)(FEAT_STATS_BLOCK + 1) * sizeof *off);
    int64_t empty = 0, max_per = 0, values = 0, missing = 0;
    double sum = 0, lo = 0, hi = 0;
    for (int64_t e0 = 0; e0 < f->n; e0 += FEAT_STATS_BLOCK) {
        const int64_t m = f->n - e0 < FEAT_STATS_BLOCK ? f->n - e0 : FEAT_STATS_BLOCK;
        if (dataset_feat_offsets(ds, f, e0, m, off, err, sizeof err))
            fatal("%s", err);
        const int64_t nv = off[m] - off[0];
        int32_t *iv = f->is_float ? NULL : xmalloc((size_t)(nv ? nv : 1) * sizeof *iv);
        float *fv = f->is_float ? xmalloc((size_t)(nv ? nv : 1) * sizeof *fv) : NULL;
        if (f->is_float ? dataset_feat_floats(ds, f, off[0], nv, fv, err, sizeof err)
                        : dataset_feat_ints(ds, f, off[0], nv, iv, err, sizeof err))
            fatal("%s", err);
        for (int64_t i = 0; i < m; i++) {
            const int64_t k = off[i + 1] - off[i];
            max_per = k > max_per ? k : max_per;
            int any = 0;
            for (int64_t j = off[i] - off[0]; j < off[i + 1] - off[0]; j++) {
                if (f->is_float) {
                    const double v = fv[j];
                    if (values == 0)
                        lo = hi = v;
                    lo = v < lo ? v : lo;
                    hi = v > hi ? v : hi;
                    sum += v;
                    any = 1;
                } else if (iv[j] == 0)
                    missing++;
                else {
                    any = 1;
                    if (seen)
                        seen[iv[j]] = 1;
                }
                values++;
            }
            empty += !any;
        }
        free(iv);
        free(fv);
    }
    free(off);
    if (f->multi)
        printf("feature %s/%s values: %lld (%.3f per %s, at most %lld)\n", kind, f->name,
               (long long)values, f->n ? (double)values / (double)f->n : 0.0, entity,
               (long long)max_per);
    else
        printf("feature %s/%s values: %lld\n", kind, f->name, (long long)values);
    printf("feature %s/%s %ss without a value: %lld (%.1f%%)\n", kind, f->name, entity,
           (long long)empty, f->n ? 100.0 * (double)empty / (double)f->n : 0.0);
    if (f->is_float && values)
        printf("feature %s/%s range: %g .. %g, mean %g\n", kind, f->name, lo, hi,
               sum / (double)values);
    if (seen) {
        int64_t used = 0;
        for (int64_t v = 1; v < f->cardinality; v++)
            used += seen[v];
        printf("feature %s/%s distinct values used: %lld of %lld\n", kind, f->name,
               (long long)used, (long long)(f->cardinality - 1));
        free(seen);
    }
}

void data_stats_features(const struct dataset *ds)
{
    printf("features: %d\n", ds->nfeat);
    for (int i = 0; i < ds->nfeat; i++)
        feature_lines(ds, &ds->feat[i]);
}
