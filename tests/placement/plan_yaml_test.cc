#include <catch2/catch.hpp>

#include "core/plan_yaml.h"
#include "core/status.h"
#include "test_graphs.h"

using namespace psrt;

TEST_CASE("a plan survives a YAML round trip", "[placement]") {
  ModelDesc m = test_graphs::chain({{10, 1, 1}, {20, 2, 2}, {30, 3, 3}, {40, 4, 4}});
  m.layers[3].inputs = {1, 2};  // a skip
  Plan p;
  p.placer = "netplacer";
  p.device_of_layer = {0, 0, 1, 1};
  p.setup.batch_size = 16;
  p.setup.micro_batches = 4;
  p.setup.optimizer = OptimizerKind::kAdam;
  p.devices = test_graphs::devices(2, 1 << 20, 7.5, 2.5e9);
  p.devices.pair.assign(2, std::vector<Link>(2, p.devices.link));
  p.devices.pair[0][1].bytes_per_s = p.devices.pair[1][0].bytes_per_s = 5e8;
  p.step_ms = 12.25;
  p.cut_bytes = 4096;
  p.device_compute_ms = {3, 7};
  p.device_memory_bytes = {100, 200};
  const std::string text = plan_to_yaml(p, m);
  CHECK_THAT(text, Catch::Contains("layers: [l0, l1]"));
  const Plan q = plan_from_yaml(text, "p.yaml", m);
  CHECK(q.device_of_layer == p.device_of_layer);
  CHECK(q.placer == "netplacer");
  CHECK(q.setup.batch_size == 16);
  CHECK(q.setup.micro_batches == 4);
  CHECK(q.setup.optimizer == OptimizerKind::kAdam);
  CHECK(q.devices.devices[1].name == "d1");
  CHECK(q.devices.devices[1].memory_bytes == 1u << 20);
  CHECK(q.devices.devices[1].gflops == 7.5);
  CHECK(q.devices.link.bytes_per_s == 2.5e9);
  CHECK(q.devices.between(0, 1).bytes_per_s == 5e8);
  CHECK(q.step_ms == 12.25);
  CHECK(q.cut_bytes == 4096);
  CHECK(q.device_memory_bytes == p.device_memory_bytes);
  CHECK(plan_to_yaml(q, m) == text);
  // Whatever finite prediction psrt-place writes reads back (4.5e17 ms was refused).
  p.step_ms = 4.5e17;
  CHECK(plan_from_yaml(plan_to_yaml(p, m), "p.yaml", m).step_ms == Approx(4.5e17));
}

TEST_CASE("a bad plan file is rejected naming what is wrong", "[placement]") {
  ModelDesc m = test_graphs::chain({{10, 1, 1}, {20, 2, 2}});
  const std::string head =
      "model: test\ndevices: [{name: a, memory_bytes: 100, gflops: 1}]\nstages:\n";
  CHECK_THROWS_WITH(plan_from_yaml(head + "  - {device: a, layers: [l0]}\n", "p.yaml", m),
                    Catch::Contains("p.yaml") && Catch::Contains("'l1' is in no stage"));
  CHECK_THROWS_WITH(plan_from_yaml(head + "  - {device: b, layers: [l0, l1]}\n", "p.yaml", m),
                    Catch::Contains("'b' is no device"));
  CHECK_THROWS_WITH(plan_from_yaml(head + "  - {device: a, layers: [l0, l1, l0]}\n", "p.yaml", m),
                    Catch::Contains("two stages"));
  CHECK_THROWS_WITH(plan_from_yaml("model: other\n", "p.yaml", m), Catch::Contains("'other'"));
  // Once merged silently into one stage (or counted as fewer stages, naming the wrong cause).
  const std::string two = "model: test\ndevices: [{name: a, memory_bytes: 100, gflops: 1}, "
                          "{name: b, memory_bytes: 100, gflops: 1}]\nstages:\n";
  CHECK_THROWS_WITH(plan_from_yaml(two + "  - {device: a, layers: [l0]}\n"
                                         "  - {device: a, layers: [l1]}\n",
                                   "p.yaml", m),
                    Catch::Contains("stages[1].device: 'a' runs stages[0] too"));
  CHECK_THROWS_WITH(plan_from_yaml(two + "  - {device: a, layers: [l0, l1]}\n"
                                         "  - {device: b, layers: []}\n",
                                   "p.yaml", m),
                    Catch::Contains("stages[1].layers: is empty"));
  for (const char* dev : {"{name: a, memory_gib: 0, gflops: 1}",
                          "{name: a, memory_gib: 1, memory_bytes: 100, gflops: 1}"}) {
    CHECK_THROWS_WITH(plan_from_yaml("model: test\ndevices: [" + std::string(dev) +
                                         "]\nstages: [{device: a, layers: [l0, l1]}]\n",
                                     "p.yaml", m),
                      Catch::Contains("devices[0].memory_gib"));
  }
  CHECK_THROWS_WITH(plan_from_yaml("model: test\ndevices: [{name: '', memory_bytes: 100, "
                                    "gflops: 1}]\nstages: [{device: '', layers: [l0, l1]}]\n",
                                    "p.yaml", m),
                    Catch::Contains("devices[0].name: is empty"));
  // A device linked to itself, and one pair given twice (the later entry was kept).
  const std::string linked = two + "  - {device: a, layers: [l0]}\n  - {device: b, layers: [l1]}\n";
  CHECK_THROWS_WITH(plan_from_yaml(linked + "link_pairs: [{from: a, to: a}]\n", "p.yaml", m),
                    Catch::Contains("link_pairs[0].to: 'a' is the device it links from"));
  CHECK_THROWS_WITH(
      plan_from_yaml(linked + "link_pairs: [{from: a, to: b, latency_ms: 1}, "
                              "{from: b, to: a, latency_ms: 9}]\n",
                     "p.yaml", m),
      Catch::Contains("link_pairs[1].to: the link between 'b' and 'a' is given in link_pairs[0]"));
  CHECK(plan_from_yaml(linked + "link_pairs: [{from: a, to: b, latency_ms: 1}]\n", "p.yaml", m)
            .devices.pair[1][0]
            .latency_ms == 1);
  CHECK_THROWS_AS(plan_from_yaml("[", "p.yaml", m), ConfigError);
}
