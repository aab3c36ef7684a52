/* emb: the embedding engine's operations on the GPU (backend.h: emb_dedup,
 * emb_gather_shard, emb_sum_by_id, emb_sparse_update), mirroring
 * src/backend/backend_cpu_emb.c step for step:
 *
 *   dedup       stable radix sort of (id, token) pairs (CUB), segment heads,
 *               an inclusive scan numbers the distinct ids; each id's first
 *               token decides its chunk; a second stable sort by (owner,
 *               chunk) keeps ascending ids within a group; the inverse index
 *               is remapped through the ranks. The orders equal the CPU's.
 *   sum_by_id   the same sort of (key, position), then one block per distinct
 *               key sums its rows in position order in double: no float
 *               atomics, the same bits as the CPU.
 *   gather      one thread per element of out.
 *   update      one thread per row applies emb_optim_row (embedding/
 *               emb_optim.h, compiled for the device).
 *
 * dedup and sum_by_id return counts to the host, so they synchronise the
 * stream. Scratch memory is allocated on the stream (cudaMallocAsync). */
#include <stdint.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "embedding/emb_optim.h"

#define EMB_THREADS 256
#define EMB_MAX_BLOCKS 65536

static unsigned emb_blocks(int64_t n)
{
    int64_t b = (n + EMB_THREADS - 1) / EMB_THREADS;
    return (unsigned)(b < 1 ? 1 : b < EMB_MAX_BLOCKS ? b : EMB_MAX_BLOCKS);
}

#define GRID_LOOP(i, n)                                                                    \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);               \
         i += (int64_t)gridDim.x * blockDim.x)

static void *scratch(cudaStream_t s, size_t bytes)
{
    void *p = NULL;
    CUDA_CHECK(cudaMallocAsync(&p, bytes ? bytes : 1, s));
    return p;
}

static void release(cudaStream_t s, void *p) { CUDA_CHECK(cudaFreeAsync(p, s)); }

/* Bits that hold keys up to kmax (at least 1). */
static int key_bits(uint64_t kmax)
{
    int b = 1;
    while (b < 64 && (kmax >> b) != 0)
        b++;
    return b;
}

static __global__ void k_iota(int64_t n, int64_t *p)
{
    GRID_LOOP(i, n) p[i] = i;
}

/* heads[i] = 1 where a run of equal sorted keys starts */
static __global__ void k_heads(int64_t n, const int64_t *skey, int64_t *heads)
{
    GRID_LOOP(i, n) heads[i] = i == 0 || skey[i] != skey[i - 1];
}

static __global__ void k_max(int64_t n, const int64_t *keys, unsigned long long *out)
{
    GRID_LOOP(i, n) atomicMax(out, (unsigned long long)keys[i]);
}

/* Stable sort of positions 0..n-1 by keys (CUB radix sort): skey, spos. */
static void sort_pairs(cudaStream_t s, int64_t n, const int64_t *keys, int bits, int64_t *skey,
                       int64_t *spos)
{
    int64_t *pos = (int64_t *)scratch(s, (size_t)n * sizeof *pos);
    k_iota<<<emb_blocks(n), EMB_THREADS, 0, s>>>(n, pos);
    CUDA_CHECK_LAUNCH("k_iota");
    size_t tb = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, tb, (const uint64_t *)keys,
                                               (uint64_t *)skey, pos, spos, n, 0, bits, s));
    void *tmp = scratch(s, tb);
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(tmp, tb, (const uint64_t *)keys, (uint64_t *)skey,
                                               pos, spos, n, 0, bits, s));
    release(s, tmp);
    release(s, pos);
}

/* seg[i] = number of heads in [0, i] (inclusive scan); returns seg[n - 1]. */
static int64_t number_runs(cudaStream_t s, int64_t n, const int64_t *skey, int64_t *seg)
{
    int64_t *heads = (int64_t *)scratch(s, (size_t)n * sizeof *heads);
    k_heads<<<emb_blocks(n), EMB_THREADS, 0, s>>>(n, skey, heads);
    CUDA_CHECK_LAUNCH("k_heads");
    size_t tb = 0;
    CUDA_CHECK(cub::DeviceScan::InclusiveSum(NULL, tb, heads, seg, n, s));
    void *tmp = scratch(s, tb);
    CUDA_CHECK(cub::DeviceScan::InclusiveSum(tmp, tb, heads, seg, n, s));
    release(s, tmp);
    release(s, heads);
    int64_t runs = 0;
    CUDA_CHECK(cudaMemcpyAsync(&runs, seg + n - 1, sizeof runs, cudaMemcpyDeviceToHost, s));
    cuda_host_wait(s);
    return runs;
}

