/* attn_tile: the tiling shared by the jagged causal attention kernels
 * (attn_hstu.cu, attn_sasrec.cu): shared-memory staging, the two tile
 * products, the accumulator store, the block's tile and the launch helpers.
 *
 * Per sequence b (tokens offsets[b] .. offsets[b+1] - 1, L of them, local
 * positions i, j) and head h, with row-major activations [T, H d] (row
 * stride ld = H d, the head's columns h d .. h d + d - 1), a block of
 * ATTN_THREADS = 256 threads (16 x 16, thread (ty, tx) = (tid / 16, tid % 16))
 * owns ATTN_BM = 64 rows of one sequence and one head; grid (B, H,
 * ceil(N / 64)). Tiles starting at or past L exit at once. The block walks
 * the 64-row tiles of the other side that the causal mask leaves:
 *   fwd, bwd_dq:  own = queries [i0, i0 + 64), keys j0 = 0, 64, .. <= i0;
 *   bwd_dkdv:     own = keys [j0, j0 + 64), queries i0 = j0, j0 + 64, .. < L.
 * Per pair of tiles:
 *   attn_nt:  a 64 x 64 score tile X Y^T in registers, 4 x 4 per thread
 *             ([r][c] = own row ty*4 + r, other row tx*4 + c), over the head
 *             dimension in chunks of ATTN_DC = 32 columns staged transposed
 *             in shared memory (xt, yt: [32][64]);
 *   the kernel masks it, turns it into its weights (A, P, dS) and stores
 *             them as ps[other][own] (attn_put_ps for a register tile);
 *   attn_pz:  adds ps^T Z (Z: [<= 64, d], the other tile's rows, staged in
 *             shared memory ATTN_ZS floats at a time) into the block's
 *             [64, d] accumulator: thread rows ty*4 + r, columns tx + 16 c
 *             (c < NC, NC a power of two <= 16, 16 NC >= d <= 256);
 *   attn_store writes the accumulator (rows < rows, columns < d). */
#ifndef FS_ATTN_TILE_CUH
#define FS_ATTN_TILE_CUH

#include <stdint.h>

#include "cuda/cuda_check.h"

#define ATTN_THREADS 256 /* 16 x 16 */
#define ATTN_BM 64       /* rows of a tile (queries or keys) */
#define ATTN_DC 32       /* head-dimension chunk of the score products */
#define ATTN_LD 68       /* row stride of [.][64] shared tiles (16-byte rows) */
#define ATTN_ZS 2048     /* floats of one staged chunk of Z rows */

/* the staging areas; each kernel's __shared__ struct derives from it */
struct attn_smem {
    alignas(16) float xt[ATTN_DC][ATTN_LD]; /* X chunk, transposed: xt[k][row] */
    alignas(16) float yt[ATTN_DC][ATTN_LD]; /* Y chunk, transposed */
    alignas(16) float ps[ATTN_BM][ATTN_LD]; /* the weights as ps[other][own] */
    alignas(16) float zs[ATTN_ZS];          /* rows of Z, [ATTN_ZS / (16 NC)][16 NC] */
};

/* acc[r][c] += sum_k X[ty*4 + r][k] Y[tx*4 + c][k], k < d. X: [xrows, d]
 * (row stride ldx), Y: [yrows, d]; rows past xrows / yrows count as zero. */
static __device__ void attn_nt(const float *__restrict__ X, int64_t ldx, int xrows,
                               const float *__restrict__ Y, int64_t ldy, int yrows, int d,
                               attn_smem &sm, float acc[4][4])
{
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    for (int k0 = 0; k0 < d; k0 += ATTN_DC) {
        for (int e = tid; e < ATTN_BM * ATTN_DC; e += ATTN_THREADS) {
            const int row = e / ATTN_DC, kk = e % ATTN_DC, k = k0 + kk;
            sm.xt[kk][row] = row < xrows && k < d ? X[row * ldx + k] : 0.0f;
            sm.yt[kk][row] = row < yrows && k < d ? Y[row * ldy + k] : 0.0f;
        }
        __syncthreads();
        const int kn = d - k0 < ATTN_DC ? d - k0 : ATTN_DC;
#pragma unroll 4
        for (int kk = 0; kk < kn; kk++) {
            const float4 a = *(const float4 *)&sm.xt[kk][ty * 4];
            const float4 b = *(const float4 *)&sm.yt[kk][tx * 4];
            const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int r = 0; r < 4; r++)
#pragma unroll
                for (int c = 0; c < 4; c++)
                    acc[r][c] += av[r] * bv[c];
        }
        __syncthreads();
    }
}

/* sm.ps[tx*4 + c][ty*4 + r] = w[r][c]: a register tile into ps (published by
 * the next barrier, e.g. attn_pz's first) */
static __device__ void attn_put_ps(attn_smem &sm, const float w[4][4])
{
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
        for (int c = 0; c < 4; c++)
            sm.ps[tx * 4 + c][ty * 4 + r] = w[r][c];
}

