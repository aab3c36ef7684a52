/* backend_cpu_loss: the CPU reference of backend.h's softmax_loss and
 * bce_loss (the maths: loss.h). Per supervised position the R + 1 scores are
 * dot products of u_i with rows of e, the softmax is max-subtracted, and the
 * gradients are scatter-added per position into de. Nothing of size
 * [T, R, d] is built (the short vector kernels: loss_vec.h). The GEMM form
 * for shared negatives: backend_cpu_loss_shared.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_cpu.h"
#include "backend/cpu_math.h"
#include "base/check.h"
#include "base/simd.h"
#include "base/log.h"
#include "backend/loss_vec.h"

/* The reference of softmax_loss, and of softmax_loss_q with logq [nu]
 * subtracted from every candidate's logit (NULL: none, the arithmetic of
 * softmax_loss); returns the sum of the losses, *count the positions. */
FS_SIMD
double cpu_softmax_loss_ref(int64_t T, int d, int R, float inv_tau, const float *u,
                                int64_t nu, const float *e, const float *logq,
                                const int64_t *pos, const int64_t *neg, float scale, float *du,
                                float *de, int64_t *count)
{
    static const char *what = "softmax_loss";
    float *s = xmalloc((size_t)(R + 1) * sizeof(float)); /* logits, then exp(s - max) */
    const float gscale = scale * inv_tau;
    double total = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < T; i++) {
        const float *ui = u + i * d;
        float *dui = du + i * d;
        int64_t p = pos[i];
        if (p < 0) {
            memset(dui, 0, (size_t)d * sizeof(float));
            continue;
        }
        loss_check_index(what, i, p, nu);
        const int64_t *ni = neg + i * R;
        const float *ep = e + p * d;

        const float s0 = loss_dot(d, ui, ep) * inv_tau - (logq ? logq[p] : 0.0f);
        float m = s0;
        s[0] = s0;
        for (int r = 0; r < R; r++) {
            int64_t k = ni[r];
            if (k < 0 || k == p) {
                s[r + 1] = -INFINITY; /* masked: exp gives 0 */
                continue;
            }
            loss_check_index(what, i, k, nu);
            s[r + 1] = loss_dot(d, ui, e + k * d) * inv_tau - (logq ? logq[k] : 0.0f);
            m = fmaxf(m, s[r + 1]);
        }
        for (int r = 0; r <= R; r++)
            s[r] = cpu_expf(s[r] - m);
        double sum = 0;
        for (int r = 0; r <= R; r++)
            sum += s[r];
        total += log(sum) + (double)m - (double)s0; /* logsumexp - s_0 */
        n++;

        /* d loss / d s_0 = pi_0 - 1, d loss / d s_r = pi_r; ds/de = u / tau */
        float inv_sum = (float)(1.0 / sum);
        float g0 = (s[0] * inv_sum - 1.0f) * gscale;
        for (int j = 0; j < d; j++) /* dui = 0 + g0 ep: zeroed, then the first axpy */
            dui[j] = 0.0f + g0 * ep[j];
        loss_axpy(d, g0, ui, de + p * d);
        for (int r = 0; r < R; r++) {
            int64_t k = ni[r];
            if (s[r + 1] == 0.0f || k < 0 || k == p)
                continue; /* masked (or underflowed): no gradient; masked is
                           * tested too, as a NaN score makes its exp NaN */
            float g = s[r + 1] * inv_sum * gscale;
            loss_axpy(d, g, e + k * d, dui);
            loss_axpy(d, g, ui, de + k * d);
        }
    }

    free(s);
    if (count)
        *count = n;
    return total;
}

/* --- the fast form: AVX-512, bit for bit the reference -------------------------------- */

/* The same operations on every float, in the same order (tests/test_cpu_math.c
 * compares the two bitwise), arranged so that the core waits less. A
 * position's R + 1 candidates are random rows of e and de, tables larger
 * than L1 (ML-1M: 3416 rows of 200 bytes each), and the reference's
 * loops are chains of dependent adds:
 *   - the scores four rows at a time: four independent chains, each the
 *     reference's loss_dot (8 lanes of products added in j order, the
 *     same final tree of the lanes, the tail in order);
 *   - the gradients with du_i held in four 16-lane registers over the R
 *     candidates (its adds in r order, as the reference's axpys into
 *     memory), de's row of each candidate read, added to and written in
 *     the reference's order; d <= 64 (else the reference);
 *   - the rows of the candidates LOSS_AHEAD ahead prefetched (e's for the
 *     scores, de's for the gradients). */
