// Internal to the engine's .cu files: launch geometry and the row-major cuBLAS wrappers.
#pragma once

#include <cstddef>

#include "engine/cuda/cuda_check.h"

namespace psrt::engine::cuda {

constexpr int kThreads = 256;

inline unsigned blocks_for(std::size_t count) {
  const std::size_t b = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535u * 32u ? (b > 0 ? b : 1) : 65535u * 32u);
}

// C[M, N] = alpha op(A) op(B) + beta C, all row-major, with cblas RowMajor's meaning of the
// arguments: cuBLAS is column-major, so it computes C^T = op(B)^T op(A)^T.
inline void gemm_rm(cublasHandle_t h, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                    const float* a, int lda, const float* b, int ldb, float beta, float* c,
                    int ldc) {
  PSRT_CUBLAS_CHECK(cublasSgemm(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a,
                                lda, &beta, c, ldc));
}

// gemm_rm over `batch` problems whose A, B, C start stride_a, stride_b, stride_c floats apart.
inline void gemm_rm_batched(cublasHandle_t h, bool trans_a, bool trans_b, int m, int n, int k,
                            float alpha, const float* a, int lda, long long stride_a,
                            const float* b, int ldb, long long stride_b, float beta, float* c,
                            int ldc, long long stride_c, int batch) {
  PSRT_CUBLAS_CHECK(cublasSgemmStridedBatched(
      h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha,
      b, ldb, stride_b, a, lda, stride_a, &beta, c, ldc, stride_c, batch));
}

}  // namespace psrt::engine::cuda
