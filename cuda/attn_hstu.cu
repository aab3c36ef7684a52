/* attn_hstu: HSTU pointwise attention (backend.h hstu_attn_fwd / _bwd), the
 * maths of the CPU reference backend_cpu_hstu.c term for term, per sequence
 * (tokens offsets[b] .. offsets[b+1] - 1; i, j local positions) and head h
 * (columns h dqk .. of q, k: [T, H dqk]; h dv .. of v, out: [T, H dv]):
 *   A[i, j] = SiLU(q_i . k_j + rab(i, j)) / N for j <= i (0 otherwise),
 *   out_i = sum_j A[i, j] v_j,
 *   rab(i, j) = pos_bias[N - 1 + j - i] + time_bias[bucket(ts_i - ts_j)].
 * Nothing of size [N, N] or padded across the batch exists.
 *
 * Tiling (attn_tile.cuh): a block owns 64 rows of one sequence and one
 * head; grid (B, H, ceil(N / 64)); fwd and bwd_dq own query tiles and walk
 * the key tiles j0 <= i0, bwd_dkdv owns key tiles and walks the query tiles
 * i0 >= j0. Per pair of tiles the 64 x 64 score tile (attn_nt) is masked,
 * turned into A or dS and stored as ps[other][own]; attn_pz adds ps^T Z
 * (Z: the other tile's rows) into the block's [64, d] accumulator.
 *
 * Backward (A recomputed): dA = dO V^T, dS = dA SiLU'(s) / N (masked),
 * s = q.k + rab;
 *   bwd_dq:   dq_i = sum_j dS[i, j] k_j, and the bias gradients
 *             dpos_bias[N - 1 + j - i] += dS, dtime_bias[bucket] += dS;
 *   bwd_dkdv: dv_j = sum_i A[i, j] dO_i, dk_j = sum_i dS[i, j] q_i.
 * dq, dk, dv are written (each row by exactly one block: no zeroing); the
 * bias gradients are accumulated (+=).
 *
 * The bias gradients are sums in a fixed order, no float atomics, so runs
 * repeat bit for bit (the order differs from the CPU's: equal within
 * rounding). bwd_dq's grid is (S, H, tiles) with S <= B: block x takes the
 * sequences b = x, x + S, .. (S bounds the partials' memory; S = B unless
 * they would pass HA_PART_BYTES). Each block owns a slot of partials in the
 * workspace, pos [N] and time [HA_NB], that only it touches (zeroed by it
 * first). Per tile pair, after the dS tile is in ps: thread D < 127 sums
 * the diagonal D of ps (j - i = j0 - i0 + D - 63, in a fixed order) onto
 * pos[N - 1 + j - i]; the time buckets are summed per warp (hstu_warp_hist:
 * per element (r, c) the lanes of one bucket form a group, __match_any,
 * summed by a tree over their ranks, the group's first lane adds it to the
 * warp's histogram in shared memory), then thread k < HA_NB adds the 8
 * warps' bucket k in warp order onto time[k]. hstu_bias_sum adds the slots
 * in slot order (chunks of HA_CHUNK slots, then the chunks) onto
 * dpos_bias[0 .. N) and dtime_bias.
 *
 * Time buckets: bucket(dt) is a step function of |dt|, so the host finds
 * once, with the CPU reference's own formula (double log, floor, clamp), the
 * smallest |dt| of each bucket 1 .. HSTU_TIME_BUCKETS; a kernel counts the
 * thresholds <= |dt| by binary search. This gives the CPU's bucket for every
 * dt (bit for bit, the host's log included) without a double log per pair. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda/attn_tile.cuh"
#include "backend/backend.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels.h"

#define HA_NB (HSTU_TIME_BUCKETS + 1)
#define HA_TOP_STEP 128 /* largest power of two <= HSTU_TIME_BUCKETS */
#define HA_WARPS (ATTN_THREADS / 32)
#define HA_PART_BYTES ((size_t)64 << 20) /* bound of bwd_dq's partials (S sequences a block) */
#define HA_CHUNK 64 /* slots summed by one thread in hstu_bias_sum's first pass */

