/* dyn: the dynamic tables' operations on the GPU (backend.h, "Dynamic
 * tables in the backend's memory"), mirroring src/backend/backend_cpu_dyn.c
 * with the per-element arithmetic of src/backend/emb_dyn_row.h (the owner's
 * mix, an id's home and its probe, a new row's slot), compiled here for
 * the device:
 *
 *   find     one thread per id probes the index (edr_get).
 *   stamp    one thread per id: an atomic exchange of the row's last tick
 *            with this one; the thread that changed it adds the use
 *            (freq + 1 once per tick, as the CPU's test of last != clock).
 *   missing  the ids without a row (the others as UINT64_MAX, sorted last)
 *            radix-sorted by CUB, run heads marked, an inclusive scan
 *            places each distinct one; the count at out[0].
 *   insert   one thread per new row: its slot (edr_slot), the row copied,
 *            state and steps zero, the statistics, and the key put in the
 *            index by compare-and-swap on an empty position (the keys are
 *            distinct and absent: the positions differ from the CPU's
 *            sequential probing only in which of two free positions a key
 *            takes, never in what a probe finds).
 *   rehash   one thread per old position, the same compare-and-swap.
 *   virtual  one thread per id; the unadmitted hits counted by an integer
 *            atomic (exact in any order).
 *   expire, admit, evict_full: the sequential steps of a tick (ttl's
 *            evictions in slot order, admission in id order with the
 *            probation list's trimming, lru / lfu's victims sorted) run in
 *            one thread, the host's own functions (emb_dyn_row.h: edr_*),
 *            so that their orders (the free list's, the evicted list's)
 *            are the host's. Correct, not fast. expire and evict_full
 *            have parallel forms, the default, NOT YET RUN ON A GPU
 *            (FREESCALE_CUDA_DYN_SERIAL=1 selects the one-thread forms):
 *            cuda_dyn_expire_par (flags, an exclusive scan, the lists
 *            written a slot a thread, the index's deletions alone in one
 *            thread), cuda_dyn_evict_full_par (two stable radix sorts:
 *            (statistic, id), then the victims evicted in order by one
 *            thread). admit is still one thread.
 *
 * Nothing waits: the host reads out[0 .. n] (emb_dyn_dev.c). Scratch
 * memory: the workspace (kernels.h). */
#include <stdint.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "backend/emb_dyn_row.h"

#define DYN_THREADS 256

/* key into the index (distinct from every key there), value val */
static __device__ void dyn_put(int64_t *keys, int64_t *vals, int64_t cap, int64_t key,
                               int64_t val)
{
    const uint64_t mask = (uint64_t)cap - 1;
    for (uint64_t h = edr_home(key, cap);; h = (h + 1) & mask) {
        const unsigned long long prev =
            atomicCAS((unsigned long long *)&keys[h], 0ull, (unsigned long long)key);
        if (prev == 0ull) {
            vals[h] = val;
            return;
        }
    }
}

static __global__ void k_find(int64_t n, const int64_t *ids, const int64_t *keys,
                              const int64_t *vals, int64_t cap, int64_t *slot)
{
    GRID_LOOP(i, n) slot[i] = edr_get(keys, vals, cap, ids[i]);
}

void cuda_dyn_find(cudaStream_t s, int64_t n, const int64_t *ids, const int64_t *keys,
                   const int64_t *vals, int64_t cap, int64_t *slot)
{
    if (n <= 0)
        return;
    k_find<<<launch_blocks(n, DYN_THREADS), DYN_THREADS, 0, s>>>(n, ids, keys, vals, cap, slot);
    CUDA_CHECK_LAUNCH("k_find");
}

static __global__ void k_stamp(int64_t n, const int64_t *slot, int64_t clock, int64_t *last,
                               int64_t *freq)
{
    GRID_LOOP(i, n)
    {
        const int64_t r = slot[i];
        if (r >= 0 && atomicExch((unsigned long long *)&last[r], (unsigned long long)clock) !=
                          (unsigned long long)clock)
            atomicAdd((unsigned long long *)&freq[r], 1ull);
    }
}