#if !defined(FS_SIMD_OFF) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    defined(__ELF__)
#include <immintrin.h>
#define LOSS_AVX512 1
#define AVX512 __attribute__((target("avx512f")))
#define LOSS_AHEAD 6

static int loss_have_avx512(void)
{
    static int have = -1;
    if (have < 0)
        have = __builtin_cpu_supports("avx512f") ? 1 : 0;
    return have;
}

/* the cache lines of row[0 .. d) */
AVX512 static inline void loss_prefetch(const float *row, int d)
{
    const char *c = (const char *)row, *end = (const char *)(row + d);
    for (; c < end; c += 64)
        _mm_prefetch(c, _MM_HINT_T0);
    _mm_prefetch(end - 1, _MM_HINT_T0);
}

/* loss_dot's final tree of its 8 lanes: ((c0 + c4) + (c1 + c5)) + ((c2 + c6) + (c3 + c7)) */
AVX512 static inline float loss_lanes8(__m256 c)
{
    const __m128 v = _mm_add_ps(_mm256_castps256_ps128(c), _mm256_extractf128_ps(c, 1));
    const __m128 hi = _mm_movehl_ps(v, v);
    return _mm_cvtss_f32(_mm_add_ss(_mm_add_ss(v, _mm_movehdup_ps(v)),
                                    _mm_add_ss(hi, _mm_movehdup_ps(hi))));
}

/* out[r] = loss_dot(d, ui, row r), r < 4 (written out: GCC -O2 keeps an
 * array of vectors in memory) */
AVX512 static inline void loss_dot4(int d, const float *ui, const float *b0, const float *b1,
                                    const float *b2, const float *b3, float *out)
{
    __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
    int j = 0;
    for (; j + 8 <= d; j += 8) {
        const __m256 x = _mm256_loadu_ps(ui + j);
        c0 = _mm256_add_ps(c0, _mm256_mul_ps(x, _mm256_loadu_ps(b0 + j)));
        c1 = _mm256_add_ps(c1, _mm256_mul_ps(x, _mm256_loadu_ps(b1 + j)));
        c2 = _mm256_add_ps(c2, _mm256_mul_ps(x, _mm256_loadu_ps(b2 + j)));
        c3 = _mm256_add_ps(c3, _mm256_mul_ps(x, _mm256_loadu_ps(b3 + j)));
    }
    float t0 = 0, t1 = 0, t2 = 0, t3 = 0;
    for (; j < d; j++) {
        t0 += ui[j] * b0[j];
        t1 += ui[j] * b1[j];
        t2 += ui[j] * b2[j];
        t3 += ui[j] * b3[j];
    }
    out[0] = loss_lanes8(c0) + t0;
    out[1] = loss_lanes8(c1) + t1;
    out[2] = loss_lanes8(c2) + t2;
    out[3] = loss_lanes8(c3) + t3;
}

/* o[r] = loss_dot(d, ui, e row ni[r]) for the unmasked candidates (ok[r]) */
AVX512 static void loss_scores_avx512(int d, int R, const float *ui, const float *e,
                                      const int64_t *ni, const uint8_t *ok, float *o)
{
    for (int r = 0; r < R; r += 4) {
        const float *b[4];
        for (int q = 0; q < 4; q++) {
            const int rq = r + q;
            b[q] = rq < R && ok[rq] ? e + ni[rq] * d : ui; /* ui: a row to read, unused */
            if (rq + LOSS_AHEAD + 4 < R && ok[rq + LOSS_AHEAD + 4])
                loss_prefetch(e + ni[rq + LOSS_AHEAD + 4] * d, d);
        }
        float v[4];
        loss_dot4(d, ui, b[0], b[1], b[2], b[3], v);
        for (int q = 0; q < 4 && r + q < R; q++)
            o[r + q] = v[q];
    }
}

/* dui[0 .. d) += g_r e_{k_r} and de_{k_r} += g_r ui for r = 0 .. R - 1 in
 * order, g_r = s[r + 1] inv_sum gscale, skipping the masked (!ok[r]) and
 * s[r + 1] = 0 (d <= 64) */
