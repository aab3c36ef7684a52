/* dropout: inverted dropout with keyed masks, bit-identical to the CPU
 * backend (backend_cpu.c cpu_dropout_fwd, src/rng.h).
 *
 * Row r of x: [rows, d] draws from the xoshiro256** stream started at
 * rng_key(row_keys[r], site, DROPOUT_SITE_SALT); element j uses the j-th
 * draw. The stream is sequential, so one thread owns one row and draws its
 * d values in order (rows are many; d is small). The generator below is a
 * device copy of src/rng.h (splitmix64, rng_key, rng_init, xoshiro256**,
 * 53-bit uniform); keep the two in step. The comparison is done in double,
 * uniform >= (double)p, exactly as the CPU does.
 *
 * Each element is read and written by the same thread: y == x and dx == dy
 * in place are safe. */
#include <stdint.h>

#include "cuda_check.h"
#include "kernels.h"

#define DROPOUT_SITE_SALT 0x64726f70ull /* "drop", as in backend_cpu.c */
#define DROPOUT_THREADS 128
#define DROPOUT_MAX_BLOCKS 65536

static __host__ __device__ uint64_t drop_splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* rng_key(a, b, c) of src/rng.h */
static __host__ __device__ uint64_t drop_key(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = a;
    uint64_t h = drop_splitmix(&x);
    x ^= b * 0xd6e8feb86659fd93ull;
    h ^= drop_splitmix(&x);
    x ^= c * 0xa0761d6478bd642full;
    return h ^ drop_splitmix(&x);
}

static __host__ __device__ uint64_t drop_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* rng_u64 of src/rng.h: xoshiro256** on the state s[4] */
static __host__ __device__ uint64_t drop_u64(uint64_t *s)
{
    uint64_t out = drop_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = drop_rotl(s[3], 45);
    return out;
}

/* row r: x, y: [d]; mask: [d] bytes (host and device, so that the host
 * tests can check it against src/rng.h; unused by the host pass) */
[[maybe_unused]] static __host__ __device__ void
drop_row(int d, float p, uint64_t row_key, uint64_t site, const float *xr, float *yr, uint8_t *mr)
{
    const float keep = 1.0f - p;
    /* rng_init: four splitmix64 outputs from the key */
    uint64_t key = drop_key(row_key, site, DROPOUT_SITE_SALT), st[4];
    for (int i = 0; i < 4; i++)
        st[i] = drop_splitmix(&key);
    for (int j = 0; j < d; j++) {
        /* p <= 0 keeps everything without drawing, as on the CPU */
        uint8_t m = p <= 0 || (double)(drop_u64(st) >> 11) * 0x1.0p-53 >= (double)p;
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

static unsigned drop_blocks(int64_t n)
{
    int64_t b = (n + DROPOUT_THREADS - 1) / DROPOUT_THREADS;
    return (unsigned)(b < DROPOUT_MAX_BLOCKS ? b : DROPOUT_MAX_BLOCKS);
}

void cuda_dropout_fwd(cudaStream_t s, int64_t rows, int d, float p, const uint64_t *row_keys,
                      uint64_t site, const float *x, float *y, uint8_t *mask)
{
    if (rows <= 0 || d <= 0)
        return;
    drop_fwd<<<drop_blocks(rows), DROPOUT_THREADS, 0, s>>>(rows, d, p, row_keys, site, x, y,
                                                            mask);
    CUDA_CHECK_LAUNCH("drop_fwd");
}

void cuda_dropout_bwd(cudaStream_t s, int64_t rows, int d, float p, const uint8_t *mask,
                      const float *dy, float *dx)
{
    if (rows <= 0 || d <= 0)
        return;
    const int64_t n = rows * d;
    drop_bwd<<<drop_blocks(n), DROPOUT_THREADS, 0, s>>>(n, p, mask, dy, dx);
    CUDA_CHECK_LAUNCH("drop_bwd");
}
