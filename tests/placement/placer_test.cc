#include <catch2/catch.hpp>

#include <algorithm>

#include "placement/baselines.h"
#include "engine/network.h"
#include "core/config_placement.h"
#include "placement/placer.h"
#include "test_graphs.h"

using namespace psrt;
using placement::place;
using placement::Problem;

namespace {

constexpr uint64_t kBig = 1ull << 40;

std::vector<uint32_t> counts(const Plan& p, std::size_t devices) {
  std::vector<uint32_t> c(devices, 0);
  for (uint32_t d : p.device_of_layer) ++c[d];
  return c;
}

bool contiguous(const std::vector<uint32_t>& a) {  // each device one run of a chain
  for (std::size_t i = 1; i < a.size(); ++i) {
    for (std::size_t j = 0; j + 1 < i; ++j) {
      if (a[j] == a[i] && a[i - 1] != a[i]) return false;
    }
  }
  return true;
}

Problem problem(const ModelDesc& m, const DeviceSet& d, uint32_t micro = 1) {
  TrainingSetup s;
  s.batch_size = 4;
  s.micro_batches = micro;
  return Problem{m, d, s, {}};
}

}  // namespace

TEST_CASE("equal layers on two equal devices split in half by the balancing placers",
          "[placement]") {
  const auto m = test_graphs::chain({{10, 1, 10}, {10, 1, 10}, {10, 1, 10}, {10, 1, 10}});
  const auto d = test_graphs::devices(2, kBig, 1, 1e12);
  for (const char* name : {"netplacer", "even", "torchgpipe", "pipedream", "exhaustive"}) {
    INFO(name);
    const auto plan = place(name, problem(m, d, 4));
    REQUIRE(plan);
    CHECK(counts(*plan, 2) == std::vector<uint32_t>{2, 2});
    CHECK(contiguous(plan->device_of_layer));
    CHECK(plan->step_ms > 0);
  }
}

TEST_CASE("NetPlacer gives a twice-as-fast device twice the layers", "[placement]") {
  auto m = test_graphs::chain({{1, 1, 6}, {1, 1, 6}, {1, 1, 6}, {1, 1, 6}, {1, 1, 6},
                               {1, 1, 6}});
  m.device_gflops = 1;  // the profile's times are for 1 GFLOPS
  auto d = test_graphs::devices(2, kBig, 1, 1e12);
  d.devices[0].gflops = 2;
  const auto plan = place("netplacer", problem(m, d, 4));
  REQUIRE(plan);
  CHECK(counts(*plan, 2) == std::vector<uint32_t>{4, 2});
  CHECK(plan->device_compute_ms[0] == Approx(12));
  CHECK(plan->device_compute_ms[1] == Approx(12));
  // torchgpipe takes the devices as equal: 3 and 3, and is slower in the simulator.
  const auto gpipe = place("torchgpipe", problem(m, d, 4));
  REQUIRE(gpipe);
  CHECK(counts(*gpipe, 2) == std::vector<uint32_t>{3, 3});
  CHECK(gpipe->step_ms > plan->step_ms);
}

TEST_CASE("NetPlacer keeps a layer whose output is huge with its consumer", "[placement]") {
  // l1's output costs 1000 ms to send; everything else is cheap: cutting after l1 is ruled out.
  const auto m = test_graphs::chain({{1, 1, 10}, {1, 1000000, 10}, {1, 1, 10}, {1, 1, 10}});
  const auto d = test_graphs::devices(2, kBig, 1, 4e6);
  const auto plan = place("netplacer", problem(m, d, 2));
  REQUIRE(plan);
  CHECK(plan->device_of_layer[1] == plan->device_of_layer[2]);
}

