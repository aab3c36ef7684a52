/* model_sasrec: SASRec (Kang & McAuley 2018) on jagged batches, forward
 * and backward through the backend ops, as in the original TensorFlow code
 * and its widely used PyTorch port (pmixer/SASRec.pytorch, log2feats).
 *
 * x: [T, d] jagged, T = sum L_i; p = position of a token in its sequence.
 *   x = dropout_0(emb sqrt(d) + pos_emb[p])
 *   per layer l:
 *     q_in = LN_attn(x)                      (eps 1e-8, as in the port)
 *     Q = q_in Wq + bq,  K = x Wk + bk,  V = x Wv + bv   (only queries normalised)
 *     x = q_in + Attn(Q, K, V) Wout + bout   (the port's residual is q_in, not x)
 *     f_in = LN_ffn(x)
 *     x = f_in + dropout_{2+3l}(relu(dropout_{1+3l}(f_in W1 + b1)) W2 + b2)
 *   out = LN_final(x)
 * Attn is causal softmax attention per sequence and head (dh = d / H,
 * scale 1/sqrt(dh), backend sasrec_attn_*). Weights are stored [in, out]
 * (y = x W + b); dropout only when training with p > 0, keyed by the batch's
 * row_keys and the site number above.
 *
 * Deviations from the port: no dropout on the attention weights (the port's
 * nn.MultiheadAttention(dropout=p) drops attention probabilities); positions
 * count from the first item of each sequence (the port's left-padded
 * positions count from the start of the padded window); no padding rows at
 * all, so nothing attends to padding. Initialisation matches the variances of
 * the port's xavier_normal_ with uniform draws: pos_emb std sqrt(2/(N+d)),
 * q/k/v std sqrt(2/(4d)) (one [3d, d] in_proj tensor there), out/ffn std
 * sqrt(1/d); q/k/v/out biases 0, ffn biases U(+-1/sqrt(d)) (Conv1d default),
 * LayerNorm gamma 1, beta 0.
 *
 * With batch.split (context parallelism, model.h) positions start at each
 * segment's pos0, and each layer's attention runs on key buffers that also
 * hold the earlier positions' keys and values: the softmax over the own
 * keys first, then the earlier keys' merged in when they arrive
 * (sasrec_attn_ctx_*). Every other operation is per token. */
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/check.h"
#include "base/log.h"

#define SASREC_LN_EPS 1e-8f

/* parameter layout: [0] pos_emb, then L_COUNT per layer, then final LN */
enum {
    L_ATTN_G, L_ATTN_B, L_QW, L_QB, L_KW, L_KB, L_VW, L_VB, L_OW, L_OB,
    L_FFN_G, L_FFN_B, L_F1W, L_F1B, L_F2W, L_F2B, L_COUNT
};

struct sasrec_layer_act {
    float *qin, *q, *k, *v, *a, *x1, *fin, *r; /* [T, d]; r = relu(drop(f_in W1 + b1)) */
    float *mean1, *rstd1, *mean2, *rstd2;      /* [T] LayerNorm statistics */
    float *lse;                                /* [T, H] attention log-sum-exp */
    uint8_t *m1, *m2;                          /* [T, d] dropout masks */
};

struct sasrec_priv {
    int64_t cap;          /* rows allocated in every buffer below */
    int touch;            /* model_reserve: write every new float buffer (resident) */
    int drop;             /* last forward applied dropout */
    int64_t *pos_host;    /* [cap] positions (host) */
    int64_t *pos;         /* [cap] positions (backend) */
    uint64_t *keys;       /* [cap] dropout row keys (backend) */
    int64_t *offsets;     /* [cap_b + 1] sequence offsets (backend) */
    int64_t cap_b;
    float *ones;          /* [cap] ones: the biases' gradients (1^T dy) */
    int64_t *zeros;       /* [cap] zeros: row 0 of a bias, gathered to every row */
    float **xs;           /* [layers + 1] of [T, d]: input of layer l; xs[layers]: of LN_final */
    uint8_t *m0;          /* [T, d] input dropout mask */
    float *meanf, *rstdf; /* [T] */
    struct sasrec_layer_act *la; /* [layers] */
    float *dx, *dfin, *dz, *dr, *da, *dq, *dk, *dv, *dqin, *tmp; /* [T, d] backward scratch */
    /* split batches: key buffers of kcap rows and kcap_b segments */
    int64_t kcap, kcap_b;
    float **kb, **vb;     /* [layers] of [kcap, d] */
    float *dkb, *dvb;     /* [kcap, d] backward scratch */
    int64_t *pos0, *key_off; /* backend copies: [B], [B + 1] */
};

