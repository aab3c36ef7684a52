/* step_feat: the features of a run on the trainer's side; see step_feat.h. */
#include "train/step_feat.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/stage.h"
#include "base/check.h"
#include "base/exact.h"
#include "comm/comm_fail.h"
#include "embedding/emb_feat.h"
#include "feature/feat_cross.h"
#include "train/train.h"
#include "train/train_cache.h"

/* --- set-up --------------------------------------------------------------------- */

void step_feat_setup(struct trainer *tr)
{
    struct train_conf *cf = &tr->conf;
    const struct task_conf *tc = &cf->task;
    const int ranking = tc->type == TASK_RANKING;
    tr->feat = NULL;
    if (!feat_conf_any(&cf->features) && !ranking)
        return;
    char err[1024] = "";
    struct train_feat *F = xcalloc(1, sizeof *F);
    /* every rank resolves the same: the first error once (comm_fail_agree) */
    comm_fail_agree(tr->c, feat_schema_resolve(&F->s, &cf->features, &tr->ds, cf->d,
                                               &cf->emb_optim, cf->seed, cf->emb_init_std, err,
                                               sizeof err) != 0, err);
    int uid = 0; /* window files: a window's users are numbered among its own */
    for (int i = 0; tr->files && i < F->s.n; i++)
        uid |= F->s.f[i].user_id;
    snprintf(err, sizeof err, "features.user = id over window files (data.path = %.300s): the "
             "user id is the user's place in a window's dataset, another user in every window; "
             "import the users' ids as a feature (/users/NAME) or leave it out", cf->data_path);
    comm_fail_agree(tr->c, uid, err);
    if (ranking) { /* the actions: the event features and the tasks' labels */
        F->s.actions = tc->actions;
        for (int k = 0; k < tc->n; k++)
            feat_schema_add_label(&F->s, tc->t[k].name, k, tc->t[k].kind == TASK_BINARY);
    }
    snprintf(err, sizeof err, "features.user = %s: contextual tokens with parallel.split_long = "
             "auto are not supported with retrieval (a sequence's chunks would need them on every "
             "rank): use one or the other", cf->features.user);
    comm_fail_agree(tr->c, F->s.n_user > 0 && cf->split_long.on && !ranking, err);
    if (ranking) { /* ranking's chunks: the contextual tokens with the first, an event's
                    * action token with its item (split_long.h) */
        cf->split_long.head = F->s.n_user;
        cf->split_long.step = tc->actions == ACT_INTERLEAVE ? 2 : 1;
    }
    int hour = 0; /* features.cross: what its crosses need */
    for (int k = 0; k < F->s.ncross; k++)
        for (int j = 0; j < F->s.cross[k].nkeys; j++)
            hour |= F->s.cross[k].key[j] == CK_HOUR;
    const char *no = !F->s.ncross ? NULL
                     : !ranking   ? "for train.task = ranking (the crosses of the user with "
                                    "each target's attributes)"
                     : !backend_is_host(tr->be)
                         ? "on the host backends only (device.type = cpu): the device's tokens "
                           "have no event feature on its own token"
                     : tr->files ? "not with window files (data.path a list or glob): the items' "
                                   "columns are read once, from one file"
                     : cf->split_long.on || cf->split_long.force >= 2
                         ? "not with parallel.split_long (a chunk's first event takes the "
                           "action of the event before it, whose crosses are not read)"
                     : hour && !tr->with_ts ? "the key hour needs timestamps (data.timestamps = "
                                              "on and a file with /timestamps)"
                                            : NULL;
    snprintf(err, sizeof err, "features.cross = %s: %s", cf->features.cross, no ? no : "");
    comm_fail_agree(tr->c, no != NULL, err);
    comm_fail_agree(tr->c, feat_values_load(&F->v, &F->s, &tr->ds, err, sizeof err) != 0, err);
    /* the contextual and action tokens are positions of the model (and its 1/N scale) */
    cf->model.max_len = (ranking && tc->actions == ACT_INTERLEAVE ? 2 : 1) * cf->N + F->s.n_user;
    F->on_device = !backend_is_host(tr->be);
    tr->feat = F;
}

