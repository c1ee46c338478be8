// model.backend gpu where it cannot run: a ConfigError that says why, before any data is read,
// never a crash. On a machine with a CUDA device (and a CUDA build) there is nothing to check here;
// the [gpu] tests cover the GPU network itself.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "config/job_config.h"
#include "core/config.h"
#include "core/status.h"
#include "core/stage_layout.h"
#include "worker/backend.h"
#include "worker/stage_compute.h"

#if PSRT_WITH_CUDA
#include "engine/cuda/device_buffer.h"
#endif

using namespace psrt;

namespace {

// What a gpu worker on this machine must answer; none where a device is present (nothing to
// check then).
std::optional<std::string> no_device_error() {
#if PSRT_WITH_CUDA
  if (engine::cuda::device_count() > 0) {
    WARN("a CUDA device is present: the no-device error cannot be checked on this machine");
    return std::nullopt;
  }
  return "model.backend gpu: no CUDA device";
#else
  return "model.backend gpu: this psrt-worker was built without CUDA";
#endif
}

}  // namespace

TEST_CASE("model.backend gpu without a usable device is a clear ConfigError", "[worker][backend]") {
  const auto why = no_device_error();
  if (!why) return;
  // A data path that does not exist: the device check must come first and name the real problem.
  const Config config = parse_config(
      "job: {id: gpu-test, iterations: 1}\n"
      "model: {backend: gpu, arch: lenet5}\n"
      "data: {path: /nonexistent/fashion-mnist}\n",
      "gpu.yaml");
  REQUIRE(config.model.backend == "gpu");
  try {
    make_backend(config, 0);
    FAIL("make_backend built a gpu backend without a usable device");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains(*why));
  }
}

TEST_CASE("a gpu pipeline stage without a usable device is a clear ConfigError",
          "[worker][backend]") {
  const auto why = no_device_error();
  if (!why) return;
  const Config config = parse_config(
      "job: {id: gpu-stage-test, iterations: 1, batch_size: 16}\n"
      "cluster: {workers: 2}\n"
      "model: {backend: gpu, arch: lenet5}\n"
      "data: {path: /nonexistent/fashion-mnist}\n"
      "placement: {mode: model, partitions: 2}\n",
      "gpu.yaml");
  REQUIRE(config.placement.split());  // accepted: the gpu backend runs split jobs
  const StageLayout layout = stage_layout(config, stage_model(config));
  REQUIRE(layout.stages == 2);
  try {
    make_stage_compute(config, layout, 1, 1);
    FAIL("make_stage_compute built a gpu stage without a usable device");
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains(*why));
  }
}

#if PSRT_WITH_CUDA
TEST_CASE("model.device beyond the machine's devices is a clear ConfigError", "[gpu][worker]") {
  const int count = engine::cuda::device_count();
  if (count == 0) {
    WARN("SKIPPED: no CUDA device");
    return;
  }
  // Checked before the data: the missing data path must not be what is reported.
  const Config config = parse_config("job: {id: gpu-test, iterations: 1}\n"
                                     "model: {backend: gpu, arch: lenet5, device: " +
                                         std::to_string(count) +
                                         "}\n"
                                         "data: {path: /nonexistent/fashion-mnist}\n",
                                     "gpu.yaml");
  try {
    make_backend(config, 0);
    FAIL("make_backend built a gpu backend on device " << count);
  } catch (const ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("model.device " + std::to_string(count)) &&
                             Catch::Contains("CUDA device"));
  }
}
#endif
