/* model_hstu: the HSTU encoder (Zhai et al. 2024, "Actions Speak Louder
 * than Words"; research code generative-recommenders, hstu.py), dense part,
 * on jagged batches through backend ops only.
 *
 * d = model dim, H heads, dqk = dv = d / H, N = max_len, p = dropout.
 *   x = dropout_0(emb sqrt(d) + pos_emb[pos])               x: [T, d]
 *   per layer l:
 *     n = LayerNorm(x)                                       no affine, eps 1e-6
 *     [U | V | Q | K] = SiLU(n uvqk)                         each [T, H dv]
 *     a = hstu_attn(Q, K, V; rab = pos_bias (+ time_bias))   [T, H dv], scale 1/N
 *     z = dropout_{1+l}(U * LayerNorm(a))                    no affine, eps 1e-6
 *     x = x + z o.w + o.b
 *   out = x / max(|x|, 1e-6) per row.
 * Like the research code, uvqk has no bias. Initialisation follows it with
 * uniform draws of the same spread: uvqk, pos_bias, time_bias N(0, 0.02) ->
 * U(+-0.02 sqrt 3); o.w Xavier uniform; o.b torch's Linear default
 * U(+-1 / sqrt(H dv)); pos_emb truncated N(0, 1/d) -> U(+-sqrt(3/d)).
 *
 * The batch (offsets, ts, row_keys) is in host memory; the model copies what
 * the ops need to the backend. Activations are kept for the backward in
 * buffers that grow with the largest batch seen.
 *
 * With batch.split (context parallelism, model.h) positions start at each
 * segment's pos0, and each layer's attention runs on key buffers that also
 * hold the earlier positions' keys and values, gathered from their ranks
 * (kept per layer for the backward, whose key gradients go back). Every
 * other operation is per token and runs on the chunk as it is.
 *
 * model.last_layer = targets (conf.last_targets) with batch.reads (the R
 * rows whose outputs are read): the last layer computes K and V at every
 * row and U, Q, the attention, its LayerNorm, the gating, dropout and the
 * output projection at the read rows alone, compact ([R, hd], rows ridx;
 * hstu_attn_rows_* against the full keys); the other rows pass x on
 * unchanged. The read rows' outputs are the full layer's, and since the
 * other rows' output gradients are 0, so is every gradient (the full
 * layer's U and Q rows there get none). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "model/model.h"

#define LN_EPS 1e-6f
#define L2_EPS 1e-6f

/* what forward keeps of one layer; hd = H dv = d */
struct hstu_acts {
    float *x;            /* [T, d] layer input (x_0: after the input dropout) */
    float *n;            /* [T, d] LayerNorm(x) */
    float *mean, *rstd;  /* [T] */
    float *pre, *h;      /* [4, T, hd] n uvqk before / after SiLU: blocks U, V, Q, K */
    float *a, *o;        /* [T, hd] attention output, its LayerNorm */
    float *mean2, *rstd2;
    float *z;            /* [T, hd] dropout(U * o) */
    uint8_t *mask;       /* [T, hd] dropout mask of z */
    float *kb, *vb;      /* split: [keys, hd] the key buffers of the attention */
};

/* Backend allocations freed together (the buffers of one capacity). */
struct buf_pool {
    void **p;
    int n, max;
};

struct hstu_priv {
    int64_t cap, cap_b;      /* tokens and sequences the buffers hold */
    int touch;               /* model_reserve: write every new buffer (its pages resident) */
    int64_t B, T;            /* last forward's batch */
    int dropped;             /* last forward applied dropout */
    int use_ts;              /* last forward used the time bias */
    struct buf_pool bufs;    /* every allocation of the above, for free */
    struct hstu_acts *act;   /* [layers] */
    float *xl, *y, *norm;    /* [T, d] final x, out; [T] norms */
    uint8_t *mask0;          /* [T, d] input dropout mask */
    int64_t *pos, *offsets, *ts; /* backend copies: [T], [B + 1], [T] */
    uint64_t *keys;          /* [T] */
    float *ones;             /* [T] ones (bias rows via gemm) */
    float *dx, *dz, *dob, *da, *dh, *dn, *tmp; /* backward work */
    /* split (context parallelism): key buffers of kcap rows, kcap_b segments */
    int split;               /* last forward had batch.split */
    int64_t kcap, kcap_b;
    struct buf_pool kbufs;   /* their allocations */
    int64_t *pos0, *key_off, *key_ts; /* backend copies: [B], [B + 1], [keys] */
    float *dkb, *dvb;        /* [keys, hd] backward work */
    /* model.last_layer = targets: the last forward's read rows */
    int rows_on;             /* its last layer computed them alone */
    int64_t R;               /* how many */
    int64_t *ridx, *rpos, *roff; /* backend: [R] rows, [R] positions, [B + 1] per segment */
    uint64_t *rkeys;         /* [R] their dropout keys */
    float *rn;               /* [R, d] LayerNorm(x) (their x, dx and dn in dob, tmp) */
    int64_t *hroff;          /* host roff (the compact rows' batch) */
    int64_t hroff_cap;
};