void step_feat_tables(struct trainer *tr)
{
    struct train_feat *F = tr->feat;
    if (!F)
        return;
    for (int k = 0; k < F->s.ntables; k++) {
        struct emb_table_conf ec;
        emb_feat_table(&F->s, k, &ec);
        if (ec.dyn.on) { /* features.dynamic: the item table's settings */
            ec.dyn = tr->conf.dyn;
            ec.dyn.on = 1;
        }
        ec.placement = tr->items->conf.placement; /* the item table's memory */
        train_cache_beside(tr, &ec); /* a cached item table: the sharded ones' caches */
        trainer_check_table(tr, &ec);
        F->tab[k] = emb_registry_add(&tr->reg, tr->c, &ec);
    }
    for (int i = 0; i < F->s.n; i++) {
        char line[256];
        feat_schema_describe(&F->s, i, line, sizeof line);
        log_info("%s", line);
    }
}

double step_feat_table_bytes(const struct trainer *tr, int G)
{
    const struct train_feat *F = tr->feat;
    double bytes = 0;
    for (int k = 0; F && k < F->s.ntables; k++) {
        struct emb_table_conf ec;
        emb_feat_table(&F->s, k, &ec);
        if (ec.dyn.on) { /* the pool at its share of embedding.capacity */
            const int64_t cap = tr->conf.dyn.capacity;
            if (cap <= 0)
                return -1;
            bytes += emb_shard_bytes((double)((cap + G - 1) / G + 1), ec.dim, ec.optim.kind, 1);
            continue;
        }
        const double slots = ec.replicated ? (double)ec.rows + 1 : (double)(ec.rows / G + 1);
        bytes += emb_shard_bytes(slots, ec.dim, ec.optim.kind, 0);
    }
    return bytes;
}

int step_feat_window(struct trainer *tr, char *err, size_t errlen)
{
    struct train_feat *F = tr->feat;
    if (!F)
        return 0;
    feat_values_free(&F->v);
    return feat_values_load(&F->v, &F->s, &tr->ds, err, errlen);
}

void step_feat_teardown(struct trainer *tr)
{
    if (!tr->feat)
        return;
    feat_values_free(&tr->feat->v);
    tokens_dev_free(&tr->feat->dev);
    if (tr->feat->dbe) {
        tr->feat->dbe->free(tr->feat->drep);
        tr->feat->dbe->free(tr->feat->dfeat);
        stage_free(tr->feat->st);
    }
    emb_multi_device_free();
    free(tr->feat);
    tr->feat = NULL;
}

/* --- the lookup of a plan ---------------------------------------------------------- */

struct step_feat {
    struct trainer *tr;
    const struct emb_exchange *x; /* training: the item exchange (its rows: the identity's rep) */
    struct tokens tk;
    struct emb_multi *mx;
    int32_t *evv[DATASET_MAX_FEATURES];
    float *evw[DATASET_MAX_FEATURES];
    float *rep;          /* [nuniq, d]: host memory, or a device item table's (F->drep) */
    int64_t nrep;        /* its rows */
    int grads_later;     /* the features' gradients wait in device memory for d rep
                            (step_feat_backward_inputs, step_feat_update) */
    int looked;
    const float *rows[TOKENS_MAX_TABLES];
    const int64_t *inv[TOKENS_MAX_TABLES];
    int64_t nuniq[TOKENS_MAX_TABLES];
};

/* The values of the tasks' label features of b's tokens and leads (schema.h):
 * binary 1 negative, 2 positive; regression 1 weighted by the standardised
 * label; 0 where missing. */
