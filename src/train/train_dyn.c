/* train_dyn: dynamic tables in a training run; see train_dyn.h. */
#include "train/train_dyn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "embedding/emb_exchange.h"
#include "base/metrics.h"
#include "train/train.h"
#include "train/train_conf.h"

int train_dyn_resolve(const struct params *p, struct emb_dyn_conf *dc, char *err, size_t errlen)
{
    memset(dc, 0, sizeof *dc);
    dc->on = (int)params_i64(p, P_embedding_dynamic);
    dc->capacity = params_i64(p, P_embedding_capacity);
    dc->admit = params_i64(p, P_embedding_admit);
    return emb_dyn_parse_evict(params_str(p, P_embedding_evict), dc, err, errlen);
}

int train_dyn_refuse(const struct params *p, const struct train_conf *tc, int P, char *err,
                     size_t errlen)
{
    const struct emb_dyn_conf *dc = &tc->dyn;
    const int feat = params_str(p, P_features_dynamic)[0] != 0;
    const int64_t K = params_i64(p, P_output_checkpoint_delta_every);
    if (K > 0 && !params_i64(p, P_embedding_dynamic) && !params_str(p, P_features_dynamic)[0])
        return errorf(err, errlen, "output.checkpoint_delta_every = %lld: delta checkpoints are "
                      "for dynamic tables (embedding.dynamic, features.dynamic)", (long long)K);
    if (K > 0 && (!tc->checkpoint_dir[0] || tc->checkpoint_every <= 0 ||
                  tc->checkpoint_every % K != 0 || K == tc->checkpoint_every))
        return errorf(err, errlen, "output.checkpoint_delta_every = %lld: deltas come between "
                      "full checkpoints: it needs output.checkpoint_dir and train.checkpoint_every "
                      "a multiple of it, larger (here %lld)", (long long)K,
                      (long long)tc->checkpoint_every);
    if (!dc->on && !feat) {
        if (dc->capacity > 0 || dc->admit > 1 || dc->evict != EMB_EVICT_NONE)
            return errorf(err, errlen, "embedding.capacity, admit and evict apply to dynamic "
                          "tables: set embedding.dynamic = on or features.dynamic");
        return 0;
    }
    const char *what = dc->on ? "embedding.dynamic = on" : "features.dynamic";
    if (dc->on && tc->subspace_k > 0)
        return errorf(err, errlen, "embedding.dynamic = on: not with embedding.subspace_k = %d "
                      "(a dynamic table is a plain table)", tc->subspace_k);
    if (dc->on && tc->loss == LOSS_FULL &&
        (dc->admit > 1 || dc->capacity > 0 || dc->evict != EMB_EVICT_NONE))
        return errorf(err, errlen, "embedding.dynamic = on: train.loss = full scores every item "
                      "of the dataset against its own row: it takes embedding.admit = 1, "
                      "capacity = 0 and evict = none (here admit %lld, capacity %lld, evict %s)",
                      (long long)dc->admit, (long long)dc->capacity,
                      dc->evict == EMB_EVICT_TTL ? "ttl" : dc->evict == EMB_EVICT_LRU ? "lru"
                      : dc->evict == EMB_EVICT_LFU ? "lfu" : "none");
    if ((tc->checkpoint_dir[0] || tc->keep_best) && tc->ckpt_gathered)
        return errorf(err, errlen, "%s: a dynamic table is written by every rank: "
                      "output.checkpoint_write = gathered is not available for it (use "
                      "collective)", what);
    if (tc->checkpoint_dir[0] && tc->overlap == OVERLAP_PREFETCH &&
        (dc->admit > 1 || dc->evict != EMB_EVICT_NONE))
        return errorf(err, errlen, "%s: checkpoints with parallel.overlap = prefetch and "
                      "embedding.admit > 1 or evict != none are not available yet (the next "
                      "step's lookup has counted its ids when the checkpoint is written): use "
                      "overlap = prioritized", what);
    const int64_t G = tc->embedding_group > 0 ? tc->embedding_group : P;
    if (P > 0 && G > 0 && P % G == 0)
        return emb_dyn_check(dc, dc->on ? "items" : "features.dynamic", (int)G, (int)(P / G),
                             err, errlen) == 0 ? 0 : -1;
    return 0;
}