static int64_t max_key(cudaStream_t s, int64_t n, const int64_t *keys)
{
    unsigned long long *d = (unsigned long long *)scratch(s, sizeof *d), h = 0;
    CUDA_CHECK(cudaMemsetAsync(d, 0, sizeof *d, s));
    k_max<<<emb_blocks(n), EMB_THREADS, 0, s>>>(n, keys, d);
    CUDA_CHECK_LAUNCH("k_max");
    CUDA_CHECK(cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s));
    cuda_host_wait(s);
    release(s, d);
    return (int64_t)h;
}

/* The runs of equal keys of keys[n]: skey, spos (positions stably sorted
 * by key) and seg (each position's run number, from 1), all [n] scratch
 * from the stream (release them); returns the number of runs. */
static int64_t sorted_runs(cudaStream_t s, int64_t n, const int64_t *keys, int64_t **skey,
                           int64_t **spos, int64_t **seg)
{
    *skey = (int64_t *)scratch(s, (size_t)n * 8);
    *spos = (int64_t *)scratch(s, (size_t)n * 8);
    *seg = (int64_t *)scratch(s, (size_t)n * 8);
    sort_pairs(s, n, keys, key_bits((uint64_t)max_key(s, n, keys)), *skey, *spos);
    return number_runs(s, n, *skey, *seg);
}

/* --- dedup ------------------------------------------------------------------ */

/* For each run (distinct id) u: its id, its (owner, chunk) group; every
 * token's run index. */
static __global__ void k_runs(int64_t n, const int64_t *skey, const int64_t *spos,
                              const int64_t *seg, int64_t n_first, int G, int64_t *uid,
                              int64_t *group, int64_t *tinv)
{
    GRID_LOOP(i, n)
    {
        int64_t u = seg[i] - 1;
        tinv[spos[i]] = u;
        if (i == 0 || skey[i] != skey[i - 1]) { /* the run's first token: its first occurrence */
            uid[u] = skey[i];
            group[u] = (skey[i] % G) * 2 + (spos[i] < n_first ? 0 : 1);
        }
    }
}

static __global__ void k_place(int64_t nu, const int64_t *order, const int64_t *uid,
                               const int64_t *group, int G, int64_t *uniq, int64_t *rank,
                               unsigned long long *counts)
{
    GRID_LOOP(j, nu)
    {
        int64_t u = order[j];
        uniq[j] = uid[u];
        rank[u] = j;
        atomicAdd(&counts[group[u] / 2], 1ull); /* integer counts: exact in any order */
        if (group[u] % 2 == 0)
            atomicAdd(&counts[G + group[u] / 2], 1ull);
    }
}

static __global__ void k_remap(int64_t n, const int64_t *rank, int64_t *inverse)
{
    GRID_LOOP(i, n) inverse[i] = rank[inverse[i]];
}

int64_t cuda_emb_dedup(cudaStream_t s, int64_t n, const int64_t *ids, int64_t n_first, int G,
                       int64_t *uniq, int64_t *inverse, int64_t *counts_host)
{
    for (int p = 0; p < 2 * G; p++)
        counts_host[p] = 0;
    if (n <= 0)
        return 0;
    int64_t *skey, *spos, *seg;
    const int64_t nu = sorted_runs(s, n, ids, &skey, &spos, &seg);
    int64_t *uid = (int64_t *)scratch(s, (size_t)nu * 8), *group = (int64_t *)scratch(s, (size_t)nu * 8);
    k_runs<<<emb_blocks(n), EMB_THREADS, 0, s>>>(n, skey, spos, seg, n_first, G, uid, group,
                                                 inverse);
    CUDA_CHECK_LAUNCH("k_runs");
    int64_t *sgroup = skey, *order = spos; /* reuse: nu <= n */
    sort_pairs(s, nu, group, key_bits((uint64_t)(2 * G - 1)), sgroup, order);
    int64_t *rank = seg;
    unsigned long long *counts = (unsigned long long *)scratch(s, (size_t)2 * G * 8);
    CUDA_CHECK(cudaMemsetAsync(counts, 0, (size_t)2 * G * 8, s));
    k_place<<<emb_blocks(nu), EMB_THREADS, 0, s>>>(nu, order, uid, group, G, uniq, rank, counts);
    CUDA_CHECK_LAUNCH("k_place");
    k_remap<<<emb_blocks(n), EMB_THREADS, 0, s>>>(n, rank, inverse);
    CUDA_CHECK_LAUNCH("k_remap");
    CUDA_CHECK(cudaMemcpyAsync(counts_host, counts, (size_t)2 * G * 8, cudaMemcpyDeviceToHost, s));
    cuda_host_wait(s);
    void *all[] = {skey, spos, seg, uid, group, counts};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        release(s, all[i]);
    return nu;
}

