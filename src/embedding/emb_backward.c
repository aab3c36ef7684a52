/* emb_backward: the backward exchange of a sharded embedding lookup and the
 * sparse update (see emb_exchange.h).
 *
 * requester: g_u = sum of the token gradients of each unique id, in token
 *            order (in double: a hot id collects thousands of tokens), sent
 *            as floats to the owners along the forward's buckets.
 * owner:     sums the gradients of each row over requesters (requester
 *            order), then over replicas (emb_replica, replica order: every
 *            replica computes the same sums in the same order and so stays
 *            bitwise identical), then updates the touched rows.
 * Everything runs where the table lives; only the replicas' sums (G < P)
 * pass through the host. */
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/exact.h"
#include "embedding/emb_exact.h"
#include "embedding/emb_exchange_priv.h"
#include "embedding/emb_subspace.h"

static size_t at_least1(int64_t n) { return (size_t)(n > 0 ? n : 1); }

void emb_backward(struct emb_table *t, struct comm *c, struct emb_exchange *x, const float *grad,
                  struct emb_times *tm)
{
    const int dim = t->conf.dim;
    const struct backend_ops *be = t->be;
    double t0 = clock_seconds();
    /* many tokens may share a hot id: summed in double, sent as floats;
     * every unique row has a token, so the sums are rows 0 .. nuniq - 1 */
    float *gu = emb_exchange_grads(x);
    void *own_g = NULL;
    const float *g = backend_upload(be, grad, (size_t)x->n * dim * sizeof(float), &own_g);
    int64_t *uid = be->alloc(at_least1(x->n) * sizeof *uid);
    be->emb_sum_by_id(x->n, dim, x->inverse, g, uid, gu, x->nuniq); /* inverse < nuniq */
    be->free(uid);
    if (own_g)
        be->free(own_g);
    if (tm)
        tm->grad_sum += clock_seconds() - t0;
    emb_grad_post(t, c, x, tm);
    emb_grad_finish(t, c, x, tm);
}

void emb_grad_post_chunk(struct emb_table *t, struct comm *c, struct emb_exchange *x, int k,
                         struct emb_times *tm)
{
    const int G = t->G, dim = t->width; /* values per row on the wire */
    const struct backend_ops *be = t->be;
    double t1 = clock_seconds();
    if (x->gposted[k])
        fatal("emb_grad_post_chunk: chunk %d of table '%s' posted twice", k, t->conf.name);
    const float *gu = emb_exchange_grads(x);
    x->gs = emb_buf_get(be, &x->b_gs, at_least1(x->nserve) * dim * sizeof(float));
    /* the wire: floats (fp32), else gb bytes per row encoded here, decoded
     * by the owner in emb_grad_finish */
    const int64_t *xg = emb_exchange_exact(x, NULL); /* exact sums: their limbs travel */
    const int byte_wire = x->gcodec != EMB_CODEC_FP32 || xg;
    const int64_t gb = xg ? (int64_t)dim * EXACT_LIMBS * (int64_t)sizeof(uint32_t)
                          : emb_codec_row_bytes(x->gcodec, dim);
    if (byte_wire) {
        x->gu_w = emb_buf_get(be, &x->b_gu_w, at_least1(x->nuniq) * (size_t)gb);
        x->gs_w = emb_buf_get(be, &x->b_gs_w, at_least1(x->nserve) * (size_t)gb);
    }
    int64_t *v = xmalloc((size_t)G * 4 * sizeof(int64_t));
    emb_chunk_layout(x, k, 1, v, v + G, v + 2 * G, v + 3 * G); /* requester -> owner, rows */
    if (t->sub) { /* the exact gradient of c: U^T g, chunk k's rows (host tables) */
        x->gk = emb_buf_get(be, &x->b_gk, at_least1(x->nuniq) * dim * sizeof(float));
        for (int p = 0; p < G; p++)
            emb_subspace_project(t->sub, v[p], gu + v[G + p] * t->conf.dim, x->gk + v[G + p] * dim);
        gu = x->gk;
    }
    for (int p = 0; p < G; p++) {
        const int64_t first = v[G + p], count = v[p];
        if (xg) /* every row, those to this rank itself included */
            exact_pack(xg + first * dim * EXACT_LIMBS, count * dim,
                       (uint32_t *)(x->gu_w + first * gb));
        else if (byte_wire)
            emb_wire_encode(x, x->gcodec, count, dim, gu + first * dim, x->gu_w + first * gb, 1);
        if (x->counted && p != t->shard) {
            t->wire.grads += count * gb;
            if (comm_peer_remote(c, COMM_EMB, p))
                t->wire.grads_xnode += count * gb;
        }
    }
    emb_xfer_post(t, c, &x->xf[EMB_X_GRADS0 + k], EMB_X_GRADS0 + k,
                  byte_wire ? COMM_BYTE : COMM_F32, byte_wire ? gb : dim,
                  byte_wire ? (const void *)x->gu_w : (const void *)gu, v, v + G,
                  byte_wire ? (void *)x->gs_w : (void *)x->gs, v + 2 * G, v + 3 * G,
                  COMM_PH_GRADS);
    x->gposted[k] = 1;
    free(v);
    if (tm)
        tm->grads += clock_seconds() - t1;
}

void emb_grad_post(struct emb_table *t, struct comm *c, struct emb_exchange *x,
                   struct emb_times *tm)
{
    for (int k = 0; k < 2; k++)
        if (!x->gposted[k])
            emb_grad_post_chunk(t, c, x, k, tm);
}

/* Sum the per-row gradients (ids[n], g[n, dim] of the table's memory, ids
 * < 0 past the distinct ones) across the replicas of this shard
 * (emb_replica, replica order), on the host; the result replaces them (the
 * buffers grown as needed) and their number is returned. */
