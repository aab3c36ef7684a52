/* task_recency: the ranking logits' history terms; see task_recency.h. */
#include "model/task_recency.h"

#include <math.h>
#include <string.h>

#include "base/check.h"

/* The terms after the tokens [t0, t1) of a sequence, into r [K]; with
 * out, each token's terms before its own label joins (out [t1 - t0, K]). */
static void walk(const struct recency_rule *rule, const int64_t *items, const float *labels,
                 int64_t t0, int64_t t1, float *out, float *r)
{
    const int K = rule->K;
    double num[RANK_MAX_TASKS] = {0}, den[RANK_MAX_TASKS] = {0};
    for (int64_t t = t0; t <= t1; t++) {
        float *o = t < t1 ? (out ? out + (t - t0) * K : NULL) : r;
        for (int k = 0; k < K && o; k++)
            o[k] = (float)(num[k] / (den[k] + RECENCY_PRIOR));
        if (t == t1)
            break;
        for (int k = 0; k < K; k++) {
            num[k] *= rule->lam;
            den[k] *= rule->lam;
            const float y = labels[t * K + k];
            if (isnan(y))
                continue;
            num[k] += recency_value(rule, items[t], k, y);
            den[k] += 1;
        }
    }
}

void recency_terms(const struct recency_rule *rule, int64_t B, const int64_t *offsets,
                   const int64_t *ncand, const int64_t *items, const float *labels, float *out)
{
    const int K = rule->K;
    for (int64_t b = 0; b < B; b++) {
        const int64_t t0 = offsets[b], t1 = offsets[b + 1], nc = ncand ? ncand[b] : 0;
        float last[RANK_MAX_TASKS];
        walk(rule, items, labels, t0, t1 - nc, out + t0 * K, last);
        for (int64_t t = t1 - nc; t < t1; t++)
            memcpy(out + t * K, last, (size_t)K * sizeof *last);
    }
}

void rank_recency_init(struct rank_recency *rc, struct model *m, int K, int on)
{
    memset(rc, 0, sizeof *rc);
    rc->be = m->be;
    rc->K = K;
    if (!on)
        return;
    rc->A = model_param(m, "bias.recency");
    if (!rc->A)
        fatal("task_ranking: model.recency and the model has no bias.recency "
              "(task_ranking_params before model_init)");
}

void rank_recency_fwd(struct rank_recency *rc, int64_t n, const float *r, float *z)
{
    if (!rc->A)
        return;
    rc->n = n;
    if (n <= 0)
        return;
    const int K = rc->K;
    const float *dr = mirror_bind(&rc->r, rc->be, &backend_cpu, r, (size_t)(n * K) * sizeof *r);
    mirror_up_async(&rc->r, rc->st, 0, (size_t)(n * K) * sizeof *r); /* no host wait */
    rc->be->gemm(0, 1, n, K, K, 1.0f, dr, K, rc->A->w, K, 1.0f, z, K); /* fp32 (backend.h) */
}

void rank_recency_bwd(struct rank_recency *rc, int64_t n, const float *dz)
{
    if (!rc->A || n <= 0)
        return;
    if (n != rc->n)
        fatal("task_ranking: the history terms' backward of %lld rows after a forward of %lld",
              (long long)n, (long long)rc->n);
    const int K = rc->K;
    rc->be->gemm(1, 0, K, K, n, 1.0f, dz, K, mirror_at(&rc->r), K, 1.0f, rc->A->g, K);
}

void rank_recency_free(struct rank_recency *rc)
{
    mirror_free(&rc->r);
    memset(rc, 0, sizeof *rc);
}
