#include <catch2/catch.hpp>

#include "core/plan.h"
#include "core/status.h"
#include "test_graphs.h"

using namespace psrt;

TEST_CASE("memory model matches a hand-computed two-device case", "[placement]") {
  // a (100 params, 10 activations) -> b (no params, 20) -> c (50 params, 5); a, b on d0, c on d1.
  ModelDesc m = test_graphs::chain({{100, 10, 1}, {0, 20, 1}, {50, 5, 1}});
  TrainingSetup setup;
  setup.batch_size = 8;
  setup.micro_batches = 2;  // micro-batch of 4, both in flight
  setup.optimizer = OptimizerKind::kAdam;
  const auto use = memory_use(m, {0, 0, 1}, 2, setup);
  // d0: params 400, grads 400, adam 2 x 400, activations 4 B * 4 * 2 * (10 + 20) = 960,
  //     comm: b crosses, 2 * 4 B * 4 * 20 = 640
  CHECK(use[0].params == 400);
  CHECK(use[0].gradients == 400);
  CHECK(use[0].optimizer == 800);
  CHECK(use[0].activations == 960);
  CHECK(use[0].comm_buffers == 640);
  CHECK(use[0].total() == 3200);
  // d1: 200 + 200 + 400 + 4 * 4 * 2 * 5 = 160 + 640
  CHECK(use[1].total() == 1600);
  CHECK(cut_bytes(m, {0, 0, 1}, 8) == 2 * 4 * 20 * 8);
  setup.optimizer = OptimizerKind::kSgd;
  CHECK(memory_use(m, {0, 0, 1}, 2, setup)[0].total() == 3200 - 800);  // no optimizer state
}

TEST_CASE("memory violation names the device and the missing bytes", "[placement]") {
  ModelDesc m = test_graphs::chain({{100, 10, 1}, {0, 20, 1}, {50, 5, 1}});
  TrainingSetup setup;
  setup.batch_size = 8;
  setup.micro_batches = 2;
  setup.optimizer = OptimizerKind::kAdam;
  DeviceSet devs = test_graphs::devices(2, 3200, 1);
  const auto use = memory_use(m, {0, 0, 1}, 2, setup);
  CHECK(memory_violation(use, devs).empty());
  devs.devices[0].memory_bytes = 3000;
  CHECK_THAT(memory_violation(use, devs),
             Catch::Contains("'d0'") && Catch::Contains("200 bytes missing"));
}

TEST_CASE("memory that would pass 2^64 bytes stops there instead of wrapping to a fit",
          "[placement]") {
  // Four layers of 2^40 activation elements at batch 2^20: 4 x 2^62 bytes wrapped to 0, and a
  // plan fitted a device of 1000 bytes.
  const uint64_t act = uint64_t(1) << 40;
  ModelDesc m = test_graphs::chain({{1, act, 1}, {1, act, 1}, {1, act, 1}, {1, act, 1}});
  TrainingSetup setup;
  setup.batch_size = 1u << 20;
  setup.optimizer = OptimizerKind::kSgd;
  DeviceSet one = test_graphs::devices(1, 1000, 1);
  const auto use = memory_use(m, {0, 0, 0, 0}, 1, setup);
  CHECK(use[0].activations == UINT64_MAX);
  CHECK(use[0].total() == UINT64_MAX);
  CHECK_THAT(memory_violation(use, one), Catch::Contains("'d0' needs 2^64 bytes or more"));
  const auto split = memory_use(m, {0, 0, 1, 1}, 2, setup);
  CHECK(split[0].total() == UINT64_MAX);
  CHECK(cut_bytes(m, {0, 0, 1, 1}, setup.batch_size) == 2 * 4 * act * setup.batch_size);
  CHECK(cut_bytes(m, {0, 1, 0, 1}, setup.batch_size) == UINT64_MAX);
}

TEST_CASE("a layer's time scales with the device's GFLOPS", "[placement]") {
  ModelDesc m = test_graphs::chain({{1, 1, 3}});
  m.device_gflops = 100;
  CHECK(layer_ms(m, 0, Device{"x", 1, 100}) == Approx(3));
  CHECK(layer_ms(m, 0, Device{"x", 1, 50}) == Approx(6));
}