/* parameters in the order model_hstu_init adds them */
enum { P_UVQK, P_OW, P_OB, P_POS_BIAS, P_TIME_BIAS };

static int per_layer(const struct model *m) { return m->conf.time_bias ? 5 : 4; }

static struct dense_tensor *param(struct model *m, int l, int which)
{
    return &m->params[1 + l * per_layer(m) + which];
}

static void *pool_alloc(struct model *m, struct buf_pool *bp, size_t bytes)
{
    if (bp->n == bp->max)
        fatal("model_hstu: buffer table full");
    void *p = bp->p[bp->n++] = m->be->alloc(bytes);
    if (((struct hstu_priv *)m->priv)->touch) /* zero-filled already; resident now */
        m->be->zero(p, bytes);
    return p;
}

static void pool_release(struct model *m, struct buf_pool *bp)
{
    for (int i = 0; i < bp->n; i++)
        m->be->free(bp->p[i]);
    bp->n = 0;
}

/* A capacity for need, growing by half at least, with a quarter to spare
 * (batches vary: a few growths, then none; each one reallocates). */
static int64_t grown(int64_t need, int64_t cap)
{
    return need > cap + cap / 2 ? need + need / 4 : cap + cap / 2;
}

static void *buf(struct model *m, size_t bytes)
{
    return pool_alloc(m, &((struct hstu_priv *)m->priv)->bufs, bytes);
}

/* The key buffers of split batches: kbuf() allocates, kbuf_release frees. */
static void *kbuf(struct model *m, size_t bytes)
{
    return pool_alloc(m, &((struct hstu_priv *)m->priv)->kbufs, bytes);
}

static void kbuf_release(struct model *m)
{
    struct hstu_priv *P = m->priv;
    pool_release(m, &P->kbufs);
    P->kcap = P->kcap_b = 0;
}

/* Make the key buffers hold K rows of B segments. */
static void kbuf_reserve(struct model *m, int64_t B, int64_t K)
{
    struct hstu_priv *P = m->priv;
    if (K <= P->kcap && B <= P->kcap_b)
        return;
    int64_t cap = grown(K, P->kcap), cap_b = grown(B, P->kcap_b);
    kbuf_release(m);
    P->kcap = cap;
    P->kcap_b = cap_b;
    size_t kd = (size_t)cap * (size_t)m->conf.d * sizeof(float);
    for (int l = 0; l < m->conf.layers; l++) {
        P->act[l].kb = kbuf(m, kd);
        P->act[l].vb = kbuf(m, kd);
    }
    P->dkb = kbuf(m, kd);
    P->dvb = kbuf(m, kd);
    P->pos0 = kbuf(m, (size_t)cap_b * sizeof(int64_t));
    P->key_off = kbuf(m, (size_t)(cap_b + 1) * sizeof(int64_t));
    P->key_ts = kbuf(m, (size_t)cap * sizeof(int64_t));
}

static void release(struct model *m)
{
    struct hstu_priv *P = m->priv;
    pool_release(m, &P->bufs);
    P->cap = P->cap_b = 0;
}

