/* train_cache: embedding.cache's value, refusals and rows; see
 * train_cache.h. */
#include "train/train_cache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "base/metrics.h"
#include "embedding/emb_cache.h"
#include "embedding/emb_table.h"
#include "feature/schema.h"
#include "train/train.h"
#include "train/train_conf.h"

int train_cache_parse(const char *text, int64_t *rows, double *frac, char *err, size_t errlen)
{
    *rows = 0;
    *frac = 0;
    char *end = NULL;
    if (strchr(text, '.') || strchr(text, 'e') || strchr(text, 'E')) {
        const double f = strtod(text, &end);
        if (end == text || *end || !(f > 0 && f <= 1))
            return errorf(err, errlen,
                          "embedding.cache = '%s': expected a row count (an integer >= 0) or a "
                          "fraction of the shard's rows (0 < F <= 1, e.g. 0.1)", text);
        *frac = f;
        return 0;
    }
    const long long r = strtoll(text, &end, 10);
    if (end == text || *end || r < 0)
        return errorf(err, errlen,
                      "embedding.cache = '%s': expected a row count (an integer >= 0) or a "
                      "fraction of the shard's rows (0 < F <= 1, e.g. 0.1)", text);
    *rows = r;
    return 0;
}

int train_cache_refuse(const struct train_conf *tc, char *err, size_t errlen)
{
    if (tc->cache_rows == 0 && tc->cache_frac == 0)
        return 0;
    const char *no = tc->dyn.on                           ? "embedding.dynamic = on"
                     : tc->subspace_k > 0                 ? "embedding.subspace_k"
                     : tc->embedding_group != 0           ? "parallel.embedding_group (not 0)"
                     : feat_conf_any(&tc->features)       ? "features.* tables"
                     : tc->task.type != TASK_RANKING && tc->loss == LOSS_FULL
                         ? "train.loss = full"
                         : NULL;
    if (no)
        return errorf(err, errlen,
                      "embedding.cache = %s with %s: the cache covers a plain dense item table "
                      "looked up by its exchanges alone (not dynamic or subspace tables, "
                      "embedding groups, feature tables or the full softmax, which reads the "
                      "whole shard); use embedding.cache = 0", tc->cache, no);
    if (tc->placement == PLACE_DEVICE)
        return errorf(err, errlen,
                      "embedding.cache = %s: the cache is over a host-placed table; set "
                      "embedding.placement = host (or auto: device when the whole shard fits, "
                      "else the cache); device placement holds the whole shard on the device",
                      tc->cache);
    return 0;
}

/* embedding.placement = auto, the shard not placed on the device: 1 when
 * the cache's bytes (bytes per rank) fit in half the device's free memory
 * per rank sharing it, on every rank (collective); says which. */
static int auto_fits(struct trainer *tr, double bytes)
{
    size_t free_b = 0, total_b = 0;
    char e[256] = "";
    const int bad = tr->be->device_memory(&free_b, &total_b, e, sizeof e) != 0;
    const int sharers = tr->dev.sharers > 1 ? tr->dev.sharers : 1;
    const double room = 0.5 * (double)free_b / sharers;
    const int short_any = comm_allreduce_max_i64(tr->c, bad || bytes > room) != 0;
    log_info("embedding.placement = auto: %s (embedding.cache = %s: %.2f MiB of rows and their "
             "state per rank, %s half of the %.1f MiB free on rank 0's device, shared by %d "
             "rank%s%s)",
             short_any ? "host" : "cached", tr->conf.cache, bytes / (1024.0 * 1024.0),
             bytes > room ? "more than" : "within", (double)free_b / (1024.0 * 1024.0), sharers,
             sharers == 1 ? "" : "s",
             short_any && bytes <= room ? "; another rank's device is short" : "");
    return !short_any;
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
    const int64_t shard_rows = (ec->rows + G - 1) / G; /* the largest shard's ids */
    int64_t rows = cf->cache_rows;
    if (cf->cache_frac > 0)
        rows = (int64_t)ceil(cf->cache_frac * (double)shard_rows);
    if (rows > shard_rows)
        rows = shard_rows;
    if (rows < 1)
        rows = 1;
    const double sf = (double)emb_optim_state_floats(cf->emb_optim.kind, cf->d);
    const double bytes = (double)(rows + 1) * ((double)cf->d + sf) * 4.0 +
                         (cf->emb_optim.kind == EMB_OPT_ADAM ? 8.0 * (double)(rows + 1) : 0);
    if (cf->placement == PLACE_AUTO && !auto_fits(tr, bytes))
        return;
    ec->cache = rows;
    ec->cache_lfu = cf->cache_lfu;
    ec->placement = tr->be;
    log_info("embedding.cache = %s: table '%s': %lld of ~%lld rows per shard cached in %s "
             "memory with their %s state (%.3f MiB per rank, %s eviction), the rest in host "
             "memory",
             cf->cache, ec->name, (long long)rows, (long long)shard_rows,
             tr->be->name, emb_optim_name(cf->emb_optim.kind),
             bytes / (1024.0 * 1024.0), cf->cache_lfu ? "LFU" : "LRU");
}

static double hit_rate(const struct emb_cache_stats *s)
{
    const int64_t all = s->hits + s->misses + s->fills;
    return all > 0 ? (double)s->hits / (double)all : 0;
}

int train_cache_take(struct trainer *tr, int which, struct emb_cache_stats *s, char *line,
                     size_t llen)
{
    line[0] = '\0';
    if (!tr->items || !tr->items->cache)
        return 0;
    emb_cache_take(tr->items, tr->c, which, s);
    const double n = s->lookups > 0 ? (double)s->lookups : 1;
    snprintf(line, llen, " cache hit %.1f%% misses %.0f fills %.0f rows/step (%.0f%% full)",
             100 * hit_rate(s), s->misses / n, s->fills / n,
             s->slots > 0 ? 100.0 * (double)s->resident / (double)s->slots : 0);
    return 1;
}

void train_cache_metrics(const struct trainer *tr, const struct emb_cache_stats *s,
                         struct metrics_line *l)
{
    const double n = s->lookups > 0 ? (double)s->lookups : 1;
    const char *name = tr->items->conf.name;
    char key[96];
#define FIELD(k, v) (snprintf(key, sizeof key, "%s.%s", name, k), metrics_num(l, key, v))
    FIELD("cache_hits", s->hits / n);
    FIELD("cache_misses", s->misses / n);
    FIELD("cache_fills", s->fills / n);
    FIELD("cache_evicted", s->evicted / n);
    FIELD("cache_written_back", s->written / n);
    FIELD("cache_fetched_bytes", s->fetched_bytes / n);
    FIELD("cache_written_bytes", s->written_bytes / n);
    FIELD("cache_hit_rate", hit_rate(s));
    FIELD("cache_occupancy", s->slots > 0 ? (double)s->resident / (double)s->slots : 0);
#undef FIELD
}
