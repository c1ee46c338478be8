// StageLayout: which worker is which stage, the layer ranges (even split or a plan file), the
// micro-batch rows, and the refusals that name placement keys.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>

#include "config/job_config.h"
#include "core/config.h"
#include "core/stage_layout.h"
#include "core/status.h"

using namespace psrt;

namespace {

// A chain of `layers` layers, every other one with a tensor.
ModelDesc chain(int layers) {
  ModelDesc m;
  m.name = "chain";
  for (int i = 0; i < layers; ++i) {
    LayerDesc l;
    l.name = std::string(1, 'l') + std::to_string(i);
    const std::string kinds[2] = {"linear", "relu"};
    l.kind = kinds[i % 2];
    std::vector<std::pair<std::string, uint64_t>> t;
    if (i % 2 == 0) t.emplace_back(l.name + ".weight", 10);
    m.add_layer(std::move(l), t);
  }
  return m;
}

Config config(const std::string& placement, int workers = 2, int batch = 10) {
  return parse_config("job: {iterations: 1, batch_size: " + std::to_string(batch) +
                          "}\ncluster: {workers: " + std::to_string(workers) +
                          "}\nplacement: " + placement + "\n",
                      "test");
}

}  // namespace

TEST_CASE("an even split, the worker numbering and the micro-batch rows", "[unit][stage]") {
  const ModelDesc m = chain(7);
  const StageLayout l =
      stage_layout(config("{mode: hybrid, partitions: 3, micro_batches: 4}", 6), m);
  REQUIRE(l.ranges.size() == 3);
  CHECK(l.ranges[0] == std::make_pair(0u, 2u));
  CHECK(l.ranges[1] == std::make_pair(2u, 4u));
  CHECK(l.ranges[2] == std::make_pair(4u, 7u));
  CHECK(l.replicas == 2);
  CHECK(l.stage_of(4) == 1);
  CHECK(l.replica_of(4) == 1);
  CHECK(l.worker(1, 2) == 5);
  CHECK(l.keys(2, m) == std::vector<uint32_t>{2, 3});
  uint32_t rows = 0;
  for (uint32_t mb = 0; mb < 4; ++mb) {
    CHECK(l.micro_first(mb) == rows);
    CHECK((l.micro_rows(mb) == 2 || l.micro_rows(mb) == 3));
    rows += l.micro_rows(mb);
  }
  CHECK(rows == 10);
}

TEST_CASE("a plan's stages become the layout, a plan that does not fit is refused",
          "[unit][stage]") {
  const ModelDesc m = chain(4);
  const std::string path = "/tmp/psrt-stage-layout-test-plan.yaml";
  auto plan = [&](const std::string& stages) {
    std::ofstream(path) << "devices: [{name: a, memory_gib: 1, gflops: 10}, "
                           "{name: b, memory_gib: 1, gflops: 5}]\nstages:\n"
                        << stages;
    return config("{mode: model, partitions: 2, plan: '" + path +
                  "', devices: [{name: a, memory_gib: 1, gflops: 1}]}");
  };
  ModelDesc timed = m;
  timed.device_gflops = 10;
  const StageLayout l = stage_layout(
      plan("  - {device: b, layers: [l0]}\n  - {device: a, layers: [l1, l2, l3]}\n"), timed);
  CHECK(l.ranges[0] == std::make_pair(0u, 1u));
  CHECK(l.ranges[1] == std::make_pair(1u, 4u));
  CHECK(l.slowdown == std::vector<double>{2.0, 1.0});  // device b is half as fast
  CHECK_THROWS_WITH(stage_layout(plan("  - {device: a, layers: [l0, l2]}\n"
                                      "  - {device: b, layers: [l1, l3]}\n"),
                                 m),
                    Catch::Contains("placement.plan") && Catch::Contains("contiguous"));
  CHECK_THROWS_WITH(stage_layout(plan("  - {device: a, layers: [l0, l1, l2, l3]}\n"), m),
                    Catch::Contains("placement.partitions is 2"));
  std::remove(path.c_str());
}