/* Make the buffers hold T tokens in B sequences (grows by half at least). */
static void reserve(struct model *m, int64_t B, int64_t T)
{
    struct hstu_priv *P = m->priv;
    if (P->cap > 0 && T <= P->cap && B <= P->cap_b)
        return;
    /* at least one token and sequence: a rank without any sequence in a step still
     * copies its (empty) batch and takes part in every collective */
    int64_t cap = grown(T > 0 ? T : 1, P->cap), cap_b = grown(B > 0 ? B : 1, P->cap_b);
    release(m);
    P->cap = cap;
    P->cap_b = cap_b;
    size_t f = sizeof(float), td = (size_t)cap * (size_t)m->conf.d;
    for (int l = 0; l < m->conf.layers; l++) {
        struct hstu_acts *A = &P->act[l];
        A->x = buf(m, td * f);
        A->n = buf(m, td * f);
        A->mean = buf(m, (size_t)cap * f);
        A->rstd = buf(m, (size_t)cap * f);
        A->pre = buf(m, 4 * td * f);
        A->h = buf(m, 4 * td * f);
        A->a = buf(m, td * f);
        A->o = buf(m, td * f);
        A->mean2 = buf(m, (size_t)cap * f);
        A->rstd2 = buf(m, (size_t)cap * f);
        A->z = buf(m, td * f);
        A->mask = buf(m, td);
    }
    P->xl = buf(m, td * f);
    P->y = buf(m, td * f);
    P->norm = buf(m, (size_t)cap * f);
    P->mask0 = buf(m, td);
    P->pos = buf(m, (size_t)cap * sizeof(int64_t));
    P->offsets = buf(m, (size_t)(cap_b + 1) * sizeof(int64_t));
    P->ts = buf(m, (size_t)cap * sizeof(int64_t));
    P->keys = buf(m, (size_t)cap * sizeof(uint64_t));
    P->ones = buf(m, (size_t)cap * f);
    P->dx = buf(m, td * f);
    P->dz = buf(m, td * f);
    P->dob = buf(m, td * f);
    P->da = buf(m, td * f);
    P->dh = buf(m, 4 * td * f);
    P->dn = buf(m, td * f);
    P->tmp = buf(m, td * f);
    if (m->conf.last_targets) {
        P->rn = buf(m, td * f);
        P->ridx = buf(m, (size_t)cap * sizeof(int64_t));
        P->rpos = buf(m, (size_t)cap * sizeof(int64_t));
        P->roff = buf(m, (size_t)(cap_b + 1) * sizeof(int64_t));
        P->rkeys = buf(m, (size_t)cap * sizeof(uint64_t));
    }
    float *ones = xmalloc((size_t)cap * f);
    for (int64_t i = 0; i < cap; i++)
        ones[i] = 1.0f;
    m->be->to_device(P->ones, ones, (size_t)cap * f);
    free(ones);
}

/* The split batch's arrays to the backend (checked by model_positions). */
static void load_split(struct model *m, const struct batch *b)
{
    struct hstu_priv *P = m->priv;
    const struct model_split *sp = b->split;
    P->split = sp != NULL;
    if (!sp)
        return;
    const int64_t K = sp->key_off[b->B];
    kbuf_reserve(m, b->B, K);
    model_upload(m, P->pos0, sp->pos0, (size_t)b->B * sizeof(int64_t));
    model_upload(m, P->key_off, sp->key_off, (size_t)(b->B + 1) * sizeof(int64_t));
    if (P->use_ts) {
        if (!sp->key_ts)
            fatal("model_hstu: a split batch with timestamps needs its keys' timestamps");
        model_upload(m, P->key_ts, sp->key_ts, (size_t)K * sizeof(int64_t));
    }
}

/* model.last_layer = targets: the read rows (batch.reads) to the backend,
 * with their positions (pos: the batch's), segments and dropout keys; none
 * (the full last layer) without reads or when every row is read. */
static void load_reads(struct model *m, const struct batch *b, const int64_t *pos)
{
    struct hstu_priv *P = m->priv;
    const int64_t R = b->nreads;
    P->rows_on = m->conf.last_targets && b->reads && R < b->T;
    if (!P->rows_on)
        return;
    if (b->B + 1 > P->hroff_cap) {
        P->hroff_cap = grown(b->B + 1, P->hroff_cap);
        P->hroff = xrealloc(P->hroff, (size_t)P->hroff_cap * sizeof *P->hroff);
    }
    int64_t *rpos = xmalloc((size_t)(R > 0 ? R : 1) * sizeof *rpos);
    uint64_t *rkeys = P->dropped ? xmalloc((size_t)(R > 0 ? R : 1) * sizeof *rkeys) : NULL;
    int64_t s = 0;
    for (int64_t r = 0; r < R; r++) {
        const int64_t t = b->reads[r];
        if (t < 0 || t >= b->T || (r > 0 && t <= b->reads[r - 1]))
            fatal("model_hstu: batch.reads[%lld] = %lld: not ascending within the %lld rows",
                  (long long)r, (long long)t, (long long)b->T);
        while (s < b->B && b->offsets[s + 1] <= t)
            P->hroff[++s] = r;
        rpos[r] = pos[t];
        if (rkeys)
            rkeys[r] = b->row_keys[t];
    }
    P->hroff[0] = 0;
    while (s < b->B)
        P->hroff[++s] = R;
    P->R = R;
    model_upload(m, P->ridx, b->reads, (size_t)R * sizeof *b->reads);
    model_upload(m, P->rpos, rpos, (size_t)R * sizeof *rpos);
    model_upload(m, P->roff, P->hroff, (size_t)(b->B + 1) * sizeof *P->hroff);
    if (rkeys)
        model_upload(m, P->rkeys, rkeys, (size_t)R * sizeof *rkeys);
    free(rpos);
    free(rkeys);
}

/* Copy the batch's host arrays to the backend; positions pos[t] = pos0[b]
 * + t - offsets[b] (pos0 = 0 unless split). */
