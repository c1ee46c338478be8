#include <catch2/catch.hpp>

#include "core/plan.h"
#include "scheduler/sim/pipeline.h"
#include "scheduler/sim/push_link.h"

using namespace psrt;

namespace {

// Two layers, one per device; per micro-batch: forward 0.5 ms, backward 1 ms, an activation or
// its gradient 0.25 ms on the device link; each layer's parameters 0.5 ms to push and to return.
std::pair<ModelDesc, Plan> two_stages() {
  ModelDesc m;
  m.name = "two";
  for (const char* name : {"a", "b"}) {
    LayerDesc l;
    l.name = name;
    l.forward_ms = 1;
    l.backward_ms = 2;
    l.activation_elements = 62500;  // x 4 bytes x micro-batch 1 = 250 kB = 0.25 ms at 1 GB/s
    m.add_layer(l, {{std::string(name) + ".w", 125000}});  // 500 kB = 0.5 ms
  }
  Plan p;
  p.device_of_layer = {0, 1};
  p.setup.batch_size = 2;
  p.setup.micro_batches = 2;
  p.devices.devices = {{"d0", 1ull << 30, 0}, {"d1", 1ull << 30, 0}};
  p.devices.link.bytes_per_s = 1e9;
  p.devices.server_link.bytes_per_s = 1e9;
  return {m, p};
}

}  // namespace

TEST_CASE("pipeline simulation of a two-stage GPipe step matches the hand timeline", "[sim]") {
  auto [m, p] = two_stages();
  sim::PipelineOptions o;
  o.mode = Mode::kNonpreemptive;
  o.iterations = 2;
  o.servers = 2;  // one server per device: each device's server link at full speed
  // d0: F(0,a) 0-0.5, F(1,a) 0.5-1; activations arrive 0.75, 1.25.
  // d1: F(0,b) 0.75-1.25, F(1,b) 1.25-1.75, B(0,b) 1.75-2.75, B(1,b) 2.75-3.75;
  //     gradients arrive at d0 at 3.0 and 4.0.
  // d0: B(0,a) 3-4, B(1,a) 4-5. Pushes: b 3.75-4.25, back 4.75; a 5-5.5, back 6.0.
  // The next iteration starts when a's parameters are back: every time shifts by 6.
  const auto r = sim::simulate_pipeline(m, p, o);
  REQUIRE(r.iteration_end_ms.size() == 2);
  CHECK(r.iteration_end_ms[0] == Approx(6.0));
  CHECK(r.iteration_end_ms[1] == Approx(12.0));
  CHECK(r.step_ms == Approx(6.0));
  CHECK(r.device_busy_ms[0] == Approx(3.0));
  CHECK(r.cut_bytes == 2 * 4 * 62500 * 2);
  CHECK(r.fits);

  // Both layers on one device: no transfers; 3 + 3 ms of compute, then a's push and return
  // (b's overlaps a's backward): 6 + 1 = 7.
  p.device_of_layer = {0, 0};
  CHECK(sim::simulate_pipeline(m, p, o).step_ms == Approx(7.0));
  // Two devices sharing one server: each gets half of its server link, so a's return takes
  // 1 + 1 ms after its backward ends at 5: 7.
  p.device_of_layer = {0, 1};
  o.servers = 1;
  CHECK(sim::simulate_pipeline(m, p, o).step_ms == Approx(7.0));
  o.servers = 2;

  // Too little memory is reported, naming the device.
  p.devices.devices[0].memory_bytes = 1000;
  const auto small = sim::simulate_pipeline(m, p, o);
  CHECK_FALSE(small.fits);
  CHECK_THAT(small.over_memory, Catch::Contains("'d0'"));
}

TEST_CASE("push link orders by mode", "[sim]") {
  sim::PushLink link;
  link.bytes_per_s = 1e9;
  link.chunk_bytes = 250000;
  // A big low-priority gradient ready first, a small high-priority one just after.
  std::vector<sim::PushItem> items = {{0.0, 5, 1000000}, {0.1, 0, 250000}};
  const auto fifo = sim::push_and_return(items, Mode::kFifo, link);
  CHECK(fifo[0] == Approx(2.0));   // up 0-1, back 1-2
  CHECK(fifo[1] == Approx(2.25));  // up 1-1.25, back 2-2.25
  const auto pre = sim::push_and_return(items, Mode::kPreemptive, link);
  CHECK(pre[1] == Approx(0.75));  // after the first chunk (0-0.25): up 0.25-0.5, back 0.5-0.75
  CHECK(pre[0] == Approx(1.5));   // 3 more chunks up 0.5-1.25, back by 1.5
  const auto bigdl = sim::push_and_return(items, Mode::kBigdl, link);
  CHECK(bigdl[1] == Approx(0.1 + 0.25 + 0.25));  // waits for all, then key order: key 0 first
}
