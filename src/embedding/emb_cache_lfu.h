/* emb_cache_lfu: the eviction order of embedding.cache_policy = lfu
 * (emb_cache.c): a binary min-heap of a cache's candidate slots keyed by
 * (use count, local index held), so the least frequently used row goes
 * first and ties go to the smaller id. The counts and the held indices
 * are the cache's arrays (read, never written, here); the heap keeps each
 * slot's position, so a slot leaves it in O(log n) when its row is used
 * again or set from the host. */
#ifndef FS_EMB_CACHE_LFU_H
#define FS_EMB_CACHE_LFU_H

#include <stdint.h>

struct lfu_heap {
    int64_t *h, *pos, n;       /* h[n] slots; pos[slot]: index in h, or -1 */
    const int64_t *freq, *key; /* per slot: the count, the local index held */
};

/* A heap over slots 0 .. S - 1, empty; freq and key the cache's arrays. */
void lfu_init(struct lfu_heap *q, int64_t S, const int64_t *freq, const int64_t *key);
void lfu_free(struct lfu_heap *q);
void lfu_push(struct lfu_heap *q, int64_t s);
/* s out of the heap (nothing when it is not in it) */
void lfu_remove(struct lfu_heap *q, int64_t s);
/* the least slot, taken out; -1 when empty */
int64_t lfu_pop(struct lfu_heap *q);
/* the heap rebuilt after its slots' counts changed (the decay) */
void lfu_rebuild(struct lfu_heap *q);

#endif