TEST_CASE("memory is a hard limit for every placer", "[placement]") {
  // 4 layers of 1000 parameters: 3 x 4000 bytes each with momentum, plus activations.
  const auto m = test_graphs::chain({{1000, 1, 1}, {1000, 1, 1}, {1000, 1, 1}, {1000, 1, 1}});
  auto d = test_graphs::devices(2, 40000, 1, 1e12);
  d.devices[0].memory_bytes = 15000;  // room for one layer only
  const auto plan = place("netplacer", problem(m, d));
  REQUIRE(plan);
  CHECK(counts(*plan, 2) == std::vector<uint32_t>{1, 3});
  const auto even = place("even", problem(m, d));
  REQUIRE_FALSE(even);
  CHECK_THAT(even.status().message(),
             Catch::Contains("infeasible") && Catch::Contains("'d0'") &&
                 Catch::Contains("bytes missing"));
  d.devices[1].memory_bytes = 20000;  // 35000 in all, the model needs 48000 and more
  for (const auto& name : placement::placer_names()) {
    INFO(name);
    const auto r = place(name, problem(m, d));
    REQUIRE_FALSE(r);
    CHECK_THAT(r.status().message(), Catch::Contains("infeasible"));
  }
  const auto np = place("netplacer", problem(m, d));
  CHECK_THAT(np.status().message(), Catch::Contains("bytes missing"));
}

TEST_CASE("exhaustive search equals brute force over every pipeline assignment", "[placement]") {
  // 5 layers with a skip (l1 -> l4), three devices of two kinds.
  auto m = test_graphs::chain({{5000, 2000, 4}, {100, 8000, 2}, {3000, 500, 6}, {200, 100, 3},
                               {9000, 10, 5}});
  m.layers[4].inputs = {1, 3};
  auto d = test_graphs::devices(3, kBig, 1, 2e8);
  d.devices[2].gflops = 0.5;
  m.device_gflops = 1;
  const auto p = problem(m, d, 2);
  const auto ex = place("exhaustive", p);
  REQUIRE(ex);
  double brute = 1e300;
  std::vector<uint32_t> a(5, 0);
  for (int code = 0; code < 243; ++code) {
    int c = code;
    for (auto& x : a) x = static_cast<uint32_t>(c % 3), c /= 3;
    if (!contiguous(a)) continue;
    brute = std::min(brute, placement::simulated_step_ms(p, a));
  }
  CHECK(ex->step_ms == Approx(brute));
  // NetPlacer is no worse than the simplest splits here.
  const auto np = place("netplacer", p);
  REQUIRE(np);
  CHECK(np->step_ms <= place("even", p)->step_ms * 1.0001);
}

TEST_CASE("Baechi m-ETF runs independent branches side by side and respects memory",
          "[placement]") {
  // a -> (b, c) -> d: b and c of 10 ms each, cheap transfers.
  auto m = test_graphs::chain({{1, 1, 1}, {1, 1, 10}, {1, 1, 10}, {1, 1, 1}});
  m.layers[2].inputs = {0};
  m.layers[3].inputs = {1, 2};
  auto d = test_graphs::devices(2, kBig, 1, 1e12);
  const auto metf = placement::baechi_metf(problem(m, d));
  REQUIRE(metf);
  CHECK((*metf)[1] != (*metf)[2]);
  const auto msct = placement::baechi_msct(problem(m, d));
  REQUIRE(msct);
  d.devices[1].memory_bytes = 10;  // nothing fits on d1
  const auto small = placement::baechi_metf(problem(m, d));
  REQUIRE(small);
  CHECK(*small == std::vector<uint32_t>{0, 0, 0, 0});
}

TEST_CASE("METIS-like balance-only partition balances compute", "[placement]") {
  std::vector<test_graphs::Spec> specs(12, {1, 1, 5});
  const auto m = test_graphs::chain(specs);
  const auto d = test_graphs::devices(3, kBig, 1);
  const auto a = placement::balance_only(problem(m, d));
  REQUIRE(a);
  std::vector<int> c(3, 0);
  for (uint32_t x : *a) ++c[x];
  CHECK(c == std::vector<int>{4, 4, 4});
}

TEST_CASE("single device takes the fastest device the model fits on", "[placement]") {
  const auto m = test_graphs::chain({{1000, 1, 1}, {1000, 1, 1}});
  auto d = test_graphs::devices(3, kBig, 1);
  d.devices[1].gflops = 3;
  d.devices[2].gflops = 5;
  d.devices[2].memory_bytes = 100;
  const auto plan = place("single", problem(m, d));
  REQUIRE(plan);
  CHECK(plan->device_of_layer == std::vector<uint32_t>{1, 1});
}

