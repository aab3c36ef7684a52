/* loss_full: the exact softmax over the sharded item table; see
 * loss_full.h. The phases: gather the group's positions, take the shard's
 * rows out of the step's rows (normalised), score blocks of positions
 * against the shard (log-sum-exps combined over the group, then the
 * gradient of the logits and its two GEMMs), send the user vectors'
 * gradients home, and the shard rows' gradients into drows. */
#include "model/loss_full.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "model/loss.h"

int64_t loss_full_shard_ids(int G, int shard, int64_t num_items, int64_t *ids)
{
    int64_t m = 0;
    for (int64_t id = shard == 0 ? G : shard; id <= num_items; id += G, m++)
        if (ids)
            ids[m] = id;
    return m;
}

/* bytes of n elements of `elem` bytes, at least one (backends allocate > 0) */
static size_t nbytes(int64_t n, size_t elem) { return (size_t)(n > 0 ? n : 1) * elem; }

/* The step's positions, gathered over the emb group. */
struct full_ctx {
    const struct backend_ops *be;
    int direct;                   /* device buffers to MPI (loss_full_shard) */
    struct comm *c;
    int d, G, me;
    float inv_tau, gscale;
    int64_t n_me, *sup, *sup_dev; /* this rank's supervised positions [n_me] (host, backend) */
    int64_t *cnt, *off, ng;       /* [G], [G + 1] supervised positions per rank; total */
    float *U;                     /* [ng, d] the group's user vectors, rank order */
    int64_t *tg;                  /* [ng] their targets (host) */
    int64_t m, first;             /* the shard: m rows, ids first, first + G, ... */
    float *raw, *e, *norms, *de;  /* [m, d] rows, rows used (normalised), their gradient */
    int64_t cp, ci, nib;          /* positions and items per block, item blocks */
};

/* direct: the device buffers a[na], b[nb] floats are (on = 1), or no
 * longer (0), in an MPI call; opening waits for the compute stream (the
 * buffers are final) */
static void mpi_open(const struct full_ctx *x, const float *a, int64_t na, const float *b,
                     int64_t nb, int on)
{
    if (on)
        x->be->synchronize();
    if (!x->be->mpi_expose)
        return;
    x->be->mpi_expose(a, nbytes(na, sizeof(float)), on);
    x->be->mpi_expose(b, nbytes(nb, sizeof(float)), on);
}

static void full_gather(struct full_ctx *x, int64_t T, const float *u, const int64_t *targets)
{
    const struct backend_ops *be = x->be;
    const int d = x->d, G = x->G;
    x->sup = xmalloc(nbytes(T, sizeof(int64_t)));
    int64_t *mine = xmalloc(nbytes(T, sizeof(int64_t)));
    for (int64_t i = 0; i < T; i++)
        if (targets[i] >= 1) {
            mine[x->n_me] = targets[i];
            x->sup[x->n_me++] = i;
        }
    x->sup_dev = be->alloc(nbytes(x->n_me, sizeof(int64_t)));
    be->to_device(x->sup_dev, x->sup, (size_t)x->n_me * sizeof(int64_t));
    float *u_me = be->alloc(nbytes(x->n_me * d, sizeof(float)));
    be->gather_rows(x->n_me, d, u, x->sup_dev, u_me);
    x->cnt = xmalloc((size_t)G * sizeof(int64_t));
    x->off = xmalloc((size_t)(G + 1) * sizeof(int64_t));
    comm_allgather_i64(x->c, COMM_EMB, x->n_me, x->cnt);
    x->off[0] = 0;
    for (int r = 0; r < G; r++)
        x->off[r + 1] = x->off[r] + x->cnt[r];
    x->ng = x->off[G];
    int64_t *rc = xmalloc((size_t)G * sizeof(int64_t));
    for (int r = 0; r < G; r++)
        rc[r] = x->cnt[r] * d;
    x->U = be->alloc(nbytes(x->ng * d, sizeof(float)));
    if (x->direct) { /* the device's buffers to MPI */
        mpi_open(x, u_me, x->n_me * d, x->U, x->ng * d, 1);
        comm_allgatherv(x->c, COMM_EMB, COMM_F32, u_me, x->n_me * d, x->U, rc, COMM_PH_OTHER);
        mpi_open(x, u_me, x->n_me * d, x->U, x->ng * d, 0);
    } else { /* a device's vectors go through host copies */
        void *owned = NULL;
        const float *src = backend_download(be, u_me, (size_t)(x->n_me * d) * sizeof(float),
                                            &owned);
        float *dst = backend_is_host(be) ? x->U : xmalloc(nbytes(x->ng * d, sizeof(float)));
        comm_allgatherv(x->c, COMM_EMB, COMM_F32, src, x->n_me * d, dst, rc, COMM_PH_OTHER);
        if (dst != x->U) {
            be->to_device(x->U, dst, (size_t)(x->ng * d) * sizeof(float));
            free(dst);
        }
        free(owned);
    }
    x->tg = xmalloc(nbytes(x->ng, sizeof(int64_t)));
    comm_allgatherv(x->c, COMM_EMB, COMM_I64, mine, x->n_me, x->tg, x->cnt, COMM_PH_OTHER);
    free(rc);
    free(mine);
    be->free(u_me);
}