void cuda_dyn_stamp(cudaStream_t s, int64_t n, const int64_t *slot, int64_t clock,
                    int64_t *last, int64_t *freq)
{
    if (n <= 0)
        return;
    k_stamp<<<launch_blocks(n, DYN_THREADS), DYN_THREADS, 0, s>>>(n, slot, clock, last, freq);
    CUDA_CHECK_LAUNCH("k_stamp");
}

/* CUB scratch for an n-key sort or an n scan */
static size_t dyn_cub_bytes(int64_t n)
{
    size_t a = 0, b = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortKeys(NULL, a, (const uint64_t *)NULL, (uint64_t *)NULL,
                                              n, 0, 64, (cudaStream_t)0));
    CUDA_CHECK(cub::DeviceScan::InclusiveSum(NULL, b, (const int64_t *)NULL, (int64_t *)NULL, n,
                                             (cudaStream_t)0));
    return a > b ? a : b;
}

size_t cuda_dyn_missing_ws_bytes(int64_t n)
{
    const size_t v = cuda_ws_round((size_t)(n > 0 ? n : 1) * 8);
    return 3 * v + cuda_ws_round(dyn_cub_bytes(n > 0 ? n : 1));
}

static __global__ void k_miss_keys(int64_t n, const int64_t *ids, const int64_t *slot,
                                   uint64_t *key)
{
    GRID_LOOP(i, n) key[i] = slot[i] < 0 ? (uint64_t)ids[i] : UINT64_MAX;
}

static __global__ void k_miss_heads(int64_t n, const uint64_t *sk, int64_t *heads)
{
    GRID_LOOP(i, n) heads[i] = sk[i] != UINT64_MAX && (i == 0 || sk[i] != sk[i - 1]);
}

static __global__ void k_miss_place(int64_t n, const uint64_t *sk, const int64_t *heads,
                                    const int64_t *pos, int64_t *out)
{
    GRID_LOOP(i, n)
    {
        if (heads[i])
            out[pos[i]] = (int64_t)sk[i]; /* pos from 1: out[1 ..] */
        if (i == n - 1)
            out[0] = pos[i];
    }
}

void cuda_dyn_missing(cudaStream_t s, int64_t n, const int64_t *ids, const int64_t *slot,
                      int64_t *out, struct cuda_ws *ws)
{
    if (n <= 0) {
        CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof *out, s));
        return;
    }
    const size_t v = (size_t)n * 8;
    uint64_t *key = (uint64_t *)cuda_ws_take(ws, v), *sk = (uint64_t *)cuda_ws_take(ws, v);
    int64_t *heads = (int64_t *)cuda_ws_take(ws, v);
    size_t tb = dyn_cub_bytes(n);
    void *tmp = cuda_ws_take(ws, tb);
    k_miss_keys<<<launch_blocks(n, DYN_THREADS), DYN_THREADS, 0, s>>>(n, ids, slot, key);
    CUDA_CHECK_LAUNCH("k_miss_keys");
    CUDA_CHECK(cub::DeviceRadixSort::SortKeys(tmp, tb, key, sk, n, 0, 64, s));
    k_miss_heads<<<launch_blocks(n, DYN_THREADS), DYN_THREADS, 0, s>>>(n, sk, heads);
    CUDA_CHECK_LAUNCH("k_miss_heads");
    int64_t *pos = (int64_t *)key; /* the keys are sorted into sk: reused */
    tb = dyn_cub_bytes(n);
    CUDA_CHECK(cub::DeviceScan::InclusiveSum(tmp, tb, heads, pos, n, s));
    k_miss_place<<<launch_blocks(n, DYN_THREADS), DYN_THREADS, 0, s>>>(n, sk, heads, pos, out);
    CUDA_CHECK_LAUNCH("k_miss_place");
}

