// PSRT_SIMD_CLONES before a function with a hot float loop: GCC compiles it twice (AVX2 and the
// x86-64 baseline) and picks the one the CPU runs at load time (target_clones, an ifunc). Empty
// where the compiler cannot (not x86-64, not GCC).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PSRT_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define PSRT_SIMD_CLONES
#endif
