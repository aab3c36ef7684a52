/* simd: FS_SIMD marks a function of hot loops to be compiled for the x86-64
 * micro-architecture levels v3 (AVX2) and v4 (AVX-512) as well as the
 * baseline (GCC's target_clones: the dynamic loader picks the widest level
 * the CPU has, once). The results are bitwise the same on every level: the
 * build passes -ffp-contract=off (no fused multiply-adds) and nothing
 * reassociates, so the vector lanes do exactly the scalar code's
 * operations. Elsewhere (other CPUs, other compilers) it is empty. */
#ifndef FS_SIMD_H
#define FS_SIMD_H

#if !defined(FS_SIMD_OFF) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && \
    defined(__ELF__)
#define FS_SIMD __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define FS_SIMD
#endif

/* FS_INLINE: a helper of FS_SIMD functions, inlined into each of their
 * clones (else GCC may keep one baseline copy whose loops are not
 * vectorised for the clone's instruction set). */
#if defined(__GNUC__)
#define FS_INLINE static inline __attribute__((always_inline))
#else
#define FS_INLINE static inline
#endif

#endif
