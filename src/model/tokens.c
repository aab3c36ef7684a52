/* tokens: the token assembly; see tokens.h. Plain loops on host memory
 * (the CPU reference), in a fixed order: the same sums on any rank count. */
#include "model/tokens.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/exact.h"
#include "base/rng.h"

static void *zalloc(int64_t n, size_t size) { return xcalloc((size_t)(n > 0 ? n : 1), size); }

/* The requests of entity e: its non-missing values vals[cnt]. */
static void add_values(struct tok_feat *f, int64_t *at, const int32_t *vals, int64_t cnt)
{
    for (int64_t j = 0; j < cnt; j++)
        if (vals[j] != 0)
            f->req[(*at)++] = vals[j];
}

/* Plan feature i over ne entities; values(e) from the column or evv (and
 * their weights evw, NULL: 1). */
static void plan_feature(struct tokens *tk, const struct feat_values *v, int i, int64_t ne,
                         const int64_t *entity, const int32_t *evv, const float *evw)
{
    const struct feat_spec *sp = &tk->s->f[i];
    struct tok_feat *f = &tk->f[i];
    f->ne = ne;
    f->off = zalloc(ne + 1, sizeof *f->off);
    int64_t total = 0;
    const int32_t *vals;
    for (int64_t e = 0; e < ne; e++)
        total += evv ? 1 : feat_values_of(v, i, entity[e], &vals);
    f->req = zalloc(total, sizeof *f->req);
    f->w = evw ? zalloc(total, sizeof *f->w) : NULL;
    int64_t at = 0;
    for (int64_t e = 0; e < ne; e++) {
        if (evw && evv[e] != 0)
            f->w[at] = evw[e];
        if (evv)
            add_values(f, &at, evv + e, 1);
        else
            add_values(f, &at, vals, feat_values_of(v, i, entity[e], &vals));
        f->off[e + 1] = at;
    }
    f->pool = zalloc(ne * sp->width, sizeof *f->pool);
    f->out = sp->proj >= 0 ? zalloc(ne * tk->d, sizeof *f->out) : f->pool;
    f->dout = zalloc(ne * tk->d, sizeof *f->dout);
    tk->req[sp->table] = f->req;
    tk->nreq[sp->table] = at;
    if (sp->proj >= 0) {
        tk->proj_ids[i] = zalloc(sp->width, sizeof(int64_t));
        for (int j = 0; j < sp->width; j++)
            tk->proj_ids[i][j] = j + 1;
        tk->req[sp->proj] = tk->proj_ids[i];
        tk->nreq[sp->proj] = sp->width;
        f->P = zalloc((int64_t)sp->width * tk->d, sizeof *f->P);
    }
}

/* The model batch's layout: per sequence C contextual tokens, then each
 * event's item (and its action token when interleaved), the candidates
 * last (their item alone). */