static void label_values(struct trainer *tr, const struct seq_batch *b, struct step_feat *sf)
{
    const struct feat_schema *s = &tr->feat->s;
    for (int i = 0; i < s->n; i++) {
        const int k = s->f[i].label - 1, K = b->nlab;
        if (k < 0)
            continue;
        const int bin = tr->conf.task.t[k].kind == TASK_BINARY;
        const int64_t ne = b->T + b->nlead; /* the tokens, then the leads */
        if (!bin)
            sf->evw[i] = xmalloc((size_t)(ne ? ne : 1) * sizeof(float));
        for (int64_t t = 0; t < ne; t++) {
            const float y = t < b->T ? b->labels[t * K + k] : b->lead_labels[(t - b->T) * K + k];
            sf->evv[i][t] = isnan(y) ? 0 : bin ? (y != 0 ? 2 : 1) : 1;
            if (!bin)
                sf->evw[i][t] = isnan(y) ? 0.0f : task_ranking_z(&tr->task, k, y);
        }
    }
}

/* Plan items[n] and b, post the lookup of every table. raw: items are a raw
 * dataset's ids (training), planned by their numbers (the row of their
 * features: dataset_raw_numbers); evaluation's are numbers already. */
static struct step_feat *plan(struct trainer *tr, const int64_t *items, int64_t n,
                              const struct seq_batch *b, int raw)
{
    struct train_feat *F = tr->feat;
    struct step_feat *sf = xcalloc(1, sizeof *sf);
    sf->tr = tr;
    if (b && F->s.n_event) {
        for (int i = 0; i < F->s.n; i++)
            if (F->s.f[i].role == FEAT_EVENT)
                sf->evv[i] = xmalloc((size_t)(b->T + b->nlead ? b->T + b->nlead : 1) *
                                     sizeof(int32_t));
        feat_values_events(&F->s, &tr->ds, b, sf->evv);
        feat_cross_values(&F->s, &F->v, &tr->ds, b, raw, sf->evv);
        label_values(tr, b, sf);
    }
    int64_t *nums = NULL;
    if (raw && tr->ds.raw_ids) {
        nums = xmalloc((size_t)(n ? n : 1) * sizeof *nums);
        memcpy(nums, items, (size_t)n * sizeof *nums);
        dataset_raw_numbers(&tr->ds, nums, n);
    }
    tokens_plan(&sf->tk, &F->s, &F->v, nums ? nums : items, n, b, sf->evv, sf->evw);
    free(nums);
    sf->mx = emb_multi_input(F->tab, F->s.ntables, tr->c, sf->tk.req, sf->tk.nreq);
    return sf;
}

/* Complete the lookup and run the features' forward. */
static void lookup(struct step_feat *sf)
{
    if (sf->looked)
        return;
    sf->looked = 1;
    emb_multi_lookup(sf->mx);
    for (int k = 0; k < sf->tr->feat->s.ntables; k++) {
        sf->rows[k] = emb_multi_rows(sf->mx, k);
        sf->inv[k] = emb_multi_inverse(sf->mx, k);
        sf->nuniq[k] = emb_multi_nuniq(sf->mx, k);
    }
    tokens_features_fwd(&sf->tk, sf->rows, sf->inv);
}

void step_feat_free(struct step_feat *sf)
{
    if (!sf)
        return;
    emb_multi_free(sf->mx);
    tokens_free(&sf->tk);
    for (int i = 0; i < DATASET_MAX_FEATURES; i++) {
        free(sf->evv[i]);
        free(sf->evw[i]);
    }
    if (backend_is_host(sf->tr->items->be)) /* else F's device buffer */
        free(sf->rep);
    free(sf);
}

/* --- one training step ---------------------------------------------------------- */

/* --- a device item table (embedding.placement = device) ------------------------ */

/* Device buffers of F (grown, kept across steps): the representations
 * [nu, d] of a step, and the item features' outputs staged up beside them
 * ([n_item, nu, d]). Returns the representations. */
static int item_features(const struct feat_schema *s)
{
    int n = 0;
    for (int i = 0; i < s->n; i++)
        n += s->f[i].role == FEAT_ITEM;
    return n;
}

