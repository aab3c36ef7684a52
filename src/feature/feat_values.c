/* feat_values: the values of a run's features; see feat_values.h. */
#include "feature/feat_values.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "data/batch_ranking.h"

int feat_values_load(struct feat_values *v, const struct feat_schema *s, const struct dataset *ds,
                     char *err, size_t errlen)
{
    memset(v, 0, sizeof *v);
    int user = 0;
    for (int k = 0; k < s->ncross; k++)
        for (int j = 0; j < s->cross[k].nkeys; j++)
            user |= s->cross[k].key[j] == CK_USER;
    if (user && ds->has_user_map && !(v->xuser = dataset_read_map(ds, "user_map", err, errlen)))
        return -1;
    for (int k = 0; k < s->ncross; k++) /* the crosses' item columns (single-valued) */
        for (int j = 0; j < s->cross[k].nkeys; j++)
            if (s->cross[k].key[j] == CK_ITEM_FEATURE) {
                const struct dataset_feature *f = &ds->feat[s->cross[k].df[j]];
                v->xitem[k][j] = xmalloc((size_t)(f->n > 0 ? f->n : 1) * sizeof(int32_t));
                if (dataset_feat_ints(ds, f, 0, f->n, v->xitem[k][j], err, errlen))
                    return -1;
            }
    for (int i = 0; i < s->n; i++) {
        const struct feat_spec *sp = &s->f[i];
        if (sp->role == FEAT_EVENT) /* per batch (crosses: feat_cross.c) */
            continue;
        if (sp->user_id) { /* user u: u + 1 (schema.c checked that it fits) */
            struct feat_column *c = &v->col[i];
            c->n = ds->num_users;
            c->val = xmalloc((size_t)(c->n > 0 ? c->n : 1) * sizeof *c->val);
            for (int64_t u = 0; u < c->n; u++)
                c->val[u] = (int32_t)(u + 1);
            continue;
        }
        const struct dataset_feature *f = &ds->feat[sp->df];
        struct feat_column *c = &v->col[i];
        c->n = f->n;
        int64_t *off = xmalloc((size_t)(f->n + 1) * sizeof *off);
        if (dataset_feat_offsets(ds, f, 0, f->n, off, err, errlen)) {
            free(off);
            return -1;
        }
        c->val = xmalloc((size_t)(off[f->n] ? off[f->n] : 1) * sizeof *c->val);
        if (dataset_feat_ints(ds, f, 0, off[f->n], c->val, err, errlen)) {
            free(off);
            return -1;
        }
        if (f->multi)
            c->off = off;
        else
            free(off);
    }
    return 0;
}

void feat_values_free(struct feat_values *v)
{
    for (int i = 0; i < DATASET_MAX_FEATURES; i++) {
        free(v->col[i].off);
        free(v->col[i].val);
    }
    for (int k = 0; k < FEAT_MAX_CROSS; k++)
        for (int j = 0; j < FEAT_CROSS_KEYS; j++)
            free(v->xitem[k][j]);
    free(v->xuser);
    memset(v, 0, sizeof *v);
}

/* dataset_feat_ints as a batch_span_reader (data.pools' picked events) */
struct ints_span {
    const struct dataset *ds;
    const struct dataset_feature *f;
};
static void ints_span_read(void *ctx, int64_t first, int64_t span, void *buf)
{
    const struct ints_span *c = ctx;
    char err[1024];
    if (dataset_feat_ints(c->ds, c->f, first, span, buf, err, sizeof err))
        fatal("%s", err);
}

void feat_values_events(const struct feat_schema *s, const struct dataset *ds,
                        const struct seq_batch *b, int32_t *const *out)
{
    char err[1024];
    for (int i = 0; i < s->n; i++) {
        if (s->f[i].role != FEAT_EVENT || s->f[i].label || s->f[i].cross) /* the task's, crosses */
            continue;
        const struct dataset_feature *f = &ds->feat[s->f[i].df];
        for (int64_t q = 0; q < b->B; q++) { /* candidates that are not events: missing */
            const int64_t t0 = b->offsets[q], L = b->offsets[q + 1] - t0;
            int64_t e1; /* the history, then the candidates (a part of them: after a gap) */
            const int64_t len = batch_file_events(b, q), h = batch_file_run(b, q, &e1);
            struct ints_span c = {ds, f};
            if (b->ev) /* data.pools: the tokens' events */
                batch_ev_picked(b->ev + t0, len, sizeof *out[i], ints_span_read, &c, out[i] + t0);
            else if ((h > 0 && dataset_feat_ints(ds, f, b->ev0[q], h, out[i] + t0, err, sizeof err)) ||
                (len > h && dataset_feat_ints(ds, f, e1, len - h, out[i] + t0 + h, err,
                                              sizeof err)))
                fatal("%s", err);
            for (int64_t j = len; j < L; j++)
                out[i][t0 + j] = 0;
        }
        for (int64_t j = 0; j < b->nlead; j++)
            if (dataset_feat_ints(ds, f, b->lead_ev[j], 1, out[i] + b->T + j, err, sizeof err))
                fatal("%s", err);
    }
}