static void load_batch(struct model *m, const struct batch *b)
{
    struct hstu_priv *P = m->priv;
    int64_t T = b->T;
    int64_t *pos = xmalloc((size_t)(T > 0 ? T : 1) * sizeof *pos);
    model_positions(m, b, "model_hstu", pos);
    model_upload(m, P->pos, pos, (size_t)T * sizeof *pos);
    model_upload(m, P->offsets, b->offsets, (size_t)(b->B + 1) * sizeof(int64_t));
    P->use_ts = m->conf.time_bias && b->ts;
    if (P->use_ts)
        model_upload(m, P->ts, b->ts, (size_t)T * sizeof(int64_t));
    P->dropped = b->train && m->conf.dropout > 0;
    if (P->dropped)
        model_upload(m, P->keys, b->row_keys, (size_t)T * sizeof(uint64_t));
    P->B = b->B;
    P->T = T;
    load_reads(m, b, pos);
    free(pos);
    load_split(m, b);
}

/* The last layer l with the read rows alone (model.last_layer = targets):
 * x = A->x -> xnext. */
static void last_rows_fwd(struct model *m, const struct batch *b, int l, float *xnext)
{
    const struct backend_ops *be = m->be;
    const struct model_conf *c = &m->conf;
    struct hstu_priv *P = m->priv;
    struct hstu_acts *A = &P->act[l];
    const int64_t T = b->T, R = P->R;
    const int d = c->d, H = c->heads, dh = d / H, hd = H * dh, N = c->max_len;
    const size_t th = (size_t)T * (size_t)hd;
    const struct batch cb = {.B = b->B, .T = R, .offsets = P->hroff}; /* the read rows */
    const float *uvqk = param(m, l, P_UVQK)->w, *pw = param(m, l, P_POS_BIAS)->w;
    const float *tb = P->use_ts ? param(m, l, P_TIME_BIAS)->w : NULL;
    be->layernorm_fwd(T, d, LN_EPS, A->x, NULL, NULL, A->n, A->mean, A->rstd);
    be->gather_rows(R, d, A->n, P->ridx, P->rn);
    for (int blk = 0; blk < 4; blk++) { /* U, Q (0, 2): the read rows; V, K: all */
        const int few = blk == 0 || blk == 2;
        model_gemm_rows(m, few ? &cb : b, 1, 0, hd, d, few ? P->rn : A->n, d,
                        uvqk + (size_t)blk * hd, 4 * hd, 0.0f, A->pre + (size_t)blk * th, hd);
        be->silu_fwd((few ? R : T) * hd, A->pre + (size_t)blk * th, A->h + (size_t)blk * th);
    }
    const float *U = A->h, *V = U + th, *Q = V + th, *K = Q + th;
    if (P->split) { /* every key first (no overlap: the queries need the earlier ones) */
        const struct model_split *sp = b->split;
        sp->post_kv(sp->ctx, hd, K, V, A->kb, A->vb);
        sp->wait_kv(sp->ctx);
        be->hstu_attn_rows_fwd(b->B, P->roff, P->rpos, P->key_off, H, dh, dh, N, Q, A->kb,
                               A->vb, pw, tb, P->use_ts ? P->key_ts : NULL, A->a);
    } else
        be->hstu_attn_rows_fwd(b->B, P->roff, P->rpos, P->offsets, H, dh, dh, N, Q, K, V, pw,
                               tb, P->use_ts ? P->ts : NULL, A->a);
    be->layernorm_fwd(R, hd, LN_EPS, A->a, NULL, NULL, A->o, A->mean2, A->rstd2);
    be->mul(R * hd, U, A->o, A->z);
    if (P->dropped)
        be->dropout_fwd(R, hd, c->dropout, P->rkeys, 1 + (uint64_t)l, A->z, A->z, A->mask);
    be->copy(xnext, A->x, (size_t)T * (size_t)d * sizeof(float));
    float *rx = P->dob; /* the read rows of x, then of xnext (backward work: free here) */
    be->gather_rows(R, d, A->x, P->ridx, rx);
    model_gemm_rows(m, &cb, 1, 0, d, hd, A->z, hd, param(m, l, P_OW)->w, d, 1.0f, rx, d);
    model_gemm_rows(m, &cb, 0, 0, d, 1, P->ones, 1, param(m, l, P_OB)->w, d, 1.0f, rx, d);
    be->index_rows(R, d, rx, NULL, xnext, P->ridx, 0);
}

/* Its backward: dx [T, d] (0 off the read rows) -> dx with the layer's
 * input gradient added; the layer's parameter gradients accumulated. */
