/* idmap: a small open-addressing map from int64 keys to dense indexes
 * 0, 1, 2, ... in order of insertion (de-duplication with an inverse index).
 * Header-only. */
#ifndef FS_IDMAP_H
#define FS_IDMAP_H

#include <stdint.h>
#include <stdlib.h>

#include "base/check.h"

struct idmap {
    int64_t *keys;
    int64_t *vals; /* index + 1; 0 = empty */
    uint64_t mask;
};

static inline void idmap_init(struct idmap *m, int64_t n)
{
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)n)
        cap <<= 1;
    m->keys = xmalloc(cap * sizeof *m->keys);
    m->vals = xcalloc(cap, sizeof *m->vals);
    m->mask = cap - 1;
}

static inline void idmap_free(struct idmap *m)
{
    free(m->keys);
    free(m->vals);
}

/* Index of key, inserting it as next (returned through *added) if new. */
static inline int64_t idmap_get(struct idmap *m, int64_t key, int64_t next, int *added)
{
    uint64_t h = ((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 17;
    for (;; h++) {
        uint64_t s = h & m->mask;
        if (m->vals[s] == 0) {
            m->keys[s] = key;
            m->vals[s] = next + 1;
            *added = 1;
            return next;
        }
        if (m->keys[s] == key) {
            *added = 0;
            return m->vals[s] - 1;
        }
    }
}

#endif