static float *dev_rep(struct train_feat *F, const struct backend_ops *be, int64_t nu, int d)
{
    const int nitem = item_features(&F->s);
    const size_t bytes = (size_t)(nu ? nu : 1) * (size_t)d * sizeof(float);
    if (!F->dbe) {
        F->dbe = be;
        F->st = stage_new(be);
    }
    if (bytes > F->drep_cap) { /* with room: batches vary */
        be->free(F->drep);
        be->free(F->dfeat);
        F->drep_cap = bytes + bytes / 2;
        F->drep = be->alloc(F->drep_cap);
        F->dfeat = be->alloc(F->drep_cap * (size_t)(nitem ? nitem : 1));
    }
    return F->drep;
}

/* rep = rows + item features for the rows [first, first + n) on the
 * device: the rows copied, each item feature's output staged up and added
 * in the schema's order (tokens_items_add's sums: r += out, the same
 * bits). */
static void dev_items_add(struct step_feat *sf, const float *rows, int64_t first, int64_t n)
{
    struct train_feat *F = sf->tr->feat;
    const struct backend_ops *be = F->dbe;
    const int d = sf->tk.d;
    const size_t at = (size_t)(first * d);
    be->copy(sf->rep + at, rows + at, (size_t)(n * d) * sizeof(float));
    for (int i = 0, j = 0; i < F->s.n; i++)
        if (F->s.f[i].role == FEAT_ITEM) {
            float *dst = F->dfeat + (size_t)j++ * (size_t)(sf->nrep * d) + at;
            stage_up(F->st, dst, sf->tk.f[i].out + at, (size_t)(n * d) * sizeof(float));
            be->axpy(n * d, 1.0f, dst, sf->rep + at);
        }
}

/* The item exchange's unique ids [nuniq] on the host (*own: free() it). A
 * device table's are in device memory: where the exchange holds the
 * inputs alone (ranking) the host de-duplicates them the same way (the
 * backends' emb_dedup give the same bits), else they are downloaded (a
 * host wait). */
static const int64_t *device_uniq(struct trainer *tr, const struct seq_batch *sb,
                                  const struct emb_exchange *x, void **own)
{
    const struct emb_table *t = tr->items;
    const int64_t nu = emb_exchange_nuniq(x);
    *own = NULL;
    if (backend_is_host(t->be))
        return emb_exchange_uniq(x);
    if (tr->task.ops->target_rows) /* the targets and negatives too */
        return backend_download(t->be, emb_exchange_uniq(x), (size_t)nu * sizeof(int64_t), own);
    const int64_t T = sb->T;
    int64_t *uq = xmalloc((size_t)(T ? T : 1) * sizeof *uq),
            *inv = xmalloc((size_t)(T ? T : 1) * sizeof *inv),
            *counts = xmalloc((size_t)(2 * t->G) * sizeof *counts);
    const int64_t n = backend_cpu.emb_dedup(T, sb->items, T, t->G, uq, inv, counts, t->conf.rows);
    free(inv);
    free(counts);
    if (n != nu)
        fatal("step_feat: the host's de-duplication of %lld ids found %lld, the device's %lld",
              (long long)T, (long long)n, (long long)nu);
    *own = uq;
    return uq;
}

/* Without features (tr->feat NULL) a step's plan is the identity layout:
 * no tables, rep = the item rows, Tx = T, the model batch the step's own;
 * every function below is then a no-op (or returns its input). */
static int identity(const struct step_feat *sf) { return sf->tr->feat == NULL; }

