/* tokens_dev: the token assembly on a device backend; see tokens_dev.h.
 * Each step below is the host loop of tokens.c it replaces, as one
 * index_rows (copy: memcpy, add: +=) in the same order per row. */
#include "model/tokens_dev.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"

static size_t fbytes(int64_t n, int d) { return (size_t)(n > 0 ? n : 1) * (size_t)d * sizeof(float); }

/* Mirror host[n] (elements of size bytes) on be and copy it there (at
 * least one element's room), staged (no host wait). */
static void up(struct tokens_dev *D, struct mirror *mr, const struct backend_ops *be,
               const void *host, int64_t n, size_t size)
{
    const size_t bytes = (size_t)(n > 0 ? n : 0) * size;
    mirror_bind(mr, be, &backend_cpu, host, bytes > 0 ? bytes : size);
    mirror_up_async(mr, D->st, 0, bytes);
}

void tokens_dev_load(struct tokens_dev *D, const struct backend_ops *be, const struct tokens *tk)
{
    const int d = tk->d;
    if (D->st && D->be != be) {
        stage_free(D->st);
        D->st = NULL;
    }
    D->be = be;
    if (!D->st)
        D->st = stage_new(be);
    up(D, &D->xrow, be, tk->xrow, tk->T, sizeof(int64_t));
    if (tk->xact)
        up(D, &D->xact, be, tk->xact, tk->T, sizeof(int64_t));
    if (tk->aprev)
        up(D, &D->aprev, be, tk->aprev, tk->T, sizeof(int64_t));
    if (tk->act)
        mirror_bind(&D->act, be, be, NULL, fbytes(tk->Te, d));
    if (tk->B > D->hctx_cap) {
        D->hctx_cap = tk->B + tk->B / 4;
        D->hctx = xrealloc(D->hctx, (size_t)D->hctx_cap * sizeof *D->hctx);
    }
    for (int i = 0; i < tk->s->n; i++) {
        const struct feat_spec *sp = &tk->s->f[i];
        const struct tok_feat *f = &tk->f[i];
        if (sp->role == FEAT_ITEM) /* in the representations (host) */
            continue;
        up(D, &D->out[i], be, f->out, f->ne, (size_t)d * sizeof(float));
        if (sp->role == FEAT_USER) {
            for (int64_t q = 0; q < tk->B; q++) /* -1: none (skipped) */
                D->hctx[q] = tk->xctx[q] >= 0 ? tk->xctx[q] + sp->ctx : -1;
            up(D, &D->ctxrow[i], be, D->hctx, tk->B, sizeof(int64_t));
        }
    }
}

void tokens_dev_inputs(struct tokens_dev *D, const struct tokens *tk, const float *emb, float *x)
{
    const struct backend_ops *be = D->be;
    const int d = tk->d;
    const int64_t T = tk->T;
    const int64_t *xrow = mirror_at(&D->xrow);
    if (tk->Tx != T) {
        be->index_rows(T, d, emb, NULL, x, xrow, 0);
        for (int i = 0; i < tk->s->n; i++)
            if (tk->s->f[i].role == FEAT_USER)
                be->index_rows(tk->B, d, mirror_at(&D->out[i]), NULL, x,
                               mirror_at(&D->ctxrow[i]), 0);
    } else if (x != emb)
        be->copy(x, emb, fbytes(T, d));
    if (tk->s->actions == ACT_NONE) { /* event features on their own token */
        for (int i = 0; i < tk->s->n; i++)
            if (tk->s->f[i].role == FEAT_EVENT)
                be->index_rows(T, d, mirror_at(&D->out[i]), NULL, x, xrow, 1);
        return;
    }
    float *act = mirror_at(&D->act); /* a_t: the event features' sum (the leads' too) */
    be->zero(act, fbytes(tk->Te, d));
    for (int i = 0; i < tk->s->n; i++)
        if (tk->s->f[i].role == FEAT_EVENT)
            be->index_rows(tk->Te, d, mirror_at(&D->out[i]), NULL, act, NULL, 1);
    if (tk->xact) /* the action tokens (interleave) */
        be->index_rows(T, d, act, NULL, x, mirror_at(&D->xact), 0);
    if (tk->aprev) /* the previous event's action onto its item (sum) */
        be->index_rows(T, d, act, mirror_at(&D->aprev), x, xrow, 1);
}

void tokens_dev_outputs(struct tokens_dev *D, const struct tokens *tk, const float *out_x,
                        float *out_ev)
{
    D->be->index_rows(tk->T, tk->d, out_x, mirror_at(&D->xrow), out_ev, NULL, 0);
}

void tokens_dev_dout(struct tokens_dev *D, const struct tokens *tk, const float *du_ev,
                     float *du_x)
{
    D->be->zero(du_x, fbytes(tk->Tx, tk->d));
    D->be->index_rows(tk->T, tk->d, du_ev, NULL, du_x, mirror_at(&D->xrow), 0);
}