static void last_rows_bwd(struct model *m, const struct batch *b, int l, float *dx)
{
    const struct backend_ops *be = m->be;
    const struct model_conf *c = &m->conf;
    struct hstu_priv *P = m->priv;
    struct hstu_acts *A = &P->act[l];
    const int64_t T = b->T, R = P->R;
    const int d = c->d, H = c->heads, dh = d / H, hd = H * dh, N = c->max_len;
    const size_t th = (size_t)T * (size_t)hd, rh = (size_t)R * (size_t)hd;
    const struct batch cb = {.B = b->B, .T = R, .offsets = P->hroff};
    struct dense_tensor *uvqk = param(m, l, P_UVQK), *ow = param(m, l, P_OW);
    struct dense_tensor *pb = param(m, l, P_POS_BIAS);
    struct dense_tensor *tb = P->use_ts ? param(m, l, P_TIME_BIAS) : NULL;
    const float *U = A->h, *V = U + th, *Q = V + th, *K = Q + th;
    float *dU = P->dh, *dV = dU + th, *dQ = dV + th, *dK = dQ + th;
    float *rdx = P->dob, *rdn = P->tmp; /* the read rows of dx (until dz), of dn */

    be->gather_rows(R, d, dx, P->ridx, rdx);
    model_grad_tokens(m, &cb, 0, 1, d, P->ones, 1, rdx, d, param(m, l, P_OB)->g, d);
    model_grad_tokens(m, &cb, 1, hd, d, A->z, hd, rdx, d, ow->g, d);
    model_gemm_rows(m, &cb, 1, 1, hd, d, rdx, d, ow->w, d, 0.0f, P->dz, hd);
    if (P->dropped)
        be->dropout_bwd(R, hd, c->dropout, A->mask, P->dz, P->dz);
    be->mul((int64_t)rh, P->dz, A->o, dU);
    be->mul((int64_t)rh, P->dz, U, P->dob);
    be->layernorm_bwd(R, hd, A->a, A->mean2, A->rstd2, NULL, P->dob, P->da, NULL, NULL);
    const float *tbw = tb ? tb->w : NULL;
    if (P->split) {
        const struct model_split *sp = b->split;
        be->hstu_attn_rows_bwd(b->B, P->roff, P->rpos, P->key_off, H, dh, dh, N, Q, A->kb,
                               A->vb, pb->w, tbw, tb ? P->key_ts : NULL, P->da, dQ, P->dkb,
                               P->dvb, pb->g, tb ? tb->g : NULL);
        sp->post_dkv(sp->ctx, hd, P->dkb, P->dvb);
        sp->wait_dkv(sp->ctx, hd, P->dkb, P->dvb, dK, dV);
    } else if (model_exact(m)) { /* the bias gradients per sequence, then exactly */
        const int64_t nb = pb->n + (tb ? tb->n : 0);
        float *dpb = model_grad_tmp(m, nb);
        for (int64_t s = 0; s < b->B; s++) {
            memset(dpb, 0, (size_t)nb * sizeof *dpb);
            be->hstu_attn_rows_bwd(1, P->roff + s, P->rpos, P->offsets + s, H, dh, dh, N, Q, K,
                                   V, pb->w, tbw, tb ? P->ts : NULL, P->da, dQ, dK, dV, dpb,
                                   tb ? dpb + pb->n : NULL);
            model_grad_add(m, pb->g, dpb, pb->n);
            if (tb)
                model_grad_add(m, tb->g, dpb + pb->n, tb->n);
        }
    } else
        be->hstu_attn_rows_bwd(b->B, P->roff, P->rpos, P->offsets, H, dh, dh, N, Q, K, V, pb->w,
                               tbw, tb ? P->ts : NULL, P->da, dQ, dK, dV, pb->g,
                               tb ? tb->g : NULL);
    /* dn in the full layer's order: U's rows (0 elsewhere), + V's, + Q's rows, + K's */
    for (int blk = 0; blk < 4; blk++) {
        const int few = blk == 0 || blk == 2;
        float *dpre = P->dh + (size_t)blk * th;
        const float *w = uvqk->w + (size_t)blk * hd;
        be->silu_bwd((few ? R : T) * hd, A->pre + (size_t)blk * th, dpre, dpre);
        model_grad_tokens(m, few ? &cb : b, 1, d, hd, few ? P->rn : A->n, d, dpre, hd,
                          uvqk->g + (size_t)blk * hd, 4 * hd);
        if (!few) {
            model_gemm_rows(m, b, 1, 1, d, hd, dpre, hd, w, 4 * hd, 1.0f, P->dn, d);
            continue;
        }
        if (blk == 0)
            be->zero(P->dn, (size_t)T * (size_t)d * sizeof(float));
        else
            be->gather_rows(R, d, P->dn, P->ridx, rdn);
        model_gemm_rows(m, &cb, 1, 1, d, hd, dpre, hd, w, 4 * hd, blk ? 1.0f : 0.0f, rdn, d);
        be->index_rows(R, d, rdn, NULL, P->dn, P->ridx, 0);
    }
    be->layernorm_bwd(T, d, A->x, A->mean, A->rstd, NULL, P->dn, P->tmp, NULL, NULL);
    be->axpy((int64_t)T * d, 1.0f, P->tmp, dx);
}

