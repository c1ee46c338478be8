// Internal to the engine's .cu files: checks every CUDA runtime and cuBLAS call and reports the
// call and its site. Includes CUDA headers, so no header outside engine/cuda/*.cu uses it.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace psrt::engine::cuda {

[[noreturn]] inline void cuda_fail(const char* call, const char* file, int line,
                                   const std::string& what) {
  throw std::runtime_error(std::string(call) + " failed at " + file + ":" + std::to_string(line) +
                           ": " + what);
}

inline void check_cuda(cudaError_t rc, const char* call, const char* file, int line) {
  if (rc != cudaSuccess) {
    cuda_fail(call, file, line,
              std::string(cudaGetErrorName(rc)) + " (" + cudaGetErrorString(rc) + ")");
  }
}

inline void check_cublas(cublasStatus_t rc, const char* call, const char* file, int line) {
  if (rc != CUBLAS_STATUS_SUCCESS) {
    cuda_fail(call, file, line, std::string("cuBLAS status ") + cublasGetStatusName(rc));
  }
}

}  // namespace psrt::engine::cuda

#define PSRT_CUDA_CHECK(call) ::psrt::engine::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define PSRT_CUBLAS_CHECK(call) \
  ::psrt::engine::cuda::check_cublas((call), #call, __FILE__, __LINE__)
// After a kernel launch: reports a bad launch configuration at the launch site.
#define PSRT_CUDA_CHECK_LAUNCH(kernel) \
  ::psrt::engine::cuda::check_cuda(cudaGetLastError(), kernel " launch", __FILE__, __LINE__)
