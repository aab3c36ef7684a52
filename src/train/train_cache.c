/* train_cache: embedding.cache's value, rows and figures; see
 * train_cache.h. */
#include "train/train_cache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "base/metrics.h"
#include "comm/comm_fail.h"
#include "embedding/emb_cache.h"
#include "embedding/emb_feat.h"
#include "embedding/emb_table.h"
#include "train/placement.h"
#include "train/step_feat.h"
#include "train/train.h"
#include "train/train_conf.h"

int train_cache_parse(const char *text, int64_t *rows, double *frac, char *err, size_t errlen)
{
    *rows = 0;
    *frac = 0;
    char *end = NULL;
    if (strchr(text, '.') || strchr(text, 'e') || strchr(text, 'E')) { /* FRACTION */
        const double f = strtod(text, &end);
        if (end != text && !*end && f > 0 && f <= 1) {
            *frac = f;
            return 0;
        }
    } else { /* ROWS */
        const long long r = strtoll(text, &end, 10);
        if (end != text && !*end && r >= 0) {
            *rows = r;
            return 0;
        }
    }
    return errorf(err, errlen,
                  "embedding.cache = '%s': expected a row count (an integer >= 0) or a "
                  "fraction of the shard's rows (0 < F <= 1, e.g. 0.1)", text);
}

/* Rows cached per shard of a table of `rows` ids sharded over G: ROWS, or
 * FRACTION of the largest shard's ids rounded up; at most those ids (when
 * bounded: a dynamic table of raw ids without a capacity is not), at
 * least 1. *shard_rows: those ids (0: no bound). */
static int64_t cache_rows(const struct train_conf *cf, int64_t rows, int64_t G,
                          int64_t *shard_rows)
{
    *shard_rows = (rows + G - 1) / G;
    int64_t r = cf->cache_rows;
    if (cf->cache_frac > 0)
        r = (int64_t)ceil(cf->cache_frac * (double)*shard_rows);
    if (r > *shard_rows && *shard_rows > 0)
        r = *shard_rows;
    return r < 1 ? 1 : r;
}

/* The device bytes of a table beside a cached item table (conf ec, its
 * cache rows in *rows of *shard_rows per shard, cache_rows): a sharded
 * one's cache (rows + 1 slots), a replicated one whole (*rows 0). */
static double beside_bytes(const struct train_conf *cf, const struct emb_table_conf *ec,
                           int64_t G, int64_t *rows, int64_t *shard_rows)
{
    const int64_t r = cache_rows(cf, ec->rows, G, shard_rows);
    *rows = ec->replicated ? 0 : r;
    return emb_shard_bytes((double)(ec->replicated ? ec->rows + 1 : *rows + 1), ec->dim,
                           ec->optim.kind, 0);
}

/* The feature tables' bytes beside the item table's cache (beside_bytes;
 * dynamic ones are refused: backend_check_cache). */
static double feature_bytes(const struct trainer *tr, int64_t G)
{
    double bytes = 0;
    for (int k = 0; tr->feat && k < tr->feat->s.ntables; k++) {
        struct emb_table_conf ec;
        int64_t rows, shard_rows;
        emb_feat_table(&tr->feat->s, k, &ec);
        bytes += beside_bytes(&tr->conf, &ec, G, &rows, &shard_rows);
    }
    return bytes;
}

/* embedding.placement = auto, the shard not placed on the device: 1 when
 * the caches' bytes (bytes per rank) fit in the room for tables
 * (train_placement_room), on every rank (collective); says which. */
static int auto_fits(struct trainer *tr, double bytes)
{
    size_t free_b;
    const double room = train_placement_room(tr, &free_b);
    const int sharers = tr->dev.sharers > 1 ? tr->dev.sharers : 1;
    const int short_any = comm_allreduce_max_i64(tr->c, bytes > room) != 0;
    log_info("embedding.placement = auto: %s (embedding.cache = %s: %.2f MiB of rows and their "
             "state per rank, %s half of the %.1f MiB free on rank 0's device, shared by %d "
             "rank%s%s)",
             short_any ? "host" : "cached", tr->conf.cache, bytes / (1024.0 * 1024.0),
             bytes > room ? "more than" : "within", (double)free_b / (1024.0 * 1024.0), sharers,
             sharers == 1 ? "" : "s",
             short_any && bytes <= room ? "; another rank's device is short" : "");
    return !short_any;
}

/* Say where table ec (its cache: rows of ~shard_rows per shard) is. */
static void say(const struct trainer *tr, const struct emb_table_conf *ec, int64_t rows,
                int64_t shard_rows, double bytes)
{
    char of[64] = "an unbounded pool's"; /* a dynamic table without a bound */
    if (shard_rows > 0)
        snprintf(of, sizeof of, "~%lld", (long long)shard_rows);
    if (rows > 0)
        log_info("embedding.cache = %s: table '%s': %lld of %s rows per shard cached in %s "
                 "memory with their %s state (%.3f MiB per rank, %s eviction), the rest in "
                 "host memory",
                 tr->conf.cache, ec->name, (long long)rows, of, tr->be->name,
                 emb_optim_name(ec->optim.kind), bytes / (1024.0 * 1024.0),
                 ec->cache_lfu ? "LFU" : "LRU");
    else
        log_info("embedding.cache = %s: table '%s' (replicated): whole in %s memory with its %s "
                 "state (%.3f MiB per rank)",
                 tr->conf.cache, ec->name, tr->be->name, emb_optim_name(ec->optim.kind),
                 bytes / (1024.0 * 1024.0));
}