static struct dense_tensor *layer_params(struct model *m, int l)
{
    return &m->params[1 + l * L_COUNT];
}

static struct dense_tensor *final_params(struct model *m)
{
    return &m->params[1 + m->conf.layers * L_COUNT];
}

/* -- buffers ------------------------------------------------------------ */

static float *fbuf(const struct model *m, int64_t rows, int cols)
{
    float *p = m->be->alloc((size_t)(rows * cols) * sizeof(float));
    if (((const struct sasrec_priv *)m->priv)->touch) /* zero-filled already; resident now */
        m->be->zero(p, (size_t)(rows * cols) * sizeof(float));
    return p;
}

static void release(struct model *m)
{
    const struct backend_ops *be = m->be;
    struct sasrec_priv *s = m->priv;
    if (s->cap == 0)
        return;
    for (int l = 0; l < m->conf.layers; l++) {
        struct sasrec_layer_act *a = &s->la[l];
        float *f[] = {a->qin, a->q, a->k, a->v, a->a, a->x1, a->fin, a->r,
                      a->mean1, a->rstd1, a->mean2, a->rstd2, a->lse};
        for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
            be->free(f[i]);
        be->free(a->m1);
        be->free(a->m2);
    }
    for (int l = 0; l <= m->conf.layers; l++)
        be->free(s->xs[l]);
    float *f[] = {s->meanf, s->rstdf, s->ones, s->dx, s->dfin, s->dz, s->dr,
                  s->da, s->dq, s->dk, s->dv, s->dqin, s->tmp};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        be->free(f[i]);
    be->free(s->pos);
    be->free(s->zeros);
    be->free(s->keys);
    be->free(s->m0);
    free(s->pos_host);
    s->cap = 0;
}

static void split_release(struct model *m)
{
    struct sasrec_priv *s = m->priv;
    if (s->kcap == 0)
        return;
    for (int l = 0; l < m->conf.layers; l++) {
        m->be->free(s->kb[l]);
        m->be->free(s->vb[l]);
    }
    float *f[] = {s->dkb, s->dvb};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        m->be->free(f[i]);
    m->be->free(s->pos0);
    m->be->free(s->key_off);
    s->kcap = s->kcap_b = 0;
}

/* The split batches' key buffers: K rows, B segments. */
static void split_reserve(struct model *m, int64_t B, int64_t K)
{
    struct sasrec_priv *s = m->priv;
    if (K > s->kcap || B > s->kcap_b) {
        split_release(m);
        const int64_t n = K + K / 4 + 16, nb = B + B / 4 + 16;
        for (int l = 0; l < m->conf.layers; l++) {
            s->kb[l] = fbuf(m, n, m->conf.d);
            s->vb[l] = fbuf(m, n, m->conf.d);
        }
        s->dkb = fbuf(m, n, m->conf.d);
        s->dvb = fbuf(m, n, m->conf.d);
        s->pos0 = m->be->alloc((size_t)nb * sizeof(int64_t));
        s->key_off = m->be->alloc((size_t)(nb + 1) * sizeof(int64_t));
        s->kcap = n;
        s->kcap_b = nb;
    }
}

/* The split batch's key buffers; its pos0 and key_off (checked by
 * model_positions) copied to the backend. */
static void split_load(struct model *m, const struct batch *b)
{
    const struct model_split *sp = b->split;
    struct sasrec_priv *s = m->priv;
    split_reserve(m, b->B, sp->key_off[b->B]);
    model_upload(m, s->pos0, sp->pos0, (size_t)b->B * sizeof(int64_t));
    model_upload(m, s->key_off, sp->key_off, (size_t)(b->B + 1) * sizeof(int64_t));
}