struct step_feat *step_feat_read(struct trainer *tr, const struct seq_batch *sb,
                                 const struct emb_exchange *x)
{
    if (!tr->feat) {
        struct step_feat *sf = xcalloc(1, sizeof *sf);
        sf->tr = tr;
        sf->x = x;
        return sf;
    }
    const int64_t nu = emb_exchange_nuniq(x);
    void *own = NULL;
    const int64_t *uq = device_uniq(tr, sb, x, &own);
    struct step_feat *sf = plan(tr, uq, nu, sb, 1);
    free(own);
    sf->x = x;
    sf->nrep = nu;
    emb_multi_train(sf->mx); /* dynamic feature tables: their rows made here */
    if (backend_is_host(tr->items->be)) /* else in its memory, at the step's lookup */
        sf->rep = xmalloc((size_t)(nu ? nu : 1) * (size_t)tr->conf.d * sizeof *sf->rep);
    return sf;
}

void step_feat_lookup(struct step_feat *sf)
{
    if (identity(sf))
        return;
    lookup(sf);
    struct trainer *tr = sf->tr;
    if (!sf->rep) /* a device item table: the step's representations there (the step
                     before this one is over: its buffers are free) */
        sf->rep = dev_rep(tr->feat, tr->items->be, sf->nrep, tr->conf.d);
}

const float *step_feat_rep(struct step_feat *sf)
{
    return identity(sf) ? emb_exchange_rows(sf->x) : sf->rep;
}

int64_t step_feat_Tx(const struct step_feat *sf, int64_t T)
{
    return identity(sf) ? T : sf->tk.Tx;
}

void step_feat_model_batch(struct step_feat *sf, const struct batch *b, struct batch *mb)
{
    *mb = *b;
    if (!identity(sf))
        tokens_batch(&sf->tk, b, mb);
}

void step_feat_progress(struct step_feat *sf)
{
    if (!identity(sf))
        emb_multi_progress(sf->mx);
}

void step_feat_items(struct step_feat *sf, const struct emb_exchange *x, int k)
{
    if (identity(sf))
        return;
    lookup(sf);
    const struct emb_span *sp;
    const float *rows = emb_exchange_rows(x);
    const int dev = !backend_is_host(sf->tr->items->be);
    for (int i = 0, n = emb_exchange_spans(x, k, &sp); i < n; i++)
        if (dev)
            dev_items_add(sf, rows, sp[i].first, sp[i].n);
        else
            tokens_items_add(&sf->tk, rows, sf->rep, sp[i].first, sp[i].n);
}

/* The token assembly where the model computes: the host functions on a
 * host backend, their device form elsewhere (tokens_dev.h: the same bits). */
void step_feat_assemble(struct step_feat *sf, const float *emb, float *x)
{
    if (identity(sf)) /* x is emb */
        return;
    if (!sf->tr->feat->on_device) {
        tokens_inputs(&sf->tk, emb, x);
        return;
    }
    tokens_dev_load(&sf->tr->feat->dev, sf->tr->be, &sf->tk);
    tokens_dev_inputs(&sf->tr->feat->dev, &sf->tk, emb, x);
}

void step_feat_outputs(struct step_feat *sf, const float *out_x, float *out_ev)
{
    if (!sf->tr->feat->on_device)
        tokens_outputs(&sf->tk, out_x, out_ev);
    else
        tokens_dev_outputs(&sf->tr->feat->dev, &sf->tk, out_x, out_ev);
}

void step_feat_dout(struct step_feat *sf, const float *du_ev, float *du_x)
{
    if (!sf->tr->feat->on_device)
        tokens_dout(&sf->tk, du_ev, du_x);
    else
        tokens_dev_dout(&sf->tr->feat->dev, &sf->tk, du_ev, du_x);
}

void step_feat_backward_inputs(struct step_feat *sf, const float *dx, float *demb)
{
    if (identity(sf)) /* demb is dx */
        return;
    if (!sf->tr->feat->on_device) {
        tokens_inputs_bwd(&sf->tk, dx, demb);
        return;
    }
    /* a device item table with item features: their d rep comes down with
     * these gradients at once, in step_feat_update (one host wait) */
    sf->grads_later = !backend_is_host(sf->tr->items->be) && item_features(&sf->tr->feat->s) > 0;
    const int64_t extra = sf->grads_later ? sf->nrep * sf->tr->conf.d : 0;
    tokens_dev_inputs_bwd(&sf->tr->feat->dev, &sf->tk, dx, demb, extra);
    if (!sf->grads_later)
        tokens_dev_grads(&sf->tr->feat->dev, &sf->tk, NULL, 0, NULL);
}

