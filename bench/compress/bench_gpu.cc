// psrt-bench-compress's GPU rows: LACO's CUDA encode (CudaLads: three kernels and one wait per
// call, the payload back in host memory) beside a device-to-device copy of the same bytes, by
// chunk size and for a ResNet-50-like set of tensors encoded as one batch (one launch sequence)
// and one tensor at a time. Target (issue 16): encode at >= 0.4x the copy's GB/s at 16 MiB and
// 256 MiB.
#include <cstdio>
#include <memory>
#include <vector>

#include "bench/compress/bench_util.h"
#include "compress/lads.h"
#include "compress/log_quant.h"
#ifdef PSRT_BENCH_CUDA
#include "compress/cuda/cuda_lads.h"
#endif

namespace psrt::compress::bench {

namespace {

constexpr double kTarget = 0.4;

#ifdef PSRT_BENCH_CUDA
// One row: copy and encode GB/s of n elements, their ratio, and the verdict where there is a
// target. Returns false on a failure (printed).
bool size_row(cuda::CudaLads& gpu, const char* label, size_t n, bool targeted, int reps) {
  const auto g = gaussian(n, n);
  const LogCodebook book(12);
  const LadsParams params{.alpha = 2.576f, .quant_bits = 8, .log_range = 12};
  Result<double> t_copy = gpu.time_copy(n, reps);
  Result<double> t_enc = gpu.time_encode(g, params, book, reps);
  if (!t_copy || !t_enc) {
    std::fprintf(stderr, "%s\n", (!t_copy ? t_copy.status() : t_enc.status()).message().c_str());
    return false;
  }
  const size_t bytes = n * 4;
  const double ratio = *t_copy / *t_enc;
  std::printf("%-22s %12.2f %12.2f %8.3f %12s\n", label, gbps(bytes, *t_copy), gbps(bytes, *t_enc),
              ratio, targeted ? (ratio >= kTarget ? "MET" : "MISSED") : "-");
  return true;
}

// The ResNet-50-like set: one batch, and one encode per tensor, beside one copy of all of it.
bool model_rows(bool smoke, int reps) {
  std::vector<std::vector<float>> chunks;
  size_t total = 0;
  for (const int64_t n : model_tensors(smoke)) {
    chunks.push_back(gaussian(static_cast<size_t>(n), chunks.size() + 7));
    total += static_cast<size_t>(n);
  }
  Result<std::unique_ptr<cuda::CudaLads>> gpu = cuda::CudaLads::create(total, chunks.size());
  if (!gpu) {
    std::fprintf(stderr, "%s\n", gpu.status().message().c_str());
    return false;
  }
  const LogCodebook book(12);
  const LadsParams params{.alpha = 2.576f, .quant_bits = 8, .log_range = 12};
  Result<double> t_copy = (*gpu)->time_copy(total, reps);
  Result<double> t_batch = (*gpu)->time_encode_batch(chunks, params, book, reps);
  if (!t_copy || !t_batch) {
    std::fprintf(stderr, "%s\n", (!t_copy ? t_copy.status() : t_batch.status()).message().c_str());
    return false;
  }
  double t_each = 0;
  for (const auto& c : chunks) {
    Result<double> t = (*gpu)->time_encode(c, params, book, reps);
    if (!t) {
      std::fprintf(stderr, "%s\n", t.status().message().c_str());
      return false;
    }
    t_each += *t;
  }
  const size_t bytes = total * 4;
  std::printf("%-22s %12.2f %12.2f %8.3f %12s\n", "ResNet-50 set, batch", gbps(bytes, *t_copy),
              gbps(bytes, *t_batch), *t_copy / *t_batch, "-");
  std::printf("%-22s %12.2f %12.2f %8.3f %12s\n", "  one call per tensor", gbps(bytes, *t_copy),
              gbps(bytes, t_each), *t_copy / t_each, "-");
  std::printf("(%zu tensors, %.1f MiB; batch: %d launches in all, per tensor: %zu)\n",
              chunks.size(), static_cast<double>(bytes) / (1 << 20),
              (*gpu)->launches_per_encode(), chunks.size() * (*gpu)->launches_per_encode());
  return true;
}
#endif

}  // namespace

int bench_gpu(bool smoke, int reps) {
  std::printf("\nGPU, LACO encode (alpha 2.576, log8; payload back in host memory) beside a "
              "device-to-device copy\nof the same bytes; GB/s of fp32 input; target encode/copy "
              ">= %.1f at 16 MiB and 256 MiB:\n",
              kTarget);
#ifdef PSRT_BENCH_CUDA
  if (!cuda::device_available()) {
    std::printf("no GPU (no CUDA device): 64 KiB, 1 MiB, 16 MiB, 256 MiB and ResNet-50 set rows "
                "not measured\n");
    return 0;
  }
  struct Size {
    const char* label;
    size_t n;
    bool targeted;
  };
  std::vector<Size> sizes = {{"64 KiB", size_t{1} << 14, false}, {"1 MiB", size_t{1} << 18, false}};
  if (!smoke) {
    sizes.push_back({"16 MiB", size_t{1} << 22, true});
    sizes.push_back({"256 MiB", size_t{1} << 26, true});
  }
  Result<std::unique_ptr<cuda::CudaLads>> gpu = cuda::CudaLads::create(sizes.back().n);
  if (!gpu) {
    std::fprintf(stderr, "%s\n", gpu.status().message().c_str());
    return 1;
  }
  std::printf("%-22s %12s %12s %8s %12s\n", "chunk", "copy GB/s", "encode GB/s", "/copy",
              "target");
  for (const Size& s : sizes) {
    if (!size_row(**gpu, s.label, s.n, s.targeted, reps)) return 1;
  }
  gpu->reset();  // its buffers back before the next set's
  return model_rows(smoke, reps) ? 0 : 1;
#else
  (void)smoke;
  (void)reps;
  std::printf("no GPU (built without CUDA): rows not measured\n");
  return 0;
#endif
}

}  // namespace psrt::compress::bench
