/* emb_backward: the backward exchange of a sharded embedding lookup and the
 * sparse update (see emb_exchange.h).
 *
 * requester: g_u = sum of the token gradients of each unique id, in token
 *            order (in double: a hot id collects thousands of tokens), sent
 *            as floats to the owners along the forward's buckets.
 * owner:     sums the gradients of each row over requesters (requester
 *            order), then over replicas (emb_replica, replica order: every
 *            replica computes the same sums in the same order and so stays
 *            bitwise identical), then updates the touched rows. */
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/clock.h"
#include "embedding/emb_exchange_priv.h"
#include "base/idmap.h"

/* Sum rows of g[n, dim] with equal ids[n] into (*out_ids)[k], (*out_g)[k, dim],
 * in order of first appearance, accumulating in double; returns k. */
static int64_t sum_by_id(const int64_t *ids, const float *g, int64_t n, int dim,
                         int64_t **out_ids, float **out_g)
{
    struct idmap m;
    idmap_init(&m, n);
    int64_t *uid = xmalloc((size_t)(n ? n : 1) * sizeof *uid);
    double *acc = xcalloc((size_t)(n ? n : 1), (size_t)dim * sizeof *acc);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        int added;
        int64_t u = idmap_get(&m, ids[i], k, &added);
        if (added)
            uid[k++] = ids[i];
        for (int j = 0; j < dim; j++)
            acc[u * dim + j] += g[i * dim + j];
    }
    idmap_free(&m);
    float *ug = xmalloc((size_t)(k ? k : 1) * (size_t)dim * sizeof *ug);
    for (int64_t i = 0; i < k * dim; i++)
        ug[i] = (float)acc[i];
    free(acc);
    *out_ids = uid;
    *out_g = ug;
    return k;
}

void emb_backward(struct emb_table *t, struct comm *c, struct emb_exchange *x, const float *grad,
                  struct emb_times *tm)
{
    const int dim = t->conf.dim;
    double t0 = clock_seconds();
    /* many tokens may share a hot id: accumulate in double, send floats */
    double *acc = xcalloc((size_t)(x->nuniq ? x->nuniq : 1), (size_t)dim * sizeof(double));
    for (int64_t i = 0; i < x->n; i++) {
        double *d = acc + x->inverse[i] * dim;
        const float *s = grad + i * dim;
        for (int j = 0; j < dim; j++)
            d[j] += s[j];
    }
    float *gu = xmalloc((size_t)(x->nuniq ? x->nuniq : 1) * (size_t)dim * sizeof(float));
    for (int64_t i = 0; i < x->nuniq * dim; i++)
        gu[i] = (float)acc[i];
    free(acc);
    if (tm)
        tm->grad_sum += clock_seconds() - t0;
    emb_grad_post(t, c, x, gu, tm);
    emb_grad_finish(t, c, x, tm);
    free(gu);
}

void emb_grad_post_chunk(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                         const float *gu, int k, struct emb_times *tm)
{
    const int G = t->G, dim = t->conf.dim;
    double t1 = clock_seconds();
    if (!x->gs)
        x->gs = xmalloc((size_t)(x->nserve ? x->nserve : 1) * (size_t)dim * sizeof(float));
    if (x->gposted[k])
        fatal("emb_grad_post_chunk: chunk %d of table '%s' posted twice", k, t->conf.name);
    int64_t *v = xmalloc((size_t)G * 4 * sizeof(int64_t));
    emb_chunk_layout(x, k, dim, v, v + G, v + 2 * G, v + 3 * G); /* requester -> owner */
    comm_ialltoallv(c, COMM_EMB, COMM_F32, gu, v, v + G, x->gs, v + 2 * G, v + 3 * G,
                    COMM_PH_GRADS, &x->greq[k]);
    x->gposted[k] = x->gpending[k] = 1;
    free(v);
    if (tm)
        tm->grads += clock_seconds() - t1;
}

void emb_grad_post(struct emb_table *t, struct comm *c, struct emb_exchange *x, const float *gu,
                   struct emb_times *tm)
{
    for (int k = 0; k < 2; k++)
        if (!x->gposted[k])
            emb_grad_post_chunk(t, c, x, gu, k, tm);
}

void emb_grad_finish(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                     struct emb_times *tm)
{
    const int G = t->G, dim = t->conf.dim;
    double t1 = clock_seconds();
    if (!x->gposted[0] || !x->gposted[1])
        fatal("emb_grad_finish: table '%s': a chunk's gradients were not posted", t->conf.name);
    for (int k = 0; k < 2; k++)
        if (x->gpending[k]) {
            comm_wait(&x->greq[k]);
            x->gpending[k] = 0;
        }
    float *gs = x->gs;
    x->gs = NULL;
    double t2 = clock_seconds();
    int64_t *ids;
    float *g;
    int64_t k = sum_by_id(x->serve, gs, x->nserve, dim, &ids, &g);
    free(gs);
    double t3 = clock_seconds();
    const int R = c->g[COMM_EMB_REPLICA].size;
    if (R > 1) { /* sum across the replicas of this shard */
        int64_t *counts = xmalloc((size_t)R * sizeof *counts), *gcounts = xmalloc((size_t)R * 8);
        comm_allgather_i64(c, COMM_EMB_REPLICA, k, counts);
        int64_t total = 0;
        for (int r = 0; r < R; r++) {
            total += counts[r];
            gcounts[r] = counts[r] * dim;
        }
        int64_t *all_ids = xmalloc((size_t)(total ? total : 1) * sizeof *all_ids);
        float *all_g = xmalloc((size_t)(total ? total : 1) * (size_t)dim * sizeof *all_g);
        comm_allgatherv(c, COMM_EMB_REPLICA, COMM_I64, ids, k, all_ids, counts, COMM_PH_REPLICA);
        comm_allgatherv(c, COMM_EMB_REPLICA, COMM_F32, g, k * dim, all_g, gcounts,
                        COMM_PH_REPLICA);
        free(ids);
        free(g);
        k = sum_by_id(all_ids, all_g, total, dim, &ids, &g);
        free(all_ids);
        free(all_g);
        free(counts);
        free(gcounts);
    }
    double t4 = clock_seconds();
    /* distinct rows: in parallel (OpenMP), bitwise the same as in order */
#pragma omp parallel for schedule(static) if (k >= 256)
    for (int64_t i = 0; i < k; i++) {
        int64_t slot = ids[i] / G;
        float *w = emb_shard_slot(t, ids[i]);
        emb_optim_row(&t->conf.optim, dim, w, t->state ? t->state + slot * t->state_floats : NULL,
                      t->steps ? t->steps + slot : NULL, g + i * dim);
    }
    free(ids);
    free(g);
    if (tm) {
        tm->grads += t2 - t1;
        tm->aggregate += t3 - t2;
        tm->replica += t4 - t3;
        tm->update += clock_seconds() - t4;
    }
}