/* The shard's rows e [m, d] (normalised when asked) and the block sizes:
 * the positions per block depend only on num_items / G, so every rank of
 * the group walks the same blocks of positions. */
static void full_shard(struct full_ctx *x, const struct loss_full_shard *sh, const float *rows,
                       int normalize)
{
    const struct backend_ops *be = x->be;
    const int d = x->d;
    x->m = sh->m;
    x->first = sh->shard == 0 ? sh->G : sh->shard;
    const size_t bytes = nbytes(x->m * d, sizeof(float));
    x->raw = be->alloc(bytes);
    be->gather_rows(x->m, d, rows, sh->idx, x->raw);
    x->e = x->raw;
    if (normalize) {
        x->e = be->alloc(bytes);
        x->norms = be->alloc(nbytes(x->m, sizeof(float)));
        be->l2norm_fwd(x->m, d, ITEM_NORM_EPS, x->raw, x->e, x->norms);
    }
    x->de = be->alloc(bytes);
    const int64_t mmax = sh->num_items / sh->G + 1;
    if (mmax <= LOSS_FULL_ONE_BLOCK) { /* one item block: logits computed once */
        x->ci = mmax;
        x->cp = LOSS_FULL_LOGITS / mmax;
    } else {
        x->cp = 256;
        x->ci = LOSS_FULL_LOGITS / x->cp;
    }
    x->nib = (x->m + x->ci - 1) / x->ci;
}

/* log(exp(a) + exp(b)) */
static double logaddexp(double a, double b)
{
    if (a == -INFINITY)
        return b;
    if (b == -INFINITY)
        return a;
    double m = a > b ? a : b;
    return m + log(exp(a - m) + exp(b - m));
}

/* Scratch of the blocks. */
struct full_scratch {
    float *S, *lse_dev; /* [cp, ci] logits, [cp] */
    int64_t *tcol_dev;  /* [cp] */
    float *lsef;        /* host [cp] */
    double *lse, *all;  /* host [cp], [G, cp] */
    int64_t *tcol;      /* host [cp] */
};

/* Logits of positions [p0, p0 + nb) against item block ib into w->S;
 * returns its width. */
static int64_t full_logits(const struct full_ctx *x, struct full_scratch *w, int64_t p0,
                           int64_t nb, int64_t ib)
{
    const int64_t j0 = ib * x->ci, nj = x->m - j0 < x->ci ? x->m - j0 : x->ci;
    x->be->gemm(0, 1, nb, nj, x->d, 1.0f, x->U + p0 * x->d, x->d, x->e + j0 * x->d, x->d, 0.0f,
                w->S, nj);
    return nj;
}

/* The group's log-sum-exp of positions [p0, p0 + nb) into w->lse (host)
 * and w->lse_dev: this shard's over its item blocks, then all shards' in
 * rank order. Returns this rank's share of the loss: the log-sum-exps of
 * its own positions. */
