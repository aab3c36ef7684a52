/* train_cache: embedding.cache, a device cache of hot rows over the
 * host-placed tables (embedding/emb_cache.h; doc/embedding.md, "A
 * device cache over a host table"): its value, the rows per shard it
 * gives to the item table and the sharded feature tables, and their
 * figures (what it refuses: backend_check.h, backend_check_cache).
 *
 *   embedding.cache = 0          no cache (the default)
 *   embedding.cache = ROWS       an integer >= 1: rows cached per shard
 *   embedding.cache = FRACTION   0 < F <= 1 with a point (0.1, 1.0): that
 *                                fraction of the shard's rows, rounded up
 * A shard's cache holds at most the shard's rows. embedding.placement =
 * auto chooses device (the whole shard fits), cached (the cache fits) or
 * host, and says which at start-up. */
#ifndef FS_TRAIN_CACHE_H
#define FS_TRAIN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "embedding/emb_cache.h"
#include "embedding/emb_table.h"

struct train_conf;
struct trainer;
struct emb_table_conf;

/* Parse text into rows (ROWS, else 0) and frac (FRACTION, else 0): 0, or
 * -1 with err naming embedding.cache. */
int train_cache_parse(const char *text, int64_t *rows, double *frac, char *err, size_t errlen);
/* The cached tables' figures since the last take (which: 0 the logging
 * interval, 1 the stream's window), summed over the job (collective): 0
 * without a cache, else 1 with f set (the item table first) and the
 * progress line's words in line (each table's hit rate: rows resident
 * when the step's ids were resolved, of all it resolved). */
struct train_cache_figs {
    int n;
    const char *name[EMB_MAX_TABLES];
    struct emb_cache_stats s[EMB_MAX_TABLES];
};
struct metrics_line;
int train_cache_take(struct trainer *tr, int which, struct train_cache_figs *f, char *line,
                     size_t llen);
/* Their metrics fields, per step (of the lookups taken), TABLE the
 * table's name (items, feat.NAME): TABLE.cache_hits, .cache_misses
 * (fetched at the lookup), .cache_fills (fetched ahead, prefetch),
 * .cache_evicted, .cache_written_back, .cache_fetched_bytes,
 * .cache_written_bytes; .cache_hit_rate and .cache_occupancy (resident
 * rows / slots, at the take); .cache_fill_wait_ms and .cache_fill_stall_ms
 * (the host's and the compute stream's waits for the fills, the ranks'
 * mean). */
void train_cache_metrics(const struct train_cache_figs *f, struct metrics_line *l);
/* Set ec's cache (rows per shard) and placement (the trainer's device
 * backend) when the run asks for one, and say so at start-up. With
 * embedding.placement = auto (ec's placement chosen already): no cache
 * when the whole shard went to the device; else the caches when their
 * rows and state (the feature tables' beside it: train_cache_beside's)
 * fit in half of the device's free memory per rank sharing it, on every
 * rank, host placement otherwise (collective). */
void train_cache_apply(struct trainer *tr, struct emb_table_conf *ec);
/* A feature table ec beside a cached item table (step_feat_tables; else
 * nothing): a sharded one gets its own cache (the same ROWS or FRACTION
 * of its shard), a replicated one (small: features.replicate_below; a
 * projection, a label's) lives whole in the device's memory; says so. */
void train_cache_beside(struct trainer *tr, struct emb_table_conf *ec);

#endif
