/* emb_xstate: what a table's exchanges keep across steps (the pool of
 * exchanges, pinned buffers, events, the ids of the next lookup, the
 * counters kept in the table's memory) and the buffers in the table's
 * memory; see emb_exchange_priv.h. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "embedding/emb_exchange_priv.h"

void *emb_buf_get(const struct backend_ops *be, struct emb_buf *b, size_t bytes)
{
    if (bytes > b->cap || !b->p) {
        if (b->p)
            be->free(b->p);
        b->cap = bytes + bytes / 4;
        b->p = be->alloc(b->cap ? b->cap : 1);
    }
    return b->p;
}

void emb_buf_free(const struct backend_ops *be, struct emb_buf *b)
{
    if (b->p)
        be->free(b->p);
    memset(b, 0, sizeof *b);
}

struct emb_xstate *emb_xstate(struct emb_table *t)
{
    if (t->xs)
        return t->xs;
    struct emb_xstate *xs = xcalloc(1, sizeof *xs);
    const struct backend_ops *be = t->be;
    xs->mode = backend_is_host(be) ? EMB_XF_HOST : t->conf.direct ? EMB_XF_DIRECT
                                                                   : EMB_XF_STAGED;
    if (xs->mode != EMB_XF_HOST)
        for (int k = 0; k < EMB_NX; k++) {
            xs->ready[k] = be->event_new(0);
            xs->landed[k] = be->event_new(0);
        }
    xs->up = stage_new(be);
    emb_buf_get(be, &xs->stats, sizeof(int64_t)); /* zero-filled */
    t->xs = xs;
    return xs;
}

static void exchange_release(const struct backend_ops *be, struct emb_exchange *x)
{
    struct emb_buf *b[] = {&x->b_uniq,     &x->b_inv,    &x->b_serve, &x->b_served,
                           &x->b_rows,     &x->b_cw,     &x->b_gu,    &x->b_gk,
                           &x->b_gs,       &x->b_served_w, &x->b_rows_w, &x->b_gu_w,
                           &x->b_gs_w,     &x->b_sid,    &x->b_sg,    &x->b_bad,
                           &x->b_xg,       &x->b_xs};
    for (size_t i = 0; i < sizeof b / sizeof *b; i++)
        emb_buf_free(be, b[i]);
    emb_prefetch_release(be, x->pf);
    if (x->freed)
        be->event_free(x->freed);
    free(x->scounts);
    free(x->spans);
    free(x->cnt);
    for (int k = 0; k < EMB_NX; k++)
        emb_layout_free(&x->xf[k].lay);
    free(x);
}

void emb_xstate_free(struct emb_table *t)
{
    struct emb_xstate *xs = t->xs;
    if (!xs)
        return;
    const struct backend_ops *be = t->be;
    emb_ipc_free(t); /* collective: the peers' mappings of its windows */
    for (int i = 0; i < xs->npool; i++)
        exchange_release(be, xs->pool[i]);
    for (int k = 0; k < EMB_NX; k++) {
        if (xs->pin_s[k].p)
            be->host_free(xs->pin_s[k].p);
        if (xs->pin_r[k].p)
            be->host_free(xs->pin_r[k].p);
        if (xs->ready[k])
            be->event_free(xs->ready[k]);
        if (xs->landed[k])
            be->event_free(xs->landed[k]);
    }
    emb_buf_free(be, &xs->ids);
    emb_buf_free(be, &xs->keys);
    emb_buf_free(be, &xs->stats);
    free(xs->touched);
    stage_free(xs->up);
    free(xs);
    t->xs = NULL;
}

struct emb_exchange *emb_xstate_get(struct emb_table *t)
{
    struct emb_xstate *xs = emb_xstate(t);
    struct emb_exchange *x;
    if (xs->npool > 0) {
        x = xs->pool[--xs->npool];
    } else {
        x = xcalloc(1, sizeof *x);
        const int G = t->G;
        x->scounts = xcalloc((size_t)G * 6, sizeof(int64_t));
        x->spans = xmalloc((size_t)G * 2 * sizeof *x->spans);
        x->cnt = xmalloc((size_t)G * 4 * sizeof *x->cnt);
        for (int k = 0; k < EMB_NX; k++)
            x->xf[k].lay = emb_layout_new(G);
    }
    /* everything but the buffers and the host arrays starts afresh */
    struct emb_exchange keep = *x;
    memset(x, 0, offsetof(struct emb_exchange, b_uniq));
    memset(&x->uniq, 0, sizeof *x - offsetof(struct emb_exchange, uniq));
    x->scounts = keep.scounts;
    x->spans = keep.spans;
    x->cnt = keep.cnt;
    x->pf = keep.pf;
    for (int k = 0; k < EMB_NX; k++) /* receives into the buffers wait for their last use */
        x->xf[k] = (struct emb_xfer){.lay = keep.xf[k].lay,
                                     .reuse = x->freed_set ? x->freed : NULL};
    memset(x->scounts, 0, (size_t)t->G * 6 * sizeof(int64_t));
    x->sdispls = x->scounts + t->G;
    x->rcounts = x->scounts + 2 * t->G;
    x->rdispls = x->scounts + 3 * t->G;
    x->scounts0 = x->scounts + 4 * t->G;
    x->rcounts0 = x->scounts + 5 * t->G;
    x->tab = t;
    x->G = t->G;
    return x;
}