static double full_lse(const struct full_ctx *x, struct full_scratch *w, int64_t p0, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++)
        w->lse[i] = -INFINITY;
    for (int64_t ib = 0; ib < x->nib; ib++) {
        int64_t nj = full_logits(x, w, p0, nb, ib);
        x->be->softmax_block_lse(nb, nj, nj, x->inv_tau, w->S, w->lse_dev);
        x->be->to_host(w->lsef, w->lse_dev, (size_t)nb * sizeof(float));
        for (int64_t i = 0; i < nb; i++)
            w->lse[i] = logaddexp(w->lse[i], (double)w->lsef[i]);
    }
    comm_allgather_bytes(x->c, COMM_EMB, w->lse, (size_t)nb * sizeof(double), w->all);
    double share = 0;
    for (int64_t i = 0; i < nb; i++) {
        double l = -INFINITY;
        for (int r = 0; r < x->G; r++)
            l = logaddexp(l, w->all[(size_t)r * (size_t)nb + (size_t)i]);
        w->lse[i] = l;
        w->lsef[i] = (float)l;
        if (p0 + i >= x->off[x->me] && p0 + i < x->off[x->me + 1])
            share += l;
    }
    x->be->to_device(w->lse_dev, w->lsef, (size_t)nb * sizeof(float));
    return share;
}

/* The backward of positions [p0, p0 + nb): per item block, the logits'
 * gradient (the target's column from its owner), then du_part [nb, d] =
 * dS e and de += dS^T U. Returns the target logits this shard owns. */
static double full_backward(const struct full_ctx *x, struct full_scratch *w, int64_t p0,
                            int64_t nb, float *du_part)
{
    const struct backend_ops *be = x->be;
    const int d = x->d;
    double target = 0;
    for (int64_t ib = 0; ib < x->nib; ib++) {
        const int64_t j0 = ib * x->ci;
        int64_t nj = x->m - j0 < x->ci ? x->m - j0 : x->ci;
        if (x->nib > 1) /* else the one block's logits are still in S */
            full_logits(x, w, p0, nb, ib);
        for (int64_t i = 0; i < nb; i++) {
            int64_t t = x->tg[p0 + i], col = -1;
            if (t % x->G == (x->first % x->G) && (t - x->first) / x->G - j0 >= 0 &&
                (t - x->first) / x->G - j0 < nj)
                col = (t - x->first) / x->G - j0;
            w->tcol[i] = col;
        }
        be->to_device(w->tcol_dev, w->tcol, (size_t)nb * sizeof(int64_t));
        target += be->softmax_block_grad(nb, nj, nj, x->inv_tau, w->lse_dev, w->tcol_dev,
                                         x->gscale, w->S);
        be->gemm(0, 0, nb, d, nj, 1.0f, w->S, nj, x->e + j0 * d, d, ib ? 1.0f : 0.0f,
                 du_part + p0 * d, d);
        be->gemm(1, 0, nj, d, nb, 1.0f, w->S, nj, x->U + p0 * d, d, 1.0f, x->de + j0 * d, d);
    }
    return target;
}

/* du_part [ng, d] (this shard's part of every group position's gradient)
 * to the positions' ranks, summed there in rank order into du [T, d]. */
static void full_du_home(const struct full_ctx *x, const float *du_part, int64_t T, float *du)
{
    const struct backend_ops *be = x->be;
    const int d = x->d, G = x->G;
    const int64_t nd = x->n_me * d;
    int64_t *v = xmalloc((size_t)G * 4 * sizeof(int64_t)); /* sc, sd, rc, rd */
    for (int r = 0; r < G; r++) {
        v[r] = x->cnt[r] * d;
        v[G + r] = x->off[r] * d;
        v[2 * G + r] = nd;
        v[3 * G + r] = r * nd;
    }
    float *recv = be->alloc(nbytes((int64_t)G * nd, sizeof(float)));
    if (x->direct) { /* the device's buffers to MPI */
        mpi_open(x, du_part, x->ng * d, recv, (int64_t)G * nd, 1);
        comm_alltoallv(x->c, COMM_EMB, COMM_F32, du_part, v, v + G, recv, v + 2 * G, v + 3 * G,
                       COMM_PH_OTHER);
        mpi_open(x, du_part, x->ng * d, recv, (int64_t)G * nd, 0);
    } else { /* a device's parts go through host copies */
        void *owned = NULL;
        const float *src = backend_download(be, du_part, (size_t)(x->ng * d) * sizeof(float),
                                            &owned);
        float *dst = backend_is_host(be) ? recv : xmalloc(nbytes((int64_t)G * nd, sizeof(float)));
        comm_alltoallv(x->c, COMM_EMB, COMM_F32, src, v, v + G, dst, v + 2 * G, v + 3 * G,
                       COMM_PH_OTHER);
        if (dst != recv) {
            be->to_device(recv, dst, (size_t)((int64_t)G * nd) * sizeof(float));
            free(dst);
        }
        free(owned);
    }
    for (int r = 1; r < G; r++)
        be->axpy(nd, 1.0f, recv + r * nd, recv);
    be->zero(du, nbytes(T * d, sizeof(float)));
    be->scatter_add_rows(x->n_me, d, recv, x->sup_dev, du);
    be->free(recv);
    free(v);
}

