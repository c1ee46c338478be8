// psrt-bench-engine's GPU column: the median training step of engine::cuda::GpuNetwork (upload of
// the batch, forward and backward over all layers, until the GPU is done; no optimizer step: the
// servers run it), beside PyTorch on CUDA in bench_engine.cc.
#pragma once

#include <string>

namespace psrt::bench {

struct GpuStep {
  double step_ms = 0;
  std::string note;  // why there is no figure ("no GPU", built without CUDA, an error)
};

GpuStep measure_gpu_step(const std::string& arch, int batch, int steps, int warmup);

}  // namespace psrt::bench
