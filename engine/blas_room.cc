#include "engine/blas_room.h"

#include <cblas.h>
#include <malloc.h>
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
  // One malloc arena for every thread from here on: a thread's first malloc reserved 64 MiB or
  // more of address space for an arena of its own, at a moment of its choosing, and one that
  // came after the check below took the room it had found (the product then hung, 1 run in 10).
  mallopt(M_ARENA_MAX, 1);
  // The product's own matrices first: made after the check, they took part of the room it found.
  constexpr int n = 512;  // past the paths that take no buffer (a 256-wide product took none)
  std::vector<float> a(n * n, 1.0f), c(n * n, 0.0f);
  // Room for the buffers, and for one more malloc arena (64 MiB) that another thread may take
  // meanwhile.
  std::vector<std::size_t> blocks(std::size_t(callers), kBufferBytes);
  blocks.push_back(std::size_t(64) << 20);
  std::vector<void*> held;
  for (std::size_t bytes : blocks) {
    void* p = std::malloc(bytes);
    if (!p) break;
    held.push_back(p);
  }
  const bool fits = held.size() == blocks.size();
  for (void* p : held) std::free(p);
  if (!fits) {
    return "the address-space limit (ulimit -v) of " + std::to_string(lim.rlim_cur >> 20) +
           " MiB leaves no room for OpenBLAS's buffers: it needs 128 MiB of address space for "
           "each thread that uses it (job.blas_threads: " + std::to_string(callers) +
           "), beside the model and the data, and would wait for ever without them; raise the "
           "limit" + (callers > 1 ? std::string(", or lower job.blas_threads") : std::string());
  }
  // The calling thread's buffer, taken now: OpenBLAS keeps it for the thread's later calls
  // (checked under a limit with the room then filled: a later product needed no new buffer).
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 0.5f, a.data(), n, a.data(), n,
              1.0f, c.data(), n);
  return "";
}

}  // namespace psrt::engine
