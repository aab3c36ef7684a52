/* tokens_target: the target mask of candidates (tokens.h) as a split batch
 * of the models' context-parallel attention (model.h, struct model_split),
 * computed on one rank:
 *
 *   sequence q = its H_q contextual and history tokens, then K_q candidates
 *   -> segment (q, 0): the H_q tokens at positions 0 .. H_q - 1, keys = its
 *      own (causal attention among them);
 *   -> segment (q, c): candidate c alone at position H_q, keys = the H_q
 *      history keys and its own: it attends to the history and to itself,
 *      not to the other candidates.
 * A segment's key rows are copies of token rows (src[r]); the copies are
 * made by post_kv and their gradients summed back by wait_dkv, in key-row
 * order (fixed sums). The attention of a candidate is thus exactly that of
 * the sequence "history, candidate", which training computes at that
 * position. */
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "model/tokens.h"

struct tok_target {
    int64_t S, Kr;       /* segments, key rows */
    int64_t *off;        /* [S + 1] the segments' token rows */
    int64_t *pos0;       /* [S] */
    int64_t *key_off;    /* [S + 1] */
    int64_t *key_ts;     /* [Kr] or NULL */
    int64_t *src;        /* [Kr] the token row each key row copies */
    int64_t *reads, nc;  /* [nc] the candidates' rows (the outputs read) */
    const struct backend_ops *be; /* a device's (tokens_target_device), or NULL: the host */
    int64_t *dsrc;       /* src in be's memory */
    struct model_split split;
};

static void *zalloc(int64_t n, size_t size) { return xcalloc((size_t)(n > 0 ? n : 1), size); }

/* kb[r] = k[src[r]], vb likewise: own rows and the history's, at once. */
static void post_kv(void *ctx, int64_t w, const float *k, const float *v, float *kb, float *vb)
{
    const struct tok_target *g = ctx;
    if (g->be) {
        g->be->gather_rows(g->Kr, (int)w, k, g->dsrc, kb);
        g->be->gather_rows(g->Kr, (int)w, v, g->dsrc, vb);
        return;
    }
    for (int64_t r = 0; r < g->Kr; r++) {
        memcpy(kb + r * w, k + g->src[r] * w, (size_t)w * sizeof *kb);
        memcpy(vb + r * w, v + g->src[r] * w, (size_t)w * sizeof *vb);
    }
}

static void wait_kv(void *ctx) { (void)ctx; }

static void post_dkv(void *ctx, int64_t w, const float *dkb, const float *dvb)
{
    (void)ctx, (void)w, (void)dkb, (void)dvb;
}

/* dk[t] = the sum over the key rows copied from token t, in row order. */
static void wait_dkv(void *ctx, int64_t w, const float *dkb, const float *dvb, float *dk,
                     float *dv)
{
    const struct tok_target *g = ctx;
    if (g->be) {
        const size_t bytes = (size_t)(g->off[g->S] * w) * sizeof *dk;
        g->be->zero(dk, bytes > 0 ? bytes : 1);
        g->be->zero(dv, bytes > 0 ? bytes : 1);
        g->be->scatter_add_rows(g->Kr, (int)w, dkb, g->dsrc, dk);
        g->be->scatter_add_rows(g->Kr, (int)w, dvb, g->dsrc, dv);
        return;
    }
    memset(dk, 0, (size_t)(g->off[g->S] * w) * sizeof *dk);
    memset(dv, 0, (size_t)(g->off[g->S] * w) * sizeof *dv);
    for (int64_t r = 0; r < g->Kr; r++) {
        float *a = dk + g->src[r] * w, *b = dv + g->src[r] * w;
        const float *x = dkb + r * w, *y = dvb + r * w;
        for (int64_t j = 0; j < w; j++) {
            a[j] += x[j];
            b[j] += y[j];
        }
    }
}

void tokens_target_batch(struct tokens *tk, struct batch *mb)
{
    tokens_target_free(tk);
    struct tok_target *g = xcalloc(1, sizeof *g);
    int64_t S = 0, Kr = 0;
    for (int64_t q = 0; q < tk->B; q++) {
        const int64_t K = tk->ncand[q], H = tk->xoff[q + 1] - tk->xoff[q] - K;
        S += 1 + K;
        Kr += H + K * (H + 1);
    }
    g->S = S;
    g->Kr = Kr;
    g->off = zalloc(S + 1, sizeof *g->off);
    g->pos0 = zalloc(S, sizeof *g->pos0);
    g->key_off = zalloc(S + 1, sizeof *g->key_off);
    g->key_ts = tk->xts ? zalloc(Kr, sizeof *g->key_ts) : NULL;
    g->src = zalloc(Kr, sizeof *g->src);
    g->reads = zalloc(S - tk->B, sizeof *g->reads);
    int64_t s = 0, r = 0;
    for (int64_t q = 0; q < tk->B; q++) {
        const int64_t x0 = tk->xoff[q], K = tk->ncand[q], H = tk->xoff[q + 1] - x0 - K;
        for (int64_t c = -1; c < K; c++, s++) { /* c = -1: the history segment */
            g->off[s] = c < 0 ? x0 : x0 + H + c;
            g->pos0[s] = c < 0 ? 0 : H;
            g->key_off[s] = r;
            if (c >= 0)
                g->reads[g->nc++] = x0 + H + c;
            for (int64_t j = 0; j < H; j++)
                g->src[r++] = x0 + j;
            if (c >= 0)
                g->src[r++] = x0 + H + c;
        }
    }
    g->off[S] = tk->Tx;
    g->key_off[S] = r;
    for (int64_t k = 0; g->key_ts && k < Kr; k++)
        g->key_ts[k] = tk->xts[g->src[k]];
    g->split = (struct model_split){.pos0 = g->pos0, .key_off = g->key_off,
                                    .key_ts = g->key_ts, .post_kv = post_kv, .wait_kv = wait_kv,
                                    .post_dkv = post_dkv, .wait_dkv = wait_dkv, .ctx = g};
    tk->tgt = g;
    mb->B = S;
    mb->offsets = g->off;
    mb->split = &g->split;
    mb->reads = g->reads;
    mb->nreads = g->nc;
}

void tokens_target_device(struct tokens *tk, const struct backend_ops *be)
{
    struct tok_target *g = tk->tgt;
    g->be = be;
    const size_t bytes = (size_t)(g->Kr > 0 ? g->Kr : 1) * sizeof *g->dsrc;
    g->dsrc = be->alloc(bytes);
    be->to_device(g->dsrc, g->src, bytes);
}

void tokens_target_free(struct tokens *tk)
{
    struct tok_target *g = tk->tgt;
    if (!g)
        return;
    if (g->be)
        g->be->free(g->dsrc);
    free(g->off);
    free(g->pos0);
    free(g->key_off);
    free(g->key_ts);
    free(g->src);
    free(g->reads);
    free(g);
    tk->tgt = NULL;
}
