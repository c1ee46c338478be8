// LADS on a CUDA device, in a fixed sequence of three kernels per call (lads_kernels.h): one pass
// for the sum of squares and the max, one that selects, quantizes and compacts (decoupled
// look-back), and one that writes the payload body straight into pinned host memory; then one
// synchronisation. A batch of chunks (many small tensors) takes the same three launches. The
// payload equals the CPU's lads_encode output for the same input bit for bit: the sum of squares
// is taken in the CPU's order (moments.h) and every rounding is the CPU's.
// No CUDA header here: plain C++ code includes this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "compress/lads.h"
#include "compress/log_quant.h"
#include "core/status.h"

// cudaStream_t is a CUstream_st*: declaring the struct lets stream() be typed without a CUDA
// header.
struct CUstream_st;

namespace psrt::compress::cuda {

// cudaGetDeviceCount, first; an error means no device.
bool device_available();

// One chunk of a batch: n values in device memory, and how to encode them. With g, the values
// are error feedback's residual r, updated in place first as encode_update does (r += g, or with
// u: u = mu * u + g, r += u).
struct LadsBatchItem {
  const float* values = nullptr;
  size_t n = 0;
  LadsParams params;
  const LogCodebook* book = nullptr;
  const float* g = nullptr;
  float* u = nullptr;
  float mu = 0;
};

class CudaLads {
 public:
  // Buffers for batches of up to max_elements in all, in up to max_segments chunks (a single
  // chunk: max_segments 1), max_elements < 2^31. Error: no device, out of memory.
  static Result<std::unique_ptr<CudaLads>> create(size_t max_elements, size_t max_segments = 1);
  ~CudaLads();
  CudaLads(const CudaLads&) = delete;
  CudaLads& operator=(const CudaLads&) = delete;

  // Encodes a chunk already on the device; the payload comes back to the host.
  Result<LadsResult> encode_device(const float* d_values, size_t n, const LadsParams& params,
                                   const LogCodebook& book, std::vector<uint8_t>& payload);
  // Error feedback's first step fused into the first pass: r += g (or, with u, u = mu * u + g and
  // r += u: momentum correction), in ErrorFeedback's fp32 operations, then encode_device(r). On an
  // error after the launch (a NaN or an infinity) r and u stay updated: the caller undoes.
  Result<LadsResult> encode_update(float* d_r, const float* d_g, float* d_u, float mu, size_t n,
                                   const LadsParams& params, const LogCodebook& book,
                                   std::vector<uint8_t>& payload);
  // Every chunk of the batch in the one launch sequence; payloads[j] (resized to the batch) and
  // the j-th result are item j's, as encode_device (or encode_update, for items with g) would
  // give them. A NaN or an infinity in any chunk fails the batch (items with g stay updated).
  Result<std::vector<LadsResult>> encode_batch(std::span<const LadsBatchItem> items,
                                               std::vector<std::vector<uint8_t>>& payloads);
  // subtract_sent for every item of the last successful encode_batch, in one launch.
  Status subtract_sent_batch();
  // After a successful encode_device of d_values (n elements): d_values[i] -= what the payload
  // sends, for each kept i, computed on the device from the indices and codes that encode left
  // there, with the CPU's fp32 operations (LogCodebook::decode, then accumulate_sent's
  // r + -1 * sent): an error-feedback residual stays equal to the CPU's, bit for bit. Queued on
  // stream(), not waited for. Error: the last encode_device was not of this d_values and n.
  Status subtract_sent(float* d_values, size_t n);
  // The stream all of this object's work runs on, for callers that order their own with it.
  CUstream_st* stream() const;
  // The largest chunk the buffers take (create's max_elements).
  size_t capacity() const;
  // Launches of the last encode (kernels and copies, all on stream()), for the benchmark's notes.
  int launches_per_encode() const;

  // Copies the chunk to the device, then encode_device.
  Result<LadsResult> encode_host(std::span<const float> values, const LadsParams& params,
                                 const LogCodebook& book, std::vector<uint8_t>& payload);

  // For the benchmark: seconds per encode of `values` (uploaded once) and per device-to-device
  // copy of the same buffer, averaged over reps.
  Result<double> time_encode(std::span<const float> values, const LadsParams& params,
                             const LogCodebook& book, int reps);
  Result<double> time_copy(size_t n, int reps);
  // Seconds per encode_batch of these chunks (uploaded once, one after the other).
  Result<double> time_encode_batch(std::span<const std::vector<float>> chunks,
                                   const LadsParams& params, const LogCodebook& book, int reps);

 private:
  struct Impl;
  explicit CudaLads(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace psrt::compress::cuda
