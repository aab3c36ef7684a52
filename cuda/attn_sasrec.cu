/* attn_sasrec: SASRec's causal softmax attention (backend.h sasrec_attn_fwd /
 * _bwd), the maths of the CPU reference backend_cpu_sasrec.c:
 *   S[i, j] = (q_i . k_j) / sqrt(dh) for j <= i,  lse_i = log sum_j exp S[i, j],
 *   P[i, j] = exp(S[i, j] - lse_i),               out_i = sum_j P[i, j] v_j,
 * per sequence b (tokens offsets[b] .. offsets[b+1] - 1, positions i, j local
 * to it) and head h (columns h dh .. (h+1) dh - 1 of q, k, v, out: [T, H dh]);
 * lse: [T, H] (natural log, of the scaled scores) saved for the backward:
 *   dP = dO V^T, D_i = dO_i . out_i, dS = P (dP - D_i),
 *   dq_i = sum_j dS[i, j] k_j / sqrt(dh), dk_j = sum_i dS[i, j] q_i / sqrt(dh),
 *   dv_j = sum_i P[i, j] dO_i.
 * Nothing of size [N, N] or padded across the batch exists.
 *
 * Tiling (attn_tile.cuh): a block owns 64 rows of one sequence and one
 * head; grid (B, H, ceil(N / 64)); fwd and bwd_dq own query tiles and walk
 * the key tiles j0 <= i0, bwd_dkdv owns key tiles and walks the query tiles
 * i0 >= j0. Per pair of tiles the 64 x 64 score tile (attn_nt) is masked,
 * turned into P or dS and stored as ps[other][own]; attn_pz adds ps^T Z
 * (Z: the other tile's rows) into the block's [64, dh] accumulator.
 *
 * The forward is an online softmax (flash-attention style): per row the
 * running max m and sum l of exp(S - m) over the key tiles seen, the output
 * accumulator rescaled by exp(m_old - m_new); at the end out = acc / l and
 * lse = m + log l. The max and sum of a row are reduced over the 16 threads
 * sharing ty (lanes of one half-warp). The backward recomputes P from lse;
 * bwd_dq writes dq, bwd_dkdv writes dk and dv (every row of every sequence by
 * exactly one block, so nothing needs zeroing). */
#include <math.h>
#include <stdint.h>

#include "cuda/attn_tile.cuh"
#include "cuda/cuda_check.h"
#include "cuda/kernels.h"

/* the staging areas (ps: P or dS as ps[other][own]), then SASRec's own */
struct sas_smem : attn_smem {
    float lse[ATTN_BM], D[ATTN_BM]; /* of the query tile (backward) */
};

