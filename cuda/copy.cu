/* copy: the kernels of the intra-node transports of the dense gradient
 * all-reduce (backend.h: peer_copy with use_kernel, comm_add; host side in
 * src/train/dense_ipc.c). Verified on one H200 (peer mappings of other processes
 * on the same device); not yet across two GPUs.
 *
 * cuda_copy_kernel is the "kernel" transport: a copy done by SMs, reading
 * (or writing) another process's buffer through its CUDA IPC mapping, the
 * way NCCL moves data. It is kept to compare with the copy engines
 * (cudaMemcpyAsync, no SM), so it mimics NCCL's footprint: a bounded
 * number of blocks (COPY_BLOCKS, like NCCL's channels), 16-byte accesses
 * (COPY_UNROLL of them in flight per thread) when both pointers and the
 * size allow, else bytes.
 *
 * cuda_add: y[i] = y[i] + x[i], one rounding per element, so the sum built
 * by adding slices in a fixed order has the same bits on every rank. */
#include <stdint.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"

#define COPY_THREADS 512
#define COPY_BLOCKS 32 /* SMs the copy occupies at most (NCCL: one per channel) */
#define COPY_UNROLL 4
#define ADD_THREADS 256

/* dst[n], src[n]: 16-byte words; COPY_UNROLL loads in flight per thread
 * before their stores (a bounded number of SMs needs them to keep enough
 * bytes in flight) */
static __global__ void copy_u4(int64_t n, uint4 *dst, const uint4 *src)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (COPY_UNROLL - 1) * stride < n; i += COPY_UNROLL * stride) {
        uint4 v[COPY_UNROLL];
#pragma unroll
        for (int u = 0; u < COPY_UNROLL; u++)
            v[u] = src[i + u * stride];
#pragma unroll
        for (int u = 0; u < COPY_UNROLL; u++)
            dst[i + u * stride] = v[u];
    }
    for (; i < n; i += stride)
        dst[i] = src[i];
}

/* dst[n], src[n]: bytes (unaligned pointers or sizes) */
static __global__ void copy_u1(int64_t n, unsigned char *dst, const unsigned char *src)
{
    GRID_LOOP(i, n)
    dst[i] = src[i];
}

/* y[n] += x[n] */
static __global__ void add_f32(int64_t n, float *y, const float *x)
{
    GRID_LOOP(i, n)
    y[i] = y[i] + x[i];
}

/* blocks for `work` items of `threads` threads each: at most `cap` (work > 0) */
static unsigned copy_grid(int64_t work, int threads, int64_t cap)
{
    int64_t b = (work + threads - 1) / threads;
    return (unsigned)(b < cap ? b : cap);
}

void cuda_copy_kernel(cudaStream_t s, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0)
        return;
    if (((uintptr_t)dst | (uintptr_t)src | (uintptr_t)bytes) % sizeof(uint4) == 0) {
        int64_t n = (int64_t)(bytes / sizeof(uint4));
        copy_u4<<<copy_grid(n, COPY_THREADS, COPY_BLOCKS), COPY_THREADS, 0, s>>>(
            n, (uint4 *)dst, (const uint4 *)src);
        CUDA_CHECK_LAUNCH("copy_u4");
    } else {
        int64_t n = (int64_t)bytes;
        copy_u1<<<copy_grid(n, COPY_THREADS, COPY_BLOCKS), COPY_THREADS, 0, s>>>(
            n, (unsigned char *)dst, (const unsigned char *)src);
        CUDA_CHECK_LAUNCH("copy_u1");
    }
}

void cuda_add(cudaStream_t s, int64_t n, float *y, const float *x)
{
    if (n <= 0)
        return;
    add_f32<<<launch_blocks(n, ADD_THREADS), ADD_THREADS, 0, s>>>(n, y, x);
    CUDA_CHECK_LAUNCH("add_f32");
}
