/* backend_cpu_bf16: the CPU's emulation of gemm_bf16 (device.precision =
 * bf16; backend.h). op(A) and op(B) are rounded to bf16 (nearest even: the
 * wire codec's rounding, emb_codec_row.h) into packed fp32 copies whose low
 * 16 bits are zero; sgemm multiplies those. A product of two bf16 values
 * (8 significant bits each) is exact in fp32, so what remains is fp32
 * accumulation, as in cuBLAS's CUBLAS_COMPUTE_32F: the two backends differ
 * only in the order of the sums (test_backend_ops: gemm_bf16). */
#include <cblas.h>
#include <stdlib.h>

#include "backend/backend_cpu.h"
#include "base/check.h"
#include "backend/emb_codec_row.h"

void cpu_round_bf16(int64_t rows, int64_t cols, const float *x, int64_t ldx, float *y)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = ecr_bf16_to_f32(ecr_f32_to_bf16_rn(x[r * ldx + c]));
}

/* The rounded copies: grown, kept (ops run on one thread, as all of the
 * CPU backend's). */
static float *g_buf[2];
static size_t g_cap[2];

static float *scratch(int i, int64_t n)
{
    const size_t want = (size_t)(n > 0 ? n : 1);
    if (want > g_cap[i]) {
        free(g_buf[i]);
        g_buf[i] = xmalloc(want * sizeof(float));
        g_cap[i] = want;
    }
    return g_buf[i];
}

void cpu_gemm_bf16(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *A,
                   int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    if (m == 0 || n == 0)
        return;
    /* stored A: [m, k] (ta = 0) or [k, m]; B: [k, n] or [n, k]; packed as stored */
    const int64_t ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
    float *a = scratch(0, ra * ca), *b = scratch(1, rb * cb);
    cpu_round_bf16(ra, ca, A, lda, a);
    cpu_round_bf16(rb, cb, B, ldb, b);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)k, alpha, a, (int)(ca > 0 ? ca : 1), b,
                (int)(cb > 0 ? cb : 1), beta, C, (int)ldc);
}