/* Make every buffer hold T rows (grown per batch, never per sequence). */
static void reserve(struct model *m, int64_t T)
{
    struct sasrec_priv *s = m->priv;
    const int d = m->conf.d, H = m->conf.heads;
    if (s->cap > 0 && T <= s->cap) /* allocated even for T = 0: a rank with no sequence */
        return;
    release(m);
    const int64_t n = T + T / 4 + 16;
    for (int l = 0; l < m->conf.layers; l++) {
        struct sasrec_layer_act *a = &s->la[l];
        float **f[] = {&a->qin, &a->q, &a->k, &a->v, &a->a, &a->x1, &a->fin, &a->r};
        for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
            *f[i] = fbuf(m, n, d);
        a->mean1 = fbuf(m, n, 1);
        a->rstd1 = fbuf(m, n, 1);
        a->mean2 = fbuf(m, n, 1);
        a->rstd2 = fbuf(m, n, 1);
        a->lse = fbuf(m, n, H);
        a->m1 = m->be->alloc((size_t)(n * d));
        a->m2 = m->be->alloc((size_t)(n * d));
    }
    for (int l = 0; l <= m->conf.layers; l++)
        s->xs[l] = fbuf(m, n, d);
    float **f[] = {&s->dx, &s->dfin, &s->dz, &s->dr, &s->da, &s->dq, &s->dk, &s->dv,
                   &s->dqin, &s->tmp};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        *f[i] = fbuf(m, n, d);
    s->meanf = fbuf(m, n, 1);
    s->rstdf = fbuf(m, n, 1);
    s->m0 = m->be->alloc((size_t)(n * d));
    s->pos = m->be->alloc((size_t)n * sizeof(int64_t));
    s->zeros = m->be->alloc((size_t)n * sizeof(int64_t));
    m->be->zero(s->zeros, (size_t)n * sizeof(int64_t));
    s->keys = m->be->alloc((size_t)n * sizeof(uint64_t));
    s->pos_host = xmalloc((size_t)n * sizeof(int64_t));
    float *ones = xmalloc((size_t)n * sizeof *ones);
    for (int64_t i = 0; i < n; i++)
        ones[i] = 1.0f;
    s->ones = fbuf(m, n, 1);
    m->be->to_device(s->ones, ones, (size_t)n * sizeof *ones);
    free(ones);
    s->cap = n;
}

/* -- dense layers ------------------------------------------------------- */

/* y = x W + b; x, y: [T, d]; W: [d, d] as [in, out]; b: [d]. The rows of y
 * start as copies of b (the values a rank-1 GEMM 1 b with beta 0 gave,
 * without its call: bench/bench_ops), then y += x W. */
static void linear_fwd(struct model *m, const struct batch *bt, const float *x,
                       const struct dense_tensor *W, const struct dense_tensor *b, float *y)
{
    const struct sasrec_priv *s = m->priv;
    const int d = m->conf.d;
    m->be->gather_rows(bt->T, d, b->w, s->zeros, y);
    model_gemm_rows(m, bt, 1, 0, d, d, x, d, W->w, d, 1.0f, y, d);
}

/* dW += x^T dy, db += 1^T dy; dx = dy W^T (+= when accumulate) */
static void linear_bwd(struct model *m, const struct batch *bt, const float *x,
                       struct dense_tensor *W, struct dense_tensor *b, const float *dy, float *dx,
                       int accumulate)
{
    const struct sasrec_priv *s = m->priv;
    const int d = m->conf.d;
    model_grad_tokens(m, bt, 1, d, d, x, d, dy, d, W->g, d);
    if (model_exact(m)) /* db per sequence, exactly */
        model_grad_tokens(m, bt, 0, 1, d, s->ones, 1, dy, d, b->g, d);
    else /* db = 1^T dy, as a [1, T] row times dy */
        m->be->gemm(0, 0, 1, d, bt->T, 1.0f, s->ones, bt->T, dy, d, 1.0f, b->g, d);
    model_gemm_rows(m, bt, 1, 1, d, d, dy, d, W->w, d, accumulate ? 1.0f : 0.0f, dx, d);
}

/* -- forward / backward ------------------------------------------------- */

/* Two [cap, d] scratch buffers trade roles (what a copy from one to the
 * other would have done, without the pass over T d floats). */
static void swap_rows(float **a, float **b)
{
    float *t = *a;
    *a = *b;
    *b = t;
}

/* pos[t] = position of token t in its sequence (checked against N); the
 * batch's offsets and dropout keys copied to the backend. */
static void positions(struct model *m, const struct batch *b)
{
    struct sasrec_priv *s = m->priv;
    if (b->B + 1 > s->cap_b) {
        m->be->free(s->offsets);
        s->cap_b = b->B + 1 + b->B / 2;
        s->offsets = m->be->alloc((size_t)s->cap_b * sizeof(int64_t));
    }
    model_upload(m, s->offsets, b->offsets, (size_t)(b->B + 1) * sizeof(int64_t));
    if (b->train && m->conf.dropout > 0)
        model_upload(m, s->keys, b->row_keys, (size_t)b->T * sizeof(uint64_t));
    model_positions(m, b, "sasrec", s->pos_host);
    model_upload(m, s->pos, s->pos_host, (size_t)b->T * sizeof(int64_t));
}

