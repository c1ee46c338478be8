#include "engine/blas_room.h"

#include <cblas.h>
#include <sys/resource.h>

#include <cstdlib>
#include <vector>

namespace psrt::engine {
namespace {

// OpenBLAS's BUFFER_SIZE on x86_64 and the page it adds (its malloc of 134221824 bytes).
constexpr std::size_t kBufferBytes = (std::size_t(128) << 20) + 4096;

}  // namespace

std::string take_blas_buffers(int callers) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return "";
  std::vector<void*> held;
  for (int i = 0; i < callers; ++i) {
    void* p = std::malloc(kBufferBytes);
    if (!p) break;
    held.push_back(p);
  }
  const bool fits = int(held.size()) == callers;
  for (void* p : held) std::free(p);
  if (!fits) {
    return "the address-space limit (ulimit -v) of " + std::to_string(lim.rlim_cur >> 20) +
           " MiB leaves no room for OpenBLAS's buffers: it needs 128 MiB of address space for "
           "each thread that uses it (job.blas_threads: " + std::to_string(callers) +
           "), beside the model and the data, and would wait for ever without them; raise the "
           "limit" + (callers > 1 ? std::string(", or lower job.blas_threads") : std::string());
  }
  // The calling thread's buffer, taken now (OpenBLAS keeps it for the thread's later calls): a
  // product past the paths that take none, the small-matrix kernels and, for beta 0, the direct
  // SkylakeX one.
  constexpr int n = 256;
  std::vector<float> a(n * n, 1.0f), c(n * n, 0.0f);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 0.5f, a.data(), n, a.data(), n,
              1.0f, c.data(), n);
  return "";
}

}  // namespace psrt::engine
