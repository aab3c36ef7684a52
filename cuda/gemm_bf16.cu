/* gemm_bf16: the operands of gemm_bf16 (device.precision = bf16; backend.h)
 * rounded to bf16 for cublasGemmEx, by the CPU emulation's own rounding
 * (src/backend/emb_codec_row.h: ecr_f32_to_bf16_rn, host and device code
 * alike): the two backends see the same bf16 operands, bit for bit, and
 * differ only in the order of the fp32 sums (test_backend_ops: gemm_bf16).
 * One thread per element, a grid-stride loop; 64-bit indexes. */
#include <stdint.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "backend/emb_codec_row.h"

#define BF_THREADS 256

/* y[r * cols + c] = bf16(x[r * ldx + c]) */
static __global__ void bf_round(int64_t rows, int64_t cols, const float *x, int64_t ldx,
                                uint16_t *y)
{
    const int64_t n = rows * cols;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / cols, c = i - r * cols;
        y[i] = ecr_f32_to_bf16_rn(x[r * ldx + c]);
    }
}

void cuda_round_bf16(cudaStream_t s, int64_t rows, int64_t cols, const float *x, int64_t ldx,
                     uint16_t *y)
{
    const int64_t n = rows * cols;
    if (n <= 0)
        return;
    bf_round<<<launch_blocks(n, BF_THREADS), BF_THREADS, 0, s>>>(rows, cols, x, ldx, y);
    CUDA_CHECK_LAUNCH("bf_round");
}