/* emb, out: [T, d] */
static void sasrec_forward(struct model *m, const struct batch *b, const float *emb, float *out)
{
    const struct backend_ops *be = m->be;
    struct sasrec_priv *s = m->priv;
    const int d = m->conf.d, H = m->conf.heads, layers = m->conf.layers;
    const float p = m->conf.dropout;
    const int64_t T = b->T, n = T * d;
    reserve(m, T);
    positions(m, b);
    if (b->split)
        split_load(m, b);
    s->drop = b->train && p > 0;

    float *x = s->xs[0];
    be->gather_rows(T, d, m->params[0].w, s->pos, x);
    be->axpy(n, sqrtf((float)d), emb, x);
    if (s->drop)
        be->dropout_fwd(T, d, p, s->keys, 0, x, x, s->m0);

    for (int l = 0; l < layers; l++) {
        const struct dense_tensor *w = layer_params(m, l);
        struct sasrec_layer_act *a = &s->la[l];
        const float *xin = s->xs[l];
        float *xout = s->xs[l + 1];
        be->layernorm_fwd(T, d, SASREC_LN_EPS, xin, w[L_ATTN_G].w, w[L_ATTN_B].w, a->qin,
                          a->mean1, a->rstd1);
        linear_fwd(m, b, a->qin, &w[L_QW], &w[L_QB], a->q);
        linear_fwd(m, b, xin, &w[L_KW], &w[L_KB], a->k);
        linear_fwd(m, b, xin, &w[L_VW], &w[L_VB], a->v);
        if (b->split) { /* the own keys' softmax, then the earlier keys' merged in */
            const struct model_split *sp = b->split;
            sp->post_kv(sp->ctx, d, a->k, a->v, s->kb[l], s->vb[l]);
            be->sasrec_attn_ctx_fwd(b->B, s->offsets, s->pos0, s->key_off, HSTU_KEYS_OWN, H,
                                    d / H, a->q, s->kb[l], s->vb[l], a->a, a->lse);
            sp->wait_kv(sp->ctx);
            be->sasrec_attn_ctx_fwd(b->B, s->offsets, s->pos0, s->key_off, HSTU_KEYS_PREFIX, H,
                                    d / H, a->q, s->kb[l], s->vb[l], a->a, a->lse);
        } else
            be->sasrec_attn_fwd(b->B, s->offsets, H, d / H, m->conf.max_len, a->q, a->k, a->v,
                                a->a, a->lse);
        linear_fwd(m, b, a->a, &w[L_OW], &w[L_OB], a->x1);
        be->axpy(n, 1.0f, a->qin, a->x1);

        be->layernorm_fwd(T, d, SASREC_LN_EPS, a->x1, w[L_FFN_G].w, w[L_FFN_B].w, a->fin,
                          a->mean2, a->rstd2);
        linear_fwd(m, b, a->fin, &w[L_F1W], &w[L_F1B], a->r);
        if (s->drop)
            be->dropout_fwd(T, d, p, s->keys, 1 + 3 * (uint64_t)l, a->r, a->r, a->m1);
        be->relu_fwd(n, a->r, a->r);
        linear_fwd(m, b, a->r, &w[L_F2W], &w[L_F2B], xout);
        if (s->drop)
            be->dropout_fwd(T, d, p, s->keys, 2 + 3 * (uint64_t)l, xout, xout, a->m2);
        be->axpy(n, 1.0f, a->fin, xout);
        model_between_layers(m, -1);
    }
    const struct dense_tensor *f = final_params(m);
    be->layernorm_fwd(T, d, SASREC_LN_EPS, s->xs[layers], f[0].w, f[1].w, out, s->meanf,
                      s->rstdf);
}