void emb_xstate_put(struct emb_table *t, struct emb_exchange *x)
{
    struct emb_xstate *xs = emb_xstate(t);
    if (xs->npool == EMB_POOL) {
        exchange_release(t->be, x);
        return;
    }
    if (t->be->event_record) { /* device buffers: their last use is enqueued by now */
        if (!x->freed)
            x->freed = t->be->event_new(0);
        t->be->event_record(x->freed, BACKEND_COMPUTE);
        x->freed_set = 1;
    }
    xs->pool[xs->npool++] = x;
}

void emb_xstate_wire(struct emb_table *t)
{
    struct emb_xstate *xs = t->xs;
    if (!xs || !xs->tokens)
        return;
    int64_t local = xs->tokens; /* one shard: every token's row is local, not counted */
    if (t->G > 1) { /* one host wait per logging interval on a device table */
        void *owned;
        const int64_t *st = backend_download(t->be, xs->stats.p, sizeof local, &owned);
        local = st[0];
        free(owned);
        t->be->zero(xs->stats.p, sizeof local);
    }
    t->wire.fp32 += (xs->tokens - local) * 4 * (int64_t)t->conf.dim;
    xs->tokens = 0;
}

/* --- the ids of the next lookup ---------------------------------------------- */

int64_t *emb_ids_reserve(struct emb_table *t, int64_t n)
{
    struct emb_xstate *xs = emb_xstate(t);
    return emb_buf_get(t->be, &xs->ids, (size_t)(n ? n : 1) * sizeof(int64_t));
}

void emb_ids_put(struct emb_table *t, int64_t off, const int64_t *ids, int64_t count, int rank)
{
    char err[512];
    if (emb_check_ids(&t->conf, ids, count, rank, err, sizeof err))
        fatal("%s", err);
    struct emb_xstate *xs = emb_xstate(t);
    stage_up(xs->up, (int64_t *)xs->ids.p + off, ids, (size_t)count * sizeof *ids);
}

void emb_ids_negatives(struct emb_table *t, int64_t off, uint64_t seed, uint64_t epoch,
                       const uint64_t *keys, int64_t T, int R, int64_t num_items)
{
    if (num_items < 1)
        fatal("embedding table '%s': no items to sample negatives from", t->conf.name);
    struct emb_xstate *xs = emb_xstate(t);
    const struct backend_ops *be = t->be;
    const uint64_t *k = keys;
    if (xs->mode != EMB_XF_HOST) {
        uint64_t *d = emb_buf_get(be, &xs->keys, (size_t)(T ? T : 1) * sizeof *keys);
        stage_up(xs->up, d, keys, (size_t)T * sizeof *keys);
        k = d;
    }
    be->sample_negatives(seed, epoch, k, T, R, num_items, (int64_t *)xs->ids.p + off);
}

/* --- codecs --------------------------------------------------------------------- */

void emb_wire_encode(struct emb_exchange *x, enum emb_codec cd, int64_t n, int width,
                     const float *rows, uint8_t *wire, int which)
{
    if (!n)
        return;
    x->tab->be->emb_encode((int)cd, n, width, rows, wire, x->bad + which);
    if (emb_xstate(x->tab)->mode == EMB_XF_HOST)
        emb_codec_check(x, which);
}

void emb_codec_check(struct emb_exchange *x, int which)
{
    const struct emb_table *t = x->tab;
    const struct backend_ops *be = t->be;
    const enum emb_codec cd = which ? x->gcodec : x->rcodec;
    if (cd == EMB_CODEC_FP32 || !x->bad)
        return;
    void *o_bad, *o_rows, *o_ids;
    const uint64_t *bad = backend_download(be, x->bad + which, sizeof *bad, &o_bad);
    const int set = bad[0] != 0;
    free(o_bad);
    if (!set)
        return;
    /* the error path: find the first row the codec cannot carry, on the host */
    const int64_t n = which ? x->nuniq : x->nserve;
    const float *src = which ? (t->sub ? x->gk : x->gu) : x->served;
    const float *rows = backend_download(be, src, (size_t)n * x->width * sizeof(float), &o_rows);
    const int64_t *ids = backend_download(be, which ? x->uniq : x->serve, (size_t)n * 8, &o_ids);
    uint8_t *wire = xmalloc((size_t)(n ? n : 1) * (size_t)emb_codec_row_bytes(cd, x->width));
    char err[512];
    if (emb_codec_encode_ids(cd, n, x->width, rows, wire, ids, t->conf.name,
                             which ? "gradient" : "row", err, sizeof err))
        fatal("%s", err);
    fatal("embedding table '%s': the %s codec refused a %s (device flag) that the host "
          "encodes", t->conf.name, emb_codec_name(cd), which ? "gradient" : "row");
}
