// make_backend: the backend named by model.backend.
#include "worker/backend.h"

#include "core/status.h"
#include "worker/native_backend.h"
#include "worker/replay_backend.h"

#if PSRT_WITH_CUDA
#include "worker/gpu_backend.h"
#endif

namespace psrt {

std::unique_ptr<Backend> make_backend(const Config& config, uint32_t rank) {
  if (config.model.backend == "replay") return std::make_unique<ReplayBackend>(config, rank);
  if (config.model.backend == "gpu") {
#if PSRT_WITH_CUDA
    return std::make_unique<GpuBackend>(config, rank);
#else
    throw ConfigError(kBuiltWithoutCuda);
#endif
  }
  return std::make_unique<NativeBackend>(config, rank);
}

}  // namespace psrt