/* dout, demb: [T, d]; uses the activations of the last forward (same batch) */
static void sasrec_backward(struct model *m, const struct batch *b, const float *dout,
                            float *demb)
{
    const struct backend_ops *be = m->be;
    struct sasrec_priv *s = m->priv;
    const int d = m->conf.d, H = m->conf.heads, layers = m->conf.layers;
    const float p = m->conf.dropout;
    const int64_t T = b->T, n = T * d;
    const size_t bytes = (size_t)n * sizeof(float);

    struct dense_tensor *f = final_params(m);
    model_layernorm_bwd(m, b, d, s->xs[layers], s->meanf, s->rstdf, f[0].w, dout, s->dx, f[0].g,
                        f[1].g);
    model_between_layers(m, 1 + layers * L_COUNT); /* the final LayerNorm */
    for (int l = layers - 1; l >= 0; l--) {
        struct dense_tensor *w = layer_params(m, l);
        struct sasrec_layer_act *a = &s->la[l];
        const float *xin = s->xs[l];
        /* s->dx = d(layer output) = d(f_in + drop(r W2 + b2)): read by W2's
         * backward, then d f_in = s->dx + (the FFN's part) in place */
        const float *dz = s->dx;
        if (s->drop) {
            be->dropout_bwd(T, d, p, a->m2, s->dx, s->dz);
            dz = s->dz;
        }
        linear_bwd(m, b, a->r, &w[L_F2W], &w[L_F2B], dz, s->dr, 0);
        be->relu_bwd(n, a->r, s->dr, s->dr); /* r > 0 exactly where its input was */
        if (s->drop)
            be->dropout_bwd(T, d, p, a->m1, s->dr, s->dr);
        linear_bwd(m, b, a->fin, &w[L_F1W], &w[L_F1B], s->dr, s->dx, 1);
        model_layernorm_bwd(m, b, d, a->x1, a->mean2, a->rstd2, w[L_FFN_G].w, s->dx, s->dfin,
                            w[L_FFN_G].g, w[L_FFN_B].g);
        swap_rows(&s->dx, &s->dfin);
        /* s->dx = d x1, x1 = q_in + a Wout + bout: read by Wout's backward,
         * then d q_in = s->dx + (the queries' part) in place */
        linear_bwd(m, b, a->a, &w[L_OW], &w[L_OB], s->dx, s->da, 0);
        if (b->split) { /* the earlier keys' gradients first: they travel back */
            const struct model_split *sp = b->split;
            be->zero(s->dq, bytes);
            be->sasrec_attn_ctx_bwd(b->B, s->offsets, s->pos0, s->key_off, HSTU_KEYS_PREFIX, H,
                                    d / H, a->q, s->kb[l], s->vb[l], a->a, a->lse, s->da, s->dq,
                                    s->dkb, s->dvb);
            sp->post_dkv(sp->ctx, d, s->dkb, s->dvb);
            be->sasrec_attn_ctx_bwd(b->B, s->offsets, s->pos0, s->key_off, HSTU_KEYS_OWN, H,
                                    d / H, a->q, s->kb[l], s->vb[l], a->a, a->lse, s->da, s->dq,
                                    s->dkb, s->dvb);
            sp->wait_dkv(sp->ctx, d, s->dkb, s->dvb, s->dk, s->dv);
        } else
            be->sasrec_attn_bwd(b->B, s->offsets, H, d / H, m->conf.max_len, a->q, a->k, a->v,
                                a->a, a->lse, s->da, s->dq, s->dk, s->dv);
        linear_bwd(m, b, a->qin, &w[L_QW], &w[L_QB], s->dq, s->dx, 1);
        linear_bwd(m, b, xin, &w[L_KW], &w[L_KB], s->dk, s->dqin, 0);
        linear_bwd(m, b, xin, &w[L_VW], &w[L_VB], s->dv, s->dqin, 1);
        model_layernorm_bwd(m, b, d, xin, a->mean1, a->rstd1, w[L_ATTN_G].w, s->dx, s->tmp,
                            w[L_ATTN_G].g, w[L_ATTN_B].g);
        be->axpy(n, 1.0f, s->tmp, s->dqin);
        swap_rows(&s->dx, &s->dqin); /* s->dx = d(layer input) */
        model_between_layers(m, 1 + l * L_COUNT);
    }
    if (s->drop)
        be->dropout_bwd(T, d, p, s->m0, s->dx, s->dx);
    model_grad_rows(m, T, d, s->dx, s->pos, m->params[0].g);
    be->copy(demb, s->dx, bytes);
    be->scale(n, sqrtf((float)d), demb);
    model_between_layers(m, 0);
}

static void sasrec_free(struct model *m)
{
    struct sasrec_priv *s = m->priv;
    if (!s)
        return;
    release(m);
    split_release(m);
    m->be->free(s->offsets);
    free(s->kb);
    free(s->vb);
    free(s->xs);
    free(s->la);
    free(s);
    m->priv = NULL;
}

static void sasrec_reserve(struct model *m, int64_t B, int64_t T, int64_t K, int touch)
{
    struct sasrec_priv *s = m->priv;
    s->touch = touch;
    reserve(m, T);
    if (K > 0)
        split_reserve(m, B, K);
    s->touch = 0;
}

