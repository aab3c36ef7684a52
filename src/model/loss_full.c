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

/* the host's tiles of logits: what a core's L2 holds beside the shard's
 * rows; for d up to FULL_TILE_DMAX */
#define FULL_TILE_BYTES (512 * 1024)
#define FULL_TILE_DMAX 128

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
    int64_t sp, nblk;             /* positions per pass (k cp: on a device k >= 1), blocks of
                                     cp positions in the step */
    int64_t tile;                 /* rows per GEMM and op within a block: on the host a
                                     cache's worth, on a device the block */
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
        const size_t ub = (size_t)(x->ng * d) * sizeof(float);
        float *dst = backend_host_begin(be, x->U, ub, 0);
        comm_allgatherv(x->c, COMM_EMB, COMM_F32, src, x->n_me * d, dst, rc, COMM_PH_OTHER);
        backend_host_end(be, x->U, dst, ub, 1);
        free(owned);
    }
    x->tg = xmalloc(nbytes(x->ng, sizeof(int64_t)));
    comm_allgatherv(x->c, COMM_EMB, COMM_I64, mine, x->n_me, x->tg, x->cnt, COMM_PH_OTHER);
    free(rc);
    free(mine);
    be->free(u_me);
}

/* Logits a device holds at a time: sh->dev_logits when set, else a quarter
 * of its free memory, at least LOSS_FULL_LOGITS and at most
 * LOSS_FULL_DEV_LOGITS. */