static void plan_layout(struct tokens *tk, const struct seq_batch *b)
{
    const int m = tk->s->actions == ACT_INTERLEAVE ? 2 : 1;
    const int64_t B = b->B, C = tk->C;
    tk->ncand = b->ncand;
    int64_t Tx = 0;
    for (int64_t q = 0; q < B; q++) {
        const int64_t L = b->offsets[q + 1] - b->offsets[q], K = b->ncand ? b->ncand[q] : 0;
        Tx += (b->pos0 && b->pos0[q] > 0 ? 0 : C) + m * (L - K) + K;
    }
    tk->Tx = Tx;
    tk->xoff = zalloc(B + 1, sizeof *tk->xoff);
    tk->xctx = zalloc(B, sizeof *tk->xctx);
    tk->xts = b->ts ? zalloc(Tx, sizeof *tk->xts) : NULL;
    tk->xkeys = zalloc(Tx, sizeof *tk->xkeys);
    tk->xrow = zalloc(tk->T, sizeof *tk->xrow);
    if (m == 2)
        tk->xact = zalloc(tk->T, sizeof *tk->xact);
    if (tk->s->actions == ACT_SUM)
        tk->aprev = zalloc(tk->T, sizeof *tk->aprev);
    int64_t x = 0;
    for (int64_t q = 0; q < B; q++) {
        const int64_t t0 = b->offsets[q], L = b->offsets[q + 1] - t0;
        const int64_t H = L - (b->ncand ? b->ncand[q] : 0);
        const int64_t lead = b->lead && b->lead[q] >= 0 ? tk->T + b->lead[q] : -1;
        tk->xoff[q] = x;
        /* a piece after a sequence's first (split_long): its events alone */
        const int64_t Cq = b->pos0 && b->pos0[q] > 0 ? 0 : C;
        tk->xctx[q] = Cq ? x : -1;
        tk->ctx_missing |= Cq < C;
        for (int64_t c = 0; c < Cq; c++, x++) { /* the first event's time; keys from its key */
            if (tk->xts)
                tk->xts[x] = L ? b->ts[t0] : 0;
            tk->xkeys[x] = L && b->keys[t0] ? rng_key(b->keys[t0], 0x63747874ull, (uint64_t)c)
                                            : 0;
        }
        for (int64_t j = 0; j < L; j++) {
            const int64_t t = t0 + j;
            tk->xrow[t] = x;
            if (tk->xts)
                tk->xts[x] = b->ts[t];
            tk->xkeys[x++] = b->keys[t];
            if (tk->aprev) /* candidates: the last history event's action; a piece's
                              first event: its lead's, if any */
                tk->aprev[t] = j < H ? (j > 0 ? t - 1 : lead) : (H > 0 ? t0 + H - 1 : -1);
            if (tk->xact && j < H) { /* the action token after its item */
                tk->xact[t] = x;
                if (tk->xts)
                    tk->xts[x] = b->ts[t];
                tk->xkeys[x++] = b->keys[t] ? rng_key(b->keys[t], 0x61637469ull, 1) : 0;
            } else if (tk->xact)
                tk->xact[t] = -1;
        }
    }
    tk->xoff[B] = x;
}

void tokens_plan(struct tokens *tk, const struct feat_schema *s, const struct feat_values *v,
                 const int64_t *items, int64_t n_items, const struct seq_batch *b,
                 int32_t *const *evv, float *const *evw)
{
    memset(tk, 0, sizeof *tk);
    tk->s = s;
    tk->d = s->d;
    tk->n_items = n_items;
    int64_t *item_rows = zalloc(n_items, sizeof *item_rows);
    for (int64_t e = 0; e < n_items; e++)
        item_rows[e] = items[e] - 1; /* item id i is row i - 1 of the columns */
    for (int i = 0; i < s->n; i++) {
        const struct feat_spec *sp = &s->f[i];
        if (sp->role == FEAT_ITEM)
            plan_feature(tk, v, i, n_items, item_rows, NULL, NULL);
        else if (sp->role == FEAT_EVENT)
            plan_feature(tk, v, i, b ? b->T + b->nlead : 0, NULL, b ? evv[i] : NULL,
                         b && evw ? evw[i] : NULL);
        else
            plan_feature(tk, v, i, b ? b->B : 0, b ? b->users : NULL, NULL, NULL);
    }
    free(item_rows);
    if (!b)
        return;
    tk->B = b->B, tk->T = b->T, tk->C = s->n_user, tk->Te = b->T + b->nlead;
    plan_layout(tk, b);
    if (s->actions != ACT_NONE)
        tk->act = zalloc(tk->Te * tk->d, sizeof *tk->act);
}

void tokens_free(struct tokens *tk)
{
    for (int i = 0; tk->s && i < tk->s->n; i++) {
        struct tok_feat *f = &tk->f[i];
        if (f->out != f->pool)
            free(f->out);
        free(f->off);
        free(f->req);
        free(f->pool);
        free(f->dout);
        free(f->P);
        free(f->w);
        free(tk->proj_ids[i]);
    }
    tokens_target_free(tk);
    free(tk->xoff);
    free(tk->xctx);
    free(tk->xts);
    free(tk->xkeys);
    free(tk->xrow);
    free(tk->xact);
    free(tk->aprev);
    free(tk->act);
    memset(tk, 0, sizeof *tk);
}

/* --- forward ------------------------------------------------------------------ */