AVX512 static void loss_grads_avx512(int d, int R, const float *s, float inv_sum, float gscale,
                                     const int64_t *ni, const uint8_t *ok, const float *e,
                                     const float *ui, float *dui, float *de)
{
    /* block b: lanes [16 b, 16 b + 16) of d */
#define LOSS_MASK(b)                                                                       \
    ((__mmask16)(d >= 16 * (b) + 16 ? 0xffffu : d <= 16 * (b) ? 0u : (1u << (d - 16 * (b))) - 1))
    const __mmask16 m0 = LOSS_MASK(0), m1 = LOSS_MASK(1), m2 = LOSS_MASK(2), m3 = LOSS_MASK(3);
#undef LOSS_MASK
    const __m512 u0 = _mm512_maskz_loadu_ps(m0, ui), u1 = _mm512_maskz_loadu_ps(m1, ui + 16),
                 u2 = _mm512_maskz_loadu_ps(m2, ui + 32), u3 = _mm512_maskz_loadu_ps(m3, ui + 48);
    __m512 a0 = _mm512_maskz_loadu_ps(m0, dui), a1 = _mm512_maskz_loadu_ps(m1, dui + 16),
           a2 = _mm512_maskz_loadu_ps(m2, dui + 32), a3 = _mm512_maskz_loadu_ps(m3, dui + 48);
    /* block b of the candidate: acc += g ek (du_i), dk += g ub (its row of de) */
#define LOSS_BLOCK(acc, ub, m, o)                                                          \
    do {                                                                                   \
        acc = _mm512_add_ps(acc, _mm512_mul_ps(g, _mm512_maskz_loadu_ps(m, ek + (o))));     \
        const __m512 y = _mm512_maskz_loadu_ps(m, dk + (o));                                \
        _mm512_mask_storeu_ps(dk + (o), m, _mm512_add_ps(y, _mm512_mul_ps(g, ub)));         \
    } while (0)
    for (int r = 0; r < R; r++) {
        if (r + LOSS_AHEAD < R && ok[r + LOSS_AHEAD])
            loss_prefetch(de + ni[r + LOSS_AHEAD] * d, d);
        if (s[r + 1] == 0.0f || !ok[r])
            continue; /* as the reference */
        const __m512 g = _mm512_set1_ps(s[r + 1] * inv_sum * gscale);
        const float *ek = e + ni[r] * d;
        float *dk = de + ni[r] * d;
        LOSS_BLOCK(a0, u0, m0, 0);
        if (d > 16)
            LOSS_BLOCK(a1, u1, m1, 16);
        if (d > 32)
            LOSS_BLOCK(a2, u2, m2, 32);
        if (d > 48)
            LOSS_BLOCK(a3, u3, m3, 48);
    }
#undef LOSS_BLOCK
    _mm512_mask_storeu_ps(dui, m0, a0);
    _mm512_mask_storeu_ps(dui + 16, m1, a1);
    _mm512_mask_storeu_ps(dui + 32, m2, a2);
    _mm512_mask_storeu_ps(dui + 48, m3, a3);
}
#else
#define LOSS_AVX512 0
#endif