static __global__ void k_insert(int64_t k, const int64_t *ids, const float *rows, int width,
                                int64_t nfree, const int64_t *freel, int64_t next, int64_t clock,
                                int64_t *keys, int64_t *vals, int64_t cap, int64_t *sid,
                                int64_t *last, int64_t *freq, float *w, float *state,
                                int64_t state_floats, int64_t *steps)
{
    GRID_LOOP(i, k)
    {
        const int64_t r = edr_slot(i, nfree, freel, next);
        for (int j = 0; j < width; j++)
            w[r * width + j] = rows[i * width + j];
        for (int64_t j = 0; j < state_floats; j++)
            state[r * state_floats + j] = 0.0f;
        if (steps)
            steps[r] = 0;
        sid[r] = ids[i];
        last[r] = clock;
        freq[r] = 1;
        dyn_put(keys, vals, cap, ids[i], r);
    }
}

void cuda_dyn_insert(cudaStream_t s, int64_t k, const int64_t *ids, const float *rows, int width,
                     int64_t nfree, const int64_t *freel, int64_t next, int64_t clock,
                     int64_t *keys, int64_t *vals, int64_t cap, int64_t *sid, int64_t *last,
                     int64_t *freq, float *w, float *state, int64_t state_floats,
                     int64_t *steps)
{
    if (k <= 0)
        return;
    k_insert<<<launch_blocks(k, DYN_THREADS), DYN_THREADS, 0, s>>>(
        k, ids, rows, width, nfree, freel, next, clock, keys, vals, cap, sid, last, freq, w, state,
        state_floats, steps);
    CUDA_CHECK_LAUNCH("k_insert");
}

static __global__ void k_rehash(const int64_t *okeys, const int64_t *ovals, int64_t ocap,
                                int64_t *keys, int64_t *vals, int64_t cap)
{
    GRID_LOOP(j, ocap)
    {
        if (okeys[j])
            dyn_put(keys, vals, cap, okeys[j], ovals[j]);
    }
}

void cuda_dyn_rehash(cudaStream_t s, const int64_t *okeys, const int64_t *ovals, int64_t ocap,
                     int64_t *keys, int64_t *vals, int64_t cap)
{
    k_rehash<<<launch_blocks(ocap, DYN_THREADS), DYN_THREADS, 0, s>>>(okeys, ovals, ocap, keys,
                                                                      vals, cap);
    CUDA_CHECK_LAUNCH("k_rehash");
}

static __global__ void k_virtual(int64_t n, int64_t *ids, const int64_t *slot,
                                 const int64_t *keys, const int64_t *vals, int64_t cap, int G,
                                 int shard, int count, int64_t *acc)
{
    GRID_LOOP(i, n)
    {
        int64_t r = slot[i] >= 0 ? slot[i] : edr_get(keys, vals, cap, ids[i]);
        if (r < 0) {
            r = 0;
            if (count)
                atomicAdd((unsigned long long *)acc, 1ull);
        }
        ids[i] = r * G + shard;
    }
}

void cuda_dyn_virtual(cudaStream_t s, int64_t n, int64_t *ids, const int64_t *slot,
                      const int64_t *keys, const int64_t *vals, int64_t cap, int G, int shard,
                      int count, int64_t *acc)
{
    if (n <= 0)
        return;
    k_virtual<<<launch_blocks(n, DYN_THREADS), DYN_THREADS, 0, s>>>(n, ids, slot, keys, vals, cap,
                                                                    G, shard, count, acc);
    CUDA_CHECK_LAUNCH("k_virtual");
}

static __global__ void k_expire(int64_t ttl, int64_t clock, int64_t next, int64_t *sid,
                                const int64_t *last, int64_t *keys, int64_t *vals, int64_t cap,
                                int64_t *freel, int64_t *gone, int64_t *ctl)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        edr_expire(ttl, clock, next, sid, last, keys, vals, cap, freel, gone, ctl);
}

