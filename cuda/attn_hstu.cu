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
 *   bwd_dq:   dq_i = sum_j dS[i, j] k_j; dpos_bias[N - 1 + j - i] += dS and
 *             dtime_bias[bucket] += dS, summed in shared memory (per tile
 *             pair for the 127 diagonals it spans, per block for the 129
 *             buckets), then atomicAdd to global memory;
 *   bwd_dkdv: dv_j = sum_i A[i, j] dO_i, dk_j = sum_i dS[i, j] q_i.
 * dq, dk, dv are written (each row by exactly one block: no zeroing); the
 * bias gradients are accumulated (+=).
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

static_assert(HA_TOP_STEP <= HSTU_TIME_BUCKETS && 2 * HA_TOP_STEP > HSTU_TIME_BUCKETS,
              "HA_TOP_STEP must be the largest power of two <= HSTU_TIME_BUCKETS");

/* the staging areas (ps: A or dS as ps[other][own]), then HSTU's own */
struct hstu_smem : attn_smem {
    int64_t tsq[ATTN_BM], tsk[ATTN_BM]; /* timestamps of the query, key tiles */
    uint64_t thr[HSTU_TIME_BUCKETS];    /* bucket thresholds (hstu_args) */
    float tb[HA_NB];                    /* time_bias */
    float dtb[HA_NB];                   /* dtime_bias of the block (bwd_dq) */
    float dpb[2 * ATTN_BM];             /* dpos_bias of a tile pair, by j - i */
};

/* Everything a kernel needs; pointers are device memory. */
struct hstu_args {
    const int64_t *offsets;
    int H, dqk, dv, N;
    const float *q, *k, *v, *pos_bias, *time_bias, *dout;
    const int64_t *ts;
    float *out, *dq, *dk, *dvv, *dpos_bias, *dtime_bias;
    uint64_t thr[HSTU_TIME_BUCKETS]; /* thr[k - 1]: smallest |dt| of bucket >= k */
};

/* the tile of one block: sequence b, head h, own rows [t0, t0 + rows) */
struct hstu_tile : attn_tile {
    int64_t ldq, ldv; /* H dqk, H dv */
};