void train_dyn_describe(struct trainer *tr)
{
    for (int i = 0; i < tr->reg.n; i++) {
        struct emb_table *t = &tr->reg.tables[i];
        if (!t->dyn)
            continue;
        const struct emb_dyn_conf *dc = &t->conf.dyn;
        struct emb_dyn_stats s;
        emb_dyn_take(t, &s);
        char ev[48];
        if (dc->evict == EMB_EVICT_TTL)
            snprintf(ev, sizeof ev, "ttl:%lld", (long long)dc->ttl);
        else
            snprintf(ev, sizeof ev, "%s", dc->evict == EMB_EVICT_LRU ? "lru"
                                          : dc->evict == EMB_EVICT_LFU ? "lfu" : "none");
        char cap[96] = "unbounded";
        if (dc->capacity) { /* the shard's bound: its pool full, the index half full */
            const int64_t slots = (dc->capacity + t->G - 1) / t->G + 1;
            int64_t ix = 16;
            while (ix < 2 * slots)
                ix *= 2;
            const double at = (double)slots * (double)((t->width + t->state_floats) * 4 +
                                                       (t->steps ? 8 : 0) + 32) +
                              (double)ix * 16.0;
            snprintf(cap, sizeof cap, "%lld rows (at most %.1f MiB per rank)",
                     (long long)dc->capacity, at / 1048576.0);
        }
        log_info("dynamic table '%s': %d shard%s, capacity %s, admit %lld, evict %s; pool %lld "
                 "slots + index %lld entries: %.3f MiB per rank now (grows by doubling%s)",
                 t->conf.name, t->G, t->G == 1 ? "" : "s", cap, (long long)dc->admit, ev,
                 (long long)s.slots, (long long)s.index_cap, (double)s.bytes / 1048576.0,
                 dc->capacity ? " to the capacity" : "");
    }
}

void train_dyn_take(struct trainer *tr, int64_t steps, struct train_dyn_figs *f, char *line,
                    size_t llen)
{
    f->n = 0;
    line[0] = 0;
    size_t at = 0;
    const double n = steps > 0 ? (double)steps : 1;
    for (int i = 0; i < tr->reg.n && f->n < TRAIN_DYN_MAX; i++) {
        struct emb_table *t = &tr->reg.tables[i];
        if (!t->dyn)
            continue;
        struct emb_dyn_stats s;
        emb_dyn_take(t, &s);
        /* a shard's replicas count once: only the first emb group's ranks add */
        const int first = tr->c->rank < t->G || t->conf.replicated;
        int64_t v[5] = {s.rows, s.inserted, s.evicted, s.unadmitted_hits, s.index_cap};
        if (!first)
            memset(v, 0, sizeof v);
        comm_allreduce_sum_i64v(tr->c, COMM_WORLD, v, 5);
        const int k = f->n++;
        f->name[k] = t->conf.name;
        f->rows[k] = (double)v[0];
        f->inserted[k] = (double)v[1] / n;
        f->evicted[k] = (double)v[2] / n;
        f->unadmitted[k] = (double)v[3] / n;
        f->load[k] = v[4] > 0 ? (double)v[0] / (double)v[4] : 0;
        if (at < llen)
            at += (size_t)snprintf(line + at, llen - at,
                                   " %s rows %.0f +%.1f -%.1f/step unadmitted %.1f/step load %.2f",
                                   t->conf.name, f->rows[k], f->inserted[k], f->evicted[k],
                                   f->unadmitted[k], f->load[k]);
    }
}

void train_dyn_metrics(const struct train_dyn_figs *f, struct metrics_line *l)
{
    static const char *key[5] = {"rows", "inserted", "evicted", "unadmitted_hits", "load"};
    for (int k = 0; k < f->n; k++) {
        const double v[5] = {f->rows[k], f->inserted[k], f->evicted[k], f->unadmitted[k],
                             f->load[k]};
        for (int j = 0; j < 5; j++) {
            char name[96];
            snprintf(name, sizeof name, "%s.%s", f->name[k], key[j]);
            metrics_num(l, name, v[j]);
        }
    }
}

void train_dyn_full_ids(const struct trainer *tr, int64_t *ids, int64_t n)
{
    for (int64_t i = 0; tr->ds.raw_ids && i < n; i++) /* numbers 1 .. num_items */
        ids[i] = tr->ds.item_list[ids[i] - 1];
}

#define VIEW_BLOCK 65536 /* ids per lookup while making the view */