/* the reference's loop with the scores and the gradients as above */
FS_SIMD
static double softmax_loss_fast(int64_t T, int d, int R, float inv_tau, const float *u,
                                int64_t nu, const float *e, const float *logq,
                                const int64_t *pos, const int64_t *neg, float scale, float *du,
                                float *de, int64_t *count)
{
#if LOSS_AVX512
    if (!loss_have_avx512() || d <= 8 || d > 64 || R < 1)
#endif
        return cpu_softmax_loss_ref(T, d, R, inv_tau, u, nu, e, logq, pos, neg, scale, du, de,
                                    count);
#if LOSS_AVX512
    static const char *what = "softmax_loss";
    float *s = xmalloc((size_t)(R + 1) * sizeof(float)); /* logits, then exp(s - max) */
    uint8_t *ok = xmalloc((size_t)R);                     /* candidate r unmasked */
    const float gscale = scale * inv_tau;
    double total = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < T; i++) {
        const float *ui = u + i * d;
        float *dui = du + i * d;
        int64_t p = pos[i];
        if (p < 0) {
            memset(dui, 0, (size_t)d * sizeof(float));
            continue;
        }
        loss_check_index(what, i, p, nu);
        const int64_t *ni = neg + i * R;
        const float *ep = e + p * d;
        for (int r = 0; r < R; r++) {
            ok[r] = ni[r] >= 0 && ni[r] != p;
            if (ok[r])
                loss_check_index(what, i, ni[r], nu);
        }

        const float s0 = loss_dot(d, ui, ep) * inv_tau - (logq ? logq[p] : 0.0f);
        float m = s0;
        s[0] = s0;
        loss_scores_avx512(d, R, ui, e, ni, ok, s + 1);
        for (int r = 0; r < R; r++) {
            if (!ok[r]) {
                s[r + 1] = -INFINITY; /* masked: exp gives 0 */
                continue;
            }
            s[r + 1] = s[r + 1] * inv_tau - (logq ? logq[ni[r]] : 0.0f);
            /* fmaxf(m, s) without libm's call: the same but for which of
             * +0 and -0 it keeps, which moves no result (x - m, log(sum) + m) */
            m = s[r + 1] > m || m != m ? s[r + 1] : m;
        }
        for (int r = 0; r <= R; r++)
            s[r] = cpu_expf(s[r] - m);
        double sum = 0;
        for (int r = 0; r <= R; r++)
            sum += s[r];
        total += log(sum) + (double)m - (double)s0; /* logsumexp - s_0 */
        n++;

        /* d loss / d s_0 = pi_0 - 1, d loss / d s_r = pi_r; ds/de = u / tau */
        float inv_sum = (float)(1.0 / sum);
        float g0 = (s[0] * inv_sum - 1.0f) * gscale;
        for (int j = 0; j < d; j++) /* dui = 0 + g0 ep: zeroed, then the first axpy */
            dui[j] = 0.0f + g0 * ep[j];
        loss_axpy(d, g0, ui, de + p * d);
        loss_grads_avx512(d, R, s, inv_sum, gscale, ni, ok, e, ui, dui, de);
    }

    free(ok);
    free(s);
    if (count)
        *count = n;
    return total;
#endif
}

void cpu_softmax_loss(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                      const float *e, const int64_t *pos, const int64_t *neg, float scale,
                      float *du, float *de, double *acc)
{
    int64_t n = 0;
    acc[0] += softmax_loss_fast(T, d, R, inv_tau, u, nu, e, NULL, pos, neg, scale, du, de, &n);
    acc[1] += (double)n;
}

void cpu_softmax_loss_q(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                        const float *e, const float *logq, const int64_t *pos,
                        const int64_t *neg, float scale, float *du, float *de, double *acc)
{
    int64_t n = 0;
    acc[0] += softmax_loss_fast(T, d, R, inv_tau, u, nu, e, logq, pos, neg, scale, du, de, &n);
    acc[1] += (double)n;
}

/* log(1 + exp(x)) without overflow */
static double loss_softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

static float loss_sigmoid(float x)
{
    if (x >= 0)
        return 1.0f / (1.0f + expf(-x));
    float t = expf(x);
    return t / (1.0f + t);
}

FS_SIMD
void cpu_bce_loss(int64_t T, int d, const float *u, int64_t nu, const float *rows,
                  const int64_t *pos, const int64_t *neg, float scale, float *du, float *drows,
                  double *acc)
{
    static const char *what = "bce_loss";
    double total = 0;
    int64_t n = 0;
    for (int64_t i = 0; i < T; i++) {
        const float *ui = u + i * d;
        float *dui = du + i * d;
        memset(dui, 0, (size_t)d * sizeof(float));
        int64_t p = pos[i], k = neg[i];
        if (p < 0)
            continue;
        loss_check_index(what, i, p, nu);
        /* -log sigma(s) = softplus(-s), d/ds = sigma(s) - 1 */
        float sp = loss_dot(d, ui, rows + p * d);
        total += loss_softplus(-(double)sp);
        float gp = (loss_sigmoid(sp) - 1.0f) * scale;
        loss_axpy(d, gp, rows + p * d, dui);
        loss_axpy(d, gp, ui, drows + p * d);
        n++;
        if (k < 0 || k == p)
            continue;
        loss_check_index(what, i, k, nu);
        /* -log(1 - sigma(s)) = softplus(s), d/ds = sigma(s) */
        float sn = loss_dot(d, ui, rows + k * d);
        total += loss_softplus((double)sn);
        float gn = loss_sigmoid(sn) * scale;
        loss_axpy(d, gn, rows + k * d, dui);
        loss_axpy(d, gn, ui, drows + k * d);
    }
    acc[0] += total;
    acc[1] += (double)n;
}
