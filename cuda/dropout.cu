/* dropout: inverted dropout with keyed masks, bit-identical to the CPU
 * backend (backend_cpu.c cpu_dropout_fwd, src/base/rng.h).
 *
 * Row r of x: [rows, d] draws from the xoshiro256** stream started at
 * rng_key(row_keys[r], site, DROPOUT_SITE_SALT); element j uses the j-th
 * draw. The stream is sequential, so one thread owns one row and draws its
 * d values in order (rows are many; d is small). The generator is
 * src/base/rng.h itself, compiled for the device. The comparison is done in
 * double, uniform >= (double)p, exactly as the CPU does.
 *
 * Each element is read and written by the same thread: y == x and dx == dy
 * in place are safe. */
#include <stdint.h>

#include "cuda/cuda_check.h"
#include "cuda/kernels.h"
#include "cuda/launch.cuh"
#include "base/rng.h"

#define DROPOUT_SITE_SALT 0x64726f70ull /* "drop", as in backend_cpu.c */
#define DROPOUT_THREADS 128

/* row r: x, y: [d]; mask: [d] bytes (host and device, so that the host
 * tests can check it against src/base/rng.h; unused by the host pass) */
[[maybe_unused]] static __host__ __device__ void
drop_row(int d, float p, uint64_t row_key, uint64_t site, const float *xr, float *yr, uint8_t *mr)
{
    const float keep = 1.0f - p;
    struct rng g;
    rng_init(&g, rng_key(row_key, site, DROPOUT_SITE_SALT));
    for (int j = 0; j < d; j++) {
        /* p <= 0 keeps everything without drawing, as on the CPU */
        uint8_t m = p <= 0 || rng_uniform(&g) >= (double)p;
        mr[j] = m;
        yr[j] = m ? xr[j] / keep : 0.0f;
    }
}

/* one thread per row: x, y: [rows, d]; mask: [rows, d] bytes; row_keys: [rows] */
static __global__ void drop_fwd(int64_t rows, int d, float p, const uint64_t *row_keys,
                                uint64_t site, const float *x, float *y, uint8_t *mask)
{
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows;
         r += (int64_t)gridDim.x * blockDim.x)
        drop_row(d, p, row_keys[r], site, x + r * d, y + r * d, mask + r * d);
}

/* dx = mask ? dy / (1 - p) : 0, all [n] */
static __global__ void drop_bwd(int64_t n, float p, const uint8_t *mask, const float *dy,
                                float *dx)
{
    const float keep = 1.0f - p;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dx[i] = mask[i] ? dy[i] / keep : 0.0f;
}

void cuda_dropout_fwd(cudaStream_t s, int64_t rows, int d, float p, const uint64_t *row_keys,
                      uint64_t site, const float *x, float *y, uint8_t *mask)
{
    if (rows <= 0 || d <= 0)
        return;
    drop_fwd<<<launch_blocks(rows, DROPOUT_THREADS), DROPOUT_THREADS, 0, s>>>(rows, d, p, row_keys,
                                                                              site, x, y, mask);
    CUDA_CHECK_LAUNCH("drop_fwd");
}

void cuda_dropout_bwd(cudaStream_t s, int64_t rows, int d, float p, const uint8_t *mask,
                      const float *dy, float *dx)
{
    if (rows <= 0 || d <= 0)
        return;
    const int64_t n = rows * d;
    drop_bwd<<<launch_blocks(n, DROPOUT_THREADS), DROPOUT_THREADS, 0, s>>>(n, p, mask, dy, dx);
    CUDA_CHECK_LAUNCH("drop_bwd");
}
