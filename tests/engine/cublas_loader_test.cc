// engine/cuda/cublas_loader.cc: cuBLAS is opened when the engine first calls it, not at program
// start, and a call that cannot be served answers an error status instead of failing the process.
#include <catch2/catch.hpp>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <string>

namespace {

bool cublas_loaded() {
  const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  return ::dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD) != nullptr;
}

}  // namespace

TEST_CASE("cuBLAS is loaded at the first call, not at program start", "[cublas]") {
  REQUIRE_FALSE(cublas_loaded());
  CHECK(std::string(cublasGetStatusName(CUBLAS_STATUS_SUCCESS)) == "CUBLAS_STATUS_SUCCESS");
  CHECK(std::string(cublasGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED)) ==
        "CUBLAS_STATUS_NOT_INITIALIZED");
  CHECK(cublas_loaded());
}

TEST_CASE("cublasCreate through the loader: a handle with a device, an error status without",
          "[cublas]") {
  int devices = 0;
  const bool device = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  cublasHandle_t handle = nullptr;
  const cublasStatus_t rc = cublasCreate(&handle);
  CAPTURE(devices, cublasGetStatusName(rc));
  if (device) {
    REQUIRE(rc == CUBLAS_STATUS_SUCCESS);
    CHECK(handle != nullptr);
    CHECK(cublasSetAtomicsMode(handle, CUBLAS_ATOMICS_NOT_ALLOWED) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasDestroy(handle) == CUBLAS_STATUS_SUCCESS);
  } else {
    CHECK(rc != CUBLAS_STATUS_SUCCESS);
  }
}
