// LACO with error feedback on a CUDA device, for gradients that are already there: the residual
// of every tensor lives in device memory, and LACO's per-tensor decisions (calibration, hot
// start, re-checks, alpha and its feedback) are the host LacoCodec's, taken on the same LacoState
// through its step methods (laco_codec.h). Per chunk, the same steps as ErrorFeedback(LacoCodec):
//
//   dense (calibration, dense_below):       r += g on the device; r comes to the host;
//                                           histogram (calibration); fp32 payload; r = 0 (what
//                                           the CPU leaves, exactly)
//   re-check iteration:                     r += g; r comes to the host for the histogram only;
//                                           then as below on r
//   otherwise:                              CudaLads from r and g: r += g fused into its first
//                                           pass, the payload; then r -= what was sent
//
// so in steady state only the payload leaves the device. Payloads, residuals and stats equal the
// CPU path's bit for bit (CudaLads sums the squares in the CPU's order, moments.h). With momentum
// correction (config.momentum > 0, no masking) each tensor also has a device momentum u, and the
// first step is u = m*u + g; r += u, as ErrorFeedback(LacoCodec) with momentum on the host.
// Plain C++ header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "compress/codec.h"
#include "compress/codec_config.h"
#include "compress/laco_codec.h"
#include "compress/lads.h"
#include "core/status.h"

namespace psrt::compress::cuda {

// One chunk [offset, offset + length) of tensor `key`'s gradient for `iteration`.
struct DeviceChunk {
  size_t key = 0;
  int64_t offset = 0;
  int64_t length = 0;
  // The tensor's whole gradient in device memory (num_elements floats, on the device current at
  // create()). Read on the encoder's own stream after the work already queued on the default
  // stream (where the GPU engine computes it); work on any other stream must have finished.
  const float* grad = nullptr;
  int64_t iteration = 0;
};

class DeviceLacoEncoder {
 public:
  // A zeroed device residual per tensor (tensors[key]), on the current device. config.codec must
  // be "laco"; error feedback is what this class adds, whatever config.error_feedback says.
  // Error: an invalid config, momentum masking (host only), no CUDA device, out of device memory.
  static Result<std::unique_ptr<DeviceLacoEncoder>> create(const CodecConfig& config,
                                                           std::span<const TensorInfo> tensors);
  ~DeviceLacoEncoder();
  DeviceLacoEncoder(const DeviceLacoEncoder&) = delete;
  DeviceLacoEncoder& operator=(const DeviceLacoEncoder&) = delete;

  // Encodes a chunk into `payload` (replaced). When it returns, the device work is done and the
  // gradient is no longer read. `lads`, if given, receives LADS' threshold, RMS, scale and kept
  // count when the chunk was sparse (for tests and logs; untouched for a dense chunk). Errors as
  // the CPU path's (a chunk outside its tensor, a NaN or an infinity) plus CUDA failures; on an
  // error the gradient is taken back out of the residual, as ErrorFeedback does.
  Status encode(const DeviceChunk& chunk, std::vector<uint8_t>& payload,
                LadsResult* lads = nullptr);

  // encode() of each chunk, with the same payloads, residuals and stats, but the sparse chunks of
  // tensors that appear once in `chunks` go to the device in one CudaLads batch: one launch
  // sequence and one wait for all of them (a layer's weight and bias, many small tensors).
  // payloads[j] is chunks[j]'s. On an error the chunks encoded so far stay encoded; the batch's
  // residuals are put back as encode() does.
  Status encode_batch(std::span<const DeviceChunk> chunks,
                      std::vector<std::vector<uint8_t>>& payloads);

  // Counters of tensor `key`, as LacoCodec::stats gives them on the CPU.
  EncodeStats stats(size_t key) const;
  // Tensor `key`'s residual, copied to the host (for tests and debugging).
  Result<std::vector<float>> residual(size_t key) const;
  // Tensor `key`'s momentum u, copied to the host (zeros without momentum correction).
  Result<std::vector<float>> momentum_buffer(size_t key) const;
  const LacoCodec& codec() const;

 private:
  struct Impl;
  explicit DeviceLacoEncoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace psrt::compress::cuda
