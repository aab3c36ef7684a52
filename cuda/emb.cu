/* emb: the embedding engine's operations on the GPU (backend.h: emb_dedup,
 * emb_gather_shard, emb_sum_by_id, emb_sparse_update), mirroring
 * src/backend/backend_cpu_emb.c step for step:
 *
 *   dedup       stable radix sort of (id, token) pairs (CUB), segment heads,
 *               an inclusive scan numbers the distinct ids; each id's first
 *               token decides its chunk; a second stable sort by (owner,
 *               chunk) keeps ascending ids within a group (every slot past
 *               the distinct ids carries the group 2G: it sorts last); the
 *               inverse index is remapped through the ranks. The orders
 *               equal the CPU's. One host wait: the counts and the number
 *               of distinct ids, copied down together.
 *   sum_by_id   the same sort of (key, position), then one block per distinct
 *               key sums its rows in position order in double: no float
 *               atomics, the same bits as the CPU. The number of keys stays
 *               on the device: uid past them is -1.
 *   gather      one thread per element of out.
 *   update      one warp per row applies emb_optim_row (embedding/
 *               emb_optim.h) with its columns split over the lanes
 *               (emb_optim_row_warp: the same maths per column, adagrad's
 *               sum in the CPU's order: the CPU's bits); ids < 0 are
 *               skipped.
 *
 * Every grid that depends on a count kept on the device covers the upper
 * bound (n) and reads the count. Scratch memory: the workspace (kernels.h). */
#include <stdint.h>
#include <stdlib.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "backend/emb_dyn_row.h"
#include "backend/emb_optim.h"

#define EMB_THREADS 256
#define EMB_KEY_BITS 63 /* ids and keys are >= 0: the bits of an unknown bound */

/* Bits that hold keys up to kmax (at least 1). */
static int key_bits(uint64_t kmax)
{
    int b = 1;
    while (b < 64 && (kmax >> b) != 0)
        b++;
    return b;
}

/* The radix sort's bits for keys 0 .. key_max (the caller's bound: a
 * table's rows need 15-24 bits, not 63; 0 = not known) */
static int sort_bits(int64_t key_max)
{
    return key_max > 0 ? key_bits((uint64_t)key_max) : EMB_KEY_BITS;
}

static __global__ void k_iota(int64_t n, int64_t *p)
{
    GRID_LOOP(i, n) p[i] = i;
}

static __global__ void k_fill(int64_t n, int64_t v, int64_t *p)
{
    GRID_LOOP(i, n) p[i] = v;
}

/* heads[i] = 1 where a run of equal sorted keys starts */
static __global__ void k_heads(int64_t n, const int64_t *skey, int64_t *heads)
{
    GRID_LOOP(i, n) heads[i] = i == 0 || skey[i] != skey[i - 1];
}

/* CUB scratch for n pairs or an n scan */
static size_t cub_bytes(int64_t n)
{
    size_t a = 0, b = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, a, (const uint64_t *)NULL,
                                               (uint64_t *)NULL, (const int64_t *)NULL,
                                               (int64_t *)NULL, n, 0, 64, (cudaStream_t)0));
    CUDA_CHECK(cub::DeviceScan::InclusiveSum(NULL, b, (const int64_t *)NULL, (int64_t *)NULL, n,
                                             (cudaStream_t)0));
    return a > b ? a : b;
}

/* The runs of equal keys of keys[n]: skey, spos (positions stably sorted
 * by key) and seg (each position's run number, from 1); tmp: cub_bytes(n);
 * heads: [n] scratch. */
static void sorted_runs(cudaStream_t s, int64_t n, const int64_t *keys, int bits, int64_t *skey,
                        int64_t *spos, int64_t *seg, int64_t *heads, void *tmp)
{
    size_t tb = cub_bytes(n);
    k_iota<<<launch_blocks(n, EMB_THREADS), EMB_THREADS, 0, s>>>(n, heads);
    CUDA_CHECK_LAUNCH("k_iota");
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(tmp, tb, (const uint64_t *)keys, (uint64_t *)skey,
                                               heads, spos, n, 0, bits, s));
    k_heads<<<launch_blocks(n, EMB_THREADS), EMB_THREADS, 0, s>>>(n, skey, heads);
    CUDA_CHECK_LAUNCH("k_heads");
    tb = cub_bytes(n);
    CUDA_CHECK(cub::DeviceScan::InclusiveSum(tmp, tb, heads, seg, n, s));
}

/* --- dedup ------------------------------------------------------------------ */

/* For each run (distinct id) u: its id, its (owner, chunk) group; every
 * token's run index; the number of runs into *nu. */