/* emb: [T, d] -> out: [T, d]; keeps the activations in m->priv. */
static void hstu_forward(struct model *m, const struct batch *b, const float *emb, float *out)
{
    const struct backend_ops *be = m->be;
    const struct model_conf *c = &m->conf;
    struct hstu_priv *P = m->priv;
    int64_t T = b->T;
    int d = c->d, H = c->heads, dh = d / H, hd = H * dh, N = c->max_len;
    size_t td = (size_t)T * (size_t)d;

    reserve(m, b->B, T);
    load_batch(m, b);
    float *x = c->layers > 0 ? P->act[0].x : P->xl;
    be->gather_rows(T, d, m->params[0].w, P->pos, x);
    be->axpy((int64_t)td, sqrtf((float)d), emb, x);
    if (P->dropped)
        be->dropout_fwd(T, d, c->dropout, P->keys, 0, x, x, P->mask0);

    for (int l = 0; l < c->layers; l++) {
        struct hstu_acts *A = &P->act[l];
        float *xnext = l + 1 < c->layers ? P->act[l + 1].x : P->xl;
        if (P->rows_on && l == c->layers - 1) {
            last_rows_fwd(m, b, l, xnext);
            model_between_layers(m, -1);
            continue;
        }
        const float *uvqk = param(m, l, P_UVQK)->w;
        const float *tb = P->use_ts ? param(m, l, P_TIME_BIAS)->w : NULL;
        be->layernorm_fwd(T, d, LN_EPS, A->x, NULL, NULL, A->n, A->mean, A->rstd);
        for (int blk = 0; blk < 4; blk++) /* column block blk of uvqk: [d, hd], ld 4 hd */
            model_gemm_rows(m, b, 1, 0, hd, d, A->n, d, uvqk + (size_t)blk * hd,
                               4 * hd, 0.0f, A->pre + (size_t)blk * T * hd, hd);
        be->silu_fwd(4 * T * hd, A->pre, A->h);
        const float *U = A->h, *V = U + (size_t)T * hd, *Q = V + (size_t)T * hd,
                    *K = Q + (size_t)T * hd;
        if (P->split) { /* own keys first, the earlier positions' when they arrive */
            const struct model_split *sp = b->split;
            const float *pw = param(m, l, P_POS_BIAS)->w;
            const int64_t *kts = P->use_ts ? P->key_ts : NULL;
            sp->post_kv(sp->ctx, hd, K, V, A->kb, A->vb);
            be->zero(A->a, td * sizeof(float));
            be->hstu_attn_ctx_fwd(b->B, P->offsets, P->pos0, P->key_off, HSTU_KEYS_OWN, H, dh, dh,
                                  N, Q, A->kb, A->vb, pw, tb, kts, A->a);
            sp->wait_kv(sp->ctx);
            be->hstu_attn_ctx_fwd(b->B, P->offsets, P->pos0, P->key_off, HSTU_KEYS_PREFIX, H, dh,
                                  dh, N, Q, A->kb, A->vb, pw, tb, kts, A->a);
        } else
            be->hstu_attn_fwd(b->B, P->offsets, H, dh, dh, N, Q, K, V,
                              param(m, l, P_POS_BIAS)->w, tb, P->use_ts ? P->ts : NULL, A->a);
        be->layernorm_fwd(T, hd, LN_EPS, A->a, NULL, NULL, A->o, A->mean2, A->rstd2);
        be->mul(T * hd, U, A->o, A->z);
        if (P->dropped)
            be->dropout_fwd(T, hd, c->dropout, P->keys, 1 + (uint64_t)l, A->z, A->z, A->mask);
        be->copy(xnext, A->x, td * sizeof(float));
        model_gemm_rows(m, b, 1, 0, d, hd, A->z, hd, param(m, l, P_OW)->w, d, 1.0f,
                           xnext, d);
        model_gemm_rows(m, b, 0, 0, d, 1, P->ones, 1, param(m, l, P_OB)->w, d, 1.0f, xnext, d);
        model_between_layers(m, -1);
    }
    be->l2norm_fwd(T, d, L2_EPS, P->xl, P->y, P->norm);
    be->copy(out, P->y, td * sizeof(float));
}