void train_cache_apply(struct trainer *tr, struct emb_table_conf *ec)
{
    const struct train_conf *cf = &tr->conf;
    if (cf->cache_rows == 0 && cf->cache_frac == 0)
        return;
    if (cf->placement == PLACE_AUTO && ec->placement) {
        log_info("embedding.placement = auto: the whole shard fits on the device (above): "
                 "embedding.cache = %s is not used", cf->cache);
        return;
    }
    const int64_t G = tr->c->g[COMM_EMB].size;
    /* the largest shard's ids: a dynamic table's capacity's share, else the
     * dataset's items' (none with raw ids and no capacity) */
    const int64_t bound = ec->dyn.on && ec->dyn.capacity > 0 ? ec->dyn.capacity : ec->rows;
    char msg[512];
    snprintf(msg, sizeof msg, "embedding.cache = %s: a fraction of a dynamic table's shard with "
             "no bound on its rows (embedding.capacity = 0, a dataset of raw ids): give the "
             "cache's rows per shard (an integer) or set embedding.capacity", cf->cache);
    comm_fail_agree(tr->c, cf->cache_frac > 0 && bound <= 0, msg);
    int64_t shard_rows;
    const int64_t rows = cache_rows(cf, bound, G, &shard_rows);
    const double bytes = emb_shard_bytes((double)(rows + 1), ec->dim, ec->optim.kind, 0);
    if (cf->placement == PLACE_AUTO && !auto_fits(tr, bytes + feature_bytes(tr, G)))
        return;
    ec->cache = rows;
    ec->cache_lfu = cf->cache_lfu;
    ec->placement = tr->be;
    say(tr, ec, rows, shard_rows, bytes);
}

void train_cache_beside(struct trainer *tr, struct emb_table_conf *ec)
{
    if (!tr->items->cache)
        return;
    const int64_t G = tr->c->g[COMM_EMB].size;
    int64_t rows, shard_rows;
    const double bytes = beside_bytes(&tr->conf, ec, G, &rows, &shard_rows);
    ec->cache = rows;
    ec->cache_lfu = tr->conf.cache_lfu;
    ec->placement = tr->be;
    say(tr, ec, rows, shard_rows, bytes);
}

static double hit_rate(const struct emb_cache_stats *s)
{
    const int64_t all = s->hits + s->misses + s->fills;
    return all > 0 ? (double)s->hits / (double)all : 0;
}

int train_cache_take(struct trainer *tr, int which, struct train_cache_figs *f, char *line,
                     size_t llen)
{
    line[0] = '\0';
    f->n = 0;
    size_t at = 0;
    for (int i = 0; i < tr->reg.n; i++) { /* the item table first: the registry's order */
        struct emb_table *t = &tr->reg.tables[i];
        if (!t->cache)
            continue;
        struct emb_cache_stats *s = &f->s[f->n];
        f->name[f->n++] = t->conf.name;
        emb_cache_take(t, tr->c, which, s);
        const double n = s->lookups > 0 ? (double)s->lookups : 1;
        if (at < llen)
            at += (size_t)snprintf(line + at, llen - at,
                                   " %s%scache hit %.1f%% misses %.0f fills %.0f rows/step "
                                   "(%.0f%% full)",
                                   t == tr->items ? "" : t->conf.name, t == tr->items ? "" : " ",
                                   100 * hit_rate(s), s->misses / n, s->fills / n,
                                   s->slots > 0 ? 100.0 * (double)s->resident / (double)s->slots
                                                : 0);
    }
    return f->n > 0;
}

void train_cache_metrics(const struct train_cache_figs *f, struct metrics_line *l)
{
    char key[96];
    for (int k = 0; k < f->n; k++) {
        const struct emb_cache_stats *s = &f->s[k];
        const double n = s->lookups > 0 ? (double)s->lookups : 1;
#define FIELD(what, v) \
    (snprintf(key, sizeof key, "%s.%s", f->name[k], what), metrics_num(l, key, v))
        FIELD("cache_hits", s->hits / n);
        FIELD("cache_misses", s->misses / n);
        FIELD("cache_fills", s->fills / n);
        FIELD("cache_evicted", s->evicted / n);
        FIELD("cache_written_back", s->written / n);
        FIELD("cache_fetched_bytes", s->fetched_bytes / n);
        FIELD("cache_written_bytes", s->written_bytes / n);
        FIELD("cache_hit_rate", hit_rate(s));
        FIELD("cache_occupancy", s->slots > 0 ? (double)s->resident / (double)s->slots : 0);
        FIELD("cache_fill_wait_ms", (double)s->fill_host_us / 1e3 / n);
        FIELD("cache_fill_stall_ms", (double)s->fill_stall_us / 1e3 / n);
#undef FIELD
    }
}