/* --- gather ----------------------------------------------------------------- */

static __global__ void k_gather_shard(int64_t n, int dim, const float *w, const int64_t *ids,
                                      int G, float *out)
{
    GRID_LOOP(e, n * dim)
    {
        int64_t i = e / dim, j = e - i * dim;
        out[e] = w[ids[i] / G * dim + j];
    }
}

void cuda_emb_gather_shard(cudaStream_t s, int64_t n, int dim, const float *w, const int64_t *ids,
                           int G, float *out)
{
    if (n <= 0 || dim <= 0)
        return;
    k_gather_shard<<<emb_blocks(n * dim), EMB_THREADS, 0, s>>>(n, dim, w, ids, G, out);
    CUDA_CHECK_LAUNCH("k_gather_shard");
}

/* --- sums per key ------------------------------------------------------------- */

static __global__ void k_starts(int64_t n, const int64_t *skey, const int64_t *seg,
                                int64_t *start, int64_t *uid)
{
    GRID_LOOP(i, n)
    if (i == 0 || skey[i] != skey[i - 1]) {
        start[seg[i] - 1] = i;
        uid[seg[i] - 1] = skey[i];
    }
}

/* One block per run (grid-stride), threads over the columns: the run's rows
 * in position order, summed in double. */
static __global__ void k_run_sums(int64_t k, int64_t n, int dim, const int64_t *start,
                                  const int64_t *spos, const float *g, float *out)
{
    for (int64_t r = blockIdx.x; r < k; r += gridDim.x) {
        const int64_t lo = start[r], hi = r + 1 < k ? start[r + 1] : n;
        for (int j = threadIdx.x; j < dim; j += blockDim.x) {
            double acc = 0;
            for (int64_t i = lo; i < hi; i++)
                acc += g[spos[i] * dim + j];
            out[r * dim + j] = (float)acc;
        }
    }
}

int64_t cuda_emb_sum_by_id(cudaStream_t s, int64_t n, int dim, const int64_t *keys,
                           const float *g, int64_t *uid, float *out)
{
    if (n <= 0)
        return 0;
    int64_t *skey, *spos, *seg;
    const int64_t k = sorted_runs(s, n, keys, &skey, &spos, &seg);
    int64_t *start = (int64_t *)scratch(s, (size_t)k * 8);
    k_starts<<<emb_blocks(n), EMB_THREADS, 0, s>>>(n, skey, seg, start, uid);
    CUDA_CHECK_LAUNCH("k_starts");
    unsigned blocks = (unsigned)(k < EMB_MAX_BLOCKS ? k : EMB_MAX_BLOCKS);
    k_run_sums<<<blocks, dim < 128 ? 32 * ((dim + 31) / 32) : 128, 0, s>>>(k, n, dim, start,
                                                                            spos, g, out);
    CUDA_CHECK_LAUNCH("k_run_sums");
    void *all[] = {skey, spos, seg, start};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        release(s, all[i]);
    return k;
}

/* --- sparse update --------------------------------------------------------------- */

static __global__ void k_sparse_update(struct emb_optim_conf o, int64_t k, int dim,
                                       const int64_t *ids, int G, const float *g, float *w,
                                       float *state, int64_t state_floats, int64_t *steps)
{
    GRID_LOOP(i, k)
    {
        int64_t slot = ids[i] / G;
        emb_optim_row(&o, dim, w + slot * dim, state ? state + slot * state_floats : NULL,
                      steps ? steps + slot : NULL, g + i * dim);
    }
}

void cuda_emb_sparse_update(cudaStream_t s, const struct emb_optim_conf *opt, int64_t k, int dim,
                            const int64_t *ids, int G, const float *g, float *w, float *state,
                            int64_t state_floats, int64_t *steps)
{
    if (k <= 0)
        return;
    k_sparse_update<<<emb_blocks(k), EMB_THREADS, 0, s>>>(*opt, k, dim, ids, G, g, w, state,
                                                          state_floats, steps);
    CUDA_CHECK_LAUNCH("k_sparse_update");
}
