// The calibrated simulator and GradOptimizer's choice (scheduler/sim/grad_optimizer.h).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/grouping_spec.h"
#include "core/profile.h"
#include "scheduler/sim/grad_optimizer.h"
#include "scheduler/sim/parallel_prices.h"
#include "scheduler/sim/simulator.h"
#include "sim_test_util.h"

using namespace psrt;
using namespace psrt::sim;

namespace {

SimConfig one_to_one() {
  SimConfig c;
  c.bandwidth_bytes_per_s = test::kOneChunkPerMs;
  c.mode = Mode::kPreemptive;
  c.chunk_bytes = 4096;
  c.credit_bytes = 4096;
  return c;
}

// A cluster for profiles at scale 0.02: 500 Mbit/s links, 64 KiB chunks, calibrated costs.
SimConfig scaled_cluster(uint32_t workers, uint32_t servers) {
  SimConfig c;
  c.workers = workers;
  c.servers = servers;
  c.bandwidth_bytes_per_s = 62.5e6;
  c.chunk_bytes = 65536;
  c.credit_bytes = 262144;
  c.calibration.worker_message_us = 40;
  c.calibration.server_message_us = 40;
  c.calibration.server_byte_ns = 0.5;
  return c;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/psrt-test-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

// f [0,1], b [1,3]; the worker's I/O thread hands the push over at 3.5, up [3.5,4.5]; the
// server's I/O thread takes it until 4.75 and hands the reply over at 5; down [5,6]; the
// worker's I/O thread takes it until 6.5, when the next forward starts.
TEST_CASE("per-message costs of the I/O threads delay a one-chunk round trip", "[sim]") {
  const auto model = test::make_model({{1, 2, {1024}}});
  auto c = one_to_one();
  c.calibration.worker_message_us = 500;
  c.calibration.server_message_us = 250;
  const auto r = simulate(model, c);
  CHECK(r.iteration_ms == 6.5);
  CHECK(r.messages == 1);
  c.calibration = {};
  CHECK(simulate(model, c).iteration_ms == 5.0);
}

TEST_CASE("a grouping of single tensors is the ungrouped simulation, bit for bit", "[sim]") {
  const auto model =
      load_profile(std::string(PSRT_SOURCE_DIR) + "/bench/profiles/resnet50.yaml", 0.02);
  auto c = one_to_one();
  c.workers = 4;
  c.servers = 2;
  c.chunk_bytes = 65536;
  c.credit_bytes = 262144;
  c.calibration.worker_message_us = 30;
  c.calibration.server_message_us = 40;
  const auto plain = simulate(model, c);
  c.grouping = Grouping::singletons(uint32_t(model.tensors.size()));
  const auto same = simulate(model, c);
  CHECK(same.iteration_ms == plain.iteration_ms);
  CHECK(same.messages == plain.chunks);
  c.grouping = Grouping::from_starts({0}, uint32_t(model.tensors.size()));
  CHECK(simulate(model, c).messages < plain.messages);
}

TEST_CASE("GradOptimizer's choice is never slower than a baseline it includes", "[sim][grouping]") {
  const std::string dir = std::string(PSRT_SOURCE_DIR) + "/bench/profiles/";
  for (const char* name : {"resnet50", "densenet121"}) {
    CAPTURE(name);
    const auto model = load_profile(dir + name + ".yaml", 0.02);
    SimConfig c = scaled_cluster(4, 2);
    const auto best = choose_grouping(model, c, *parse_grouping("auto"), 200);
    CHECK(best.evaluations <= 200);
    CHECK(best.evaluations % kJitter.size() == 0);  // every grouping priced in full
    c.grouping = best.grouping;
    CHECK(jittered_ms(model, c) == best.iteration_ms);
    // The baselines it starts from are the full-size ones scaled like the model.
    std::vector<GroupingSpec> bases{*parse_grouping("none"), *parse_grouping("mgwfbp")};
    for (const auto& s : baseline_specs(model.scale)) bases.push_back(s);
    for (const auto& base : bases) {
      CAPTURE(base.text());
      c.grouping = choose_grouping(model, c, base).grouping;
      CHECK(best.iteration_ms <= jittered_ms(model, c));
    }
    // A budget too small for the local search still prices every candidate: never dearer than
    // they are, and no cheaper than with the larger budget.
    const auto small = choose_grouping(model, c, *parse_grouping("auto"), 3);
    CHECK(small.evaluations > 3);
    CHECK(best.iteration_ms <= small.iteration_ms);
    CHECK(small.iteration_ms <= small.ungrouped_ms);
    // Deterministic: every process of a job computes the same groups.
    CHECK(choose_grouping(model, c, *parse_grouping("auto"), 200).grouping == best.grouping);
    std::printf("%s: auto %.2f ms (ungrouped %.2f), %u simulations in %.0f ms\n", name,
                best.iteration_ms, best.ungrouped_ms, best.evaluations, best.search_ms);
  }
}

TEST_CASE("GradOptimizer chooses the same groups on one thread as on several", "[sim][grouping]") {
  // The simulations run side by side (scheduler/sim/parallel_prices.h); the search's course, and
  // so every worker's groups, must not depend on how many threads ran them.
  const std::string dir = std::string(PSRT_SOURCE_DIR) + "/bench/profiles/";
  for (const char* name : {"inception_v3", "transformer"}) {
    for (const Mode mode : {Mode::kPreemptive, Mode::kFifo}) {
      CAPTURE(name, mode_name(mode));
      const auto model = load_profile(dir + name + ".yaml", 0.02);
      SimConfig c = scaled_cluster(4, 2);
      c.mode = mode;
      const auto spec = *parse_grouping("auto");
      const auto one = choose_grouping(model, c, spec, 100, kSearchWorkers, 1);
      for (const uint32_t threads : {2u, 5u}) {
        CAPTURE(threads);
        const auto many = choose_grouping(model, c, spec, 100, kSearchWorkers, threads);
        CHECK(many.grouping == one.grouping);
        CHECK(many.iteration_ms == one.iteration_ms);
        CHECK(many.ungrouped_ms == one.ungrouped_ms);
        CHECK(many.evaluations == one.evaluations);
        CHECK(many.start == one.start);
        REQUIRE(many.alternatives.size() == one.alternatives.size());
        for (std::size_t i = 0; i < one.alternatives.size(); ++i) {
          CHECK(many.alternatives[i].name == one.alternatives[i].name);
          CHECK(many.alternatives[i].price_ms == one.alternatives[i].price_ms);
        }
      }
      // And each price is jittered_ms itself, to the last bit.
      c.grouping = one.grouping;
      CHECK(jittered_ms(model, c) == one.iteration_ms);
    }
  }
}

TEST_CASE("GradOptimizer's baselines are DDP's and Horovod's, scaled like the model",
          "[sim][grouping]") {
  const auto full = baseline_specs(1.0);
  REQUIRE(full.size() == 3);
  CHECK(full[0].text() == parse_grouping("ddp:25MiB:1MiB")->text());
  CHECK(full[1].text() == parse_grouping("horovod:64MiB:5")->text());
  CHECK(full[2].text() == parse_grouping("horovod:128MiB:1")->text());
  // As the bench scales its own (psrt_grouping_bench.py: bytes truncated, at least 4).
  const auto third = baseline_specs(1.0 / 3);
  REQUIRE(third.size() == 3);
  CHECK(third[0].kind == GroupingSpec::Kind::kDdp);
  CHECK(third[0].bytes == 8738133);  // 25 MiB / 3
  CHECK(third[0].first_bytes == 349525);
  CHECK(third[1].kind == GroupingSpec::Kind::kHorovod);
  CHECK(third[1].bytes == 22369621);
  CHECK(third[1].cycle_ms == Approx(5.0 / 3));
  CHECK(third[2].bytes == 44739242);
  CHECK(third[2].cycle_ms == Approx(1.0 / 3));
  CHECK(baseline_specs(1e-9)[0].first_bytes == 4);
}

TEST_CASE("GradOptimizer's runners-up: the cheapest distinct grouping of each other family",
          "[sim][grouping]") {
  const std::string dir = std::string(PSRT_SOURCE_DIR) + "/bench/profiles/";
  const auto model = load_profile(dir + "resnet50.yaml", 0.02);
  SimConfig c = scaled_cluster(4, 2);
  const auto best = choose_grouping(model, c, *parse_grouping("auto"), 60);
  REQUIRE(best.alternatives.size() >= 3);
  std::vector<std::string> families;
  for (std::size_t i = 0; i < best.alternatives.size(); ++i) {
    const auto& a = best.alternatives[i];
    CAPTURE(a.name);
    CHECK_FALSE(a.grouping == best.grouping);
    for (std::size_t j = 0; j < i; ++j) {
      CHECK_FALSE(a.grouping == best.alternatives[j].grouping);
      CHECK(best.alternatives[j].price_ms <= a.price_ms);
    }
    const std::string family = a.name.substr(0, a.name.find(':'));
    CHECK(std::find(families.begin(), families.end(), family) == families.end());
    families.push_back(family);
    // its price is its own jittered simulation, and no cheaper than the choice's
    c.grouping = a.grouping;
    CHECK(jittered_ms(model, c) == a.price_ms);
    CHECK(best.iteration_ms <= a.price_ms);
  }
  // none and MG-WFBP are whole families of one candidate each: both are listed (unless chosen)
  for (const char* name : {"none", "mgwfbp"}) {
    const bool listed = std::find(families.begin(), families.end(), name) != families.end();
    c.grouping = choose_grouping(model, c, *parse_grouping(name)).grouping;
    CHECK((listed || c.grouping == best.grouping));
  }
  // static specs have no runners-up
  CHECK(choose_grouping(model, c, *parse_grouping("mgwfbp")).alternatives.empty());
}

TEST_CASE("a grouping's price is its mean simulated iteration over the bandwidth jitter",
          "[sim][grouping]") {
  const auto model =
      load_profile(std::string(PSRT_SOURCE_DIR) + "/bench/profiles/resnet50.yaml", 0.02);
  SimConfig c = scaled_cluster(4, 2);
  c.grouping = static_grouping(model, *parse_grouping("size:64KiB"));
  double sum = 0;
  for (double f : kJitter) {
    SimConfig j = c;
    j.bandwidth_bytes_per_s *= f;
    sum += simulate(model, j).iteration_ms;
  }
  const double mean = sum / double(kJitter.size());
  CHECK(jittered_ms(model, c) == Approx(mean).epsilon(1e-12));
  // The nominal simulation, when given, is not run again but counts the same.
  const double nominal = simulate(model, c).iteration_ms;
  CHECK(jittered_ms(model, c, nullptr, nominal) == Approx(mean).epsilon(1e-12));
  uint64_t events = 0;
  jittered_ms(model, c, &events);
  CHECK(events > 0);
}

TEST_CASE("calibration files: read, and refused with the key named", "[sim]") {
  const auto ok = write_temp("cal.yaml",
                             "made_by: test\nworker_message_us: 12.5\nserver_message_us: 20\n"
                             "server_byte_ns: 0.25\nworker_byte_ns: 0.125\n");
  const auto c = load_calibration(ok);
  CHECK(c.worker_message_us == 12.5);
  CHECK(c.server_message_us == 20);
  CHECK(c.server_byte_ns == 0.25);
  CHECK(c.worker_byte_ns == 0.125);
  CHECK_THROWS_WITH(load_calibration(write_temp("bad.yaml", "server_message_us: -1\n")),
                    Catch::Contains("server_message_us"));
  CHECK_THROWS_WITH(load_calibration(write_temp("odd.yaml", "message_us: 3\n")),
                    Catch::Contains("message_us"));
  CHECK_THROWS_WITH(load_calibration("/nonexistent/cal.yaml"), Catch::Contains("/nonexistent"));
  // A file with no costs (empty, comments only, or only the fit's notes) is not taken for the
  // ideal runtime.
  CHECK_THROWS_WITH(load_calibration(write_temp("empty.yaml", "")), Catch::Contains("empty"));
  CHECK_THROWS_WITH(load_calibration(write_temp("notes.yaml", "# nothing\n")),
                    Catch::Contains("empty"));
  CHECK_THROWS_WITH(load_calibration(write_temp("info.yaml", "made_by: test\n")),
                    Catch::Contains("none of"));
  CHECK(load_calibration(write_temp("one.yaml", "worker_byte_ns: 2\n")).worker_byte_ns == 2);
  std::remove(ok.c_str());
  // A FIFO blocked the launch, the workers and psrt-sim in open() for ever; /dev/zero grew them
  // by gigabytes; a folder was "empty, or not a calibration".
  const std::string fifo = "/tmp/psrt-test-" + std::to_string(::getpid()) + "-cal.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(load_calibration(fifo), Catch::Contains("not a regular file"));
  std::remove(fifo.c_str());
  CHECK_THROWS_WITH(load_calibration("/dev/zero"), Catch::Contains("not a regular file"));
  CHECK_THROWS_WITH(load_calibration("/tmp"), Catch::Contains("not a regular file"));
}

TEST_CASE("Horovod's cycle timer: complete groups leave only at its ticks", "[sim][grouping]") {
  // Two layers, 1.3 ms of backward each: the groups complete off the ticks.
  const ModelDesc m = test::make_model({{1, 1.3, {1000}}, {1, 1.3, {1000}}});
  SimConfig c = one_to_one();
  c.iterations = 4;
  c.grouping = Grouping::singletons(2);
  const double at_once = simulate(m, c).iteration_ms;
  c.release_cycle_ms = 5;
  const double with_ticks = simulate(m, c).iteration_ms;
  CHECK(with_ticks > at_once);
  // A cycle far longer than the iteration: after the first (which starts at 0, not after a
  // tick), every iteration lasts exactly one cycle, since the next forward waits for parameters
  // that left on a tick.
  c.release_cycle_ms = 50;
  const SimResult slow = simulate(m, c);
  REQUIRE(slow.iteration_start_ms.size() == 4);
  CHECK(slow.iteration_start_ms[1] > 50);
  for (std::size_t i = 2; i < slow.iteration_start_ms.size(); ++i) {
    CHECK(slow.iteration_start_ms[i] - slow.iteration_start_ms[i - 1] ==
          Approx(50).margin(1e-6));
  }
  c.release_cycle_ms = -1;
  CHECK_THROWS_AS(simulate(m, c), std::invalid_argument);
}

// One worker standing for four, no costs: f [0,1], b [1,3]; up [3,4] while the server's downlink,
// at a quarter of the rate, takes [3,7]; the reply leaves the server's uplink over [7,11] and
// lands when its last byte has left (11), when the next forward starts.
TEST_CASE("a simulated worker standing for several loads the servers as they all would",
          "[sim][grouping]") {
  const auto model = test::make_model({{1, 2, {1024}}});
  auto c = one_to_one();
  CHECK(simulate(model, c).iteration_ms == 5.0);
  c.worker_weight = 4;
  const auto one = simulate(model, c);
  CHECK(one.iteration_ms == 11.0);
  auto four = one_to_one();
  four.workers = 4;
  CHECK(simulate(model, four).bounds.link_ms == one.bounds.link_ms);
  c.worker_weight = 0.5;
  CHECK_THROWS_AS(simulate(model, c), std::invalid_argument);
}

TEST_CASE("GradOptimizer with many workers simulates a few and checks its choice on all",
          "[sim][grouping]") {
  const auto model =
      load_profile(std::string(PSRT_SOURCE_DIR) + "/bench/profiles/resnet50.yaml", 0.02);
  SimConfig c = scaled_cluster(32, 8);
  const auto auto_spec = *parse_grouping("auto");
  const auto best = choose_grouping(model, c, auto_spec, 200);
  CHECK(best.simulated_workers == kSearchWorkers);
  REQUIRE(best.verified);
  // Up to 200 on the simulated workers, then three groupings priced on all of them.
  CHECK(best.evaluations <= 200 + 3 * kJitter.size());
  CHECK_THAT(describe_search(best, c.workers), Catch::Contains("checked on all 32"));
  c.grouping = best.grouping;
  CHECK(jittered_ms(model, c) == best.iteration_ms);
  c.grouping = Grouping::singletons(uint32_t(model.tensors.size()));
  CHECK(best.iteration_ms <= jittered_ms(model, c));
  CHECK(best.ungrouped_ms == jittered_ms(model, c));
  CHECK(choose_grouping(model, c, auto_spec, 200).grouping == best.grouping);
  // The check on the whole cluster is decided from the events of the prices the search took,
  // not of those made ahead on other threads: one thread decides as several do.
  c.grouping = {};
  for (const uint32_t threads : {1u, 4u}) {
    CAPTURE(threads);
    const auto same = choose_grouping(model, c, auto_spec, 200, kSearchWorkers, threads);
    CHECK(same.verified == best.verified);
    CHECK(same.grouping == best.grouping);
    CHECK(same.evaluations == best.evaluations);
    CHECK(same.iteration_ms == best.iteration_ms);
  }
  // Up to kSearchWorkers, every worker is simulated, as before.
  c.workers = 4;
  const auto few = choose_grouping(model, c, auto_spec, 200);
  CHECK(few.simulated_workers == 4);
  CHECK_FALSE(few.verified);
  CHECK(few.evaluations <= 200);
}

TEST_CASE("GradOptimizer with a cluster too large to simulate in full keeps the reduced choice",
          "[sim][grouping]") {
  const auto model = test::make_model({{1, 2, {4096, 64}}, {1, 2, {4096, 64}}, {1, 2, {8192}}});
  auto c = one_to_one();
  c.workers = 100000;
  c.servers = 4;
  c.calibration.worker_message_us = 20;
  c.calibration.server_message_us = 20;
  const auto best = choose_grouping(model, c, *parse_grouping("auto"), 60);
  CHECK(best.simulated_workers == kSearchWorkers);
  CHECK_FALSE(best.verified);
  CHECK(best.evaluations <= 60);
  CHECK_THAT(describe_search(best, c.workers), Catch::Contains("not checked"));
  CHECK(best.grouping.num_tensors() == 5);
}

TEST_CASE("a simulation that throws on a search thread throws on the caller's", "[sim][grouping]") {
  // Twice kMaxSimChunks chunks of 4 KiB: every simulation refuses the model.
  const auto model = test::make_model({{1, 2, {2 * kMaxSimChunks * 1024}}, {1, 2, {1024}}});
  const std::vector<Grouping> groupings{Grouping::singletons(2), Grouping::from_starts({0}, 2)};
  for (uint32_t threads : {1u, 4u}) {
    CAPTURE(threads);
    CHECK_THROWS_WITH(jittered_prices(model, one_to_one(), groupings, threads),
                      Catch::Contains("chunks") && Catch::Contains("at most"));
  }
}