/* Fill *t for this block; own tile index `tile`. False: nothing to do. */
static __device__ bool hstu_tile_init(const hstu_args &a, int tile, hstu_tile *t)
{
    const bool live = attn_tile_init(a.offsets, tile, t);
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
    if (!hstu_tile_init(a, gridDim.z - 1 - blockIdx.z, &t)) /* longest tiles first */
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

/* dq rows of one query tile, and the bias gradients of its pairs */
template <int NC>
static __global__ void __launch_bounds__(ATTN_THREADS, NC <= 8 ? 2 : 1) hstu_bwd_dq(hstu_args a)
{
    __shared__ hstu_smem sm;
    hstu_tile t;
    if (!hstu_tile_init(a, gridDim.z - 1 - blockIdx.z, &t))
        return;
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16, i0 = t.t0;
    const float inv_n = 1.0f / (float)a.N;
    const bool dpos = a.pos_bias && a.dpos_bias, dtime = a.time_bias && a.dtime_bias;
    const float *qh = a.q + (t.s0 + i0) * t.ldq + (int64_t)t.h * a.dqk;
    const float *doh = a.dout + (t.s0 + i0) * t.ldv + (int64_t)t.h * a.dv;
    float acc[4][NC] = {};
    for (int e = tid; e < HA_NB; e += ATTN_THREADS)
        sm.dtb[e] = 0.0f;
    if (tid < 2 * ATTN_BM)
        sm.dpb[tid] = 0.0f;
    hstu_load_tb(a, sm);
    hstu_load_ts(a, t, i0, t.rows, sm.tsq);
    for (int j0 = 0; j0 <= i0; j0 += ATTN_BM) {
        const int cols = t.L - j0 < ATTN_BM ? t.L - j0 : ATTN_BM;
        const float *kh = a.k + (t.s0 + j0) * t.ldq + (int64_t)t.h * a.dqk;
        const float *vh = a.v + (t.s0 + j0) * t.ldv + (int64_t)t.h * a.dv;
        float s[4][4] = {}, g[4][4] = {};
        hstu_load_ts(a, t, j0, cols, sm.tsk);
        attn_nt(qh, t.ldq, t.rows, kh, t.ldq, cols, a.dqk, sm, s);
        attn_nt(doh, t.ldv, t.rows, vh, t.ldv, cols, a.dv, sm, g); /* dA */
        float diag[7] = {}; /* dS summed by c - r + 3: one j - i each */
        int run_bk = -1;    /* dS summed over a run of equal buckets */
        float run = 0.0f;
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const int i = i0 + ty * 4 + r, j = j0 + tx * 4 + c;
                float ds = 0.0f;
                if (i < t.L && j <= i) {
                    int bk;
                    const float x = hstu_preact(a, sm, i, j, ty * 4 + r, tx * 4 + c, s[r][c], &bk);
                    const float sg = 1.0f / (1.0f + expf(-x));
                    ds = g[r][c] * (sg * (1.0f + x * (1.0f - sg)) * inv_n);
                    diag[c - r + 3] += ds;
                    if (dtime && bk != run_bk) {
                        if (run_bk >= 0)
                            atomicAdd(&sm.dtb[run_bk], run);
                        run_bk = bk;
                        run = 0.0f;
                    }
                    run += ds;
                }
                sm.ps[tx * 4 + c][ty * 4 + r] = ds;
            }
        if (dtime && run_bk >= 0)
            atomicAdd(&sm.dtb[run_bk], run);
        if (dpos) /* (j - i) - (j0 - i0) + 63 = 4 (tx - ty) + 60 + (c - r + 3) */
            for (int e = 0; e < 7; e++)
                if (diag[e] != 0.0f)
                    atomicAdd(&sm.dpb[4 * (tx - ty) + 60 + e], diag[e]);
        attn_pz<NC>(kh, t.ldq, cols, a.dqk, sm, acc); /* publishes dpb too */
        if (dpos && tid < 2 * ATTN_BM - 1) {
            if (sm.dpb[tid] != 0.0f)
                atomicAdd(&a.dpos_bias[a.N - 1 + j0 - i0 + tid - (ATTN_BM - 1)], sm.dpb[tid]);
            sm.dpb[tid] = 0.0f; /* next added to after the next pair's barriers */
        }
    }
    __syncthreads();
    if (dtime)
        for (int e = tid; e < HA_NB; e += ATTN_THREADS)
            if (sm.dtb[e] != 0.0f)
                atomicAdd(&a.dtime_bias[e], sm.dtb[e]);
    attn_store<NC>(a.dq + (t.s0 + i0) * t.ldq + (int64_t)t.h * a.dqk, t.ldq, t.rows, a.dqk, 1.0f,
                   acc);
}

/* dk, dv rows of one key tile: sums over query tiles i0 >= j0. The score
 * tiles are transposed here: s[r][c] = k_j . q_i, j = j0 + ty*4 + r. */
template <int NC>
static __global__ void __launch_bounds__(ATTN_THREADS, NC <= 4 ? 2 : 1) hstu_bwd_dkdv(hstu_args a)
{
    __shared__ hstu_smem sm;
    hstu_tile t;
    if (!hstu_tile_init(a, blockIdx.z, &t)) /* the first key tiles see most queries */
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
static hstu_args hstu_make_args(const int64_t *offsets, int H, int dqk, int dv, int N,
                                const float *q, const float *k, const float *v,
                                const float *pos_bias, const float *time_bias, const int64_t *ts)
{
    hstu_args a = {};
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
    hstu_args a = hstu_make_args(offsets, H, dqk, dv, N, q, k, v, pos_bias, time_bias, ts);
    a.out = out;
    ATTN_LAUNCH(hstu_fwd, nc, attn_grid(B, H, N), s, a);
}

void cuda_hstu_attn_bwd(cudaStream_t s, int64_t B, const int64_t *offsets, int H, int dqk,
                        int dv, int N, const float *q, const float *k, const float *v,
                        const float *pos_bias, const float *time_bias, const int64_t *ts,
                        const float *dout, float *dq, float *dk, float *dvv, float *dpos_bias,
                        float *dtime_bias)
{
    if (B <= 0 || H <= 0 || N <= 0)
        return;
    const int nc = hstu_nc("cuda_hstu_attn_bwd", dqk, dv);
    hstu_args a = hstu_make_args(offsets, H, dqk, dv, N, q, k, v, pos_bias, time_bias, ts);
    a.dout = dout;
    a.dq = dq, a.dk = dk, a.dvv = dvv;
    a.dpos_bias = dpos_bias, a.dtime_bias = dtime_bias;
    ATTN_LAUNCH(hstu_bwd_dq, nc, attn_grid(B, H, N), s, a);
    ATTN_LAUNCH(hstu_bwd_dkdv, nc, attn_grid(B, H, N), s, a);
}
