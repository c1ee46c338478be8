// The `gpu` backend's pipeline stage (placement.mode model | hybrid): engine::cuda::GpuStageNet
// as a StageCompute, built from the native backend's engine::StageNet (same seed, same layers,
// same initial values) on the worker's CUDA device (use_worker_device). Parameters, gradient sums
// and the micro-batches' activations live in device memory; the stage boundaries (input, output
// and the activation gradients) are host spans copied at the boundary, as GpuStageNet says.
// param(key) is a host staging copy in pinned memory: the runtime writes received values into it
// and params_ready(layer) queues their upload (no wait); grad(key) downloads the gradient sum.
//
// Compiled only into CUDA builds (worker/CMakeLists.txt). Plain C++: no CUDA headers.
#pragma once

#include <cstdint>
#include <memory>

#include "core/config.h"
#include "core/stage_layout.h"
#include "worker/stage_compute.h"

namespace psrt {

// Stage `stage` of `layout` on the worker's device. Throws ConfigError where there is no CUDA
// device (asked first) and as the native stage does for the model.
std::unique_ptr<StageCompute> make_gpu_stage(const Config& config, const StageLayout& layout,
                                             uint32_t stage, uint32_t rank);

}  // namespace psrt