/* acc[r][c] += sum_k ps[k][ty*4 + r] Z[k][tx + 16 c], k < krows, columns
 * < d (the others add zero). Z: [krows, d], row stride ldz. The stores into
 * ps before the call are published by its first barrier; it ends with one,
 * so ps may be rewritten after it. */
template <int NC>
static __device__ void attn_pz(const float *__restrict__ Z, int64_t ldz, int krows, int d,
                               attn_smem &sm, float acc[4][NC])
{
    constexpr int W = NC * 16, JC = ATTN_ZS / W < ATTN_BM ? ATTN_ZS / W : ATTN_BM;
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    for (int k0 = 0; k0 < krows; k0 += JC) {
        for (int e = tid; e < JC * W; e += ATTN_THREADS) {
            const int kk = e / W, col = e % W;
            sm.zs[e] = k0 + kk < krows && col < d ? Z[(k0 + kk) * ldz + col] : 0.0f;
        }
        __syncthreads();
        const int kn = krows - k0 < JC ? krows - k0 : JC;
#pragma unroll 2
        for (int kk = 0; kk < kn; kk++) {
            const float4 p = *(const float4 *)&sm.ps[k0 + kk][ty * 4];
#pragma unroll
            for (int c = 0; c < NC; c++) {
                const float z = sm.zs[kk * W + tx + 16 * c];
                acc[0][c] += p.x * z;
                acc[1][c] += p.y * z;
                acc[2][c] += p.z * z;
                acc[3][c] += p.w * z;
            }
        }
        __syncthreads();
    }
}

/* Y[ty*4 + r][tx + 16 c] = alpha acc[r][c] for rows < rows, columns < d
 * (Y: [rows, d], row stride ldy) */
template <int NC>
static __device__ void attn_store(float *Y, int64_t ldy, int rows, int d, float alpha,
                                  const float acc[4][NC])
{
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
        for (int c = 0; c < NC; c++)
            if (ty * 4 + r < rows && tx + 16 * c < d)
                Y[(ty * 4 + r) * ldy + tx + 16 * c] = alpha * acc[r][c];
}

/* the tile of one block: sequence b = blockIdx.x, head h = blockIdx.y, own
 * rows [t0, t0 + rows) of the sequence; each kernel's tile derives from it */
struct attn_tile {
    int64_t s0; /* first token of the sequence */
    int L, t0, rows, h;
};

/* Fill *t for sequence b of this block (offsets: device memory, [B + 1]);
 * own tile index `tile`. False: nothing to do. */
static __device__ bool attn_tile_init_seq(const int64_t *offsets, int64_t b, int tile,
                                          attn_tile *t)
{
    t->s0 = offsets[b];
    t->L = (int)(offsets[b + 1] - t->s0);
    t->t0 = tile * ATTN_BM;
    t->rows = t->L - t->t0 < ATTN_BM ? t->L - t->t0 : ATTN_BM;
    t->h = blockIdx.y;
    return t->t0 < t->L;
}

/* the same for sequence b = blockIdx.x */
static __device__ bool attn_tile_init(const int64_t *offsets, int tile, attn_tile *t)
{
    return attn_tile_init_seq(offsets, blockIdx.x, tile, t);
}

/* ---- host side ---- */

/* NC for head dimensions dmin .. dmax: 16 NC >= dmax, NC a power of two
 * <= 16; fails (reason `what`, call `who`) unless 1 <= dmin, dmax <= 256 */
static inline int attn_nc(const char *who, const char *what, int dmin, int dmax)
{
    if (dmin < 1 || dmax > 256)
        cuda_check_failed((int)cudaErrorInvalidValue, what, who, __FILE__, __LINE__);
    return dmax <= 16 ? 1 : dmax <= 32 ? 2 : dmax <= 64 ? 4 : dmax <= 128 ? 8 : 16;
}

/* kernel<NC><<<grid, ATTN_THREADS, 0, s>>>(a) for nc = attn_nc(..), checked */
#define ATTN_LAUNCH(kernel, nc, grid, s, a)                                              \
    do {                                                                                 \
        switch (nc) {                                                                    \
        case 1: kernel<1><<<grid, ATTN_THREADS, 0, s>>>(a); break;                       \
        case 2: kernel<2><<<grid, ATTN_THREADS, 0, s>>>(a); break;                       \
        case 4: kernel<4><<<grid, ATTN_THREADS, 0, s>>>(a); break;                       \
        case 8: kernel<8><<<grid, ATTN_THREADS, 0, s>>>(a); break;                       \
        default: kernel<16><<<grid, ATTN_THREADS, 0, s>>>(a); break;                     \
        }                                                                                \
        CUDA_CHECK_LAUNCH(#kernel);                                                      \
    } while (0)

/* grid (B, H, tiles of N rows) */
static inline dim3 attn_grid(int64_t B, int H, int N)
{
    return dim3((unsigned)B, (unsigned)H, (unsigned)((N + ATTN_BM - 1) / ATTN_BM));
}

#endif