/* max / sum over the 16 lanes sharing ty (a half-warp); all lanes get it */
static __device__ float sas_max16(float v)
{
    for (int o = 8; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

static __device__ float sas_sum16(float v)
{
    for (int o = 8; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Everything a kernel needs; pointers are device memory. */
struct sas_args {
    const int64_t *offsets;
    int H, dh;
    float scale; /* 1 / sqrt(dh) */
    const float *q, *k, *v, *out, *lse, *dout;
    float *o, *lse_out, *dq, *dk, *dv;
};

/* the tile of one block: sequence b, head h, own rows [t0, t0 + rows) */
struct sas_tile : attn_tile {
    int64_t ld; /* H dh */
};

/* Fill *t for this block; own tile index `tile`. False: nothing to do. */
static __device__ bool sas_tile_init(const sas_args &a, int tile, sas_tile *t)
{
    const bool live = attn_tile_init(a.offsets, tile, t);
    t->ld = (int64_t)a.H * a.dh;
    return live;
}

/* sm.lse, sm.D of query rows [i0, i0 + rows) (0 past rows): one warp per row,
 * lanes striding dh. Read after the next barrier. */
static __device__ void sas_load_rows(const sas_args &a, const sas_tile &t, int i0, int rows,
                                     sas_smem &sm)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int r = warp; r < ATTN_BM; r += ATTN_THREADS / 32) {
        float D = 0.0f;
        if (r < rows) {
            const int64_t off = (t.s0 + i0 + r) * t.ld + (int64_t)t.h * a.dh;
            for (int e = lane; e < a.dh; e += 32)
                D += a.dout[off + e] * a.out[off + e];
        }
        D = sas_sum16(D);
        D += __shfl_xor_sync(0xffffffffu, D, 16);
        if (lane == 0) {
            sm.D[r] = D;
            sm.lse[r] = r < rows ? a.lse[(t.s0 + i0 + r) * a.H + t.h] : 0.0f;
        }
    }
}

/* out and lse of one query tile, online softmax over the key tiles j0 <= i0 */
template <int NC>
static __global__ void __launch_bounds__(ATTN_THREADS, NC <= 8 ? 2 : 1) sas_fwd(sas_args a)
{
    __shared__ sas_smem sm;
    sas_tile t;
    if (!sas_tile_init(a, gridDim.z - 1 - blockIdx.z, &t)) /* longest tiles first */
        return;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16, i0 = t.t0;
    const int64_t c0 = (int64_t)t.h * a.dh;
    float acc[4][NC] = {}, m[4], l[4];
    for (int r = 0; r < 4; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
    }
    for (int j0 = 0; j0 <= i0; j0 += ATTN_BM) {
        const int cols = t.L - j0 < ATTN_BM ? t.L - j0 : ATTN_BM;
        float s[4][4] = {};
        attn_nt(a.q + (t.s0 + i0) * t.ld + c0, t.ld, t.rows, a.k + (t.s0 + j0) * t.ld + c0, t.ld,
                cols, a.dh, sm, s);
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int i = i0 + ty * 4 + r;
            float mt = -INFINITY;
#pragma unroll
            for (int c = 0; c < 4; c++) {
                s[r][c] *= a.scale;
                if (i < t.L && j0 + tx * 4 + c <= i)
                    mt = fmaxf(mt, s[r][c]);
            }
            const float mn = fmaxf(m[r], sas_max16(mt));
            /* mn is -inf only on rows past L, which see no key at all */
            const float alpha = mn == -INFINITY ? 1.0f : expf(m[r] - mn);
            float sum = 0.0f;
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const int j = j0 + tx * 4 + c;
                const float p = i < t.L && j <= i ? expf(s[r][c] - mn) : 0.0f;
                sum += p;
                sm.ps[tx * 4 + c][ty * 4 + r] = p;
            }
            l[r] = l[r] * alpha + sas_sum16(sum);
            m[r] = mn;
#pragma unroll
            for (int c = 0; c < NC; c++)
                acc[r][c] *= alpha;
        }
        attn_pz<NC>(a.v + (t.s0 + j0) * t.ld + c0, t.ld, cols, a.dh, sm, acc);
    }
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const int i = i0 + ty * 4 + r;
        if (i < t.L) {
            const float inv = 1.0f / l[r];
            for (int c = 0; c < NC; c++)
                acc[r][c] *= inv;
            if (tx == 0)
                a.lse_out[(t.s0 + i) * a.H + t.h] = m[r] + logf(l[r]);
        }
    }
    attn_store<NC>(a.o + (t.s0 + i0) * t.ld + c0, t.ld, t.rows, a.dh, 1.0f, acc);
}

/* dq rows of one query tile: sum over key tiles j0 <= i0 */
template <int NC>
static __global__ void __launch_bounds__(ATTN_THREADS, NC <= 8 ? 2 : 1) sas_bwd_dq(sas_args a)
{
    __shared__ sas_smem sm;
    sas_tile t;
    if (!sas_tile_init(a, gridDim.z - 1 - blockIdx.z, &t))
        return;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16, i0 = t.t0;
    const int64_t c0 = (int64_t)t.h * a.dh;
    const float *qh = a.q + (t.s0 + i0) * t.ld + c0, *doh = a.dout + (t.s0 + i0) * t.ld + c0;
    float acc[4][NC] = {};
    sas_load_rows(a, t, i0, t.rows, sm);
    for (int j0 = 0; j0 <= i0; j0 += ATTN_BM) {
        const int cols = t.L - j0 < ATTN_BM ? t.L - j0 : ATTN_BM;
        const float *kh = a.k + (t.s0 + j0) * t.ld + c0, *vh = a.v + (t.s0 + j0) * t.ld + c0;
        float s[4][4] = {}, g[4][4] = {};
        attn_nt(qh, t.ld, t.rows, kh, t.ld, cols, a.dh, sm, s);
        attn_nt(doh, t.ld, t.rows, vh, t.ld, cols, a.dh, sm, g); /* dP */
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const int i = i0 + ty * 4 + r, j = j0 + tx * 4 + c;
                float ds = 0.0f;
                if (i < t.L && j <= i) {
                    const float p = expf(s[r][c] * a.scale - sm.lse[ty * 4 + r]);
                    ds = p * (g[r][c] - sm.D[ty * 4 + r]);
                }
                sm.ps[tx * 4 + c][ty * 4 + r] = ds;
            }
        attn_pz<NC>(kh, t.ld, cols, a.dh, sm, acc);
    }
    attn_store<NC>(a.dq + (t.s0 + i0) * t.ld + c0, t.ld, t.rows, a.dh, a.scale, acc);
}