static_assert(HA_TOP_STEP <= HSTU_TIME_BUCKETS && 2 * HA_TOP_STEP > HSTU_TIME_BUCKETS,
              "HA_TOP_STEP must be the largest power of two <= HSTU_TIME_BUCKETS");

/* the staging areas (ps: A or dS as ps[other][own]), then HSTU's own */
struct hstu_smem : attn_smem {
    int64_t tsq[ATTN_BM], tsk[ATTN_BM]; /* timestamps of the query, key tiles */
    uint64_t thr[HSTU_TIME_BUCKETS];    /* bucket thresholds (hstu_args) */
    float tb[HA_NB];                    /* time_bias */
};

/* bwd_dq's per-pair scratch in the staging areas that are free from the
 * end of a pair's attn_nt to the start of the next one's: the warps'
 * bucket histograms (in yt) and their lanes by group rank (in xt) */
static_assert(sizeof(float) * HA_WARPS * HA_NB <= sizeof(((attn_smem *)0)->yt),
              "the warp histograms must fit in yt");
static_assert(HA_WARPS * 32 * 32 <= sizeof(((attn_smem *)0)->xt),
              "the rank tables must fit in xt");

/* Everything a kernel needs; pointers are device memory. */
struct hstu_args {
    int64_t B;
    const int64_t *offsets;
    int H, dqk, dv, N;
    const float *q, *k, *v, *pos_bias, *time_bias, *dout;
    const int64_t *ts;
    float *out, *dq, *dk, *dvv, *dpos_bias, *dtime_bias;
    float *ppos, *ptime; /* bwd_dq's partials: [slots][N], [slots][HA_NB] */
    uint64_t thr[HSTU_TIME_BUCKETS]; /* thr[k - 1]: smallest |dt| of bucket >= k */
};

/* the tile of one block: sequence b, head h, own rows [t0, t0 + rows) */
struct hstu_tile : attn_tile {
    int64_t ldq, ldv; /* H dqk, H dv */
};

/* Fill *t for sequence b of this block; own tile index `tile`. False:
 * nothing to do. */
static __device__ bool hstu_tile_init(const hstu_args &a, int64_t b, int tile, hstu_tile *t)
{
    const bool live = attn_tile_init_seq(a.offsets, b, tile, t);
    t->ldq = (int64_t)a.H * a.dqk;
    t->ldv = (int64_t)a.H * a.dv;
    return live;
}

/* time_bias and the bucket thresholds into sm (when used; read after the
 * next barrier) */
static __device__ void hstu_load_tb(const hstu_args &a, hstu_smem &sm)
{
    if (a.time_bias)
        for (int e = threadIdx.x; e < HA_NB; e += ATTN_THREADS) {
            sm.tb[e] = a.time_bias[e];
            if (e < HSTU_TIME_BUCKETS)
                sm.thr[e] = a.thr[e];
        }
}

/* bucket(dt): the number of thresholds <= |dt| (binary lifting: the
 * thresholds are non-decreasing) */
static __device__ int hstu_bucket(const hstu_smem &sm, int64_t dt)
{
    const uint64_t a = dt < 0 ? 0 - (uint64_t)dt : (uint64_t)dt;
    int n = 0;
    for (int step = HA_TOP_STEP; step > 0; step >>= 1)
        if (n + step <= HSTU_TIME_BUCKETS && sm.thr[n + step - 1] <= a)
            n += step;
    return n;
}

/* the timestamps of rows [r0, r0 + n) of the sequence into dst[0 .. n) */
static __device__ void hstu_load_ts(const hstu_args &a, const hstu_tile &t, int r0, int n,
                                    int64_t *dst)
{
    if (a.time_bias && (int)threadIdx.x < n)
        dst[threadIdx.x] = a.ts[t.s0 + r0 + threadIdx.x];
}

/* s = q_i . k_j (in place: s + rab(i, j)) for local i = i0 + di, j = j0 + dj,
 * j <= i; *bk: the time bucket (-1 without time bias) */
static __device__ float hstu_preact(const hstu_args &a, const hstu_smem &sm, int i, int j,
                                    int di, int dj, float s, int *bk)
{
    float rab = 0;
    *bk = -1;
    if (a.pos_bias)
        rab += a.pos_bias[a.N - 1 + j - i];
    if (a.time_bias) {
        *bk = hstu_bucket(sm, sm.tsq[di] - sm.tsk[dj]);
        rab += sm.tb[*bk];
    }
    return s + rab;
}

