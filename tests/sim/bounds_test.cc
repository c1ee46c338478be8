// The simulator against its lower bounds and the modes against each other on real profiles.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "core/profile.h"
#include "scheduler/sim/simulator.h"

using psrt::Mode;
using psrt::sim::SimConfig;
using psrt::sim::simulate;

namespace {

std::string profile(const std::string& name) {
  return std::string(PSRT_SOURCE_DIR) + "/bench/profiles/" + name + ".yaml";
}

const Mode kAllModes[] = {Mode::kBigdl, Mode::kFifo, Mode::kFifoChunked, Mode::kNonpreemptive,
                          Mode::kPreemptive};

}  // namespace

TEST_CASE("no prediction is below its lower bounds", "[sim]") {
  const double scale = 0.01;
  for (const char* name : {"vgg16", "resnet50", "inception_v3", "lenet5", "mlp"}) {
    const auto model = psrt::load_profile(profile(name), scale);
    for (double gbit : {1.0, 10.0, 100.0}) {  // scale-free: sizes and times shrink together
      for (Mode m : kAllModes) {
        SimConfig c;
        c.workers = 4;
        c.servers = 2;
        c.bandwidth_bytes_per_s = gbit * 1e9 / 8;
        c.mode = m;
        c.chunk_bytes = 40 << 10;
        c.credit_bytes = 80 << 10;
        c.iterations = 4;
        const auto r = simulate(model, c);
        CAPTURE(name, gbit, psrt::mode_name(m));
        CHECK(r.iteration_ms >= r.bounds.compute_ms);
        CHECK(r.iteration_ms >= r.bounds.link_ms);
        CHECK(r.iteration_ms >= r.bounds.critical_ms);
        CHECK(r.bounds.max_ms() > 0);
      }
    }
  }
}

// VGG-16 at a bandwidth where the busiest link needs about 1.5 x the compute time.
TEST_CASE("mode ordering on VGG-16 when communication is 1-2x compute", "[sim]") {
  const double scale = 0.01;
  const auto model = psrt::load_profile(profile("vgg16"), scale);
  SimConfig c;
  c.workers = 4;
  c.servers = 2;
  c.chunk_bytes = static_cast<uint64_t>((4 << 20) * scale);
  c.credit_bytes = 2 * c.chunk_bytes;
  // Server links carry W * model / S bytes each way: choose B so that this is 1.5 x compute.
  const double server_bytes = static_cast<double>(c.workers) * model.total_bytes() / c.servers;
  c.bandwidth_bytes_per_s = server_bytes / (1.5 * model.compute_ms() / 1e3);
  std::map<Mode, double> t;
  for (Mode m : kAllModes) {
    c.mode = m;
    const auto r = simulate(model, c);
    const double comm = r.bounds.link_ms / r.bounds.compute_ms;
    CHECK(comm > 1.0);
    CHECK(comm < 2.0);
    t[m] = r.iteration_ms;
  }
  CAPTURE(t[Mode::kBigdl], t[Mode::kFifo], t[Mode::kFifoChunked], t[Mode::kNonpreemptive],
          t[Mode::kPreemptive]);
  CHECK(t[Mode::kPreemptive] <= t[Mode::kFifo]);
  CHECK(t[Mode::kPreemptive] <= t[Mode::kNonpreemptive]);
  for (Mode m : kAllModes) {
    if (m != Mode::kBigdl) CHECK(t[Mode::kBigdl] > t[m]);
  }
}