void step_feat_update(struct step_feat *sf, const float *drep)
{
    if (identity(sf)) /* d rep is the item rows' gradient, already theirs */
        return;
    const struct train_feat *F = sf->tr->feat;
    if (sf->tr->conf.exact_sums) { /* the rows' gradients as exact sums (base/exact.h) */
        int64_t *xg[TOKENS_MAX_TABLES], bad = 0;
        for (int k = 0; k < F->s.ntables; k++)
            xg[k] = xcalloc((size_t)(sf->nuniq[k] ? sf->nuniq[k] : 1) * (size_t)F->tab[k]->width *
                                EXACT_LIMBS,
                            sizeof *xg[k]);
        tokens_features_bwd_exact(&sf->tk, sf->inv, xg, &bad);
        emb_multi_backward_exact(sf->mx, xg);
        for (int k = 0; k < F->s.ntables; k++)
            free(xg[k]);
        return;
    }
    float *own = NULL; /* a device item table: d rep here, with the event and user features' */
    if (sf->grads_later) {
        const int64_t n = sf->nrep * sf->tr->conf.d;
        own = xmalloc((size_t)(n ? n : 1) * sizeof *own);
        tokens_dev_grads(&sf->tr->feat->dev, &sf->tk, drep, n, own);
        drep = own;
    } else if (!backend_is_host(sf->tr->items->be) && item_features(&sf->tr->feat->s) > 0)
        fatal("step_feat: the item features' gradients of a device table without a backward");
    tokens_items_bwd(&sf->tk, drep);
    free(own);
    float *gu[TOKENS_MAX_TABLES];
    for (int k = 0; k < F->s.ntables; k++)
        gu[k] = xmalloc((size_t)(sf->nuniq[k] ? sf->nuniq[k] : 1) * (size_t)F->tab[k]->width *
                        sizeof(float));
    tokens_features_bwd(&sf->tk, sf->rows, sf->inv, sf->nuniq, gu);
    emb_multi_backward(sf->mx, gu);
    for (int k = 0; k < F->s.ntables; k++)
        free(gu[k]);
}

/* --- evaluation, recommend, export ------------------------------------------------- */

struct tokens *step_feat_inputs(struct trainer *tr, const struct seq_batch *b, const float *emb,
                                const struct batch *eb, struct batch *mb, float **x)
{
    const int d = tr->conf.d;
    struct step_feat *sf = plan(tr, b->items, b->T, b, 0);
    lookup(sf);
    float *rep = xmalloc((size_t)(b->T ? b->T : 1) * (size_t)d * sizeof *rep);
    tokens_items_add(&sf->tk, emb, rep, 0, b->T);
    *x = xmalloc((size_t)(sf->tk.Tx ? sf->tk.Tx : 1) * (size_t)d * sizeof **x);
    tokens_inputs(&sf->tk, rep, *x);
    free(rep);
    struct tokens *tk = xmalloc(sizeof *tk);
    *tk = sf->tk; /* the plan outlives the lookup */
    memset(&sf->tk, 0, sizeof sf->tk);
    tokens_batch(tk, eb, mb);
    if (tk->tgt && tr->feat && tr->feat->on_device) /* the target mask's key copies there */
        tokens_target_device(tk, tr->be);
    step_feat_free(sf);
    return tk;
}

void step_feat_item_rows(struct trainer *tr, const int64_t *ids, int64_t n, float *rows)
{
    struct step_feat *sf = plan(tr, ids, n, NULL, 0);
    lookup(sf);
    tokens_items_add(&sf->tk, rows, rows, 0, n);
    step_feat_free(sf);
}
