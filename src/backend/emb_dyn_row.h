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

/* --- the sequential steps of a tick (one thread on a device: their order is
 * the host table's, emb_dyn.c) ------------------------------------------------ */

/* key (absent) := val in the index (not full). */
static inline EDR_HD void edr_put(int64_t *keys, int64_t *vals, int64_t cap, int64_t key,
                                  int64_t val)
{
    const uint64_t mask = (uint64_t)cap - 1;
    uint64_t h = edr_home(key, cap);
    while (keys[h] != 0 && keys[h] != key)
        h = (h + 1) & mask;
    keys[h] = key;
    vals[h] = val;
}

/* Remove key (backward shift: later entries of its run move into the hole
 * when their home is not between the hole and them); 1 if it was there. */
static inline EDR_HD int edr_del(int64_t *keys, int64_t *vals, int64_t cap, int64_t key)
{
    const uint64_t mask = (uint64_t)cap - 1;
    const int64_t at = edr_find(keys, cap, key);
    if (at < 0)
        return 0;
    uint64_t hole = (uint64_t)at;
    for (uint64_t j = (hole + 1) & mask; keys[j] != 0; j = (j + 1) & mask) {
        const uint64_t k = edr_home(keys[j], cap);
        const int movable = hole <= j ? (k <= hole || k > j) : (k <= hole && k > j);
        if (movable) {
            keys[hole] = keys[j];
            vals[hole] = vals[j];
            hole = j;
        }
    }
    keys[hole] = 0;
    return 1;
}

/* Evict the row of slot s: its id onto gone, off the index, the slot onto
 * the free list (freel[*nfree], then *nfree + 1). */
static inline EDR_HD void edr_evict(int64_t s, int64_t *sid, int64_t *keys, int64_t *vals,
                                    int64_t cap, int64_t *freel, int64_t *nfree, int64_t *gone,
                                    int64_t *ngone)
{
    gone[(*ngone)++] = sid[s];
    edr_del(keys, vals, cap, sid[s]);
    sid[s] = 0;
    freel[(*nfree)++] = s;
}

/* record x before record y: records of w int64 ordered by their first
 * field, then (w > 1) their second */
static inline EDR_HD int edr_before(const int64_t *x, const int64_t *y, int w)
{
    return x[0] != y[0] ? x[0] < y[0] : w > 1 && x[1] < y[1];
}

static inline EDR_HD void edr_swap(int64_t *x, int64_t *y, int w)
{
    for (int j = 0; j < w; j++) {
        const int64_t t = x[j];
        x[j] = y[j];
        y[j] = t;
    }
}

/* a[n][w] ascending by edr_before (heap sort: no recursion, no allocation) */
static inline EDR_HD void edr_sort(int64_t *a, int64_t n, int w)
{
    for (int64_t start = n / 2 - 1, end = n;;) {
        int64_t root;
        if (start >= 0)
            root = start--;
        else {
            if (--end <= 0)
                return;
            edr_swap(a, a + end * w, w);
            root = 0;
        }
        for (int64_t c; (c = 2 * root + 1) < end; root = c) {
            if (c + 1 < end && edr_before(a + c * w, a + (c + 1) * w, w))
                c++;
            if (!edr_before(a + root * w, a + c * w, w))
                break;
            edr_swap(a + root * w, a + c * w, w);
        }
    }
}

/* The probation list past its bound (emb_dyn.c: prob_trim): the entries
 * last seen before the median tick go (all of them at the median if none
 * is older); scratch [3 pn]. Returns the entries left. */
static inline EDR_HD int64_t edr_prob_trim(int64_t *pkeys, int64_t *pvals, int64_t pcap,
                                           int64_t pn, int64_t *scratch)
{
    int64_t *st = scratch, *k = scratch + pn, *sorted = scratch + 2 * pn, m = 0;
    for (int64_t h = 0; h < pcap; h++)
        if (pkeys[h]) {
            k[m] = pkeys[h];
            st[m] = pvals[h] >> 16;
            sorted[m] = st[m];
            m++;
        }
    edr_sort(sorted, m, 1);
    const int64_t cut = sorted[m / 2];
    int64_t gone = 0;
    for (int pass = 0; pass < 2 && !gone; pass++)
        for (int64_t i = 0; i < m; i++)
            if (st[i] < cut || (pass && st[i] == cut))
                gone += edr_del(pkeys, pvals, pcap, k[i]);
    return pn - gone;
}

