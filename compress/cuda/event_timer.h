// For compress/cuda/*.cu only: the device time of a repeated call, measured with CUDA events on
// one stream (no host clock, no device-wide synchronisation but the last event's).
#pragma once

#include <cuda_runtime.h>

#include "compress/cuda/cuda_status.h"

namespace psrt::compress::cuda {

// Seconds per call of `rep` (which returns a Status), averaged over `reps` calls timed with events
// on `stream`. The events are released on every path.
template <typename Rep>
Result<double> seconds_per_rep(cudaStream_t stream, int reps, Rep&& rep) {
  struct Events {
    cudaEvent_t start = nullptr, stop = nullptr;
    ~Events() {
      if (start) cudaEventDestroy(start);
      if (stop) cudaEventDestroy(stop);
    }
  } ev;
  PSRT_CUDA(cudaEventCreate(&ev.start));
  PSRT_CUDA(cudaEventCreate(&ev.stop));
  PSRT_CUDA(cudaEventRecord(ev.start, stream));
  for (int r = 0; r < reps; ++r) {
    if (Status st = rep(); !st) return st;
  }
  PSRT_CUDA(cudaEventRecord(ev.stop, stream));
  PSRT_CUDA(cudaEventSynchronize(ev.stop));
  float ms = 0;
  PSRT_CUDA(cudaEventElapsedTime(&ms, ev.start, ev.stop));
  return ms / 1e3 / reps;
}

}  // namespace psrt::compress::cuda