void cuda_dyn_expire(cudaStream_t s, int64_t ttl, int64_t clock, int64_t next, int64_t *sid,
                     const int64_t *last, int64_t *keys, int64_t *vals, int64_t cap,
                     int64_t *freel, int64_t *gone, int64_t *ctl)
{
    k_expire<<<1, 1, 0, s>>>(ttl, clock, next, sid, last, keys, vals, cap, freel, gone, ctl);
    CUDA_CHECK_LAUNCH("k_expire");
}

/* The parallel expire (not yet run on a GPU; FREESCALE_CUDA_DYN_SERIAL=1
 * keeps the one-thread k_expire): flags of the slots 1 .. next - 1 that
 * go, their places by an exclusive scan (slot order: the host's), the ids
 * onto gone and the slots onto the free list by one thread a slot, then
 * the index's deletions, in that order, in one thread (a backward shift
 * is not safe in parallel; the rows expired are few against next). */
static size_t expire_scan_bytes(int64_t n)
{
    size_t b = 0;
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(NULL, b, (const int64_t *)NULL, (int64_t *)NULL, n,
                                             (cudaStream_t)0));
    return b;
}

size_t cuda_dyn_expire_ws_bytes(int64_t next)
{
    const int64_t n = next > 1 ? next - 1 : 1;
    return 2 * cuda_ws_round((size_t)n * 8) + cuda_ws_round(expire_scan_bytes(n));
}

static __global__ void k_expire_flags(int64_t n, int64_t ttl, int64_t clock, const int64_t *sid,
                                      const int64_t *last, int64_t *flag)
{
    GRID_LOOP(i, n) flag[i] = sid[i + 1] && clock - last[i + 1] > ttl; /* slot i + 1 */
}

static __global__ void k_expire_place(int64_t n, const int64_t *flag, const int64_t *pos,
                                      const int64_t *sid, int64_t *freel, int64_t *gone,
                                      const int64_t *ctl)
{
    GRID_LOOP(i, n) {
        if (flag[i]) {
            gone[ctl[EDR_NGONE] + pos[i]] = sid[i + 1];
            freel[ctl[EDR_NFREE] + pos[i]] = i + 1;
        }
    }
}

static __global__ void k_expire_finish(int64_t n, const int64_t *flag, const int64_t *pos,
                                       int64_t *sid, int64_t *keys, int64_t *vals, int64_t cap,
                                       const int64_t *freel, const int64_t *gone, int64_t *ctl)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    const int64_t k = pos[n - 1] + flag[n - 1], g0 = ctl[EDR_NGONE], f0 = ctl[EDR_NFREE];
    for (int64_t j = 0; j < k; j++) {
        edr_del(keys, vals, cap, gone[g0 + j]);
        sid[freel[f0 + j]] = 0;
    }
    ctl[EDR_NGONE] += k;
    ctl[EDR_NFREE] += k;
    ctl[EDR_EVICTED] += k;
}

void cuda_dyn_expire_par(cudaStream_t s, int64_t ttl, int64_t clock, int64_t next, int64_t *sid,
                         const int64_t *last, int64_t *keys, int64_t *vals, int64_t cap,
                         int64_t *freel, int64_t *gone, int64_t *ctl, struct cuda_ws *ws)
{
    const int64_t n = next - 1;
    if (n <= 0)
        return;
    int64_t *flag = (int64_t *)cuda_ws_take(ws, (size_t)n * 8);
    int64_t *pos = (int64_t *)cuda_ws_take(ws, (size_t)n * 8);
    size_t tb = expire_scan_bytes(n);
    void *tmp = cuda_ws_take(ws, tb);
    k_expire_flags<<<launch_blocks(n, DYN_THREADS), DYN_THREADS, 0, s>>>(n, ttl, clock, sid, last,
                                                                         flag);
    CUDA_CHECK_LAUNCH("k_expire_flags");
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(tmp, tb, flag, pos, n, s));
    k_expire_place<<<launch_blocks(n, DYN_THREADS), DYN_THREADS, 0, s>>>(n, flag, pos, sid, freel,
                                                                         gone, ctl);
    CUDA_CHECK_LAUNCH("k_expire_place");
    k_expire_finish<<<1, 1, 0, s>>>(n, flag, pos, sid, keys, vals, cap, freel, gone, ctl);
    CUDA_CHECK_LAUNCH("k_expire_finish");
}