static const struct model_vtable sasrec_vtable = {
    .forward = sasrec_forward,
    .backward = sasrec_backward,
    .free = sasrec_free,
    .reserve = sasrec_reserve,
};

int model_sasrec_tensors(const struct model_conf *conf) { return 1 + conf->layers * L_COUNT + 2; }

int model_sasrec_init(struct model *m, uint64_t seed, char *err, size_t errlen)
{
    const struct model_conf *c = &m->conf;
    const int d = c->d, N = c->max_len;
    if (c->layers < 1 || N < 1)
        return errorf(err, errlen, "sasrec: needs layers >= 1 and max_len >= 1 (got %d, %d)",
                      c->layers, N);
    if (!(c->dropout >= 0 && c->dropout < 1))
        return errorf(err, errlen, "sasrec: dropout %g outside [0, 1)", (double)c->dropout);
    if (model_sasrec_tensors(c) > MODEL_MAX_PARAMS)
        return errorf(err, errlen, "sasrec: %d layers need more than %d parameter tensors",
                      c->layers, MODEL_MAX_PARAMS);

    /* U(-a, a) has variance a^2 / 3: a = sqrt(3) std of the port's xavier_normal_ */
    const float s_pos = sqrtf(6.0f / (float)(N + d)), s_qkv = sqrtf(1.5f / (float)d),
                s_mat = sqrtf(3.0f / (float)d), s_bias = 1.0f / sqrtf((float)d);
    model_add_param(m, "pos_emb", N, d, s_pos, 1, seed);
    for (int l = 0; l < c->layers; l++) {
        static const struct {
            const char *name;
            int vector, decay, ones;
            int qkv;      /* matrix scale s_qkv instead of s_mat */
            int ffn_bias; /* bias scale s_bias instead of 0 */
        } spec[L_COUNT] = {
            [L_ATTN_G] = {"attn_ln.g", 1, 0, 1, 0, 0}, [L_ATTN_B] = {"attn_ln.b", 1, 0, 0, 0, 0},
            [L_QW] = {"q.w", 0, 1, 0, 1, 0},           [L_QB] = {"q.b", 1, 0, 0, 0, 0},
            [L_KW] = {"k.w", 0, 1, 0, 1, 0},           [L_KB] = {"k.b", 1, 0, 0, 0, 0},
            [L_VW] = {"v.w", 0, 1, 0, 1, 0},           [L_VB] = {"v.b", 1, 0, 0, 0, 0},
            [L_OW] = {"out.w", 0, 1, 0, 0, 0},         [L_OB] = {"out.b", 1, 0, 0, 0, 0},
            [L_FFN_G] = {"ffn_ln.g", 1, 0, 1, 0, 0},   [L_FFN_B] = {"ffn_ln.b", 1, 0, 0, 0, 0},
            [L_F1W] = {"ffn1.w", 0, 1, 0, 0, 0},       [L_F1B] = {"ffn1.b", 1, 0, 0, 0, 1},
            [L_F2W] = {"ffn2.w", 0, 1, 0, 0, 0},       [L_F2B] = {"ffn2.b", 1, 0, 0, 0, 1},
        };
        for (int i = 0; i < L_COUNT; i++) {
            char name[48];
            snprintf(name, sizeof name, "l%d.%s", l, spec[i].name);
            float scale = spec[i].vector ? (spec[i].ffn_bias ? s_bias : 0.0f)
                                         : (spec[i].qkv ? s_qkv : s_mat);
            struct dense_tensor *t = model_add_param(m, name, spec[i].vector ? 1 : d, d, scale,
                                                     spec[i].decay, seed);
            if (spec[i].ones)
                model_fill(m, t, 1.0f);
        }
    }
    model_fill(m, model_add_param(m, "final_ln.g", 1, d, 0.0f, 0, seed), 1.0f);
    model_add_param(m, "final_ln.b", 1, d, 0.0f, 0, seed);

    struct sasrec_priv *s = xcalloc(1, sizeof *s);
    s->xs = xcalloc((size_t)c->layers + 1, sizeof *s->xs);
    s->la = xcalloc((size_t)c->layers, sizeof *s->la);
    s->kb = xcalloc((size_t)c->layers, sizeof *s->kb);
    s->vb = xcalloc((size_t)c->layers, sizeof *s->vb);
    m->priv = s;
    m->vt = &sasrec_vtable;
    return 0;
}
