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
#include "embedding/emb_subspace.h"

void emb_backward(struct emb_table *t, struct comm *c, struct emb_exchange *x, const float *grad,
                  struct emb_times *tm)
{
    const int dim = t->conf.dim;
    double t0 = clock_seconds();
    /* many tokens may share a hot id: summed in double, sent as floats */
    float *gu = xmalloc((size_t)(x->nuniq ? x->nuniq : 1) * (size_t)dim * sizeof(float));
    int64_t *uid = xmalloc((size_t)(x->nuniq ? x->nuniq : 1) * sizeof *uid);
    backend_cpu.emb_sum_by_id(x->n, dim, x->inverse, grad, uid, gu); /* host; uid[u] = u */
    free(uid);
    if (tm)
        tm->grad_sum += clock_seconds() - t0;
    emb_grad_post(t, c, x, gu, tm);
    emb_grad_finish(t, c, x, tm);
    free(gu);
}

void emb_grad_post_chunk(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                         const float *gu, int k, struct emb_times *tm)
{
    const int G = t->G, dim = t->width; /* values per row on the wire */
    double t1 = clock_seconds();
    if (!x->gs)
        x->gs = xmalloc((size_t)(x->nserve ? x->nserve : 1) * (size_t)dim * sizeof(float));
    if (x->gposted[k])
        fatal("emb_grad_post_chunk: chunk %d of table '%s' posted twice", k, t->conf.name);
    /* the wire: floats (fp32), else gb bytes per row encoded here, decoded
     * by the owner in emb_grad_finish */
    const int byte_wire = x->gcodec != EMB_CODEC_FP32;
    const int64_t gb = emb_codec_row_bytes(x->gcodec, dim), unit = byte_wire ? gb : dim;
    if (byte_wire && !x->gu_w) {
        x->gu_w = xmalloc((size_t)(x->nuniq ? x->nuniq : 1) * (size_t)gb);
        x->gs_w = xmalloc((size_t)(x->nserve ? x->nserve : 1) * (size_t)gb);
    }
    int64_t *v = xmalloc((size_t)G * 4 * sizeof(int64_t));
    emb_chunk_layout(x, k, unit, v, v + G, v + 2 * G, v + 3 * G); /* requester -> owner */
    if (t->sub) { /* the exact gradient of c: U^T g, chunk k's rows */
        if (!x->gk)
            x->gk = xmalloc((size_t)(x->nuniq ? x->nuniq : 1) * (size_t)dim * sizeof(float));
        for (int p = 0; p < G; p++)
            emb_subspace_project(t->sub, v[p] / unit, gu + v[G + p] / unit * t->conf.dim,
                                 x->gk + v[G + p] / unit * dim);
        gu = x->gk;
    }
    for (int p = 0; p < G; p++) {
        const int64_t first = v[G + p] / unit, count = v[p] / unit;
        if (byte_wire) /* every row, those to this rank itself included */
            emb_wire_encode(t, x->gcodec, count, dim, gu + first * dim, x->gu_w + first * gb,
                            x->uniq + first, "gradient");
        if (x->counted && p != t->shard) {
            t->wire.grads += count * gb;
            if (comm_peer_remote(c, COMM_EMB, p))
                t->wire.grads_xnode += count * gb;
        }
    }
    comm_ialltoallv(c, COMM_EMB, byte_wire ? COMM_BYTE : COMM_F32,
                    byte_wire ? (const void *)x->gu_w : (const void *)gu, v, v + G,
                    byte_wire ? (void *)x->gs_w : (void *)x->gs, v + 2 * G, v + 3 * G,
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

/* Sum the per-row gradients (ids[k], g[k, dim]) across the replicas of
 * this shard (emb_replica, replica order); replaces them and returns the
 * new k. */
static int64_t replica_sum(struct emb_table *t, struct comm *c, int64_t k, int64_t **ids,
                           float **g)
{
    const int R = c->g[COMM_EMB_REPLICA].size, dim = t->width;
    int64_t *counts = xmalloc((size_t)R * sizeof *counts), *gcounts = xmalloc((size_t)R * 8);
    comm_allgather_i64(c, COMM_EMB_REPLICA, k, counts);
    int64_t total = 0;
    for (int r = 0; r < R; r++) {
        total += counts[r];
        gcounts[r] = counts[r] * dim;
    }
    int64_t *all_ids = xmalloc((size_t)(total ? total : 1) * sizeof *all_ids);
    float *all_g = xmalloc((size_t)(total ? total : 1) * (size_t)dim * sizeof *all_g);
    comm_allgatherv(c, COMM_EMB_REPLICA, COMM_I64, *ids, k, all_ids, counts, COMM_PH_REPLICA);
    comm_allgatherv(c, COMM_EMB_REPLICA, COMM_F32, *g, k * dim, all_g, gcounts, COMM_PH_REPLICA);
    free(*ids);
    free(*g);
    *ids = xmalloc((size_t)(total ? total : 1) * sizeof **ids);
    *g = xmalloc((size_t)(total ? total : 1) * (size_t)dim * sizeof **g);
    k = backend_cpu.emb_sum_by_id(total, dim, all_ids, all_g, *ids, *g);
    free(all_ids);
    free(all_g);
    free(counts);
    free(gcounts);
    return k;
}

void emb_grad_finish(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                     struct emb_times *tm)
{
    const int G = t->G, dim = t->width; /* c[i] of a subspace table */
    double t1 = clock_seconds();
    if (!x->gposted[0] || !x->gposted[1])
        fatal("emb_grad_finish: table '%s': a chunk's gradients were not posted", t->conf.name);
    for (int k = 0; k < 2; k++)
        if (x->gpending[k]) {
            comm_wait(&x->greq[k]);
            x->gpending[k] = 0;
        }
    if (x->gs_w) { /* from the wire */
        emb_codec_decode(x->gcodec, x->nserve, dim, x->gs_w, x->gs);
        free(x->gs_w);
        free(x->gu_w);
        x->gs_w = x->gu_w = NULL;
    }
    double t2 = clock_seconds();
    /* sum per row over the requesters (serve order: requester order), where
     * the table's engine runs (mirror.h: the host buffers on the CPU) */
    const size_t cap = (size_t)(x->nserve ? x->nserve : 1), ib = cap * sizeof(int64_t);
    const size_t gb = cap * (size_t)dim * sizeof(float);
    int64_t *ids = xmalloc(ib);
    float *g = xmalloc(gb);
    struct mirror *m = t->scratch;
    const int64_t *d_serve = mirror_bind(&m[0], t->be, x->serve, ib);
    mirror_up(&m[0], 0, (size_t)x->nserve * sizeof(int64_t));
    const float *d_gs = mirror_bind(&m[1], t->be, x->gs, gb);
    mirror_up(&m[1], 0, (size_t)x->nserve * (size_t)dim * sizeof(float));
    int64_t *d_ids = mirror_bind(&m[2], t->be, ids, ib);
    float *d_g = mirror_bind(&m[3], t->be, g, gb);
    int64_t k = t->be->emb_sum_by_id(x->nserve, dim, d_serve, d_gs, d_ids, d_g);
    free(x->gs);
    x->gs = NULL;
    double t3 = clock_seconds();
    if (c->g[COMM_EMB_REPLICA].size > 1) { /* on the host; the same sums on any backend */
        mirror_down(&m[2], 0, (size_t)k * sizeof(int64_t));
        mirror_down(&m[3], 0, (size_t)k * (size_t)dim * sizeof(float));
        k = replica_sum(t, c, k, &ids, &g);
        d_ids = mirror_bind(&m[2], t->be, ids, (size_t)(k ? k : 1) * sizeof(int64_t));
        mirror_up(&m[2], 0, (size_t)k * sizeof(int64_t));
        d_g = mirror_bind(&m[3], t->be, g, (size_t)(k ? k : 1) * (size_t)dim * sizeof(float));
        mirror_up(&m[3], 0, (size_t)k * (size_t)dim * sizeof(float));
    }
    double t4 = clock_seconds();
    emb_table_ready(t, ids, k); /* host tables: d_ids is ids */
    t->be->emb_sparse_update(&t->conf.optim, k, dim, d_ids, G, d_g, t->w, t->state,
                             t->state_floats, t->steps);
    t->be->synchronize();
    free(ids);
    free(g);
    if (tm) {
        tm->grads += t2 - t1;
        tm->aggregate += t3 - t2;
        tm->replica += t4 - t3;
        tm->update += clock_seconds() - t4;
    }
}
