/* attn_ctx: the context forms of HSTU's and SASRec's attention
 * (backend.h hstu_attn_ctx_*, sasrec_attn_ctx_*; parallel.split_long), the
 * maths of the CPU references backend_cpu_hstu.c and backend_cpu_sasrec.c.
 *
 * Segment b's queries are rows offsets[b] .. offsets[b + 1] - 1 of q (L_b of
 * them) at positions i = pos0[b] + r; its keys and values are rows
 * key_off[b] + j of kb, vb for the positions j = 0 .. pos0[b] + L_b - 1. A
 * call takes one window of keys: OWN, j in [pos0[b], i] (causal), or
 * PREFIX, j in [0, pos0[b]) (the earlier chunks' keys, unmasked).
 *
 *   HSTU   A(i, j) = SiLU(q_i . k_j + rab(i, j)) / N; the forward adds
 *          sum_j A v_j to out; the backward adds dq, writes dkb, dvb on
 *          the window's key rows and adds the bias gradients.
 *   SASRec the forward with OWN writes out and lse (the softmax over the
 *          own keys); with PREFIX it computes the softmax over the earlier
 *          keys and merges it: lse = log(e^l1 + e^l2), out = o1 e^(l1 -
 *          lse) + o2 e^(l2 - lse). The backward takes the merged out, lse:
 *          P = exp(S - lse) on the window, D_i = dout_i . out_i, dS = P (dP
 *          - D_i); adds dq = scale dS K, writes dkb = scale dS^T Q and dvb =
 *          P^T dout on the window's key rows.
 *
 * The kernels are direct (not tiled like attn_hstu.cu / attn_sasrec.cu):
 * one block of 4 warps per (query row, head) for the forward and dq, per
 * (key row, head) for dk and dv; a warp takes every 4th key (or query),
 * its lanes split the head dimension (<= 256), and the warps' partial sums
 * are combined in a fixed order (SASRec's forward: per warp an online
 * softmax, merged by max and rescale). Blocks stride over the rows, whose
 * count is read on the device (offsets[B], key_off[B]): no host wait.
 * Each output row belongs to one block: no atomics. The bias gradients are
 * fixed-order sums (runs repeat bit for bit): each block of hc_bwd_dq owns
 * a slot of partials in the workspace, pos [N] (a warp's lane 0 adds dS of
 * its keys j, distinct for one query, onto pos[N - 1 + j - i]; queries in
 * the block's order) and time [CTX_NB] (per warp in shared memory in the
 * warp's key order, the warps added in order at the end); cuda_hstu_bias_sum
 * (attn_hstu.cu) adds the slots in slot order. The grid of hc_bwd_dq is
 * narrowed so that the partials stay within CTX_PART_BYTES.
 * Time buckets as in attn_hstu.cu: thresholds found once on the host with
 * the CPU's own formula, a binary search per pair. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backend/backend.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels.h"

#define CTX_THREADS 128
#define CTX_WARPS (CTX_THREADS / 32)
#define CTX_DMAX 256  /* the largest head dimension */
#define CTX_GRID 4096 /* blocks along the rows (they stride) */
#define CTX_NB (HSTU_TIME_BUCKETS + 1)
#define CTX_PART_BYTES ((size_t)32 << 20) /* bound of hc_bwd_dq's partials */

struct ctx_args {
    int64_t B;
    const int64_t *offsets, *pos0, *key_off;
    int own;             /* keys == HSTU_KEYS_OWN */
    int H, dqk, dv, N;   /* SASRec: dqk = dv = dh */
    float scale;         /* SASRec: 1 / sqrt(dh) */
    const float *q, *kb, *vb, *pos_bias, *time_bias, *dout, *lse_in, *out_in;
    const int64_t *key_ts;
    float *out, *lse, *dq, *dkb, *dvb, *dpos_bias, *dtime_bias;
    float *ppos, *ptime; /* hc_bwd_dq's partials: [slots][N], [slots][CTX_NB] */
    uint64_t thr[HSTU_TIME_BUCKETS]; /* thr[k - 1]: smallest |dt| of bucket >= k */
};

