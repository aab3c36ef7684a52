/* rng: counter-based, deterministic random numbers.
 *
 * Every random choice is keyed by what it is for (seed, epoch, sample, ...),
 * never by a rank's private stream, so results do not depend on the number
 * of ranks or on chunking. rng_key() mixes up to three
 * 64-bit words into a key; rng_init() starts a xoshiro256** stream there. */
#ifndef FS_RNG_H
#define FS_RNG_H

#include <math.h>
#include <stdint.h>

/* The generator core also compiles as CUDA device code (cuda/dropout.cu
 * draws the same masks on the GPU from this very code). */
#ifdef __CUDACC__
#define RNG_HD __host__ __device__
#else
#define RNG_HD
#endif

struct rng {
    uint64_t s[4];
};

static inline RNG_HD uint64_t rng_splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline RNG_HD uint64_t rng_key(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = a;
    uint64_t h = rng_splitmix(&x);
    x ^= b * 0xd6e8feb86659fd93ull;
    h ^= rng_splitmix(&x);
    x ^= c * 0xa0761d6478bd642full;
    return h ^ rng_splitmix(&x);
}

static inline RNG_HD void rng_init(struct rng *r, uint64_t key)
{
    uint64_t x = key;
    for (int i = 0; i < 4; i++)
        r->s[i] = rng_splitmix(&x);
}

static inline RNG_HD uint64_t rng_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256** (Blackman & Vigna): next 64 random bits. */
static inline RNG_HD uint64_t rng_u64(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rng_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rng_rotl(s[3], 45);
    return out;
}

/* Uniform double in [0, 1) with 53 random bits. */
static inline RNG_HD double rng_uniform(struct rng *r) { return (double)(rng_u64(r) >> 11) * 0x1.0p-53; }

/* The 128-bit product a b: its high word, the low one in *lo. */
static inline RNG_HD uint64_t rng_mul128(uint64_t a, uint64_t b, uint64_t *lo)
{
    *lo = a * b;
#ifdef __CUDA_ARCH__
    return __umul64hi(a, b);
#else
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
#endif
}

/* Uniform integer in [0, n), n > 0 (Lemire's multiply-shift, unbiased). */
static inline RNG_HD uint64_t rng_below(struct rng *r, uint64_t n)
{
    uint64_t lo, hi = rng_mul128(rng_u64(r), n, &lo);
    if (lo < n) {
        uint64_t t = -n % n;
        while (lo < t)
            hi = rng_mul128(rng_u64(r), n, &lo);
    }
    return hi;
}

/* Standard normal (Box-Muller, one value per call). */
static inline double rng_normal(struct rng *r)
{
    double u1 = 1.0 - rng_uniform(r), u2 = rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
