// PSRT_HOST_DEVICE marks small inline functions that CUDA kernels call too: __host__ __device__
// under nvcc, nothing for the host compiler. Including this pulls in no CUDA header.
#pragma once

#if defined(__CUDACC__)
#define PSRT_HOST_DEVICE __host__ __device__
#else
#define PSRT_HOST_DEVICE
#endif