/* out rows of one query tile: sum over key tiles j0 <= i0 of A V */
template <int NC>
static __global__ void __launch_bounds__(ATTN_THREADS, NC <= 8 ? 2 : 1) hstu_fwd(hstu_args a)
{
    __shared__ hstu_smem sm;
    hstu_tile t;
    if (!hstu_tile_init(a, blockIdx.x, gridDim.z - 1 - blockIdx.z, &t)) /* longest first */
        return;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16, i0 = t.t0;
    const float inv_n = 1.0f / (float)a.N;
    const float *qh = a.q + (t.s0 + i0) * t.ldq + (int64_t)t.h * a.dqk;
    float acc[4][NC] = {};
    hstu_load_tb(a, sm);
    hstu_load_ts(a, t, i0, t.rows, sm.tsq);
    for (int j0 = 0; j0 <= i0; j0 += ATTN_BM) {
        const int cols = t.L - j0 < ATTN_BM ? t.L - j0 : ATTN_BM;
        const float *kh = a.k + (t.s0 + j0) * t.ldq + (int64_t)t.h * a.dqk;
        const float *vh = a.v + (t.s0 + j0) * t.ldv + (int64_t)t.h * a.dv;
        float s[4][4] = {};
        hstu_load_ts(a, t, j0, cols, sm.tsk);
        attn_nt(qh, t.ldq, t.rows, kh, t.ldq, cols, a.dqk, sm, s);
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const int i = i0 + ty * 4 + r, j = j0 + tx * 4 + c;
                float y = 0.0f;
                if (i < t.L && j <= i) {
                    int bk;
                    const float x = hstu_preact(a, sm, i, j, ty * 4 + r, tx * 4 + c, s[r][c], &bk);
                    y = x / (1.0f + expf(-x)) * inv_n;
                }
                sm.ps[tx * 4 + c][ty * 4 + r] = y;
            }
        attn_pz<NC>(vh, t.ldv, cols, a.dv, sm, acc);
    }
    attn_store<NC>(a.out + (t.s0 + i0) * t.ldv + (int64_t)t.h * a.dv, t.ldv, t.rows, a.dv, 1.0f,
                   acc);
}

/* hist[code] += the sum of v over the warp's lanes with this code (code <
 * 0: none), in a fixed order: the lanes of one code (a group) are summed by
 * a tree over their ranks in the group, and the group's first lane adds
 * the sum. All 32 lanes call it together; ranks: the warp's [32][32]
 * table of lanes by (first lane, rank). */
static __device__ void hstu_warp_hist(float *hist, uint8_t (*ranks)[32], int code, float v)
{
    const unsigned full = 0xffffffffu;
    const int lane = threadIdx.x % 32;
    const unsigned grp = __match_any_sync(full, code);
    const int lead = __ffs(grp) - 1, n = __popc(grp);
    const int rank = __popc(grp & ((1u << lane) - 1u));
    ranks[lead][rank] = (uint8_t)lane;
    __syncwarp();
    for (int st = 1; st < 32; st <<= 1) {
        const bool take = (rank & (2 * st - 1)) == 0 && rank + st < n;
        const float o = __shfl_sync(full, v, take ? ranks[lead][rank + st] : lane);
        if (take)
            v += o;
    }
    if (rank == 0 && code >= 0)
        hist[code] += v;
    __syncwarp();
}

/* dq rows of one query tile per sequence b = blockIdx.x, blockIdx.x +
 * gridDim.x, ..; the bias gradients of its pairs into the block's slot of
 * partials (the file's comment) */