static void full_free(struct full_ctx *x)
{
    const struct backend_ops *be = x->be;
    if (x->e != x->raw) {
        be->free(x->e);
        be->free(x->norms);
    }
    be->free(x->raw);
    be->free(x->de);
    be->free(x->U);
    be->free(x->sup_dev);
    free(x->sup);
    free(x->cnt);
    free(x->off);
    free(x->tg);
}

double loss_full_softmax(const struct backend_ops *be, struct comm *c, int64_t T, int d,
                         float tau, int normalize_items, const float *u, const int64_t *targets,
                         int64_t nu, const float *rows, const struct loss_full_shard *sh,
                         float scale, float *du, float *drows, int64_t *count)
{
    if (!be->softmax_block_lse || !be->softmax_block_grad)
        fatal("train.loss = full: not available on the %s backend (use device.type = cpu)",
              be->name);
    if (d < 1 || !(tau > 0) || sh->G != c->g[COMM_EMB].size || sh->shard != c->g[COMM_EMB].rank)
        fatal("loss_full_softmax: bad arguments d = %d, tau = %g, shard %d of %d", d,
              (double)tau, sh->shard, sh->G);
    (void)nu;
    struct full_ctx x = {.be = be, .direct = sh->direct && !backend_is_host(be), .c = c, .d = d,
                         .G = sh->G, .me = sh->shard, .inv_tau = 1.0f / tau,
                         .gscale = scale / tau};
    full_gather(&x, T, u, targets);
    full_shard(&x, sh, rows, normalize_items);
    const int64_t cp = x.cp;
    struct full_scratch w = {
        .S = be->alloc(nbytes(cp * (x.ci < x.m ? x.ci : x.m), sizeof(float))),
        .lse_dev = be->alloc(nbytes(cp, sizeof(float))),
        .tcol_dev = be->alloc(nbytes(cp, sizeof(int64_t))),
        .lsef = xmalloc(nbytes(cp, sizeof(float))), .lse = xmalloc(nbytes(cp, sizeof(double))),
        .all = xmalloc(nbytes(cp * x.G, sizeof(double))),
        .tcol = xmalloc(nbytes(cp, sizeof(int64_t)))};
    float *du_part = be->alloc(nbytes(x.ng * d, sizeof(float)));
    double total = 0;
    for (int64_t p0 = 0; p0 < x.ng; p0 += cp) {
        const int64_t nb = x.ng - p0 < cp ? x.ng - p0 : cp;
        total += full_lse(&x, &w, p0, nb);
        total -= full_backward(&x, &w, p0, nb, du_part);
    }
    full_du_home(&x, du_part, T, du);
    float *dx = x.de;
    if (x.e != x.raw) { /* through the normalisation, into the raw rows' buffer */
        be->l2norm_bwd(x.m, d, x.e, x.norms, x.de, x.raw);
        dx = x.raw;
    }
    be->scatter_add_rows(x.m, d, dx, sh->idx, drows);
    if (count)
        *count = x.n_me;
    be->free(du_part);
    be->free(w.S);
    be->free(w.lse_dev);
    be->free(w.tcol_dev);
    free(w.lsef);
    free(w.lse);
    free(w.all);
    free(w.tcol);
    full_free(&x);
    return total;
}