/* Admission of the distinct missing ids miss[m] (ascending) at tick clock
 * (emb_dyn.c: admitted): one more sighting each on the probation list
 * (pkeys, pvals: (tick << 16) | sightings; pn entries, *pn updated; the
 * list trimmed when it holds prob_max > 0 before a put); the admitted ones
 * kept in miss, in order; their number returned. scratch: [3 (prob_max or
 * pn + m)]. */
static inline EDR_HD int64_t edr_admit(int64_t m, int64_t *miss, int64_t admit, int64_t clock,
                                       int64_t *pkeys, int64_t *pvals, int64_t pcap, int64_t *pn,
                                       int64_t prob_max, int64_t *scratch)
{
    int64_t na = 0;
    for (int64_t i = 0; i < m; i++) {
        const int64_t id = miss[i];
        const int64_t at = edr_find(pkeys, pcap, id);
        const int64_t seen = (at >= 0 ? (pvals[at] & 0xffff) : 0) + 1;
        if (seen >= admit) {
            if (at >= 0)
                *pn -= edr_del(pkeys, pvals, pcap, id);
            miss[na++] = id;
            continue;
        }
        if (at >= 0)
            pvals[at] = (clock << 16) | seen;
        else {
            if (prob_max && *pn >= prob_max)
                *pn = edr_prob_trim(pkeys, pvals, pcap, *pn, scratch);
            edr_put(pkeys, pvals, pcap, id, (clock << 16) | seen);
            (*pn)++;
        }
    }
    return na;
}

/* The ticks' counters of a device table (ctl[EDR_CTL], backend memory):
 * the free list's length, the evicted list's, the probation list's, the
 * rows evicted at this tick and (admission) the distinct missing ids
 * before it. */
enum { EDR_NFREE, EDR_NGONE, EDR_PROB, EDR_EVICTED, EDR_MISSING, EDR_CTL };

/* ttl: the rows of slots 1 .. next - 1 not used in the last ttl ticks go,
 * in slot order (emb_dyn.c, step 2). */
static inline EDR_HD void edr_expire(int64_t ttl, int64_t clock, int64_t next, int64_t *sid,
                                     const int64_t *last, int64_t *keys, int64_t *vals,
                                     int64_t cap, int64_t *freel, int64_t *gone, int64_t *ctl)
{
    for (int64_t s = 1; s < next; s++)
        if (sid[s] && clock - last[s] > ttl) {
            edr_evict(s, sid, keys, vals, cap, freel, &ctl[EDR_NFREE], gone, &ctl[EDR_NGONE]);
            ctl[EDR_EVICTED]++;
        }
}

/* lru / lfu (emb_dyn.c, step 4): when the na admitted ids need more than
 * the free slots and those the pool may still grow by (top - next), the
 * least recently (last) / frequently (freq) used rows not used at this
 * tick or the one before go, ties by the smaller id, in that order.
 * scratch: [3 next]. */
static inline EDR_HD void edr_evict_full(int lfu, int64_t clock, int64_t next, int64_t top,
                                         int64_t na, int64_t *sid, const int64_t *last,
                                         const int64_t *freq, int64_t *keys, int64_t *vals,
                                         int64_t cap, int64_t *freel, int64_t *gone,
                                         int64_t *ctl, int64_t *scratch)
{
    const int64_t avail = ctl[EDR_NFREE] + (top - next);
    if (na <= avail)
        return;
    int64_t nc = 0;
    for (int64_t s = 1; s < next; s++)
        if (sid[s] && last[s] < clock - 1) {
            scratch[3 * nc] = lfu ? freq[s] : last[s];
            scratch[3 * nc + 1] = sid[s];
            scratch[3 * nc + 2] = s;
            nc++;
        }
    edr_sort(scratch, nc, 3);
    for (int64_t i = 0; i < nc && i < na - avail; i++) {
        edr_evict(scratch[3 * i + 2], sid, keys, vals, cap, freel, &ctl[EDR_NFREE], gone,
                  &ctl[EDR_NGONE]);
        ctl[EDR_EVICTED]++;
    }
}

#endif