template <int NC>
static __global__ void __launch_bounds__(ATTN_THREADS, NC <= 8 ? 2 : 1) hstu_bwd_dq(hstu_args a)
{
    __shared__ hstu_smem sm;
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16, warp = tid / 32;
    const int tile = gridDim.z - 1 - blockIdx.z; /* longest tiles first */
    const float inv_n = 1.0f / (float)a.N;
    const bool dpos = a.pos_bias && a.dpos_bias, dtime = a.time_bias && a.dtime_bias;
    const int64_t slot = ((int64_t)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    float *ppos = dpos ? a.ppos + slot * a.N : NULL;
    float *ptime = dtime ? a.ptime + slot * HA_NB : NULL;
    float(*hist)[HA_NB] = reinterpret_cast<float(*)[HA_NB]>(&sm.yt[0][0]);
    uint8_t(*ranks)[32] = reinterpret_cast<uint8_t(*)[32]>(&sm.xt[0][0]) + 32 * warp;
    for (int e = tid; dpos && e < a.N; e += ATTN_THREADS)
        ppos[e] = 0.0f;
    for (int e = tid; dtime && e < HA_NB; e += ATTN_THREADS)
        ptime[e] = 0.0f; /* both published by attn_nt's barriers */
    hstu_load_tb(a, sm);
    for (int64_t b = blockIdx.x; b < a.B; b += gridDim.x) {
        hstu_tile t;
        if (!hstu_tile_init(a, b, tile, &t))
            continue; /* the same for the whole block */
        const int i0 = t.t0;
        const float *qh = a.q + (t.s0 + i0) * t.ldq + (int64_t)t.h * a.dqk;
        const float *doh = a.dout + (t.s0 + i0) * t.ldv + (int64_t)t.h * a.dv;
        float acc[4][NC] = {};
        hstu_load_ts(a, t, i0, t.rows, sm.tsq);
        for (int j0 = 0; j0 <= i0; j0 += ATTN_BM) {
            const int cols = t.L - j0 < ATTN_BM ? t.L - j0 : ATTN_BM;
            const float *kh = a.k + (t.s0 + j0) * t.ldq + (int64_t)t.h * a.dqk;
            const float *vh = a.v + (t.s0 + j0) * t.ldv + (int64_t)t.h * a.dv;
            float s[4][4] = {}, g[4][4] = {};
            hstu_load_ts(a, t, j0, cols, sm.tsk);
            attn_nt(qh, t.ldq, t.rows, kh, t.ldq, cols, a.dqk, sm, s);
            attn_nt(doh, t.ldv, t.rows, vh, t.ldv, cols, a.dv, sm, g); /* dA */
            if (dtime) {
                for (int e = tid % 32; e < HA_NB; e += 32)
                    hist[warp][e] = 0.0f;
                __syncwarp();
            }
#pragma unroll
            for (int r = 0; r < 4; r++)
#pragma unroll
                for (int c = 0; c < 4; c++) {
                    const int i = i0 + ty * 4 + r, j = j0 + tx * 4 + c;
                    float ds = 0.0f;
                    int code = -1;
                    if (i < t.L && j <= i) {
                        int bk;
                        const float x =
                            hstu_preact(a, sm, i, j, ty * 4 + r, tx * 4 + c, s[r][c], &bk);
                        const float sg = 1.0f / (1.0f + expf(-x));
                        ds = g[r][c] * (sg * (1.0f + x * (1.0f - sg)) * inv_n);
                        code = bk;
                    }
                    sm.ps[tx * 4 + c][ty * 4 + r] = ds;
                    if (dtime)
                        hstu_warp_hist(hist[warp], ranks, code, ds);
                }
            attn_pz<NC>(kh, t.ldq, cols, a.dqk, sm, acc); /* publishes ps and hist */
            if (dpos && tid < 2 * ATTN_BM - 1) {
                /* diagonal D = tid: ps[jl][il] with jl - il = D - 63; il from
                 * (D + u) % 64 (u = 0, 1, ..): a fixed order, and the warp's
                 * threads read different banks */
                const int64_t e = a.N - 1 + j0 - i0 + tid - (ATTN_BM - 1);
                if (e >= 0 && e < a.N) { /* other diagonals hold no pair j <= i < N */
                    float sum = 0.0f;
                    for (int u = 0; u < ATTN_BM; u++) {
                        const int il = (u + tid) % ATTN_BM, jl = il + tid - (ATTN_BM - 1);
                        if (jl >= 0 && jl < ATTN_BM)
                            sum += sm.ps[jl][il];
                    }
                    ppos[e] += sum;
                }
            }
            if (dtime && tid < HA_NB) {
                float sum = 0.0f;
                for (int w = 0; w < HA_WARPS; w++)
                    sum += hist[w][tid];
                ptime[tid] += sum;
            }
            __syncthreads(); /* ps, hist and ranks read before they are rewritten */
        }
        attn_store<NC>(a.dq + (t.s0 + i0) * t.ldq + (int64_t)t.h * a.dqk, t.ldq, t.rows, a.dqk,
                       1.0f, acc);
    }
}

/* acc[k] += the sum over slots of part[slot][k] (part: [slots][width]) in
 * slot order: tmp[c][k] = the sum of the slots c HA_CHUNK .. (one thread
 * each), then acc[k] += their sum over c in order, in double */
static __global__ void hstu_sum_chunks(int64_t slots, int width, const float *part, float *tmp)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= width)
        return;
    for (int64_t c = blockIdx.y; c * HA_CHUNK < slots; c += gridDim.y) {
        const int64_t hi = (c + 1) * HA_CHUNK < slots ? (c + 1) * HA_CHUNK : slots;
        float sum = 0.0f;
        for (int64_t r = c * HA_CHUNK; r < hi; r++)
            sum += part[r * width + k];
        tmp[c * width + k] = sum;
    }
}