void tokens_features_fwd(struct tokens *tk, const float *const *rows, const int64_t *const *inv)
{
    const int d = tk->d;
    for (int i = 0; i < tk->s->n; i++) {
        const struct feat_spec *sp = &tk->s->f[i];
        struct tok_feat *f = &tk->f[i];
        const int w = sp->width;
        const float *R = rows[sp->table];
        const int64_t *iv = inv[sp->table];
        if (sp->proj >= 0) /* P row j: the projection table's id j + 1 */
            for (int j = 0; j < w; j++)
                memcpy(f->P + (int64_t)j * d, rows[sp->proj] + inv[sp->proj][j] * d,
                       (size_t)d * sizeof *f->P);
#pragma omp parallel for schedule(static) if (f->ne >= 1024)
        for (int64_t e = 0; e < f->ne; e++) {
            float *p = f->pool + e * w;
            const int64_t a = f->off[e], z = f->off[e + 1];
            memset(p, 0, (size_t)w * sizeof *p);
            for (int64_t r = a; r < z; r++) {
                const float wt = f->w ? f->w[r] : 1.0f;
                for (int j = 0; j < w; j++)
                    p[j] += wt * R[iv[r] * w + j];
            }
            if (tk->s->mean && z - a > 1)
                for (int j = 0; j < w; j++)
                    p[j] /= (float)(z - a);
            if (sp->proj < 0)
                continue;
            float *o = f->out + e * d;
            memset(o, 0, (size_t)d * sizeof *o);
            for (int j = 0; j < w; j++)
                for (int k = 0; k < d; k++)
                    o[k] += p[j] * f->P[(int64_t)j * d + k];
        }
    }
}

void tokens_items_add(const struct tokens *tk, const float *base, float *rep, int64_t i0,
                      int64_t n)
{
    const int d = tk->d;
    for (int64_t e = i0; e < i0 + n; e++) {
        float *r = rep + e * d;
        if (base != rep)
            memcpy(r, base + e * d, (size_t)d * sizeof *r);
        for (int i = 0; i < tk->s->n; i++)
            if (tk->s->f[i].role == FEAT_ITEM)
                for (int k = 0; k < d; k++)
                    r[k] += tk->f[i].out[e * d + k];
    }
}

void tokens_batch(struct tokens *tk, const struct batch *b, struct batch *mb)
{
    *mb = *b;
    if (tk->Tx == tk->T && !tk->ncand) /* the event tokens are the model's */
        return;
    if (b->split && tk->ncand)
        fatal("tokens: candidates in split sequences (parallel.split_long)");
    mb->T = tk->Tx;
    mb->offsets = tk->xoff;
    mb->ts = b->ts ? tk->xts : NULL;
    mb->row_keys = tk->xkeys;
    mb->reads = tk->xrow; /* the event tokens' outputs (the loss's) */
    mb->nreads = tk->T;
    if (tk->ncand) /* the candidates' alone */
        tokens_target_batch(tk, mb);
}

/* a_t: the sum of the event features (the labels among them) of token t. */
static void actions_fwd(const struct tokens *tk)
{
    const int d = tk->d;
    memset(tk->act, 0, (size_t)(tk->Te * d) * sizeof *tk->act);
    for (int i = 0; i < tk->s->n; i++)
        if (tk->s->f[i].role == FEAT_EVENT && !tk->s->f[i].cross) /* crosses: their own token */
            for (int64_t k = 0; k < tk->Te * d; k++)
                tk->act[k] += tk->f[i].out[k];
}

