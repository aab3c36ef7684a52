/* pools: ranking histories built from pools of event kinds (data.pools;
 * MLPerf DLRMv4's user history: the last L/3 of each of its listen+,
 * like and skip pools, interleaved by time).
 *
 * data.pools = NAME:COLUMN[OP X], ... names K pools, each the events whose
 * COLUMN satisfies the comparison (the binary-label syntax of train.tasks:
 * model/task_conf.c; a missing value is in no pool). A sequence cut from
 * a user's events [0, end) with room for L events keeps the last
 * floor(L / K) events of each pool before end, in file order (a user's
 * events are sorted by time, ties in file order), each event once (one in
 * two pools is still one event); events in no pool are left out. The
 * result holds at most K floor(L / K) <= L events. Training cuts at the
 * training split's end with L = data.max_seq_len, evaluation at the
 * split's first candidate with L = data.max_seq_len - 1 (batch_ranking.c). */
#ifndef FS_DATA_POOLS_H
#define FS_DATA_POOLS_H

#include <stddef.h>
#include <stdint.h>

#include "data/batch_ranking.h"
#include "data/dataset.h"

#define POOLS_MAX 8

struct pool_conf {
    int n;                         /* K pools (0: off) */
    char name[POOLS_MAX][32];
    char text[POOLS_MAX][96];      /* COLUMN[OP X], for the log */
    char column[POOLS_MAX][DATASET_FEATURE_NAME]; /* COLUMN */
    char word[POOLS_MAX][64];      /* X a word: a categorical value's name ("" if a number) */
    struct label_conf lc;          /* lc.c[k]: pool k's comparison (binary: 1 in the pool) */
    double *decode[POOLS_MAX];     /* categorical columns: the value of each id (heap) */
    /* pools_count's cache (heap, [num_users] each, lazily): */
    int64_t cache_users, *cache_end, *cache_len;
    const int64_t *cache_of;       /* the dataset's offsets the cache is of */
};

/* The events a pooled sequence keeps of each pool: floor(room / K). */
static inline int64_t pools_per(const struct pool_conf *pc, int64_t room)
{
    return room / pc->n;
}

/* User u's pooled sequence of events [0, end) (user-relative indexes) with
 * `per` events of each pool: the selected indexes in ascending order into
 * sel (room for K per); their count. Reads the pools' columns backwards
 * from end, block by block, until every pool has its events. fatal()
 * naming the dataset on a read error. */
int64_t pools_select(const struct dataset *ds, const struct pool_conf *pc, int64_t u,
                     int64_t end, int64_t per, int64_t *sel);
/* pools_select's count, cached per user (the last end asked): the
 * planner's tokens of a training sequence. Not thread-safe. */
int64_t pools_count(const struct dataset *ds, struct pool_conf *pc, int64_t u, int64_t end,
                    int64_t per);

/* (Parsing and resolving data.pools: model/task.h, task_pools.c.) */
void pools_free(struct pool_conf *pc);

#endif