static __global__ void hstu_sum_total(int64_t chunks, int width, const float *tmp, float *acc)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= width)
        return;
    double sum = 0;
    for (int64_t c = 0; c < chunks; c++)
        sum += (double)tmp[c * width + k];
    acc[k] = __fadd_rn(acc[k], (float)sum);
}

static int64_t hstu_chunks(int64_t slots) { return (slots + HA_CHUNK - 1) / HA_CHUNK; }

void cuda_hstu_bias_sum(cudaStream_t s, int64_t slots, int width, const float *part, float *tmp,
                        float *acc)
{
    if (slots <= 0 || width <= 0)
        return;
    const int64_t chunks = hstu_chunks(slots);
    const unsigned bx = (unsigned)((width + 127) / 128);
    const unsigned by = (unsigned)(chunks < 65535 ? chunks : 65535);
    hstu_sum_chunks<<<dim3(bx, by), 128, 0, s>>>(slots, width, part, tmp);
    CUDA_CHECK_LAUNCH("hstu_sum_chunks");
    hstu_sum_total<<<bx, 128, 0, s>>>(chunks, width, tmp, acc);
    CUDA_CHECK_LAUNCH("hstu_sum_total");
}

size_t cuda_hstu_bias_sum_ws_bytes(int64_t slots, int width)
{
    const size_t w = (size_t)(width > 0 ? width : 0) * sizeof(float);
    return cuda_ws_round((size_t)slots * w) + cuda_ws_round((size_t)hstu_chunks(slots) * w);
}

float *cuda_hstu_bias_take(struct cuda_ws *ws, int64_t slots, int width, float **tmp)
{
    const size_t w = (size_t)(width > 0 ? width : 0) * sizeof(float);
    float *part = (float *)cuda_ws_take(ws, (size_t)slots * w);
    *tmp = (float *)cuda_ws_take(ws, (size_t)hstu_chunks(slots) * w);
    return part;
}

/* dk, dv rows of one key tile: sums over query tiles i0 >= j0. The score
 * tiles are transposed here: s[r][c] = k_j . q_i, j = j0 + ty*4 + r. */