void tokens_inputs(const struct tokens *tk, const float *emb, float *x)
{
    const int d = tk->d;
    const int64_t T = tk->T;
    if (tk->Tx != T) {
        for (int64_t t = 0; t < T; t++)
            memcpy(x + tk->xrow[t] * d, emb + t * d, (size_t)d * sizeof *x);
        for (int i = 0; i < tk->s->n; i++) {
            const struct feat_spec *sp = &tk->s->f[i];
            if (sp->role == FEAT_USER)
                for (int64_t q = 0; q < tk->B; q++)
                    if (tk->xctx[q] >= 0)
                        memcpy(x + (tk->xctx[q] + sp->ctx) * d, tk->f[i].out + q * d,
                               (size_t)d * sizeof *x);
        }
    } else if (x != emb)
        memcpy(x, emb, (size_t)(T * d) * sizeof *x);
    if (tk->s->actions == ACT_NONE) { /* event features on their own token */
        for (int i = 0; i < tk->s->n; i++)
            if (tk->s->f[i].role == FEAT_EVENT)
                for (int64_t t = 0; t < T; t++) {
                    float *r = x + tk->xrow[t] * d;
                    for (int k = 0; k < d; k++)
                        r[k] += tk->f[i].out[t * d + k];
                }
        return;
    }
    actions_fwd(tk);
    for (int i = 0; i < tk->s->n; i++) /* hashed crosses (feat_cross.h): on their own token */
        if (tk->s->f[i].cross)
            for (int64_t t = 0; t < T; t++) {
                float *r = x + tk->xrow[t] * d;
                for (int k = 0; k < d; k++)
                    r[k] += tk->f[i].out[t * d + k];
            }
    for (int64_t t = 0; t < T; t++) {
        if (tk->xact && tk->xact[t] >= 0)
            memcpy(x + tk->xact[t] * d, tk->act + t * d, (size_t)d * sizeof *x);
        if (tk->aprev && tk->aprev[t] >= 0) {
            float *r = x + tk->xrow[t] * d;
            const float *a = tk->act + tk->aprev[t] * d;
            for (int k = 0; k < d; k++)
                r[k] += a[k];
        }
    }
}

void tokens_outputs(const struct tokens *tk, const float *out_x, float *out_ev)
{
    for (int64_t t = 0; t < tk->T; t++)
        memcpy(out_ev + t * tk->d, out_x + tk->xrow[t] * tk->d, (size_t)tk->d * sizeof *out_ev);
}

void tokens_dout(const struct tokens *tk, const float *du_ev, float *du_x)
{
    memset(du_x, 0, (size_t)(tk->Tx * tk->d) * sizeof *du_x);
    for (int64_t t = 0; t < tk->T; t++)
        memcpy(du_x + tk->xrow[t] * tk->d, du_ev + t * tk->d, (size_t)tk->d * sizeof *du_x);
}

/* --- backward ----------------------------------------------------------------- */

/* The actions' gradient into tk->act (reused): the action tokens' rows
 * (interleave) or the sum of the rows of the tokens that added them (sum,
 * in token order). */
static void actions_bwd(const struct tokens *tk, const float *dx)
{
    const int d = tk->d;
    memset(tk->act, 0, (size_t)(tk->Te * d) * sizeof *tk->act);
    for (int64_t t = 0; t < tk->T; t++) {
        if (tk->xact && tk->xact[t] >= 0)
            memcpy(tk->act + t * d, dx + tk->xact[t] * d, (size_t)d * sizeof *tk->act);
        if (tk->aprev && tk->aprev[t] >= 0) {
            float *g = tk->act + tk->aprev[t] * d;
            const float *r = dx + tk->xrow[t] * d;
            for (int k = 0; k < d; k++)
                g[k] += r[k];
        }
    }
}

void tokens_inputs_bwd(struct tokens *tk, const float *dx, float *demb)
{
    const int d = tk->d;
    if (tk->s->actions != ACT_NONE)
        actions_bwd(tk, dx); /* before demb, which may be dx */
    for (int i = 0; i < tk->s->n; i++) {
        const struct feat_spec *sp = &tk->s->f[i];
        struct tok_feat *f = &tk->f[i];
        if (sp->role == FEAT_EVENT && tk->s->actions != ACT_NONE && !sp->cross)
            memcpy(f->dout, tk->act, (size_t)(tk->Te * d) * sizeof *f->dout);
        else if (sp->role == FEAT_EVENT)
            for (int64_t t = 0; t < tk->T; t++)
                memcpy(f->dout + t * d, dx + tk->xrow[t] * d, (size_t)d * sizeof *f->dout);
        else if (sp->role == FEAT_USER)
            for (int64_t q = 0; q < tk->B; q++) {
                if (tk->xctx[q] >= 0)
                    memcpy(f->dout + q * d, dx + (tk->xctx[q] + sp->ctx) * d,
                           (size_t)d * sizeof *f->dout);
                else /* a later piece of a split sequence: the first holds them */
                    memset(f->dout + q * d, 0, (size_t)d * sizeof *f->dout);
            }
    }
    if (tk->Tx != tk->T)
        for (int64_t t = 0; t < tk->T; t++)
            memcpy(demb + t * d, dx + tk->xrow[t] * d, (size_t)d * sizeof *demb);
    else if (demb != dx)
        memcpy(demb, dx, (size_t)(tk->T * d) * sizeof *demb);
}