/* dk, dv rows of one key tile: sums over query tiles i0 >= j0. The score
 * tiles are transposed here: s[r][c] = k_j . q_i, j = j0 + ty*4 + r. */
template <int NC>
static __global__ void __launch_bounds__(ATTN_THREADS, NC <= 4 ? 2 : 1) sas_bwd_dkdv(sas_args a)
{
    __shared__ sas_smem sm;
    sas_tile t;
    if (!sas_tile_init(a, blockIdx.z, &t)) /* the first key tiles see most queries */
        return;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16, j0 = t.t0;
    const int64_t c0 = (int64_t)t.h * a.dh;
    const float *kh = a.k + (t.s0 + j0) * t.ld + c0, *vh = a.v + (t.s0 + j0) * t.ld + c0;
    float dk[4][NC] = {}, dv[4][NC] = {};
    for (int i0 = j0; i0 < t.L; i0 += ATTN_BM) {
        const int rows = t.L - i0 < ATTN_BM ? t.L - i0 : ATTN_BM;
        const float *qh = a.q + (t.s0 + i0) * t.ld + c0, *doh = a.dout + (t.s0 + i0) * t.ld + c0;
        float s[4][4] = {}, g[4][4] = {}, ds[4][4];
        sas_load_rows(a, t, i0, rows, sm); /* previous readers passed attn_pz's barriers */
        attn_nt(kh, t.ld, t.rows, qh, t.ld, rows, a.dh, sm, s);
        attn_nt(vh, t.ld, t.rows, doh, t.ld, rows, a.dh, sm, g); /* dP^T */
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const int j = j0 + ty * 4 + r, i = i0 + tx * 4 + c;
                float p = 0.0f;
                ds[r][c] = 0.0f;
                if (i < t.L && j <= i) {
                    p = expf(s[r][c] * a.scale - sm.lse[tx * 4 + c]);
                    ds[r][c] = p * (g[r][c] - sm.D[tx * 4 + c]);
                }
                sm.ps[tx * 4 + c][ty * 4 + r] = p; /* ps[i][j] = P[i, j] */
            }
        attn_pz<NC>(doh, t.ld, rows, a.dh, sm, dv);
        attn_put_ps(sm, ds);
        attn_pz<NC>(qh, t.ld, rows, a.dh, sm, dk);
    }
    attn_store<NC>(a.dk + (t.s0 + j0) * t.ld + c0, t.ld, t.rows, a.dh, a.scale, dk);
    attn_store<NC>(a.dv + (t.s0 + j0) * t.ld + c0, t.ld, t.rows, a.dh, 1.0f, dv);
}

/* ---- launchers ---- */

/* NC for head dimension dh (attn_nc) */
static int sas_nc(const char *who, int dh)
{
    return attn_nc(who, "SASRec head dimension must be 1 .. 256", dh, dh);
}

/* the inputs common to both directions */
static sas_args sas_make_args(const int64_t *offsets, int H, int dh, const float *q,
                              const float *k, const float *v)
{
    sas_args a = {};
    a.offsets = offsets;
    a.H = H;
    a.dh = dh;
    a.scale = 1.0f / sqrtf((float)dh);
    a.q = q;
    a.k = k;
    a.v = v;
    return a;
}

/* B == 0 (or N == 0: no tokens) launches nothing */
void cuda_sasrec_attn_fwd(cudaStream_t s, int64_t B, const int64_t *offsets, int H, int dh,
                          int N, const float *q, const float *k, const float *v, float *out,
                          float *lse)
{
    if (B <= 0 || H <= 0 || N <= 0)
        return;
    const int nc = sas_nc("cuda_sasrec_attn_fwd", dh);
    sas_args a = sas_make_args(offsets, H, dh, q, k, v);
    a.o = out;
    a.lse_out = lse;
    ATTN_LAUNCH(sas_fwd, nc, attn_grid(B, H, N), s, a);
}

void cuda_sasrec_attn_bwd(cudaStream_t s, int64_t B, const int64_t *offsets, int H, int dh,
                          int N, const float *q, const float *k, const float *v,
                          const float *out, const float *lse, const float *dout, float *dq,
                          float *dk, float *dv)
{
    if (B <= 0 || H <= 0 || N <= 0)
        return;
    const int nc = sas_nc("cuda_sasrec_attn_bwd", dh);
    sas_args a = sas_make_args(offsets, H, dh, q, k, v);
    a.out = out;
    a.lse = lse;
    a.dout = dout;
    a.dq = dq;
    a.dk = dk;
    a.dv = dv;
    ATTN_LAUNCH(sas_bwd_dq, nc, attn_grid(B, H, N), s, a);
    ATTN_LAUNCH(sas_bwd_dkdv, nc, attn_grid(B, H, N), s, a);
}