TEST_CASE("simulated annealing is seeded and never worse than its start", "[placement]") {
  const auto m = test_graphs::chain({{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 20}});
  const auto d = test_graphs::devices(2, kBig, 1, 1e12);
  auto p = problem(m, d, 2);
  p.options.anneal_steps = 200;
  const auto a = place("annealing", p), b = place("annealing", p);
  REQUIRE(a);
  CHECK(a->device_of_layer == b->device_of_layer);
  CHECK(a->step_ms <= place("even", p)->step_ms);
}

TEST_CASE("annealing and exhaustive stop with an error at their time limit, not before",
          "[placement]") {
  const auto m = test_graphs::chain({{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 20}});
  const auto d = test_graphs::devices(2, kBig, 1, 1e12);
  auto p = problem(m, d, 2);
  p.options.anneal_steps = 200;
  p.options.max_search_s = 1e-9;  // passed before the first step
  for (const char* name : {"annealing", "exhaustive"}) {
    INFO(name);
    const auto stopped = place(name, p);
    REQUIRE_FALSE(stopped);
    CHECK_THAT(stopped.status().message(), Catch::Contains("search limit") &&
                                               Catch::Contains("netplacer"));
  }
  p.options.max_search_s = 3600;  // far off: the same plan as without a limit
  const auto limited = place("annealing", p);
  p.options.max_search_s = 0;
  const auto free = place("annealing", p);
  REQUIRE(limited);
  REQUIRE(free);
  CHECK(limited->device_of_layer == free->device_of_layer);
  CHECK(place("netplacer", p));  // NetPlacer does not search by simulation: no limit applies
}

TEST_CASE("the searching placers report each simulated plan to a progress callback",
          "[placement]") {
  const auto m = test_graphs::chain({{1, 1, 1}, {1, 1, 1}, {1, 1, 20}});
  const auto d = test_graphs::devices(2, kBig, 1, 1e12);
  auto p = problem(m, d, 2);
  p.options.anneal_steps = 50;
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  p.options.progress = [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
  REQUIRE(place("annealing", p));
  REQUIRE(calls.size() == 50);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    CHECK(calls[i] == std::make_pair(uint64_t(i + 1), uint64_t(50)));
  }
  calls.clear();
  REQUIRE(place("exhaustive", p));
  REQUIRE_FALSE(calls.empty());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    CHECK(calls[i] == std::make_pair(uint64_t(i + 1), uint64_t(0)));  // no total ahead
  }
  calls.clear();
  REQUIRE(place("netplacer", p));
  CHECK(calls.empty());  // NetPlacer does not search by simulation
}

TEST_CASE("the native networks give the same graph form and can be placed", "[placement]") {
  for (const char* arch : {"lenet5", "vgg-small"}) {
    INFO(arch);
    engine::NetSpec spec;
    spec.arch = arch;
    ModelDesc m = engine::build_network(spec, 1)->desc();
    set_times_from_flops(m, 32, 10000);
    REQUIRE(m.layers.size() > 10);
    CHECK(m.layers[0].reads_input);
    for (uint32_t i = 1; i < m.layers.size(); ++i) CHECK(m.layers[i].inputs == std::vector{i - 1});
    CHECK(m.layers[0].forward_ms > 0);
    CHECK(m.layers[0].activation_elements > 0);
    const auto d = test_graphs::devices(2, 1ull << 30, 10000, 12.5e9);
    const auto plan = place("netplacer", problem(m, d, 4));
    REQUIRE(plan);
    CHECK(plan->step_ms > 0);
  }
}

// placement.placer is checked at start against a list the configuration keeps (it sits below
// the placers): the list and the registry name the same placers.
TEST_CASE("placement.placer takes exactly the registered placers", "[unit][placement]") {
  CHECK(placer_choices() == placement::placer_names());
}
