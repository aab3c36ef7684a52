/* launch: the grid of the element-wise kernels (the .cu files of cuda/), one
 * place for what every kernel file used to define for itself.
 *
 * launch_blocks(n, threads): blocks of `threads` threads for n items,
 * ceil(n / threads), at least 1 (an empty launch is an error) and at most
 * LAUNCH_MAX_BLOCKS: a kernel launched so walks its items with GRID_LOOP,
 * which strides by the whole grid past that bound.
 * launch_blocks_all(n, threads): the same without the bound, for kernels
 * that give every item its own thread (i = block * threads + thread). */
#ifndef FS_LAUNCH_CUH
#define FS_LAUNCH_CUH

#include <stdint.h>

#define LAUNCH_MAX_BLOCKS 65536

static inline unsigned launch_blocks_all(int64_t n, int threads)
{
    const int64_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : b);
}

static inline unsigned launch_blocks(int64_t n, int threads)
{
    const unsigned b = launch_blocks_all(n, threads);
    return b < LAUNCH_MAX_BLOCKS ? b : LAUNCH_MAX_BLOCKS;
}

/* for (i = this thread's first item; i < n; i += the grid's threads) */
#define GRID_LOOP(i, n)                                                                            \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

#endif