/* dout: [T, d] -> demb: [T, d] written; parameter gradients accumulated.
 * Uses the activations of the last forward (same batch). */
static void hstu_backward(struct model *m, const struct batch *b, const float *dout, float *demb)
{
    const struct backend_ops *be = m->be;
    const struct model_conf *c = &m->conf;
    struct hstu_priv *P = m->priv;
    int64_t T = P->T;
    int d = c->d, H = c->heads, dh = d / H, hd = H * dh, N = c->max_len;
    size_t td = (size_t)T * (size_t)d, th = (size_t)T * (size_t)hd;
    float *dx = P->dx; /* gradient of the residual stream x */

    if (b->T != T || b->B != P->B)
        fatal("model_hstu: backward batch (B %lld, T %lld) differs from forward's",
              (long long)b->B, (long long)b->T);
    be->l2norm_bwd(T, d, P->y, P->norm, dout, dx);
    for (int l = c->layers - 1; l >= 0; l--) {
        if (P->rows_on && l == c->layers - 1) {
            last_rows_bwd(m, b, l, dx);
            model_between_layers(m, 1 + l * per_layer(m));
            continue;
        }
        struct hstu_acts *A = &P->act[l];
        struct dense_tensor *uvqk = param(m, l, P_UVQK), *ow = param(m, l, P_OW);
        struct dense_tensor *pb = param(m, l, P_POS_BIAS);
        struct dense_tensor *tb = P->use_ts ? param(m, l, P_TIME_BIAS) : NULL;
        const float *U = A->h, *V = U + th, *Q = V + th, *K = Q + th;
        float *dU = P->dh, *dV = dU + th, *dQ = dV + th, *dK = dQ + th;

        model_grad_tokens(m, b, 0, 1, d, P->ones, 1, dx, d, param(m, l, P_OB)->g, d);
        model_grad_tokens(m, b, 1, hd, d, A->z, hd, dx, d, ow->g, d);
        model_gemm_rows(m, b, 1, 1, hd, d, dx, d, ow->w, d, 0.0f, P->dz, hd);
        if (P->dropped)
            be->dropout_bwd(T, hd, c->dropout, A->mask, P->dz, P->dz);
        be->mul((int64_t)th, P->dz, A->o, dU);
        be->mul((int64_t)th, P->dz, U, P->dob);
        be->layernorm_bwd(T, hd, A->a, A->mean2, A->rstd2, NULL, P->dob, P->da, NULL, NULL);
        if (P->split) { /* the earlier positions' key gradients first: they travel back */
            const struct model_split *sp = b->split;
            const int64_t *kts = tb ? P->key_ts : NULL;
            float *dtb = tb ? tb->g : NULL;
            const float *tbw = tb ? tb->w : NULL;
            be->zero(dQ, th * sizeof(float));
            be->hstu_attn_ctx_bwd(b->B, P->offsets, P->pos0, P->key_off, HSTU_KEYS_PREFIX, H, dh,
                                  dh, N, Q, A->kb, A->vb, pb->w, tbw, kts, P->da, dQ, P->dkb,
                                  P->dvb, pb->g, dtb);
            sp->post_dkv(sp->ctx, hd, P->dkb, P->dvb);
            be->hstu_attn_ctx_bwd(b->B, P->offsets, P->pos0, P->key_off, HSTU_KEYS_OWN, H, dh, dh,
                                  N, Q, A->kb, A->vb, pb->w, tbw, kts, P->da, dQ, P->dkb, P->dvb,
                                  pb->g, dtb);
            sp->wait_dkv(sp->ctx, hd, P->dkb, P->dvb, dK, dV);
        } else if (model_exact(m)) { /* the bias gradients per sequence, then exactly */
            const int64_t nb = pb->n + (tb ? tb->n : 0);
            float *dpb = model_grad_tmp(m, nb);
            for (int64_t s = 0; s < b->B; s++) {
                memset(dpb, 0, (size_t)nb * sizeof *dpb);
                be->hstu_attn_bwd(1, P->offsets + s, H, dh, dh, N, Q, K, V, pb->w,
                                  tb ? tb->w : NULL, tb ? P->ts : NULL, P->da, dQ, dK, dV, dpb,
                                  tb ? dpb + pb->n : NULL);
                model_grad_add(m, pb->g, dpb, pb->n);
                if (tb)
                    model_grad_add(m, tb->g, dpb + pb->n, tb->n);
            }
        } else
            be->hstu_attn_bwd(b->B, P->offsets, H, dh, dh, N, Q, K, V, pb->w,
                              tb ? tb->w : NULL, tb ? P->ts : NULL, P->da, dQ, dK, dV, pb->g,
                              tb ? tb->g : NULL);
        be->silu_bwd(4 * (int64_t)th, A->pre, P->dh, P->dh);
        for (int blk = 0; blk < 4; blk++) {
            const float *dpre = P->dh + (size_t)blk * th;
            model_grad_tokens(m, b, 1, d, hd, A->n, d, dpre, hd, uvqk->g + (size_t)blk * hd,
                              4 * hd);
            model_gemm_rows(m, b, 1, 1, d, hd, dpre, hd, uvqk->w + (size_t)blk * hd,
                               4 * hd, blk ? 1.0f : 0.0f, P->dn, d);
        }
        be->layernorm_bwd(T, d, A->x, A->mean, A->rstd, NULL, P->dn, P->tmp, NULL, NULL);
        be->axpy((int64_t)td, 1.0f, P->tmp, dx);
        model_between_layers(m, 1 + l * per_layer(m)); /* layers l.. are final */
    }
    if (P->dropped)
        be->dropout_bwd(T, d, c->dropout, P->mask0, dx, dx);
    model_grad_rows(m, T, d, dx, P->pos, m->params[0].g);
    be->copy(demb, dx, td * sizeof(float));
    be->scale((int64_t)td, sqrtf((float)d), demb);
    model_between_layers(m, 0);
}