static __global__ void k_runs(int64_t n, const int64_t *skey, const int64_t *spos,
                              const int64_t *seg, int64_t n_first, int G, int dyn, int64_t *uid,
                              int64_t *group, int64_t *tinv, int64_t *nu)
{
    GRID_LOOP(i, n)
    {
        int64_t u = seg[i] - 1;
        tinv[spos[i]] = u;
        if (i == 0 || skey[i] != skey[i - 1]) { /* the run's first token: its first occurrence */
            uid[u] = skey[i];
            const int64_t owner = dyn ? edr_owner(skey[i], G) : skey[i] % G;
            group[u] = owner * 2 + (spos[i] < n_first ? 0 : 1);
        }
        if (i == n - 1)
            *nu = seg[i];
    }
}

/* counts[2G]: integer atomics (exact in any order) */
static __global__ void k_place(int64_t n, const int64_t *nu, const int64_t *order,
                               const int64_t *uid, const int64_t *group, int G, int64_t *uniq,
                               int64_t *rank, unsigned long long *counts)
{
    const int64_t m = *nu;
    GRID_LOOP(j, m)
    {
        int64_t u = order[j];
        uniq[j] = uid[u];
        rank[u] = j;
        atomicAdd(&counts[group[u] / 2], 1ull);
        if (group[u] % 2 == 0)
            atomicAdd(&counts[G + group[u] / 2], 1ull);
    }
    (void)n;
}

static __global__ void k_remap(int64_t n, const int64_t *rank, int64_t *inverse)
{
    GRID_LOOP(i, n) inverse[i] = rank[inverse[i]];
}

size_t cuda_emb_dedup_ws_bytes(int64_t n, int G)
{
    const size_t v = cuda_ws_round((size_t)(n > 0 ? n : 1) * 8);
    return 7 * v + cuda_ws_round((size_t)(2 * G + 1) * 8) + cuda_ws_round(cub_bytes(n > 0 ? n : 1));
}

int64_t cuda_emb_dedup(cudaStream_t s, int64_t n, const int64_t *ids, int64_t n_first, int G,
                       int64_t *uniq, int64_t *inverse, int64_t *counts_host, int64_t key_max,
                       struct cuda_ws *ws)
{
    return cuda_emb_dedup_owner(s, n, ids, n_first, G, 0, uniq, inverse, counts_host, key_max, ws);
}

int64_t cuda_emb_dedup_owner(cudaStream_t s, int64_t n, const int64_t *ids, int64_t n_first,
                             int G, int dyn, int64_t *uniq, int64_t *inverse,
                             int64_t *counts_host, int64_t key_max, struct cuda_ws *ws)
{
    for (int p = 0; p < 2 * G; p++)
        counts_host[p] = 0;
    if (n <= 0)
        return 0;
    const size_t v = (size_t)n * 8;
    int64_t *skey = (int64_t *)cuda_ws_take(ws, v), *spos = (int64_t *)cuda_ws_take(ws, v);
    int64_t *seg = (int64_t *)cuda_ws_take(ws, v), *tmp_n = (int64_t *)cuda_ws_take(ws, v);
    int64_t *uid = (int64_t *)cuda_ws_take(ws, v), *group = (int64_t *)cuda_ws_take(ws, v);
    int64_t *order = (int64_t *)cuda_ws_take(ws, v);
    /* counts [2G] then the number of distinct ids: one copy down */
    int64_t *out = (int64_t *)cuda_ws_take(ws, (size_t)(2 * G + 1) * 8);
    void *tmp = cuda_ws_take(ws, cub_bytes(n));
    sorted_runs(s, n, ids, sort_bits(key_max), skey, spos, seg, tmp_n, tmp);
    /* past nu: last */
    k_fill<<<launch_blocks(n, EMB_THREADS), EMB_THREADS, 0, s>>>(n, 2 * (int64_t)G, group);
    CUDA_CHECK_LAUNCH("k_fill");
    CUDA_CHECK(cudaMemsetAsync(out, 0, (size_t)(2 * G + 1) * 8, s));
    k_runs<<<launch_blocks(n, EMB_THREADS), EMB_THREADS, 0, s>>>(
        n, skey, spos, seg, n_first, G, dyn, uid, group, inverse, out + 2 * G);
    CUDA_CHECK_LAUNCH("k_runs");
    /* groups in order, stable: ascending ids within a group */
    int64_t *sgroup = skey;
    k_iota<<<launch_blocks(n, EMB_THREADS), EMB_THREADS, 0, s>>>(n, tmp_n);
    CUDA_CHECK_LAUNCH("k_iota");
    size_t tb = cub_bytes(n);
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(tmp, tb, (const uint64_t *)group,
                                               (uint64_t *)sgroup, tmp_n, order, n, 0,
                                               key_bits((uint64_t)(2 * G)), s));
    int64_t *rank = seg;
    k_place<<<launch_blocks(n, EMB_THREADS), EMB_THREADS, 0, s>>>(
        n, out + 2 * G, order, uid, group, G, uniq, rank, (unsigned long long *)out);
    CUDA_CHECK_LAUNCH("k_place");
    k_remap<<<launch_blocks(n, EMB_THREADS), EMB_THREADS, 0, s>>>(n, rank, inverse);
    CUDA_CHECK_LAUNCH("k_remap");
    int64_t *h = (int64_t *)malloc((size_t)(2 * G + 1) * 8);
    if (!h)
        cuda_check_failed(0, "out of host memory", "malloc", __FILE__, __LINE__);
    CUDA_CHECK(cudaMemcpyAsync(h, out, (size_t)(2 * G + 1) * 8, cudaMemcpyDeviceToHost, s));
    cuda_host_wait(s);
    for (int p = 0; p < 2 * G; p++)
        counts_host[p] = h[p];
    const int64_t nu = h[2 * G];
    free(h);
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
    k_gather_shard<<<launch_blocks(n * dim, EMB_THREADS), EMB_THREADS, 0, s>>>(n, dim, w, ids, G,
                                                                               out);
    CUDA_CHECK_LAUNCH("k_gather_shard");
}