static struct emb_registry *view_reg; /* the view (one table), reachable until freed */
static struct emb_table *view_dyn;    /* the dynamic table it stands for */
static float *view_shared;            /* [dim] the unadmitted row in the view */

const float *train_dyn_view_shared(void) { return view_dyn ? view_shared : NULL; }

void train_dyn_view_begin(struct trainer *tr)
{
    struct emb_table *t = tr->items;
    if (!t->dyn || view_dyn)
        return;
    const int64_t *list = tr->ds.raw_ids ? tr->ds.item_list : NULL; /* number j: list[j - 1] */
    if (!list && t->conf.rows < 1)
        fatal("embedding.dynamic = on: evaluation, recommend, score and export over a dynamic "
              "item table need the dataset's item count: not implemented without one");
    struct emb_table_conf conf = t->conf;
    conf.dyn.on = 0;
    if (list)
        conf.rows = tr->ds.num_items;
    conf.placement = t->conf.placement; /* the dynamic table's memory (a device's: no dense
                                           copy of the table in host memory) */
    if (t->cache) { /* a cached pool is in host memory: the view too, as a host table's */
        conf.placement = NULL;
        conf.cache = 0;
    }
    conf.rows_codec = conf.grads_codec = EMB_CODEC_FP32; /* the view's lookups: its bits */
    /* the unadmitted row (pool slot 0, identical on every rank) as the lookups
     * below return it: through the table's row codec */
    view_shared = xmalloc((size_t)conf.dim * sizeof *view_shared);
    float *row0 = xmalloc((size_t)conf.dim * sizeof *row0); /* slot 0, in the table's memory */
    emb_table_get_slots(t, 0, 1, row0, NULL, NULL);
    if (t->conf.rows_codec == EMB_CODEC_FP32)
        memcpy(view_shared, row0, (size_t)conf.dim * sizeof *view_shared);
    else {
        uint8_t *wire = xmalloc((size_t)emb_codec_row_bytes(t->conf.rows_codec, conf.dim));
        int64_t bad;
        if (emb_codec_encode(t->conf.rows_codec, 1, conf.dim, row0, wire, &bad))
            fatal("embedding table '%s': the unadmitted row holds NaN or infinity",
                  t->conf.name);
        backend_cpu.emb_decode((int)t->conf.rows_codec, 1, conf.dim, wire, view_shared);
        free(wire);
    }
    free(row0);
    view_reg = xcalloc(1, sizeof *view_reg);
    struct emb_table *v = emb_registry_add(view_reg, tr->c, &conf);
    v->index = tr->reg.n; /* its own message tags */
    const int G = v->G, q = v->shard;
    const int64_t first = q ? q : G, n = first <= conf.rows ? (conf.rows - first) / G + 1 : 0;
    const int64_t calls = (conf.rows / G + 1 + VIEW_BLOCK - 1) / VIEW_BLOCK; /* the same on all */
    int64_t *ids = xmalloc((size_t)VIEW_BLOCK * sizeof *ids);
    const int on_dev = !backend_is_host(t->be) && v->be == t->be;
    float *rows = on_dev ? NULL : xmalloc((size_t)VIEW_BLOCK * (size_t)conf.dim * sizeof *rows);
    for (int64_t k = 0; k < calls; k++) {
        const int64_t a = k * VIEW_BLOCK, m = a < n ? (n - a < VIEW_BLOCK ? n - a : VIEW_BLOCK) : 0;
        for (int64_t i = 0; i < m; i++)
            ids[i] = list ? list[first + (a + i) * G - 1] : first + (a + i) * G;
        if (on_dev) /* device to device: into the view's rows (collective over emb) */
            emb_exchange_free(emb_lookup_dev(t, tr->c, ids, m, v->w + (first / G + a) * conf.dim,
                                             NULL));
        else {
            emb_exchange_free(emb_lookup(t, tr->c, ids, m, rows, NULL)); /* collective over emb */
            if (m)
                emb_table_set_slots(v, first / G + a, m, rows, NULL, NULL);
        }
    }
    free(ids);
    free(rows);
    view_dyn = t;
    tr->items = v;
}

void train_dyn_view_end(struct trainer *tr)
{
    if (!view_dyn)
        return;
    tr->items = view_dyn;
    view_dyn = NULL;
    emb_registry_free(view_reg);
    free(view_reg);
    view_reg = NULL;
    free(view_shared);
    view_shared = NULL;
}