void tokens_items_bwd(struct tokens *tk, const float *drep)
{
    for (int i = 0; i < tk->s->n; i++)
        if (tk->s->f[i].role == FEAT_ITEM)
            memcpy(tk->f[i].dout, drep, (size_t)(tk->n_items * tk->d) * sizeof *drep);
}

void tokens_features_bwd(struct tokens *tk, const float *const *rows, const int64_t *const *inv,
                         const int64_t *nuniq, float *const *gu)
{
    (void)rows;
    const int d = tk->d;
    for (int i = 0; i < tk->s->n; i++) {
        const struct feat_spec *sp = &tk->s->f[i];
        struct tok_feat *f = &tk->f[i];
        const int w = sp->width;
        float *g = gu[sp->table];
        const int64_t *iv = inv[sp->table];
        memset(g, 0, (size_t)(nuniq[sp->table] * w) * sizeof *g);
        float *dP = NULL, *dp = xmalloc((size_t)w * sizeof *dp);
        if (sp->proj >= 0)
            dP = zalloc((int64_t)w * d, sizeof *dP);
        for (int64_t e = 0; e < f->ne; e++) { /* in entity order: fixed sums */
            const int64_t a = f->off[e], z = f->off[e + 1];
            const float *go = f->dout + e * d;
            if (z == a)
                continue;
            if (sp->proj >= 0) { /* dpool = dout P^T, dP += pool^T dout */
                const float *p = f->pool + e * w;
                for (int j = 0; j < w; j++) {
                    float s = 0;
                    for (int k = 0; k < d; k++) {
                        s += go[k] * f->P[(int64_t)j * d + k];
                        dP[(int64_t)j * d + k] += p[j] * go[k];
                    }
                    dp[j] = s;
                }
            } else
                memcpy(dp, go, (size_t)w * sizeof *dp);
            const float scale = tk->s->mean ? 1.0f / (float)(z - a) : 1.0f;
            for (int64_t r = a; r < z; r++) {
                const float s = f->w ? scale * f->w[r] : scale;
                for (int j = 0; j < w; j++)
                    g[iv[r] * w + j] += s * dp[j];
            }
        }
        if (sp->proj >= 0) {
            float *gp = gu[sp->proj];
            memset(gp, 0, (size_t)(nuniq[sp->proj] * d) * sizeof *gp);
            for (int j = 0; j < w; j++)
                memcpy(gp + inv[sp->proj][j] * d, dP + (int64_t)j * d, (size_t)d * sizeof *gp);
        }
        free(dP);
        free(dp);
    }
}

void tokens_features_bwd_exact(struct tokens *tk, const int64_t *const *inv, int64_t *const *xg,
                               int64_t *bad)
{
    const int d = tk->d;
    for (int i = 0; i < tk->s->n; i++) {
        const struct feat_spec *sp = &tk->s->f[i];
        struct tok_feat *f = &tk->f[i];
        const int w = sp->width;
        if (sp->proj >= 0 || sp->role == FEAT_ITEM || w != d)
            fatal("tokens: feature %s: exact sums cover event and user features without a "
                  "projection", sp->name);
        int64_t *x = xg[sp->table];
        const int64_t *iv = inv[sp->table];
        float *c = xmalloc((size_t)w * sizeof *c);
        for (int64_t e = 0; e < f->ne; e++) { /* each entity's part, exactly: any order */
            const int64_t a = f->off[e], z = f->off[e + 1];
            const float *go = f->dout + e * d;
            const float scale = tk->s->mean && z > a ? 1.0f / (float)(z - a) : 1.0f;
            for (int64_t r = a; r < z; r++) {
                const float s = f->w ? scale * f->w[r] : scale;
                for (int j = 0; j < w; j++)
                    c[j] = s * go[j];
                exact_add_vec(x + iv[r] * w * EXACT_LIMBS, c, w, bad);
            }
        }
        free(c);
    }
}