static void hstu_free(struct model *m)
{
    struct hstu_priv *P = m->priv;
    if (!P)
        return;
    release(m);
    kbuf_release(m);
    free(P->kbufs.p);
    free(P->bufs.p);
    free(P->hroff);
    free(P->act);
    free(P);
    m->priv = NULL;
}

static void hstu_reserve(struct model *m, int64_t B, int64_t T, int64_t K, int touch)
{
    struct hstu_priv *P = m->priv;
    P->touch = touch;
    reserve(m, B, T);
    if (K > 0)
        kbuf_reserve(m, B, K);
    P->touch = 0;
}

static const struct model_vtable hstu_vtable = {
    .forward = hstu_forward,
    .backward = hstu_backward,
    .free = hstu_free,
    .reserve = hstu_reserve,
};

int model_hstu_tensors(const struct model_conf *conf)
{
    return 1 + conf->layers * (conf->time_bias ? 5 : 4);
}

int model_hstu_init(struct model *m, uint64_t seed, char *err, size_t errlen)
{
    const struct model_conf *c = &m->conf;
    int d = c->d, N = c->max_len, hd = d; /* hd = H dv = d */
    char name[48];

    if (N < 1)
        return errorf(err, errlen, "HSTU: max_len = %d must be >= 1", N);
    if (c->layers < 0 || model_hstu_tensors(c) > MODEL_MAX_PARAMS)
        return errorf(err, errlen, "HSTU: layers = %d out of range (at most %d)", c->layers,
                      (MODEL_MAX_PARAMS - 1) / (c->time_bias ? 5 : 4));
    if (!(c->dropout >= 0 && c->dropout < 1))
        return errorf(err, errlen, "HSTU: dropout = %g must be in [0, 1)", c->dropout);

    const float normal002 = 0.02f * sqrtf(3.0f); /* U(+-a) with the spread of N(0, 0.02) */
    model_add_param(m, "pos_emb", N, d, sqrtf(3.0f / (float)d), 1, seed);
    for (int l = 0; l < c->layers; l++) {
        snprintf(name, sizeof name, "l%d.uvqk", l);
        model_add_param(m, name, d, 4 * hd, normal002, 1, seed);
        snprintf(name, sizeof name, "l%d.o.w", l);
        model_add_param(m, name, hd, d, sqrtf(6.0f / (float)(hd + d)), 1, seed);
        snprintf(name, sizeof name, "l%d.o.b", l);
        model_add_param(m, name, 1, d, 1.0f / sqrtf((float)hd), 0, seed);
        snprintf(name, sizeof name, "l%d.pos_bias", l);
        model_add_param(m, name, 1, 2 * N - 1, normal002, 0, seed);
        if (c->time_bias) {
            snprintf(name, sizeof name, "l%d.time_bias", l);
            model_add_param(m, name, 1, HSTU_TIME_BUCKETS + 1, normal002, 0, seed);
        }
    }

    struct hstu_priv *P = xcalloc(1, sizeof *P);
    P->bufs.max = 12 * (c->layers > 0 ? c->layers : 1) + 32;
    P->bufs.p = xcalloc((size_t)P->bufs.max, sizeof *P->bufs.p);
    P->act = xcalloc((size_t)(c->layers > 0 ? c->layers : 1), sizeof *P->act);
    P->kbufs.max = 2 * c->layers + 8;
    P->kbufs.p = xcalloc((size_t)P->kbufs.max, sizeof *P->kbufs.p);
    m->priv = P;
    m->vt = &hstu_vtable;
    return 0;
}