template <int NC>
static __global__ void __launch_bounds__(ATTN_THREADS, NC <= 4 ? 2 : 1) hstu_bwd_dkdv(hstu_args a)
{
    __shared__ hstu_smem sm;
    hstu_tile t;
    if (!hstu_tile_init(a, blockIdx.x, blockIdx.z, &t)) /* first key tiles: most queries */
        return;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16, j0 = t.t0;
    const float inv_n = 1.0f / (float)a.N;
    const float *kh = a.k + (t.s0 + j0) * t.ldq + (int64_t)t.h * a.dqk;
    const float *vh = a.v + (t.s0 + j0) * t.ldv + (int64_t)t.h * a.dv;
    float dk[4][NC] = {}, dv[4][NC] = {};
    hstu_load_tb(a, sm);
    hstu_load_ts(a, t, j0, t.rows, sm.tsk);
    for (int i0 = j0; i0 < t.L; i0 += ATTN_BM) {
        const int rows = t.L - i0 < ATTN_BM ? t.L - i0 : ATTN_BM;
        const float *qh = a.q + (t.s0 + i0) * t.ldq + (int64_t)t.h * a.dqk;
        const float *doh = a.dout + (t.s0 + i0) * t.ldv + (int64_t)t.h * a.dv;
        float s[4][4] = {}, g[4][4] = {}, ds[4][4];
        hstu_load_ts(a, t, i0, rows, sm.tsq);
        attn_nt(kh, t.ldq, t.rows, qh, t.ldq, rows, a.dqk, sm, s);
        attn_nt(vh, t.ldv, t.rows, doh, t.ldv, rows, a.dv, sm, g); /* dA^T */
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const int j = j0 + ty * 4 + r, i = i0 + tx * 4 + c;
                float y = 0.0f;
                ds[r][c] = 0.0f;
                if (i < t.L && j <= i) {
                    int bk;
                    const float x = hstu_preact(a, sm, i, j, tx * 4 + c, ty * 4 + r, s[r][c], &bk);
                    const float sg = 1.0f / (1.0f + expf(-x));
                    y = x / (1.0f + expf(-x)) * inv_n;
                    ds[r][c] = g[r][c] * (sg * (1.0f + x * (1.0f - sg)) * inv_n);
                }
                sm.ps[tx * 4 + c][ty * 4 + r] = y; /* ps[i][j] = A[i, j] */
            }
        attn_pz<NC>(doh, t.ldv, rows, a.dv, sm, dv);
        attn_put_ps(sm, ds);
        attn_pz<NC>(qh, t.ldq, rows, a.dqk, sm, dk);
    }
    attn_store<NC>(a.dk + (t.s0 + j0) * t.ldq + (int64_t)t.h * a.dqk, t.ldq, t.rows, a.dqk, 1.0f,
                   dk);
    attn_store<NC>(a.dvv + (t.s0 + j0) * t.ldv + (int64_t)t.h * a.dv, t.ldv, t.rows, a.dv, 1.0f,
                   dv);
}

/* ---- launchers ---- */

/* NC for head dimensions dqk, dv (attn_nc) */
static int hstu_nc(const char *who, int dqk, int dv)
{
    return attn_nc(who, "HSTU head dimensions must be 1 .. 256", dqk < dv ? dqk : dv,
                   dqk > dv ? dqk : dv);
}

/* backend_cpu_hstu.c's time_bucket of dt, as a function of a = |dt| (the
 * CPU's -(double)dt equals (double)a: rounding is symmetric) */
static int hstu_bucket_cpu(uint64_t a)
{
    double x = (double)a;
    double f = floor(log(x > 1 ? x : 1) / 0.301);
    return f >= HSTU_TIME_BUCKETS ? HSTU_TIME_BUCKETS : (int)f;
}

/* t[k - 1] = the smallest a with bucket >= k, by bisection over [0, 2^63]
 * (bucket is non-decreasing in a as log is monotone; bucket(2^63) =
 * HSTU_TIME_BUCKETS); computed once per process */
