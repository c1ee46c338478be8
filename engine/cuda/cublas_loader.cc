// The cuBLAS calls the engine makes, resolved from libcublas when first called instead of by the
// dynamic linker at program start. Linking libcublas made every psrt-worker start pay for
// libcublasLt's 540 MB of mappings and static initialisers (~0.4 s of CPU on this machine), also
// for jobs that never touch a GPU. These definitions carry cuBLAS's own names, so the engine's
// .cu files call them unchanged; each opens the library once (dlopen, by the SONAME of the
// toolkit built against, found through LD_LIBRARY_PATH or the binary's RUNPATH), looks its
// symbol up once, and forwards. Where the library cannot be loaded every call answers
// CUBLAS_STATUS_NOT_INITIALIZED and cublasGetStatusName names the load error, so the engine's
// checks (cuda_check.h) report why.
//
// The handle is process-wide, as the dynamic linker's own state is: one library per process.
#include <cublas_v2.h>
#include <dlfcn.h>

#include <string>

namespace {

struct Library {
  void* handle = nullptr;
  std::string error;  // why it could not be opened
};

const Library& library() {
  static const Library lib = [] {
    Library l;
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    l.handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (l.handle == nullptr) {
      const char* why = ::dlerror();
      l.error = "cuBLAS not loaded: " + name + ": " + (why != nullptr ? why : "dlopen failed");
    }
    return l;
  }();
  return lib;
}

// The library's definition of `symbol`, of the type of our own `Ours`; null if absent.
template <auto Ours>
auto real(const char* symbol) {
  using Fn = decltype(Ours);
  const Library& lib = library();
  return lib.handle == nullptr ? Fn{} : reinterpret_cast<Fn>(::dlsym(lib.handle, symbol));
}

// Calls the library's `symbol` (looked up once per function), or answers NOT_INITIALIZED.
template <auto Ours, typename... Args>
cublasStatus_t forward(const char* symbol, Args... args) {
  static const auto fn = real<Ours>(symbol);
  return fn != nullptr ? fn(args...) : CUBLAS_STATUS_NOT_INITIALIZED;
}

}  // namespace

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  return forward<&cublasCreate_v2>("cublasCreate_v2", handle);
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  return forward<&cublasDestroy_v2>("cublasDestroy_v2", handle);
}

cublasStatus_t CUBLASWINAPI cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode) {
  return forward<&cublasSetAtomicsMode>("cublasSetAtomicsMode", handle, mode);
}

cublasStatus_t CUBLASWINAPI cublasSscal_v2(cublasHandle_t handle, int n, const float* alpha,
                                           float* x, int incx) {
  return forward<&cublasSscal_v2>("cublasSscal_v2", handle, n, alpha, x, incx);
}

cublasStatus_t CUBLASWINAPI cublasSaxpy_v2(cublasHandle_t handle, int n, const float* alpha,
                                           const float* x, int incx, float* y, int incy) {
  return forward<&cublasSaxpy_v2>("cublasSaxpy_v2", handle, n, alpha, x, incx, y, incy);
}

cublasStatus_t CUBLASWINAPI cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                           cublasOperation_t transb, int m, int n, int k,
                                           const float* alpha, const float* A, int lda,
                                           const float* B, int ldb, const float* beta, float* C,
                                           int ldc) {
  return forward<&cublasSgemm_v2>("cublasSgemm_v2", handle, transa, transb, m, n, k, alpha, A, lda,
                                  B, ldb, beta, C, ldc);
}

cublasStatus_t CUBLASWINAPI cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const float* alpha, const float* A, int lda, long long int strideA, const float* B, int ldb,
    long long int strideB, const float* beta, float* C, int ldc, long long int strideC,
    int batchCount) {
  return forward<&cublasSgemmStridedBatched>("cublasSgemmStridedBatched", handle, transa, transb,
                                             m, n, k, alpha, A, lda, strideA, B, ldb, strideB,
                                             beta, C, ldc, strideC, batchCount);
}

const char* CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) {
  static const auto fn = real<&cublasGetStatusName>("cublasGetStatusName");
  if (fn != nullptr) return fn(status);
  const Library& lib = library();
  return lib.handle == nullptr ? lib.error.c_str() : "cuBLAS status (cublasGetStatusName absent)";
}
