// Layers allocate their parameters on first use: describing a network and building a pipeline
// stage hold only what they run. Measured as the growth of this process's peak resident memory
// (VmHWM, reset through /proc/self/clear_refs), against building the whole network, which must
// show the growth (so that the measure can fail).
#include <catch2/catch.hpp>

#include "engine/network.h"
#include "engine/stage_net.h"
#include "tests/common/peak_memory.h"

using namespace psrt;
using namespace psrt::engine;

using psrt::test::peak_growth_mib;

TEST_CASE("Describing a network or building one of its stages holds only what it runs",
          "[engine][memory]") {
  // fc1 holds 784 x 65536 weights: 196 MiB, twice that with its gradient.
  NetSpec spec;
  spec.arch = "custom";
  spec.layers = {{.kind = LayerSpec::Kind::kFc, .out = 65536},
                 {.kind = LayerSpec::Kind::kRelu},
                 {.kind = LayerSpec::Kind::kFc, .out = 10}};
  const double whole = peak_growth_mib([&] { (void)build_network(spec, 1); });
  if (whole < 0) {
    WARN("/proc/self/clear_refs is not writable here: memory growth not measured");
    return;
  }
  INFO("whole network " << whole << " MiB");
  CHECK(whole > 350);  // the measure sees the allocation
  const double described = peak_growth_mib([&] { (void)describe_network(spec); });
  CHECK(described < 32);
  // Layers: flatten, fc1, relu1, fc2, loss. The last stage (relu1 .. loss) holds fc2 only.
  const double last_stage = peak_growth_mib([&] { StageNet s(spec, 1, 2, 5, 2); });
  CHECK(last_stage < 32);
}