struct ctx_smem {
    float acc[2][CTX_WARPS][CTX_DMAX]; /* the warps' partial sums */
    float wm[CTX_WARPS], wl[CTX_WARPS];
    uint64_t thr[HSTU_TIME_BUCKETS];
    float tb[CTX_NB];
    float th[CTX_WARPS][CTX_NB]; /* hc_bwd_dq: the warps' dtime_bias */
};

/* the segment of row t: the smallest b with off[b + 1] > t (off[0] <= t < off[B]) */
static __device__ int64_t ctx_seg(const int64_t *off, int64_t B, int64_t t)
{
    int64_t lo = 0, hi = B - 1;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (off[mid + 1] > t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* x . y over d values, the sum on every lane of the warp */
static __device__ float ctx_dot(const float *x, const float *y, int d)
{
    float s = 0;
    for (int c = threadIdx.x % 32; c < d; c += 32)
        s += x[c] * y[c];
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    return s;
}

static __device__ void ctx_load_tb(const ctx_args &a, ctx_smem &sm)
{
    if (a.time_bias)
        for (int e = threadIdx.x; e < CTX_NB; e += CTX_THREADS) {
            sm.tb[e] = a.time_bias[e];
            if (e < HSTU_TIME_BUCKETS)
                sm.thr[e] = a.thr[e];
        }
    __syncthreads();
}

/* q_i . k_j + rab(i, j) of segment positions i, j (key rows from k0);
 * *bk: the time bucket, -1 without time bias */
static __device__ float ctx_preact(const ctx_args &a, const ctx_smem &sm, int64_t k0, int64_t i,
                                   int64_t j, float s, int *bk)
{
    float rab = 0;
    *bk = -1;
    if (a.pos_bias)
        rab += a.pos_bias[a.N - 1 + j - i];
    if (a.time_bias) {
        const int64_t dt = a.key_ts[k0 + i] - a.key_ts[k0 + j];
        const uint64_t u = dt < 0 ? 0 - (uint64_t)dt : (uint64_t)dt;
        int n = 0;
        for (int step = 128; step > 0; step >>= 1)
            if (n + step <= HSTU_TIME_BUCKETS && sm.thr[n + step - 1] <= u)
                n += step;
        *bk = n;
        rab += sm.tb[n];
    }
    return s + rab;
}

/* the query row t's segment and key window [*jlo, *jhi); *i its position */
static __device__ void ctx_query(const ctx_args &a, int64_t t, int64_t *k0, int64_t *i,
                                 int64_t *jlo, int64_t *jhi)
{
    const int64_t b = ctx_seg(a.offsets, a.B, t), p0 = a.pos0[b];
    *k0 = a.key_off[b];
    *i = p0 + (t - a.offsets[b]);
    *jlo = a.own ? p0 : 0;
    *jhi = a.own ? *i + 1 : p0;
}

/* the key row kr's segment: false when kr is outside the call's window;
 * else its position *j and the query rows [*t0, *t1) that see it */
static __device__ bool ctx_key(const ctx_args &a, int64_t kr, int64_t *k0, int64_t *j,
                               int64_t *p0, int64_t *t0, int64_t *t1)
{
    const int64_t b = ctx_seg(a.key_off, a.B, kr);
    *k0 = a.key_off[b];
    *p0 = a.pos0[b];
    *j = kr - *k0;
    if (a.own ? *j < *p0 : *j >= *p0)
        return false;
    *t0 = a.offsets[b] + (a.own ? *j - *p0 : 0);
    *t1 = a.offsets[b + 1];
    return true;
}

/* y[c] (+)= sum over the warps of sm.acc[v][w][c] (times alpha), c < d */
static __device__ void ctx_store(ctx_smem &sm, int v, int d, float alpha, float *y, bool add)
{
    __syncthreads();
    for (int c = threadIdx.x; c < d; c += CTX_THREADS) {
        float s = 0;
        for (int w = 0; w < CTX_WARPS; w++)
            s += sm.acc[v][w][c];
        y[c] = add ? y[c] + alpha * s : alpha * s;
    }
    __syncthreads();
}

static __device__ void ctx_zero(ctx_smem &sm, int v, int d)
{
    for (int c = threadIdx.x % 32; c < d; c += 32)
        sm.acc[v][threadIdx.x / 32][c] = 0.0f;
}

/* ---- HSTU ---- */

static __global__ void __launch_bounds__(CTX_THREADS) hc_fwd(ctx_args a)
{
    __shared__ ctx_smem sm;
    ctx_load_tb(a, sm);
    const int h = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t ldq = (int64_t)a.H * a.dqk, ldv = (int64_t)a.H * a.dv;
    const float inv_n = 1.0f / (float)a.N;
    for (int64_t t = a.offsets[0] + blockIdx.x; t < a.offsets[a.B]; t += gridDim.x) {
        int64_t k0, i, jlo, jhi;
        ctx_query(a, t, &k0, &i, &jlo, &jhi);
        ctx_zero(sm, 0, a.dv);
        const float *qi = a.q + t * ldq + (int64_t)h * a.dqk;
        for (int64_t j = jlo + warp; j < jhi; j += CTX_WARPS) {
            const float s = ctx_dot(qi, a.kb + (k0 + j) * ldq + (int64_t)h * a.dqk, a.dqk);
            int bk;
            const float x = ctx_preact(a, sm, k0, i, j, s, &bk);
            const float A = x / (1.0f + expf(-x)) * inv_n;
            const float *vj = a.vb + (k0 + j) * ldv + (int64_t)h * a.dv;
            for (int c = lane; c < a.dv; c += 32)
                sm.acc[0][warp][c] += A * vj[c];
        }
        ctx_store(sm, 0, a.dv, 1.0f, a.out + t * ldv + (int64_t)h * a.dv, true);
    }
}

/* dS(i, j) of HSTU from s = q_i . k_j and dA = dout_i . v_j; *A the weight */
static __device__ float hc_ds(const ctx_args &a, const ctx_smem &sm, int64_t k0, int64_t i,
                              int64_t j, float s, float dA, float *A, int *bk)
{
    const float x = ctx_preact(a, sm, k0, i, j, s, bk), inv_n = 1.0f / (float)a.N;
    const float sg = 1.0f / (1.0f + expf(-x));
    *A = x / (1.0f + expf(-x)) * inv_n;
    return dA * (sg * (1.0f + x * (1.0f - sg)) * inv_n);
}

static __global__ void __launch_bounds__(CTX_THREADS) hc_bwd_dq(ctx_args a)
{
    __shared__ ctx_smem sm;
    const int h = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t ldq = (int64_t)a.H * a.dqk, ldv = (int64_t)a.H * a.dv;
    const bool dpos = a.pos_bias && a.dpos_bias, dtime = a.time_bias && a.dtime_bias;
    const int64_t slot = (int64_t)blockIdx.y * gridDim.x + blockIdx.x;
    float *ppos = dpos ? a.ppos + slot * a.N : NULL;
    for (int e = threadIdx.x; dpos && e < a.N; e += CTX_THREADS)
        ppos[e] = 0.0f;
    for (int e = threadIdx.x; e < CTX_WARPS * CTX_NB; e += CTX_THREADS)
        sm.th[e / CTX_NB][e % CTX_NB] = 0.0f;
    ctx_load_tb(a, sm); /* its barrier publishes the zeros */
    for (int64_t t = a.offsets[0] + blockIdx.x; t < a.offsets[a.B]; t += gridDim.x) {
        int64_t k0, i, jlo, jhi;
        ctx_query(a, t, &k0, &i, &jlo, &jhi);
        ctx_zero(sm, 0, a.dqk);
        const float *qi = a.q + t * ldq + (int64_t)h * a.dqk;
        const float *doi = a.dout + t * ldv + (int64_t)h * a.dv;
        for (int64_t j = jlo + warp; j < jhi; j += CTX_WARPS) {
            const float *kj = a.kb + (k0 + j) * ldq + (int64_t)h * a.dqk;
            const float s = ctx_dot(qi, kj, a.dqk);
            const float dA = ctx_dot(doi, a.vb + (k0 + j) * ldv + (int64_t)h * a.dv, a.dv);
            float A;
            int bk;
            const float ds = hc_ds(a, sm, k0, i, j, s, dA, &A, &bk);
            for (int c = lane; c < a.dqk; c += 32)
                sm.acc[0][warp][c] += ds * kj[c];
            if (lane == 0 && ds != 0.0f) { /* j: this warp's alone for query t */
                if (dpos)
                    ppos[a.N - 1 + j - i] += ds;
                if (dtime && bk >= 0)
                    sm.th[warp][bk] += ds;
            }
        }
        ctx_store(sm, 0, a.dqk, 1.0f, a.dq + t * ldq + (int64_t)h * a.dqk, true);
    }
    __syncthreads();
    for (int e = threadIdx.x; dtime && e < CTX_NB; e += CTX_THREADS) {
        float sum = 0.0f;
        for (int w = 0; w < CTX_WARPS; w++)
            sum += sm.th[w][e];
        a.ptime[slot * CTX_NB + e] = sum;
    }
}

static __global__ void __launch_bounds__(CTX_THREADS) hc_bwd_dkdv(ctx_args a)
{
    __shared__ ctx_smem sm;
    ctx_load_tb(a, sm);
    const int h = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t ldq = (int64_t)a.H * a.dqk, ldv = (int64_t)a.H * a.dv;
    for (int64_t kr = a.key_off[0] + blockIdx.x; kr < a.key_off[a.B]; kr += gridDim.x) {
        int64_t k0, j, p0, t0, t1;
        if (!ctx_key(a, kr, &k0, &j, &p0, &t0, &t1))
            continue; /* the same for the whole block */
        ctx_zero(sm, 0, a.dqk);
        ctx_zero(sm, 1, a.dv);
        const float *kj = a.kb + kr * ldq + (int64_t)h * a.dqk;
        const float *vj = a.vb + kr * ldv + (int64_t)h * a.dv;
        const int64_t tb = t0 - (a.own ? j - p0 : 0); /* the segment's first query row */
        for (int64_t t = t0 + warp; t < t1; t += CTX_WARPS) {
            const int64_t i = p0 + (t - tb);
            const float *qi = a.q + t * ldq + (int64_t)h * a.dqk;
            const float *doi = a.dout + t * ldv + (int64_t)h * a.dv;
            const float s = ctx_dot(qi, kj, a.dqk), dA = ctx_dot(doi, vj, a.dv);
            float A;
            int bk;
            const float ds = hc_ds(a, sm, k0, i, j, s, dA, &A, &bk);
            for (int c = lane; c < a.dqk; c += 32)
                sm.acc[0][warp][c] += ds * qi[c];
            for (int c = lane; c < a.dv; c += 32)
                sm.acc[1][warp][c] += A * doi[c];
        }
        ctx_store(sm, 0, a.dqk, 1.0f, a.dkb + kr * ldq + (int64_t)h * a.dqk, false);
        ctx_store(sm, 1, a.dv, 1.0f, a.dvb + kr * ldv + (int64_t)h * a.dv, false);
    }
}

/* ---- SASRec ---- */

static __global__ void __launch_bounds__(CTX_THREADS) sc_fwd(ctx_args a)
{
    __shared__ ctx_smem sm;
    const int h = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32, d = a.dqk;
    const int64_t ld = (int64_t)a.H * d;
    for (int64_t t = a.offsets[0] + blockIdx.x; t < a.offsets[a.B]; t += gridDim.x) {
        int64_t k0, i, jlo, jhi;
        ctx_query(a, t, &k0, &i, &jlo, &jhi);
        if (jhi <= jlo)
            continue; /* no earlier keys: the own softmax is the whole one */
        ctx_zero(sm, 0, d);
        const float *qi = a.q + t * ld + (int64_t)h * d;
        float m = -INFINITY, l = 0; /* this warp's online softmax */
        for (int64_t j = jlo + warp; j < jhi; j += CTX_WARPS) {
            const float s = ctx_dot(qi, a.kb + (k0 + j) * ld + (int64_t)h * d, d) * a.scale;
            const float mn = fmaxf(m, s), corr = expf(m - mn), p = expf(s - mn);
            const float *vj = a.vb + (k0 + j) * ld + (int64_t)h * d;
            l = l * corr + p;
            for (int c = lane; c < d; c += 32)
                sm.acc[0][warp][c] = sm.acc[0][warp][c] * corr + p * vj[c];
            m = mn;
        }
        if (lane == 0) {
            sm.wm[warp] = m;
            sm.wl[warp] = l;
        }
        __syncthreads();
        float M = -INFINITY, Lsum = 0;
        for (int w = 0; w < CTX_WARPS; w++)
            M = fmaxf(M, sm.wm[w]);
        for (int w = 0; w < CTX_WARPS; w++)
            if (sm.wl[w] > 0)
                Lsum += sm.wl[w] * expf(sm.wm[w] - M);
        const float l2 = M + logf(Lsum);
        float *o = a.out + t * ld + (int64_t)h * d, *lse = a.lse + t * a.H + h;
        const float l1 = *lse; /* PREFIX: the own keys' (read before any write) */
        __syncthreads();
        float a1 = 0, a2 = 1, lnew = l2;
        if (!a.own) {
            const float mm = l1 > l2 ? l1 : l2;
            lnew = mm + logf(expf(l1 - mm) + expf(l2 - mm));
            a1 = expf(l1 - lnew);
            a2 = expf(l2 - lnew);
        }
        for (int c = threadIdx.x; c < d; c += CTX_THREADS) {
            float s = 0;
            for (int w = 0; w < CTX_WARPS; w++)
                if (sm.wl[w] > 0)
                    s += sm.acc[0][w][c] * expf(sm.wm[w] - M);
            const float o2 = s / Lsum;
            o[c] = a.own ? o2 : a1 * o[c] + a2 * o2;
        }
        __syncthreads();
        if (threadIdx.x == 0)
            *lse = lnew;
    }
}

static __global__ void __launch_bounds__(CTX_THREADS) sc_bwd_dq(ctx_args a)
{
    __shared__ ctx_smem sm;
    const int h = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32, d = a.dqk;
    const int64_t ld = (int64_t)a.H * d;
    for (int64_t t = a.offsets[0] + blockIdx.x; t < a.offsets[a.B]; t += gridDim.x) {
        int64_t k0, i, jlo, jhi;
        ctx_query(a, t, &k0, &i, &jlo, &jhi);
        if (jhi <= jlo)
            continue;
        ctx_zero(sm, 0, d);
        const float *qi = a.q + t * ld + (int64_t)h * d, *doi = a.dout + t * ld + (int64_t)h * d;
        const float D = ctx_dot(doi, a.out_in + t * ld + (int64_t)h * d, d);
        const float l = a.lse_in[t * a.H + h];
        for (int64_t j = jlo + warp; j < jhi; j += CTX_WARPS) {
            const float *kj = a.kb + (k0 + j) * ld + (int64_t)h * d;
            const float p = expf(ctx_dot(qi, kj, d) * a.scale - l);
            const float ds = p * (ctx_dot(doi, a.vb + (k0 + j) * ld + (int64_t)h * d, d) - D);
            for (int c = lane; c < d; c += 32)
                sm.acc[0][warp][c] += ds * kj[c];
        }
        ctx_store(sm, 0, d, a.scale, a.dq + t * ld + (int64_t)h * d, true);
    }
}

static __global__ void __launch_bounds__(CTX_THREADS) sc_bwd_dkdv(ctx_args a)
{
    __shared__ ctx_smem sm;
    const int h = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32, d = a.dqk;
    const int64_t ld = (int64_t)a.H * d;
    for (int64_t kr = a.key_off[0] + blockIdx.x; kr < a.key_off[a.B]; kr += gridDim.x) {
        int64_t k0, j, p0, t0, t1;
        if (!ctx_key(a, kr, &k0, &j, &p0, &t0, &t1))
            continue;
        ctx_zero(sm, 0, d);
        ctx_zero(sm, 1, d);
        const float *kj = a.kb + kr * ld + (int64_t)h * d, *vj = a.vb + kr * ld + (int64_t)h * d;
        for (int64_t t = t0 + warp; t < t1; t += CTX_WARPS) {
            const float *qi = a.q + t * ld + (int64_t)h * d, *doi = a.dout + t * ld + (int64_t)h * d;
            const float D = ctx_dot(doi, a.out_in + t * ld + (int64_t)h * d, d);
            const float p = expf(ctx_dot(qi, kj, d) * a.scale - a.lse_in[t * a.H + h]);
            const float ds = p * (ctx_dot(doi, vj, d) - D);
            for (int c = lane; c < d; c += 32) {
                sm.acc[0][warp][c] += ds * qi[c];
                sm.acc[1][warp][c] += p * doi[c];
            }
        }
        ctx_store(sm, 0, d, a.scale, a.dkb + kr * ld + (int64_t)h * d, false);
        ctx_store(sm, 1, d, 1.0f, a.dvb + kr * ld + (int64_t)h * d, false);
    }
}

/* ---- launchers ---- */

/* backend_cpu_hstu.c's bucket of |dt| = a (attn_hstu.cu's hstu_bucket_cpu) */
static int ctx_bucket_cpu(uint64_t a)
{
    double x = (double)a;
    double f = floor(log(x > 1 ? x : 1) / 0.301);
    return f >= HSTU_TIME_BUCKETS ? HSTU_TIME_BUCKETS : (int)f;
}

/* the smallest |dt| of each bucket 1 .. HSTU_TIME_BUCKETS, by bisection */
struct ctx_thresholds {
    uint64_t t[HSTU_TIME_BUCKETS];
    ctx_thresholds()
    {
        for (int k = 1; k <= HSTU_TIME_BUCKETS; k++) {
            uint64_t lo = 0, hi = (uint64_t)1 << 63;
            while (lo < hi) {
                const uint64_t mid = lo + (hi - lo) / 2;
                if (ctx_bucket_cpu(mid) >= k)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            t[k - 1] = lo;
        }
    }
};

static ctx_args ctx_make(const char *who, int64_t B, const int64_t *offsets, const int64_t *pos0,
                         const int64_t *key_off, int keys, int H, int dqk, int dv)
{
    if (dqk < 1 || dv < 1 || dqk > CTX_DMAX || dv > CTX_DMAX)
        cuda_check_failed((int)cudaErrorInvalidValue, "head dimensions must be 1 .. 256", who,
                          __FILE__, __LINE__);
    ctx_args a;
    memset(&a, 0, sizeof a);
    a.B = B, a.offsets = offsets, a.pos0 = pos0, a.key_off = key_off;
    a.own = keys != HSTU_KEYS_PREFIX;
    a.H = H, a.dqk = dqk, a.dv = dv;
    return a;
}

static void ctx_hstu_bias(ctx_args *a, int N, const float *pos_bias, const float *time_bias,
                          const int64_t *key_ts)
{
    a->N = N;
    a->pos_bias = pos_bias;
    a->time_bias = key_ts ? time_bias : NULL; /* no timestamps: no time bias (the CPU's) */
    a->key_ts = key_ts;
    if (a->time_bias) {
        static const ctx_thresholds thr; /* once, thread-safe */
        memcpy(a->thr, thr.t, sizeof a->thr);
    }
}

#define CTX_LAUNCH_N(kernel, nx, H, s, a)                                                \
    do {                                                                                 \
        kernel<<<dim3((unsigned)(nx), (unsigned)(H)), CTX_THREADS, 0, s>>>(a);           \
        CUDA_CHECK_LAUNCH(#kernel);                                                      \
    } while (0)
#define CTX_LAUNCH(kernel, H, s, a) CTX_LAUNCH_N(kernel, CTX_GRID, H, s, a)

/* hc_bwd_dq's blocks along the rows: CTX_GRID, fewer when the partials
 * [blocks H][N + CTX_NB] would pass CTX_PART_BYTES */
static int64_t ctx_dq_blocks(int H, int N)
{
    const int64_t cap =
        (int64_t)(CTX_PART_BYTES / ((size_t)H * ((size_t)N + CTX_NB) * sizeof(float)));
    return cap >= CTX_GRID ? CTX_GRID : cap > 1 ? cap : 1;
}

size_t cuda_hstu_attn_ctx_bwd_ws_bytes(int H, int N)
{
    if (H <= 0 || N <= 0)
        return 0;
    const int64_t slots = ctx_dq_blocks(H, N) * H;
    return cuda_hstu_bias_sum_ws_bytes(slots, N) + cuda_hstu_bias_sum_ws_bytes(slots, CTX_NB);
}

void cuda_hstu_attn_ctx_fwd(cudaStream_t s, int64_t B, const int64_t *offsets,
                            const int64_t *pos0, const int64_t *key_off, int keys, int H, int dqk,
                            int dv, int N, const float *q, const float *kb, const float *vb,
                            const float *pos_bias, const float *time_bias, const int64_t *key_ts,
                            float *out)
{
    if (B <= 0 || H <= 0 || N <= 0)
        return;
    ctx_args a = ctx_make("cuda_hstu_attn_ctx_fwd", B, offsets, pos0, key_off, keys, H, dqk, dv);
    ctx_hstu_bias(&a, N, pos_bias, time_bias, key_ts);
    a.q = q, a.kb = kb, a.vb = vb, a.out = out;
    CTX_LAUNCH(hc_fwd, H, s, a);
}

void cuda_hstu_attn_ctx_bwd(cudaStream_t s, int64_t B, const int64_t *offsets,
                            const int64_t *pos0, const int64_t *key_off, int keys, int H, int dqk,
                            int dv, int N, const float *q, const float *kb, const float *vb,
                            const float *pos_bias, const float *time_bias, const int64_t *key_ts,
                            const float *dout, float *dq, float *dkb, float *dvb,
                            float *dpos_bias, float *dtime_bias, struct cuda_ws *ws)
{
    if (B <= 0 || H <= 0 || N <= 0)
        return;
    ctx_args a = ctx_make("cuda_hstu_attn_ctx_bwd", B, offsets, pos0, key_off, keys, H, dqk, dv);
    ctx_hstu_bias(&a, N, pos_bias, time_bias, key_ts);
    a.q = q, a.kb = kb, a.vb = vb, a.dout = dout;
    a.dq = dq, a.dkb = dkb, a.dvb = dvb, a.dpos_bias = dpos_bias, a.dtime_bias = dtime_bias;
    const bool dpos = a.pos_bias && dpos_bias, dtime = a.time_bias && dtime_bias;
    const int64_t nx = ctx_dq_blocks(H, N), slots = nx * H;
    float *tpos = NULL, *ttime = NULL;
    if (dpos)
        a.ppos = cuda_hstu_bias_take(ws, slots, N, &tpos);
    if (dtime)
        a.ptime = cuda_hstu_bias_take(ws, slots, CTX_NB, &ttime);
    CTX_LAUNCH_N(hc_bwd_dq, nx, H, s, a);
    CTX_LAUNCH(hc_bwd_dkdv, H, s, a);
    if (dpos) /* the pairs j <= i: dpos_bias[0 .. N) */
        cuda_hstu_bias_sum(s, slots, N, a.ppos, tpos, dpos_bias);
    if (dtime)
        cuda_hstu_bias_sum(s, slots, CTX_NB, a.ptime, ttime, dtime_bias);
}

void cuda_sasrec_attn_ctx_fwd(cudaStream_t s, int64_t B, const int64_t *offsets,
                              const int64_t *pos0, const int64_t *key_off, int keys, int H,
                              int dh, const float *q, const float *kb, const float *vb,
                              float *out, float *lse)
{
    if (B <= 0 || H <= 0)
        return;
    ctx_args a = ctx_make("cuda_sasrec_attn_ctx_fwd", B, offsets, pos0, key_off, keys, H, dh, dh);
    a.scale = 1.0f / sqrtf((float)dh);
    a.q = q, a.kb = kb, a.vb = vb, a.out = out, a.lse = lse;
    CTX_LAUNCH(sc_fwd, H, s, a);
}

void cuda_sasrec_attn_ctx_bwd(cudaStream_t s, int64_t B, const int64_t *offsets,
                              const int64_t *pos0, const int64_t *key_off, int keys, int H,
                              int dh, const float *q, const float *kb, const float *vb,
                              const float *out, const float *lse, const float *dout, float *dq,
                              float *dkb, float *dvb)
{
    if (B <= 0 || H <= 0)
        return;
    ctx_args a = ctx_make("cuda_sasrec_attn_ctx_bwd", B, offsets, pos0, key_off, keys, H, dh, dh);
    a.scale = 1.0f / sqrtf((float)dh);
    a.q = q, a.kb = kb, a.vb = vb, a.out_in = out, a.lse_in = lse, a.dout = dout;
    a.dq = dq, a.dkb = dkb, a.dvb = dvb;
    CTX_LAUNCH(sc_bwd_dq, H, s, a);
    CTX_LAUNCH(sc_bwd_dkdv, H, s, a);
}
