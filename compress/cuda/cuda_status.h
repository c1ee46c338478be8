// For compress/cuda/*.cu only (it includes CUDA headers): every CUDA runtime and cuBLAS call is
// checked, and a failure becomes a Status that names the call and its site.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>
#include <string_view>

#include "core/status.h"

namespace psrt::compress::cuda {

inline std::string call_site(const char* call, const char* file, int line) {
  std::string_view f(file);
  f = f.substr(f.find_last_of('/') + 1);  // npos + 1 == 0: no folder
  return std::string(call) + " at " + std::string(f) + ":" + std::to_string(line);
}
inline Status cuda_error(cudaError_t e, const char* call, const char* file, int line) {
  return Status::error("CUDA: " + call_site(call, file, line) + ": " + cudaGetErrorString(e));
}
inline Status cublas_error(cublasStatus_t e, const char* call, const char* file, int line) {
  return Status::error("cuBLAS: " + call_site(call, file, line) + ": status " +
                       std::to_string(static_cast<int>(e)));
}

}  // namespace psrt::compress::cuda

// In a function returning Status or Result<T>: returns the failure.
#define PSRT_CUDA(call)                                                         \
  do {                                                                          \
    const cudaError_t e_ = (call);                                              \
    if (e_ != cudaSuccess) {                                                    \
      return ::psrt::compress::cuda::cuda_error(e_, #call, __FILE__, __LINE__); \
    }                                                                           \
  } while (0)
#define PSRT_CUBLAS(call)                                                         \
  do {                                                                            \
    const cublasStatus_t e_ = (call);                                             \
    if (e_ != CUBLAS_STATUS_SUCCESS) {                                            \
      return ::psrt::compress::cuda::cublas_error(e_, #call, __FILE__, __LINE__); \
    }                                                                             \
  } while (0)
