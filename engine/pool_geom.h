// The shape of a max pooling over one NCHW sample: channels, input size, square window and step.
// Shared by the CPU layer and the CUDA kernels; plain data, no CUDA headers.
#pragma once

#include "core/host_device.h"

namespace psrt::engine {

struct PoolGeom {
  int channels = 1, in_h = 1, in_w = 1;
  int kernel = 2, stride = 2;
  PSRT_HOST_DEVICE int out_h() const { return (in_h - kernel) / stride + 1; }
  PSRT_HOST_DEVICE int out_w() const { return (in_w - kernel) / stride + 1; }
  PSRT_HOST_DEVICE bool valid() const {
    return channels > 0 && kernel > 0 && stride > 0 && in_h >= kernel && in_w >= kernel;
  }
};

}  // namespace psrt::engine
