/* emb_dyn_row: the per-element arithmetic of a dynamic table's hash index
 * (embedding/emb_dyn.h): the owner's mix, an id's home in the index and
 * its probe, compiled for the host (the CPU reference: emb_dyn_index.c,
 * backend_cpu_dyn.c) and for the device (cuda/dyn.cu) alike, so that every
 * backend puts an id on the same owner and finds it the same way. The
 * index: keys[cap] (0 = empty), vals[cap], cap a power of two, linear
 * probing, kept at most half full (a probe always ends). */
#ifndef FS_EMB_DYN_ROW_H
#define FS_EMB_DYN_ROW_H

#include <stdint.h>

#ifdef __CUDACC__
#define EDR_HD __host__ __device__
#else
#define EDR_HD
#endif

/* splitmix64's finaliser of id */
static inline EDR_HD uint64_t edr_mix(int64_t id)
{
    uint64_t z = (uint64_t)id + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The owner of id among G shards: mix mod G (never id mod G). */
static inline EDR_HD int edr_owner(int64_t id, int G)
{
    return (int)(edr_mix(id) % (uint64_t)G);
}

/* The index's home of a key: other bits than the owner's (mix mod G would
 * leave the low bits of a shard's keys alike). */
static inline EDR_HD uint64_t edr_home(int64_t key, int64_t cap)
{
    return (edr_mix(key ^ (int64_t)0x5851f42d4c957f2dll) >> 7) & (uint64_t)(cap - 1);
}

/* The position of key in the index, or -1 when absent. */
static inline EDR_HD int64_t edr_find(const int64_t *keys, int64_t cap, int64_t key)
{
    const uint64_t mask = (uint64_t)cap - 1;
    for (uint64_t h = edr_home(key, cap);; h = (h + 1) & mask) {
        if (keys[h] == key)
            return (int64_t)h;
        if (keys[h] == 0)
            return -1;
    }
}

/* The slot of key (vals at its position), or -1 when absent. */
static inline EDR_HD int64_t edr_get(const int64_t *keys, const int64_t *vals, int64_t cap,
                                     int64_t key)
{
    const int64_t h = edr_find(keys, cap, key);
    return h < 0 ? -1 : vals[h];
}

/* The slot the i-th row inserted at a tick takes: the free list first
 * (freel[nfree - 1] first), then the pool's unused slots from next. */
static inline EDR_HD int64_t edr_slot(int64_t i, int64_t nfree, const int64_t *freel,
                                      int64_t next)
{
    return i < nfree ? freel[nfree - 1 - i] : next + (i - nfree);
}

#endif