static __global__ void k_admit(int64_t *out, int64_t admit, int64_t clock, int64_t *pkeys,
                               int64_t *pvals, int64_t pcap, int64_t prob_max, int64_t *scratch,
                               int64_t *ctl)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        ctl[EDR_MISSING] = out[0];
        out[0] = edr_admit(out[0], out + 1, admit, clock, pkeys, pvals, pcap, &ctl[EDR_PROB],
                           prob_max, scratch);
    }
}

void cuda_dyn_admit(cudaStream_t s, int64_t *out, int64_t admit, int64_t clock, int64_t *pkeys,
                    int64_t *pvals, int64_t pcap, int64_t prob_max, int64_t *scratch,
                    int64_t *ctl)
{
    k_admit<<<1, 1, 0, s>>>(out, admit, clock, pkeys, pvals, pcap, prob_max, scratch, ctl);
    CUDA_CHECK_LAUNCH("k_admit");
}

static __global__ void k_evict_full(int lfu, int64_t clock, int64_t next, int64_t top,
                                    const int64_t *out, int64_t *sid, const int64_t *last,
                                    const int64_t *freq, int64_t *keys, int64_t *vals,
                                    int64_t cap, int64_t *freel, int64_t *gone, int64_t *ctl,
                                    int64_t *scratch)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        edr_evict_full(lfu, clock, next, top, out[0], sid, last, freq, keys, vals, cap, freel,
                       gone, ctl, scratch);
}

void cuda_dyn_evict_full(cudaStream_t s, int lfu, int64_t clock, int64_t next, int64_t top,
                         const int64_t *out, int64_t *sid, const int64_t *last,
                         const int64_t *freq, int64_t *keys, int64_t *vals, int64_t cap,
                         int64_t *freel, int64_t *gone, int64_t *ctl, int64_t *scratch)
{
    k_evict_full<<<1, 1, 0, s>>>(lfu, clock, next, top, out, sid, last, freq, keys, vals, cap,
                                 freel, gone, ctl, scratch);
    CUDA_CHECK_LAUNCH("k_evict_full");
}

/* The parallel evict_full (not yet run on a GPU; FREESCALE_CUDA_DYN_SERIAL=1
 * keeps the one-thread k_evict_full): the candidates (rows not used at
 * this tick or the one before) sorted by (statistic, id) by two stable
 * radix sorts (id, then the statistic: last for lru, freq for lfu), the
 * others after them; one thread then evicts the first na - avail, the
 * host's order (edr_evict_full). The sorts run whenever the host calls
 * (na is on the device); emb_dyn_dev.c calls only when the tick's ids may
 * not fit. */
static size_t evict_sort_bytes(int64_t n)
{
    size_t b = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, b, (const uint64_t *)NULL, (uint64_t *)NULL,
                                               (const int64_t *)NULL, (int64_t *)NULL, n, 0, 64,
                                               (cudaStream_t)0));
    return b;
}

size_t cuda_dyn_evict_full_ws_bytes(int64_t next)
{
    const int64_t n = next > 1 ? next - 1 : 1;
    return 4 * cuda_ws_round((size_t)n * 8) + cuda_ws_round(evict_sort_bytes(n));
}

