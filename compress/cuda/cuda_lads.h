// LADS on a CUDA device: cuBLAS nrm2 for the RMS, a max-|g| reduction, a threshold pass that
// writes the bitmap (warp ballots), CUB compaction of the kept indices, and one pass that
// quantizes and packs (log8 code + delta varint) each kept element. The payload equals the CPU's
// lads_encode output for the same input (see README.md for the tolerance: the RMS comes from
// cuBLAS, so an element within a few ulp of the threshold may fall on the other side).
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

// cudaStream_t is a CUstream_st*: declaring the struct lets stream() be typed without a CUDA header.
struct CUstream_st;

namespace psrt::compress::cuda {

// cudaGetDeviceCount, first; an error means no device.
bool device_available();

class CudaLads {
 public:
  // Buffers for chunks of up to max_elements. Error: no device, out of memory, cuBLAS failure.
  static Result<std::unique_ptr<CudaLads>> create(size_t max_elements);
  ~CudaLads();
  CudaLads(const CudaLads&) = delete;
  CudaLads& operator=(const CudaLads&) = delete;

  // Encodes a chunk already on the device; the payload comes back to the host.
  Result<LadsResult> encode_device(const float* d_values, size_t n, const LadsParams& params,
                                   const LogCodebook& book, std::vector<uint8_t>& payload);
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

  // Copies the chunk to the device, then encode_device.
  Result<LadsResult> encode_host(std::span<const float> values, const LadsParams& params,
                                 const LogCodebook& book, std::vector<uint8_t>& payload);

  // For the benchmark: seconds per encode of `values` (uploaded once) and per device-to-device
  // copy of the same buffer, averaged over reps.
  Result<double> time_encode(std::span<const float> values, const LadsParams& params,
                             const LogCodebook& book, int reps);
  Result<double> time_copy(size_t n, int reps);

 private:
  struct Impl;
  explicit CudaLads(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace psrt::compress::cuda