static int64_t device_logits(const struct backend_ops *be, const struct loss_full_shard *sh)
{
    if (sh->dev_logits > 0)
        return sh->dev_logits;
    size_t free_b = 0, total_b = 0;
    char err[256];
    if (!be->device_memory || be->device_memory(&free_b, &total_b, err, sizeof err))
        return LOSS_FULL_LOGITS;
    const int64_t n = (int64_t)(free_b / 4 / sizeof(float));
    return n < LOSS_FULL_LOGITS ? LOSS_FULL_LOGITS : n > LOSS_FULL_DEV_LOGITS ? LOSS_FULL_DEV_LOGITS : n;
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
    const int64_t logits = sh->logits > 0 ? sh->logits : LOSS_FULL_LOGITS;
    const int64_t mmax = sh->num_items / sh->G + 1;
    if (mmax <= logits / 128) { /* one item block (<= LOSS_FULL_ONE_BLOCK): logits once */
        x->ci = mmax;
        x->cp = logits / mmax;
    } else {
        x->cp = logits < 256 ? 1 : 256;
        x->ci = logits / x->cp;
    }
    x->nib = (x->m + x->ci - 1) / x->ci;
    x->nblk = (x->ng + x->cp - 1) / x->cp;
    x->sp = x->cp;
    if (!backend_is_host(be)) { /* k blocks a pass, the same k on every rank of the group */
        const int64_t width = x->ci < x->m ? x->ci : x->m;
        int64_t k = device_logits(be, sh) / (x->cp * (width > 0 ? width : 1));
        int64_t *all = xmalloc((size_t)x->G * sizeof *all);
        comm_allgather_i64(x->c, COMM_EMB, k, all);
        for (int r = 0; r < x->G; r++)
            k = all[r] < k ? all[r] : k;
        free(all);
        k = k < 1 ? 1 : k > x->nblk ? x->nblk : k;
        x->sp = k * x->cp;
    }
    /* the host's tiles: FULL_TILE_BYTES of logits (L2), whole lse groups;
     * tiles split the logits' GEMM by rows, whose every element is then one
     * pass over d <= FULL_TILE_DMAX terms however BLAS blocks the call (its
     * k panels are longer), the bits of the whole block's GEMM */
    const int64_t width = x->ci < x->m ? x->ci : x->m;
    x->tile = x->cp;
    if (backend_is_host(be) && x->d <= FULL_TILE_DMAX) {
        x->tile = FULL_TILE_BYTES / (int64_t)sizeof(float) / (width > 0 ? width : 1) / 8 * 8;
        x->tile = x->tile < 8 ? 8 : x->tile > x->cp ? x->cp : x->tile;
    }
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

/* Scratch of a pass of sp positions (host arrays on the host, copies of the
 * backend's on a device). */
struct full_scratch {
    float *S, *parts_dev, *lse_dev; /* [sp, ci] logits, [nib, sp] the shard's log-sum-exp
                                       per item block, [sp] the group's */
    int64_t *tcol_dev;              /* [sp] */
    double *tsum_dev;               /* [nblk, nib] the target logits of each block of cp
                                       positions and item block, summed on the backend */
    float *parts, *lsef;            /* host [nib, sp], [sp] */
    double *lse, *all;              /* host [sp], [G, sp] */
    int64_t *tcol;                  /* host [sp] */
    double *share;                  /* host [nblk] this rank's log-sum-exps per block */
};

/* The logits' buffer of n floats (backend memory), kept from call to call
 * (16 MiB on the CPU: allocating it every step cost a page-zeroing pass
 * over it) and grown when a call needs more; one per backend at a time
 * (the ops of a rank run on one thread). */
static float *full_logits_buffer(const struct backend_ops *be, int64_t n)
{
    static const struct backend_ops *owner;
    static float *buf;
    static int64_t cap;
    if (owner != be || n > cap) {
        if (owner)
            owner->free(buf);
        cap = n > 1 ? n : 1;
        buf = be->alloc((size_t)cap * sizeof(float));
        owner = be;
    }
    return buf;
}

/* Logits of positions p0 + [t0, t0 + nt) against item block ib into rows
 * [t0, t0 + nt) of w->S (row stride: the block's width); returns the width.
 * Each logit is one dot product of d terms, whatever the rows of the call. */
static int64_t full_logits(const struct full_ctx *x, struct full_scratch *w, int64_t p0,
                           int64_t t0, int64_t nt, int64_t ib)
{
    const int64_t j0 = ib * x->ci, nj = x->m - j0 < x->ci ? x->m - j0 : x->ci;
    x->be->gemm(0, 1, nt, nj, x->d, 1.0f, x->U + (p0 + t0) * x->d, x->d, x->e + j0 * x->d, x->d,
                0.0f, w->S + t0 * nj, nj);
    return nj;
}

/* The group's log-sum-exp of positions [p0, p0 + nb) (a pass) into w->lse
 * (host) and w->lse_dev: this shard's over its item blocks (one copy to
 * the host: a host wait on a device), then all shards' in rank order (one
 * all-gather). Per block of cp positions (the first is block b0), this
 * rank's share of the loss: the log-sum-exps of its own positions, in
 * w->share. */
static void full_lse(const struct full_ctx *x, struct full_scratch *w, int64_t p0, int64_t nb,
                     int64_t b0)
{
    const int64_t tile = backend_is_host(x->be) ? x->tile : nb;
    for (int64_t ib = 0; ib < x->nib; ib++)
        for (int64_t t0 = 0; t0 < nb; t0 += tile) { /* logits and their lse while in cache */
            const int64_t nt = nb - t0 < tile ? nb - t0 : tile;
            const int64_t nj = full_logits(x, w, p0, t0, nt, ib);
            x->be->softmax_block_lse(nt, nj, nj, x->inv_tau, w->S + t0 * nj,
                                     w->parts_dev + ib * nb + t0);
        }
    x->be->to_host(w->parts, w->parts_dev, (size_t)(x->nib * nb) * sizeof(float));
    for (int64_t i = 0; i < nb; i++) {
        double l = -INFINITY;
        for (int64_t ib = 0; ib < x->nib; ib++)
            l = logaddexp(l, (double)w->parts[ib * nb + i]);
        w->lse[i] = l;
    }
    comm_allgather_bytes(x->c, COMM_EMB, w->lse, (size_t)nb * sizeof(double), w->all);
    for (int64_t i0 = 0; i0 < nb; i0 += x->cp) {
        const int64_t i1 = nb - i0 < x->cp ? nb : i0 + x->cp;
        double share = 0;
        for (int64_t i = i0; i < i1; i++) {
            double l = -INFINITY;
            for (int r = 0; r < x->G; r++)
                l = logaddexp(l, w->all[(size_t)r * (size_t)nb + (size_t)i]);
            w->lse[i] = l;
            w->lsef[i] = (float)l;
            if (p0 + i >= x->off[x->me] && p0 + i < x->off[x->me + 1])
                share += l;
        }
        w->share[b0 + i0 / x->cp] = share;
    }
    x->be->to_device(w->lse_dev, w->lsef, (size_t)nb * sizeof(float));
}

/* The backward of positions [p0, p0 + nb) (a pass; its first block of cp
 * positions is block b0): per item block and block of cp positions, tile
 * by tile, the logits' gradient (the target's column from its owner; the
 * target logits this shard owns summed on the backend into the slot of the
 * block and item block, one by one), then per block du_part [cp, d] = dS e
 * and de += dS^T U: the CPU's blocks' sums whatever the pass or tile. */
static void full_backward(const struct full_ctx *x, struct full_scratch *w, int64_t p0,
                          int64_t nb, int64_t b0, float *du_part)
{
    const struct backend_ops *be = x->be;
    const int d = x->d;
    for (int64_t ib = 0; ib < x->nib; ib++) {
        const int64_t j0 = ib * x->ci;
        int64_t nj = x->m - j0 < x->ci ? x->m - j0 : x->ci;
        for (int64_t i = 0; i < nb; i++) {
            int64_t t = x->tg[p0 + i], col = -1;
            if (t % x->G == (x->first % x->G) && (t - x->first) / x->G - j0 >= 0 &&
                (t - x->first) / x->G - j0 < nj)
                col = (t - x->first) / x->G - j0;
            w->tcol[i] = col;
        }
        be->to_device(w->tcol_dev, w->tcol, (size_t)nb * sizeof(int64_t));
        for (int64_t i0 = 0; i0 < nb; i0 += x->cp) {
            const int64_t n = nb - i0 < x->cp ? nb - i0 : x->cp;
            double *slot = w->tsum_dev + (b0 + i0 / x->cp) * x->nib + ib;
            for (int64_t t0 = i0; t0 < i0 + n; t0 += x->tile) {
                const int64_t nt = i0 + n - t0 < x->tile ? i0 + n - t0 : x->tile;
                if (x->nib > 1) /* else the one block's logits are still in S */
                    full_logits(x, w, p0, t0, nt, ib);
                be->softmax_block_grad(nt, nj, nj, x->inv_tau, w->lse_dev + t0, w->tcol_dev + t0,
                                       x->gscale, w->S + t0 * nj, slot);
            }
            /* sums over the items and over the positions: whole blocks, as
             * BLAS sums them (its k splits depend on the call's shape) */
            be->gemm(0, 0, n, d, nj, 1.0f, w->S + i0 * nj, nj, x->e + j0 * d, d,
                     ib ? 1.0f : 0.0f, du_part + (p0 + i0) * d, d);
            be->gemm(1, 0, nj, d, n, 1.0f, w->S + i0 * nj, nj, x->U + (p0 + i0) * d, d, 1.0f,
                     x->de + j0 * d, d);
        }
    }
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
        const size_t rb = (size_t)((int64_t)G * nd) * sizeof(float);
        float *dst = backend_host_begin(be, recv, rb, 0);
        comm_alltoallv(x->c, COMM_EMB, COMM_F32, src, v, v + G, dst, v + 2 * G, v + 3 * G,
                       COMM_PH_OTHER);
        backend_host_end(be, recv, dst, rb, 1);
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
    if (d < 1 || !(tau > 0) || sh->G != c->g[COMM_EMB].size || sh->shard != c->g[COMM_EMB].rank)
        fatal("loss_full_softmax: bad arguments d = %d, tau = %g, shard %d of %d", d,
              (double)tau, sh->shard, sh->G);
    (void)nu;
    struct full_ctx x = {.be = be, .direct = sh->direct && !backend_is_host(be), .c = c, .d = d,
                         .G = sh->G, .me = sh->shard, .inv_tau = 1.0f / tau,
                         .gscale = scale / tau};
    full_gather(&x, T, u, targets);
    full_shard(&x, sh, rows, normalize_items);
    const int64_t sp = x.sp, nib = x.nib;
    struct full_scratch w = {
        .S = full_logits_buffer(be, sp * (x.ci < x.m ? x.ci : x.m)),
        .parts_dev = be->alloc(nbytes(nib * sp, sizeof(float))),
        .lse_dev = be->alloc(nbytes(sp, sizeof(float))),
        .tcol_dev = be->alloc(nbytes(sp, sizeof(int64_t))),
        .tsum_dev = be->alloc(nbytes(x.nblk * nib, sizeof(double))),
        .parts = xmalloc(nbytes(nib * sp, sizeof(float))),
        .lsef = xmalloc(nbytes(sp, sizeof(float))), .lse = xmalloc(nbytes(sp, sizeof(double))),
        .all = xmalloc(nbytes(sp * x.G, sizeof(double))),
        .tcol = xmalloc(nbytes(sp, sizeof(int64_t))),
        .share = xmalloc(nbytes(x.nblk, sizeof(double)))};
    float *du_part = be->alloc(nbytes(x.ng * d, sizeof(float)));
    be->zero(w.tsum_dev, nbytes(x.nblk * nib, sizeof(double)));
    for (int64_t p0 = 0; p0 < x.ng; p0 += sp) {
        const int64_t nb = x.ng - p0 < sp ? x.ng - p0 : sp;
        full_lse(&x, &w, p0, nb, p0 / x.cp);
        full_backward(&x, &w, p0, nb, p0 / x.cp, du_part);
    }
    /* the target logits' sums: one copy to the host per step; the loss in
     * the order of the CPU's blocks (their log-sum-exps, less their targets) */
    double *tsum = xmalloc(nbytes(x.nblk * nib, sizeof(double)));
    be->to_host(tsum, w.tsum_dev, (size_t)(x.nblk * nib) * sizeof(double));
    double total = 0;
    for (int64_t b = 0; b < x.nblk; b++) {
        double target = 0;
        for (int64_t ib = 0; ib < nib; ib++)
            target += tsum[b * nib + ib];
        total += w.share[b];
        total -= target;
    }
    free(tsum);
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
    be->free(w.parts_dev);
    be->free(w.lse_dev);
    be->free(w.tcol_dev);
    be->free(w.tsum_dev);
    free(w.parts);
    free(w.lsef);
    free(w.lse);
    free(w.all);
    free(w.tcol);
    free(w.share);
    full_free(&x);
    return total;
}