/* --- sums per key ------------------------------------------------------------- */

/* start[run] = its first position, uid[run] = its key; *k = the runs */
static __global__ void k_starts(int64_t n, const int64_t *skey, const int64_t *seg,
                                int64_t *start, int64_t *uid, int64_t *k)
{
    GRID_LOOP(i, n)
    {
        if (i == 0 || skey[i] != skey[i - 1]) {
            start[seg[i] - 1] = i;
            uid[seg[i] - 1] = skey[i];
        }
        if (i == n - 1)
            *k = seg[i];
    }
}

/* uid[u] = -1 for u >= k */
static __global__ void k_tail(int64_t n, const int64_t *k, int64_t *uid)
{
    const int64_t m = *k;
    GRID_LOOP(u, n)
    if (u >= m)
        uid[u] = -1;
}

/* One block per run (grid-stride over *k), threads over the columns: the
 * run's rows in position order, summed in double. */
static __global__ void k_run_sums(const int64_t *kp, int64_t n, int dim, const int64_t *start,
                                  const int64_t *spos, const float *g, float *out)
{
    const int64_t k = *kp;
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

size_t cuda_emb_sum_by_id_ws_bytes(int64_t n)
{
    const size_t v = cuda_ws_round((size_t)(n > 0 ? n : 1) * 8);
    return 5 * v + cuda_ws_round(8) + cuda_ws_round(cub_bytes(n > 0 ? n : 1));
}

void cuda_emb_sum_by_id(cudaStream_t s, int64_t n, int dim, const int64_t *keys, const float *g,
                        int64_t *uid, float *out, int64_t key_max, struct cuda_ws *ws)
{
    if (n <= 0)
        return;
    const size_t v = (size_t)n * 8;
    int64_t *skey = (int64_t *)cuda_ws_take(ws, v), *spos = (int64_t *)cuda_ws_take(ws, v);
    int64_t *seg = (int64_t *)cuda_ws_take(ws, v), *heads = (int64_t *)cuda_ws_take(ws, v);
    int64_t *start = (int64_t *)cuda_ws_take(ws, v), *k = (int64_t *)cuda_ws_take(ws, 8);
    void *tmp = cuda_ws_take(ws, cub_bytes(n));
    sorted_runs(s, n, keys, sort_bits(key_max), skey, spos, seg, heads, tmp);
    k_starts<<<launch_blocks(n, EMB_THREADS), EMB_THREADS, 0, s>>>(n, skey, seg, start, uid, k);
    CUDA_CHECK_LAUNCH("k_starts");
    k_tail<<<launch_blocks(n, EMB_THREADS), EMB_THREADS, 0, s>>>(n, k, uid);
    CUDA_CHECK_LAUNCH("k_tail");
    const unsigned blocks = launch_blocks(n, 1); /* a block a run */
    k_run_sums<<<blocks, dim < 128 ? 32 * ((dim + 31) / 32) : 128, 0, s>>>(k, n, dim, start,
                                                                            spos, g, out);
    CUDA_CHECK_LAUNCH("k_run_sums");
}

/* --- sparse update --------------------------------------------------------------- */

/* emb_optim_row (backend/emb_optim.h) by the 32 lanes of a warp, term for
 * term: lane l takes the columns l, l + 32, ..; every column's maths is the
 * CPU's. Adagrad's sum of squares runs in the CPU's order (columns 0, 1,
 * ..): each lane squares its column, then every lane adds the 32 squares of
 * a round in lane order (shuffles), so all lanes hold the CPU's sum. Adam's
 * step count is read by all lanes, written by lane 0. */
static __device__ void emb_optim_row_warp(const struct emb_optim_conf &o, int dim, float *w,
                                          float *state, int64_t *step, const float *g)
{
    const unsigned full = 0xffffffffu;
    const int lane = threadIdx.x % 32;
    const float lr = o.lr, wd = o.weight_decay;
    switch (o.kind) {
    case EMB_OPT_SGD:
        for (int j = lane; j < dim; j += 32)
            w[j] = EMB_SUB(w[j], EMB_MUL(lr, EMB_ADD(g[j], EMB_MUL(wd, w[j]))));
        break;
    case EMB_OPT_ADAGRAD: {
        float sq = 0;
        for (int j0 = 0; j0 < dim; j0 += 32) {
            const int j = j0 + lane;
            float q = 0;
            if (j < dim) {
                const float gj = EMB_ADD(g[j], EMB_MUL(wd, w[j]));
                q = EMB_MUL(gj, gj);
            }
            const int nj = dim - j0 < 32 ? dim - j0 : 32;
            for (int k = 0; k < 32; k++) {
                const float qk = __shfl_sync(full, q, k);
                if (k < nj)
                    sq = EMB_ADD(sq, qk);
            }
        }
        const float s = EMB_ADD(state[0], sq / (float)dim);
        __syncwarp(); /* every lane read state[0] */
        if (lane == 0)
            state[0] = s;
        const float scale = lr / EMB_ADD(sqrtf(s), o.eps);
        for (int j = lane; j < dim; j += 32)
            w[j] = EMB_SUB(w[j], EMB_MUL(scale, EMB_ADD(g[j], EMB_MUL(wd, w[j]))));
        break;
    }
    case EMB_OPT_ADAM: {
        float *m = state, *v = state + dim;
        const int64_t t = *step + 1;
        __syncwarp(); /* every lane read *step */
        if (lane == 0)
            *step = t;
        const float c1 = 1.0f - (float)emb_optim_pow(o.beta1, t);
        const float c2 = 1.0f - (float)emb_optim_pow(o.beta2, t);
        for (int j = lane; j < dim; j += 32) {
            m[j] = EMB_ADD(EMB_MUL(o.beta1, m[j]), EMB_MUL(1.0f - o.beta1, g[j]));
            v[j] = EMB_ADD(EMB_MUL(o.beta2, v[j]), EMB_MUL(EMB_MUL(1.0f - o.beta2, g[j]), g[j]));
            const float mhat = m[j] / c1, vhat = v[j] / c2;
            w[j] = EMB_SUB(w[j], EMB_MUL(lr, EMB_ADD(mhat / EMB_ADD(sqrtf(vhat), o.eps),
                                                     EMB_MUL(wd, w[j]))));
        }
        break;
    }
    }
}

/* one warp per row (ids distinct: no two warps share a row) */
static __global__ void k_sparse_update(struct emb_optim_conf o, int64_t k, int dim,
                                       const int64_t *ids, int G, const float *g, float *w,
                                       float *state, int64_t state_floats, int64_t *steps)
{
    const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
    for (int64_t i = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; i < k;
         i += warps) {
        if (ids[i] < 0)
            continue; /* past the distinct ids of emb_sum_by_id (the whole warp) */
        const int64_t slot = ids[i] / G;
        emb_optim_row_warp(o, dim, w + slot * dim, state ? state + slot * state_floats : NULL,
                           steps ? steps + slot : NULL, g + i * dim);
    }
}

void cuda_emb_sparse_update(cudaStream_t s, const struct emb_optim_conf *opt, int64_t k, int dim,
                            const int64_t *ids, int G, const float *g, float *w, float *state,
                            int64_t state_floats, int64_t *steps)
{
    if (k <= 0)
        return;
    const unsigned blocks = launch_blocks(k, EMB_THREADS / 32); /* a warp a row */
    k_sparse_update<<<blocks, EMB_THREADS, 0, s>>>(*opt, k, dim, ids, G, g, w, state,
                                                   state_floats, steps);
    CUDA_CHECK_LAUNCH("k_sparse_update");
}
