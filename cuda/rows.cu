/* rows: gather and scatter-add of table rows (backend.h), and the ordered
 * segments both the scatter-add and the losses use.
 *
 *   gather:  out[i, :] = table[idx[i], :]        out: [n, d], idx: [n]
 *   scatter: table[idx[i], :] += src[i, :]       src: [n, d]
 *
 * The gather: one thread per element, grid-stride, coalesced. The scatter
 * gives the CPU's bits: entries are sorted stably by row (CUB radix sort
 * of (row, entry) pairs), then one block per row adds its entries in entry
 * order, one thread per column, each sum rounded on its own (no fused
 * multiply-add) - the CPU's loop table[idx[i]] += src[i] for i = 0, 1, ...
 * No float atomics: runs repeat bit for bit. */
#include <stdint.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

#define ROWS_THREADS 256
#define ROWS_BATCH 8 /* a segment's entries loaded ahead of their adds */

static __global__ void rows_gather(int64_t n, int d, const float *table, const int64_t *idx,
                                   float *out)
{
    const int64_t total = n * d;
    GRID_LOOP(e, total)
    {
        int64_t i = e / d, j = e - i * d;
        out[e] = table[idx[i] * d + j];
    }
}

void cuda_gather_rows(cudaStream_t s, int64_t n, int d, const float *table, const int64_t *idx,
                      float *out)
{
    if (n <= 0 || d <= 0)
        return;
    rows_gather<<<launch_blocks(n * d, ROWS_THREADS), ROWS_THREADS, 0, s>>>(n, d, table, idx, out);
    CUDA_CHECK_LAUNCH("rows_gather");
}

/* --- segments ------------------------------------------------------------------- */

/* Bits that hold keys up to kmax (at least 1). */
static int rows_key_bits(uint64_t kmax)
{
    int b = 1;
    while (b < 64 && (kmax >> b) != 0)
        b++;
    return b;
}

static __global__ void rows_iota(int64_t n, int64_t *p)
{
    GRID_LOOP(i, n) p[i] = i;
}

/* heads[i] = 1 where a run of equal sorted keys starts */
static __global__ void rows_heads(int64_t n, const int64_t *skey, int64_t *heads)
{
    GRID_LOOP(i, n) heads[i] = i == 0 || skey[i] != skey[i - 1];
}

/* start[run] = its first sorted position; nseg = the runs */
static __global__ void rows_starts(int64_t n, const int64_t *skey, const int64_t *seg,
                                  int64_t *start, int64_t *nseg)
{
    GRID_LOOP(i, n)
    {
        if (i == 0 || skey[i] != skey[i - 1])
            start[seg[i] - 1] = i;
        if (i == n - 1)
            *nseg = seg[i];
    }
}

/* The CUB sizes of M pairs and an M scan, for the workspace. */
static size_t rows_cub_bytes(int64_t M)
{
    size_t a = 0, b = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, a, (const uint64_t *)NULL,
                                               (uint64_t *)NULL, (const int64_t *)NULL,
                                               (int64_t *)NULL, M, 0, 64, (cudaStream_t)0));
    CUDA_CHECK(cub::DeviceScan::InclusiveSum(NULL, b, (const int64_t *)NULL, (int64_t *)NULL, M,
                                             (cudaStream_t)0));
    return a > b ? a : b;
}

size_t cuda_segments_ws_bytes(int64_t M)
{
    const size_t v = cuda_ws_round((size_t)(M > 0 ? M : 1) * 8);
    return 5 * v + cuda_ws_round(8) + cuda_ws_round(rows_cub_bytes(M > 0 ? M : 1));
}

