// The shape of a 2-D convolution over one NCHW sample: input channels and size, output channels,
// a square kernel, stride and zero padding. Shared by the CPU layer, im2col and the CUDA kernels.
// Plain data, no CUDA headers.
#pragma once

#include <cstddef>

#include "core/host_device.h"

namespace psrt::engine {

struct ConvGeom {
  int in_c = 1, in_h = 1, in_w = 1;
  int out_c = 1;
  int kernel = 1, stride = 1, pad = 0;

  PSRT_HOST_DEVICE int out_h() const { return (in_h + 2 * pad - kernel) / stride + 1; }
  PSRT_HOST_DEVICE int out_w() const { return (in_w + 2 * pad - kernel) / stride + 1; }
  // Rows of the im2col matrix: one per (input channel, kernel row, kernel column).
  PSRT_HOST_DEVICE std::size_t col_rows() const {
    return static_cast<std::size_t>(in_c) * static_cast<std::size_t>(kernel) *
           static_cast<std::size_t>(kernel);
  }
  // Columns of the im2col matrix: one per output pixel.
  PSRT_HOST_DEVICE std::size_t col_cols() const {
    return static_cast<std::size_t>(out_h()) * static_cast<std::size_t>(out_w());
  }
  PSRT_HOST_DEVICE std::size_t in_size() const {
    return static_cast<std::size_t>(in_c) * static_cast<std::size_t>(in_h) *
           static_cast<std::size_t>(in_w);
  }
  PSRT_HOST_DEVICE std::size_t out_size() const {
    return static_cast<std::size_t>(out_c) * col_cols();
  }
  // True when every size is positive and the kernel fits the padded input.
  PSRT_HOST_DEVICE bool valid() const {
    return in_c > 0 && in_h > 0 && in_w > 0 && out_c > 0 && kernel > 0 && stride > 0 && pad >= 0 &&
           in_h + 2 * pad >= kernel && in_w + 2 * pad >= kernel;
  }
};

}  // namespace psrt::engine
