/* data_gen_feat: synthetic features of 'freescale data gen'; see
 * data_gen_feat.h. */
#include "tools/data_gen_feat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/rng.h"

#define KEY_FEATURE 0x66656174ull /* "feat": the purpose word of the streams */

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

void gen_feature_parse(const char *opt, const char *text, enum dataset_feat_kind kind,
                       struct gen_feature *f)
{
    char name[DATASET_FEATURE_NAME];
    long long card = 0;
    int k = 1, used = 0;
    memset(f, 0, sizeof *f);
    const char *colon = strchr(text, ':');
    size_t nl = colon ? (size_t)(colon - text) : 0;
    int ok = colon && nl > 0 && nl < DATASET_FEATURE_NAME;
    if (ok) {
        memcpy(name, text, nl);
        name[nl] = 0;
        int got = sscanf(colon + 1, "%lld%n:%d%n", &card, &used, &k, &used);
        ok = got >= 1 && colon[1 + used] == 0 && card >= 2 && card <= INT32_MAX && k >= 1 &&
             k <= 64;
        for (size_t i = 0; ok && i < nl; i++)
            ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
                 (name[i] >= '0' && name[i] <= '9') || strchr("_-.", name[i]);
    }
    if (!ok)
        fatal("%s: '%s' is not NAME:CARD[:K] (NAME of A-Z a-z 0-9 _ - ., 2 <= CARD < 2^31, "
              "1 <= K <= 64)", opt, text);
    if (kind == DS_EVENTS && k > 1)
        fatal("%s: '%s': event features are single-valued (no :K)", opt, text);
    memcpy(f->name, name, sizeof f->name);
    f->kind = kind;
    f->card = card;
    f->k = k;
}

/* Entity e's stream of feature f. */
static void feature_rng(struct rng *r, const struct gen_feature *f, uint64_t seed, int64_t e)
{
    rng_init(r, rng_key(rng_key(seed, name_hash(f->name), KEY_FEATURE + (uint64_t)f->kind),
                        (uint64_t)e, 0));
}

void gen_features_declare(struct dataset_writer *w, struct gen_feature *f, int n)
{
    char err[4400];
    for (int i = 0; i < n; i++)
        if (f[i].kind == DS_EVENTS &&
            (f[i].slot = dataset_writer_event_feature(w, f[i].name, 0, f[i].card, err,
                                                      sizeof err)) < 0) {
            dataset_writer_abort(w);
            fatal("%s", err);
        }
}

void gen_features_events(struct dataset_writer *w, const struct gen_feature *f, int n,
                         uint64_t seed, int64_t u0, int64_t nu, const int64_t *lengths)
{
    int64_t events = 0;
    for (int64_t u = 0; u < nu; u++)
        events += lengths[u];
    int32_t *v = xmalloc((size_t)(events ? events : 1) * sizeof *v);
    char err[4400];
    for (int i = 0; i < n; i++) {
        if (f[i].kind != DS_EVENTS)
            continue;
        int64_t at = 0;
        for (int64_t u = 0; u < nu; u++) {
            struct rng r;
            feature_rng(&r, &f[i], seed, u0 + u);
            for (int64_t j = 0; j < lengths[u]; j++)
                v[at++] = 1 + (int32_t)rng_below(&r, (uint64_t)f[i].card - 1);
        }
        if (dataset_writer_append_feature(w, f[i].slot, events, v, NULL, err, sizeof err)) {
            dataset_writer_abort(w);
            fatal("%s", err);
        }
    }
    free(v);
}

void gen_features_entities(struct dataset_writer *w, const struct gen_feature *f, int n,
                           uint64_t seed, int64_t users, int64_t items)
{
    char err[4400];
    for (int i = 0; i < n; i++) {
        if (f[i].kind == DS_EVENTS)
            continue;
        const int64_t m = f[i].kind == DS_USERS ? users : items;
        int64_t *off = f[i].k > 1 ? xmalloc((size_t)(m + 1) * sizeof *off) : NULL;
        int32_t *v = xmalloc((size_t)(m ? m : 1) * (size_t)f[i].k * sizeof *v);
        int64_t at = 0;
        if (off)
            off[0] = 0;
        for (int64_t e = 0; e < m; e++) {
            struct rng r;
            feature_rng(&r, &f[i], seed, e);
            const int64_t cnt = off ? 1 + (int64_t)rng_below(&r, (uint64_t)f[i].k) : 1;
            for (int64_t j = 0; j < cnt; j++)
                v[at++] = 1 + (int32_t)rng_below(&r, (uint64_t)f[i].card - 1);
            if (off)
                off[e + 1] = at;
        }
        if (dataset_writer_feature(w, f[i].kind, f[i].name, f[i].card, m, off, v, NULL, err,
                                   sizeof err)) {
            dataset_writer_abort(w);
            fatal("%s", err);
        }
        free(off);
        free(v);
    }
}