void tokens_dev_inputs_bwd(struct tokens_dev *D, struct tokens *tk, const float *dx, float *demb,
                           int64_t extra)
{
    const struct backend_ops *be = D->be;
    const int d = tk->d;
    const int64_t T = tk->T;
    const int64_t *xrow = mirror_at(&D->xrow);
    if (tk->ncand)
        fatal("tokens: the backward of a batch with candidates (evaluation only)");
    const float *gev = NULL; /* the event features' dout: [Te, d] */
    const int64_t Te = tk->Te; /* T, and the leads (summed actions only) */
    if (tk->s->actions != ACT_NONE) { /* before demb, which may be dx */
        float *act = mirror_at(&D->act);
        be->zero(act, fbytes(Te, d));
        if (tk->xact)
            be->index_rows(T, d, dx, mirror_at(&D->xact), act, NULL, 0);
        if (tk->aprev) /* each event's action is added to one item at most */
            be->index_rows(T, d, dx, xrow, act, mirror_at(&D->aprev), 1);
        gev = act;
    } else if (tk->s->n_event > 0) {
        float *g = mirror_bind(&D->tmp, be, be, NULL, fbytes(T, d));
        be->index_rows(T, d, dx, xrow, g, NULL, 0);
        gev = g;
    }
    /* the event features' dout [T, d] (one for all), then each user feature's
     * [B, d], gathered into one buffer and downloaded at once (one host wait) */
    int ev = 0;
    for (int i = 0; i < tk->s->n; i++)
        ev |= tk->s->f[i].role == FEAT_EVENT;
    ev = ev && gev && Te > 0;
    int64_t nf = ev ? Te * d : 0;
    for (int i = 0; i < tk->s->n; i++)
        if (tk->s->f[i].role == FEAT_USER)
            nf += tk->B * d;
    float *g = mirror_bind(&D->tmpu, be, be, NULL, (size_t)(nf + extra + 1) * sizeof *g);
    int64_t at = 0;
    if (ev) {
        be->copy(g, gev, (size_t)(Te * d) * sizeof *g);
        at = Te * d;
    }
    for (int i = 0; i < tk->s->n; i++)
        if (tk->s->f[i].role == FEAT_USER && tk->B > 0) {
            if (tk->ctx_missing) /* the rows of pieces without them: 0 */
                be->zero(g + at, (size_t)(tk->B * d) * sizeof *g);
            be->index_rows(tk->B, d, dx, mirror_at(&D->ctxrow[i]), g + at, NULL, 0);
            at += tk->B * d;
        }
    D->nf = nf;
    D->ev = ev;
    if (tk->Tx != T)
        be->index_rows(T, d, dx, xrow, demb, NULL, 0);
    else if (demb != dx)
        be->copy(demb, dx, fbytes(T, d));
}

void tokens_dev_grads(struct tokens_dev *D, struct tokens *tk, const float *extra, int64_t nextra,
                      float *hextra)
{
    const struct backend_ops *be = D->be;
    const int d = tk->d;
    const int64_t Te = tk->Te, nf = D->nf;
    float *g = mirror_at(&D->tmpu);
    if (nextra > 0)
        be->copy(g + nf, extra, (size_t)nextra * sizeof *g);
    if (nf + nextra > D->hg_cap) {
        D->hg_cap = nf + nextra;
        D->hg = xrealloc(D->hg, (size_t)D->hg_cap * sizeof *D->hg);
    }
    if (nf + nextra > 0)
        be->to_host(D->hg, g, (size_t)(nf + nextra) * sizeof *D->hg);
    int64_t at = D->ev ? Te * d : 0;
    for (int i = 0; i < tk->s->n; i++) {
        const struct feat_spec *sp = &tk->s->f[i];
        struct tok_feat *f = &tk->f[i];
        if (sp->role == FEAT_EVENT && D->ev)
            memcpy(f->dout, D->hg, (size_t)(Te * d) * sizeof *f->dout);
        else if (sp->role == FEAT_USER && tk->B > 0) {
            memcpy(f->dout, D->hg + at, (size_t)(tk->B * d) * sizeof *f->dout);
            at += tk->B * d;
        }
    }
    if (nextra > 0)
        memcpy(hextra, D->hg + nf, (size_t)nextra * sizeof *hextra);
}

void tokens_dev_free(struct tokens_dev *D)
{
    struct mirror *m[] = {&D->xrow, &D->xact, &D->aprev, &D->act, &D->tmp, &D->tmpu};
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        mirror_free(m[i]);
    for (int i = 0; i < DATASET_MAX_FEATURES; i++) {
        mirror_free(&D->ctxrow[i]);
        mirror_free(&D->out[i]);
    }
    free(D->hctx);
    free(D->hg);
    stage_free(D->st);
    memset(D, 0, sizeof *D);
}