static int64_t replica_sum(struct emb_table *t, struct comm *c, struct emb_exchange *x, int64_t n)
{
    const struct backend_ops *be = t->be;
    const int R = c->g[COMM_EMB_REPLICA].size, dim = t->width;
    void *o_ids, *o_g;
    const int64_t *ids = backend_download(be, x->b_sid.p, at_least1(n) * sizeof(int64_t), &o_ids);
    const float *g = backend_download(be, x->b_sg.p, at_least1(n) * dim * sizeof(float), &o_g);
    int64_t k = 0;
    while (k < n && ids[k] >= 0)
        k++;
    int64_t *counts = xmalloc((size_t)R * sizeof *counts), *gcounts = xmalloc((size_t)R * 8);
    comm_allgather_i64(c, COMM_EMB_REPLICA, k, counts);
    int64_t total = 0;
    for (int r = 0; r < R; r++) {
        total += counts[r];
        gcounts[r] = counts[r] * dim;
    }
    int64_t *all_ids = xmalloc(at_least1(total) * sizeof *all_ids);
    float *all_g = xmalloc(at_least1(total) * dim * sizeof *all_g);
    int64_t *raw = NULL;
    if (t->dyn) { /* the replicas' slots differ: ids travel (emb_dyn.h) */
        raw = xmalloc(at_least1(k) * sizeof *raw);
        memcpy(raw, ids, (size_t)k * sizeof *raw);
        emb_dyn_unmap(t, raw, k);
        ids = raw;
    }
    comm_allgatherv(c, COMM_EMB_REPLICA, COMM_I64, ids, k, all_ids, counts, COMM_PH_REPLICA);
    free(raw);
    comm_allgatherv(c, COMM_EMB_REPLICA, COMM_F32, g, k * dim, all_g, gcounts, COMM_PH_REPLICA);
    free(o_ids);
    free(o_g);
    int64_t *sid = xmalloc(at_least1(total) * sizeof *sid);
    float *sg = xmalloc(at_least1(total) * dim * sizeof *sg);
    backend_cpu.emb_sum_by_id(total, dim, all_ids, all_g, sid, sg, t->conf.rows);
    k = 0;
    while (k < total && sid[k] >= 0)
        k++;
    if (t->dyn) /* ids back to this replica's slots (rows another replica made, made here) */
        emb_dyn_rebind(t, sid, k);
    int64_t *d_ids = emb_buf_get(be, &x->b_sid, at_least1(k) * sizeof(int64_t));
    float *d_g = emb_buf_get(be, &x->b_sg, at_least1(k) * dim * sizeof(float));
    be->to_device(d_ids, sid, (size_t)k * sizeof(int64_t));
    be->to_device(d_g, sg, (size_t)k * dim * sizeof(float));
    free(sid);
    free(sg);
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
    const struct backend_ops *be = t->be;
    double t1 = clock_seconds();
    if (!x->gposted[0] || !x->gposted[1])
        fatal("emb_grad_finish: table '%s': a chunk's gradients were not posted", t->conf.name);
    if (x->counted)
        t->wire.backwards++;
    for (int k = 0; k < 2; k++)
        emb_xfer_wait(&x->xf[EMB_X_GRADS0 + k]);
    const int exact = t->conf.exact;
    if (x->gs_w && x->nserve && !exact) /* from the wire */
        be->emb_decode((int)x->gcodec, x->nserve, dim, x->gs_w, x->gs);
    double t2 = clock_seconds();
    /* sum per row over the requesters (serve order: requester order), or
     * exactly (their limbs as integers: any order) */
    int64_t *ids = emb_buf_get(be, &x->b_sid, at_least1(x->nserve) * sizeof(int64_t));
    float *g = emb_buf_get(be, &x->b_sg, at_least1(x->nserve) * dim * sizeof(float));
    int64_t *xsum = NULL;
    if (exact) {
        xsum = emb_buf_get(be, &x->b_xs,
                           at_least1(x->nserve) * (size_t)dim * EXACT_LIMBS * sizeof(int64_t));
        emb_exact_sum_by_id(x->nserve, dim, x->serve, (const uint32_t *)x->gs_w, ids, g, xsum);
    } else
        be->emb_sum_by_id(x->nserve, dim, x->serve, x->gs, ids, g, emb_table_key_max(t));
    int64_t k = x->nserve; /* the distinct ones first, then -1: skipped */
    double t3 = clock_seconds();
    if (c->g[COMM_EMB_REPLICA].size > 1) { /* on the host: the same sums on any backend */
        k = replica_sum(t, c, x, k);
        ids = x->b_sid.p;
        g = x->b_sg.p;
    }
    double t4 = clock_seconds();
    if (t->ready) { /* a host table: initialise the rows first (ids: host memory) */
        while (k > 0 && ids[k - 1] < 0)
            k--;
        emb_table_ready(t, ids, k);
    }
    if (t->dyn && exact) /* the shared unadmitted row: one gradient over the job */
        emb_dyn_shared_grad_exact(t, c, &ids, &g, &k, xsum);
    else if (t->dyn) /* replicas: the lists hold the other replicas' ids too */
        emb_dyn_shared_grad_in(t, c, &ids, &g, &k,
                               c->g[COMM_EMB_REPLICA].size > 1 || x->dyn_shared);
    be->emb_sparse_update(&t->conf.optim, k, dim, ids, G, g, t->w, t->state, t->state_floats,
                          t->steps);
    if (tm) {
        tm->grads += t2 - t1;
        tm->aggregate += t3 - t2;
        tm->replica += t4 - t3;
        tm->update += clock_seconds() - t4;
    }
}