void cuda_segments_build(cudaStream_t s, int64_t M, const int64_t *keys, int64_t bound,
                         struct cuda_ws *ws, struct cuda_segments *out)
{
    const size_t v = (size_t)(M > 0 ? M : 1) * 8;
    out->skey = (int64_t *)cuda_ws_take(ws, v);
    out->spos = (int64_t *)cuda_ws_take(ws, v);
    out->start = (int64_t *)cuda_ws_take(ws, v);
    out->nseg = (int64_t *)cuda_ws_take(ws, 8);
    int64_t *pos = (int64_t *)cuda_ws_take(ws, v), *seg = (int64_t *)cuda_ws_take(ws, v);
    size_t tb = rows_cub_bytes(M);
    void *tmp = cuda_ws_take(ws, tb);
    CUDA_CHECK(cudaMemsetAsync(out->nseg, 0, 8, s));
    if (M <= 0)
        return;
    rows_iota<<<launch_blocks(M, ROWS_THREADS), ROWS_THREADS, 0, s>>>(M, pos);
    CUDA_CHECK_LAUNCH("rows_iota");
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(tmp, tb, (const uint64_t *)keys,
                                               (uint64_t *)out->skey, pos, out->spos, M, 0,
                                               rows_key_bits((uint64_t)bound), s));
    rows_heads<<<launch_blocks(M, ROWS_THREADS), ROWS_THREADS, 0, s>>>(M, out->skey,
                                                                       pos); /* pos: heads */
    CUDA_CHECK_LAUNCH("rows_heads");
    tb = rows_cub_bytes(M);
    CUDA_CHECK(cub::DeviceScan::InclusiveSum(tmp, tb, pos, seg, M, s));
    rows_starts<<<launch_blocks(M, ROWS_THREADS), ROWS_THREADS, 0, s>>>(M, out->skey, seg,
                                                                        out->start, out->nseg);
    CUDA_CHECK_LAUNCH("rows_starts");
}

/* One block per segment (grid-stride over *nseg), threads over the
 * columns: the segment's entries in order onto table[key]. The adds of a
 * column form one chain in entry order (the CPU's bits: a hot row cannot
 * be split into partial sums without changing them); its loads are issued
 * ROWS_BATCH entries at a time ahead of their adds, so that a long segment
 * (a hot in-batch row) waits on memory once per batch, not per entry. */
static __global__ void rows_segment_add(int64_t M, int d, int64_t per, int64_t bound,
                                        const int64_t *skey, const int64_t *spos,
                                        const int64_t *start, const int64_t *nseg,
                                        const float *coef, const float *vec, float *table)
{
    const int64_t ns = *nseg;
    for (int64_t r = blockIdx.x; r < ns; r += gridDim.x) {
        const int64_t lo = start[r], hi = r + 1 < ns ? start[r + 1] : M, k = skey[lo];
        if (k < 0 || k >= bound)
            continue; /* entries without a row */
        for (int j = threadIdx.x; j < d; j += blockDim.x) {
            float acc = table[k * d + j];
            int64_t i = lo;
            for (; i + ROWS_BATCH <= hi; i += ROWS_BATCH) { /* loads first, then the adds */
                float x[ROWS_BATCH];
#pragma unroll
                for (int u = 0; u < ROWS_BATCH; u++) {
                    const int64_t e = spos[i + u];
                    const float v = vec[(e / per) * d + j];
                    x[u] = coef ? __fmul_rn(coef[e], v) : v;
                }
#pragma unroll
                for (int u = 0; u < ROWS_BATCH; u++)
                    acc = __fadd_rn(acc, x[u]);
            }
            for (; i < hi; i++) {
                const int64_t e = spos[i];
                const float v = vec[(e / per) * d + j];
                acc = __fadd_rn(acc, coef ? __fmul_rn(coef[e], v) : v);
            }
            table[k * d + j] = acc;
        }
    }
}

void cuda_segments_add(cudaStream_t s, const struct cuda_segments *g, int64_t M, int d,
                       int64_t per, int64_t bound, const float *coef, const float *vec,
                       float *table)
{
    if (M <= 0 || d <= 0)
        return;
    const unsigned blocks = launch_blocks(M, 1); /* a block a segment */
    const int threads = d < 128 ? 32 * ((d + 31) / 32) : 128;
    rows_segment_add<<<blocks, threads, 0, s>>>(M, d, per, bound, g->skey, g->spos, g->start,
                                                g->nseg, coef, vec, table);
    CUDA_CHECK_LAUNCH("rows_segment_add");
}

size_t cuda_scatter_add_ws_bytes(int64_t n) { return cuda_segments_ws_bytes(n); }

void cuda_scatter_add_rows(cudaStream_t s, int64_t n, int d, const float *src,
                           const int64_t *idx, float *table, struct cuda_ws *ws)
{
    if (n <= 0 || d <= 0)
        return;
    struct cuda_segments g;
    cuda_segments_build(s, n, idx, INT64_MAX, ws, &g);
    cuda_segments_add(s, &g, n, d, 1, INT64_MAX, NULL, src, table);
}