struct hstu_thresholds {
    uint64_t t[HSTU_TIME_BUCKETS];
    hstu_thresholds()
    {
        for (int k = 1; k <= HSTU_TIME_BUCKETS; k++) {
            uint64_t lo = 0, hi = (uint64_t)1 << 63;
            while (lo < hi) {
                const uint64_t mid = lo + (hi - lo) / 2;
                if (hstu_bucket_cpu(mid) >= k)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            t[k - 1] = lo;
        }
    }
};

/* the inputs common to both directions; without ts, no time bias (as on the CPU) */
static hstu_args hstu_make_args(int64_t B, const int64_t *offsets, int H, int dqk, int dv, int N,
                                const float *q, const float *k, const float *v,
                                const float *pos_bias, const float *time_bias, const int64_t *ts)
{
    hstu_args a = {};
    a.B = B;
    a.offsets = offsets;
    a.H = H, a.dqk = dqk, a.dv = dv, a.N = N;
    a.q = q, a.k = k, a.v = v;
    a.pos_bias = pos_bias, a.time_bias = ts ? time_bias : NULL, a.ts = ts;
    if (a.time_bias) {
        static const hstu_thresholds thr; /* initialised once, thread-safe */
        memcpy(a.thr, thr.t, sizeof a.thr);
    }
    return a;
}

/* B == 0 (or N == 0: no tokens) launches nothing */
void cuda_hstu_attn_fwd(cudaStream_t s, int64_t B, const int64_t *offsets, int H, int dqk,
                        int dv, int N, const float *q, const float *k, const float *v,
                        const float *pos_bias, const float *time_bias, const int64_t *ts,
                        float *out)
{
    if (B <= 0 || H <= 0 || N <= 0)
        return;
    const int nc = hstu_nc("cuda_hstu_attn_fwd", dqk, dv);
    hstu_args a = hstu_make_args(B, offsets, H, dqk, dv, N, q, k, v, pos_bias, time_bias, ts);
    a.out = out;
    ATTN_LAUNCH(hstu_fwd, nc, attn_grid(B, H, N), s, a);
}

/* bwd_dq's blocks along the sequences (S <= B: the file's comment) and its
 * slots of partials; 0 slots without bias gradients */
static unsigned hstu_dq_seqs(int64_t B, int H, int N, int bias)
{
    const int64_t tiles = (N + ATTN_BM - 1) / ATTN_BM;
    const size_t per = (size_t)H * (size_t)tiles * ((size_t)N + HA_NB) * sizeof(float);
    const int64_t cap = bias ? (int64_t)(HA_PART_BYTES / per) : B;
    return (unsigned)(B < cap ? B : cap > 1 ? cap : 1);
}

size_t cuda_hstu_attn_bwd_ws_bytes(int64_t B, int H, int N, int bias)
{
    if (B <= 0 || H <= 0 || N <= 0 || !bias)
        return 0;
    const int64_t slots = (int64_t)hstu_dq_seqs(B, H, N, 1) * H * ((N + ATTN_BM - 1) / ATTN_BM);
    return cuda_hstu_bias_sum_ws_bytes(slots, N) + cuda_hstu_bias_sum_ws_bytes(slots, HA_NB);
}

void cuda_hstu_attn_bwd(cudaStream_t s, int64_t B, const int64_t *offsets, int H, int dqk,
                        int dv, int N, const float *q, const float *k, const float *v,
                        const float *pos_bias, const float *time_bias, const int64_t *ts,
                        const float *dout, float *dq, float *dk, float *dvv, float *dpos_bias,
                        float *dtime_bias, struct cuda_ws *ws)
{
    if (B <= 0 || H <= 0 || N <= 0)
        return;
    const int nc = hstu_nc("cuda_hstu_attn_bwd", dqk, dv);
    hstu_args a = hstu_make_args(B, offsets, H, dqk, dv, N, q, k, v, pos_bias, time_bias, ts);
    a.dout = dout;
    a.dq = dq, a.dk = dk, a.dvv = dvv;
    a.dpos_bias = dpos_bias, a.dtime_bias = dtime_bias;
    const bool dpos = a.pos_bias && dpos_bias, dtime = a.time_bias && dtime_bias;
    const dim3 grid = attn_grid(B, H, N);
    const unsigned seqs = hstu_dq_seqs(B, H, N, dpos || dtime);
    const int64_t slots = (int64_t)seqs * grid.y * grid.z;
    float *tpos = NULL, *ttime = NULL;
    if (dpos)
        a.ppos = cuda_hstu_bias_take(ws, slots, N, &tpos);
    if (dtime)
        a.ptime = cuda_hstu_bias_take(ws, slots, HA_NB, &ttime);
    ATTN_LAUNCH(hstu_bwd_dq, nc, dim3(seqs, grid.y, grid.z), s, a);
    ATTN_LAUNCH(hstu_bwd_dkdv, nc, grid, s, a);
    if (dpos) /* the diagonals j <= i: dpos_bias[0 .. N) */
        cuda_hstu_bias_sum(s, slots, N, a.ppos, tpos, dpos_bias);
    if (dtime)
        cuda_hstu_bias_sum(s, slots, HA_NB, a.ptime, ttime, dtime_bias);
}