/* a candidate of slot s: its row not used at this tick or the one before */
static __device__ int ef_candidate(int64_t s, int64_t clock, const int64_t *sid,
                                   const int64_t *last)
{
    return sid[s] && last[s] < clock - 1;
}

static __global__ void k_ef_ids(int64_t n, int64_t clock, const int64_t *sid,
                                const int64_t *last, uint64_t *key, int64_t *slot)
{
    GRID_LOOP(i, n) {
        key[i] = ef_candidate(i + 1, clock, sid, last) ? (uint64_t)sid[i + 1] : UINT64_MAX;
        slot[i] = i + 1;
    }
}

/* the statistic of the slots in id order, as an unsigned key that sorts
 * as the signed value; the others last */
static __global__ void k_ef_stats(int64_t n, int lfu, const uint64_t *idk, const int64_t *slot,
                                  const int64_t *last, const int64_t *freq, uint64_t *key)
{
    GRID_LOOP(i, n) {
        const int64_t s = slot[i], v = lfu ? freq[s] : last[s];
        key[i] = idk[i] == UINT64_MAX ? UINT64_MAX : (uint64_t)v ^ ((uint64_t)1 << 63);
    }
}

static __global__ void k_ef_finish(int64_t n, int64_t clock, int64_t next, int64_t top,
                                   const int64_t *out, const int64_t *order, int64_t *sid,
                                   const int64_t *last, int64_t *keys, int64_t *vals,
                                   int64_t cap, int64_t *freel, int64_t *gone, int64_t *ctl)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    const int64_t avail = ctl[EDR_NFREE] + (top - next), na = out[0];
    for (int64_t j = 0; j < n && j < na - avail; j++) {
        const int64_t s = order[j];
        if (!ef_candidate(s, clock, sid, last))
            break; /* the candidates are all gone: the others follow them */
        edr_evict(s, sid, keys, vals, cap, freel, &ctl[EDR_NFREE], gone, &ctl[EDR_NGONE]);
        ctl[EDR_EVICTED]++;
    }
}

void cuda_dyn_evict_full_par(cudaStream_t s, int lfu, int64_t clock, int64_t next, int64_t top,
                             const int64_t *out, int64_t *sid, const int64_t *last,
                             const int64_t *freq, int64_t *keys, int64_t *vals, int64_t cap,
                             int64_t *freel, int64_t *gone, int64_t *ctl, struct cuda_ws *ws)
{
    const int64_t n = next - 1;
    if (n <= 0)
        return;
    uint64_t *ka = (uint64_t *)cuda_ws_take(ws, (size_t)n * 8);
    uint64_t *kb = (uint64_t *)cuda_ws_take(ws, (size_t)n * 8);
    int64_t *va = (int64_t *)cuda_ws_take(ws, (size_t)n * 8);
    int64_t *vb = (int64_t *)cuda_ws_take(ws, (size_t)n * 8);
    size_t tb = evict_sort_bytes(n);
    void *tmp = cuda_ws_take(ws, tb);
    k_ef_ids<<<launch_blocks(n, DYN_THREADS), DYN_THREADS, 0, s>>>(n, clock, sid, last, ka, va);
    CUDA_CHECK_LAUNCH("k_ef_ids");
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(tmp, tb, ka, kb, va, vb, n, 0, 64, s));
    k_ef_stats<<<launch_blocks(n, DYN_THREADS), DYN_THREADS, 0, s>>>(n, lfu, kb, vb, last, freq,
                                                                     ka);
    CUDA_CHECK_LAUNCH("k_ef_stats");
    tb = evict_sort_bytes(n);
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(tmp, tb, ka, kb, vb, va, n, 0, 64, s));
    k_ef_finish<<<1, 1, 0, s>>>(n, clock, next, top, out, va, sid, last, keys, vals, cap, freel,
                                gone, ctl);
    CUDA_CHECK_LAUNCH("k_ef_finish");
}
