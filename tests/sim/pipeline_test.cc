#include <catch2/catch.hpp>

#include "core/plan.h"
#include "scheduler/sim/pipeline.h"
#include "scheduler/sim/host_cpu.h"
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
  // Two devices sharing one server: their pushes do not meet in time (b's is back at 4.75, a's
  // starts at 5), so each has the server's link to itself: the same step as with two servers.
  p.device_of_layer = {0, 1};
  o.servers = 1;
  CHECK(sim::simulate_pipeline(m, p, o).step_ms == Approx(6.0));
  // Two replicas of the pipeline: the one server receives every piece twice (1 ms each way).
  o.replicas = 2;
  CHECK(sim::simulate_pipeline(m, p, o).step_ms == Approx(7.0));
  o.replicas = 1;
  o.servers = 2;

  // Too little memory is reported, naming the device.
  p.devices.devices[0].memory_bytes = 1000;
  const auto small = sim::simulate_pipeline(m, p, o);
  CHECK_FALSE(small.fits);
  CHECK_THAT(small.over_memory, Catch::Contains("'d0'"));
}

TEST_CASE("idle devices change nothing, and a thousand of them with 4096 micro-batches fit",
          "[sim]") {
  // The per-(layer, device) tables hold only the devices a layer's consumers run on: a plan on 2
  // of 1024 devices with 4096 micro-batches is the 2-device plan, in memory and in time (a dense
  // table of micro-batches x layers x devices would be 4096 x 2 x 1024 entries, three times).
  auto [m, p] = two_stages();
  p.setup.batch_size = 4096;
  p.setup.micro_batches = 4096;
  sim::PipelineOptions o;
  o.servers = 2;
  const auto two = sim::simulate_pipeline(m, p, o);
  auto wide = p;
  wide.device_of_layer = {7, 1000};  // the same two stages on devices far apart
  for (uint32_t d = 2; d < 1024; ++d) wide.devices.devices.push_back({"x", 1ull << 30, 0});
  std::swap(wide.devices.devices[0], wide.devices.devices[7]);
  std::swap(wide.devices.devices[1], wide.devices.devices[1000]);
  const auto r = sim::simulate_pipeline(m, wide, o);
  CHECK(r.step_ms == two.step_ms);
  CHECK(r.cut_bytes == two.cut_bytes);
  CHECK(r.device_busy_ms[7] == two.device_busy_ms[0]);
  CHECK(r.device_busy_ms[1000] == two.device_busy_ms[1]);
  CHECK(r.device_busy_ms[500] == 0);
}

TEST_CASE("push link orders by mode", "[sim]") {
  sim::ServerLinks links;
  links.bytes_per_s = 1e9;
  // A big low-priority gradient (four chunks) ready first, a small high-priority one just after.
  const std::vector<sim::PushPiece> four(4, {250000, 0});
  const std::vector<std::vector<sim::PushItem>> items = {{{0.0, 5, four}, {0.1, 0, {{250000, 0}}}}};
  const auto fifo = sim::push_and_return(items, Mode::kFifo, links)[0];
  CHECK(fifo[0] == Approx(1.25));  // up 0-1, back 0.25-1.25
  CHECK(fifo[1] == Approx(1.5));   // up 1-1.25, back 1.25-1.5
  const auto pre = sim::push_and_return(items, Mode::kPreemptive, links)[0];
  CHECK(pre[1] == Approx(0.75));  // after the first chunk (0-0.25): up 0.25-0.5, back 0.5-0.75
  CHECK(pre[0] == Approx(1.5));   // 3 more chunks up 0.5-1.25, back by 1.5
  // Nonpreemptive sends the big tensor's chunks back to back, though the small one is more urgent.
  const auto non = sim::push_and_return(items, Mode::kNonpreemptive, links)[0];
  CHECK(non[1] == Approx(1.5));
  const auto bigdl = sim::push_and_return(items, Mode::kBigdl, links)[0];
  CHECK(bigdl[1] == Approx(0.1 + 0.25 + 0.25));  // waits for all, then key order: key 0 first
}

// Each piece 1 ms on a link. A device whose next piece's server is busy sends to an idle server
// meanwhile; pieces that could start at once go in FIFO order or, by priority, most urgent first.
TEST_CASE("push link: a busy server's piece waits, an idle server's goes", "[sim]") {
  sim::ServerLinks links;
  links.bytes_per_s = 1e9;
  links.servers = 2;
  const sim::PushPiece to0{1000000, 0}, to1{1000000, 1};
  // Device 0 takes server 0 at 0; device 1's B (first in FIFO order) waits for it, C goes to
  // server 1 at 0 and is back at 2, B goes 1-2 and is back at 3.
  auto back = sim::push_and_return({{{0, 0, {to0}}}, {{0, 5, {to0}}, {0, 9, {to1}}}},
                                   Mode::kFifo, links);
  CHECK(back[0][0] == Approx(2.0));
  CHECK(back[1][0] == Approx(3.0));
  CHECK(back[1][1] == Approx(2.0));
  // One device, B (key 9, server 0) and C (key 2, server 1) both ready at 0: FIFO sends B first,
  // preemptive C.
  const std::vector<std::vector<sim::PushItem>> tie = {{{0, 9, {to0}}, {0, 2, {to1}}}};
  back = sim::push_and_return(tie, Mode::kFifo, links);
  CHECK(back[0] == std::vector<double>{2.0, 3.0});
  back = sim::push_and_return(tie, Mode::kPreemptive, links);
  CHECK(back[0] == std::vector<double>{3.0, 2.0});
}

TEST_CASE("pushes share a server's link only when they meet there", "[sim]") {
  sim::ServerLinks links;
  links.bytes_per_s = 1e9;
  links.servers = 2;
  auto one = [](double ready, uint32_t key, uint32_t server) {
    return std::vector<sim::PushItem>{{ready, key, {{1000000, server}}}};
  };
  // Two devices at once to one server: the second waits for the first (1 ms up, 1 ms back).
  auto back = sim::push_and_return({one(0, 0, 0), one(0, 1, 0)}, Mode::kFifo, links);
  CHECK(back[0][0] == Approx(2.0));
  CHECK(back[1][0] == Approx(3.0));
  // To two servers they go side by side; one after the other to one server, neither waits.
  back = sim::push_and_return({one(0, 0, 0), one(0, 1, 1)}, Mode::kFifo, links);
  CHECK(back[1][0] == Approx(2.0));
  back = sim::push_and_return({one(0, 0, 0), one(2, 1, 0)}, Mode::kFifo, links);
  CHECK(back[1][0] == Approx(4.0));
  // Three copies of each piece (replicas) take three times as long.
  links.copies = 3;
  back = sim::push_and_return({one(0, 0, 1)}, Mode::kFifo, links);
  CHECK(back[0][0] == Approx(6.0));
  // A piece naming a server that does not exist is refused.
  CHECK_THROWS_AS(sim::push_and_return({one(0, 0, 2)}, Mode::kFifo, links), std::invalid_argument);
}

TEST_CASE("host cpu books each process's thread and the shared cores in any order", "[sim]") {
  sim::Calendar c;
  c.book(2, 1);  // busy 2-3
  c.book(5, 2);  // busy 5-7
  CHECK(c.fit(0, 2) == Approx(0));    // 0-2 fits before 2
  CHECK(c.fit(1, 2) == Approx(3));    // 1-3 would overlap: after 3 (3-5 fits)
  CHECK(c.fit(3.5, 2) == Approx(7));  // 3.5-5.5 overlaps 5-7
  CHECK(c.fit(8, 1) == Approx(8));

  sim::Calibration cal;
  cal.worker_message_us = 1000;  // 1 ms per message
  cal.worker_byte_ns = 1;        // 1 ms per MB received
  // Two processes on one shared core: the second's work waits for the first's.
  sim::HostCpu one(2, 1, cal);
  CHECK(one.take(0, 0, 2) == Approx(2));
  CHECK(one.take(1, 1, 2) == Approx(4));
  // Booked later but ready earlier, it goes first if it fits before.
  CHECK(one.take(1, 4, 1) == Approx(5));
  CHECK(one.take(0, 5, 0) == Approx(5));  // no work: no wait
  // With a core each (cores 0), only a process's own thread is serial.
  sim::HostCpu own(2, 0, cal);
  CHECK(own.take(0, 0, 2) == Approx(2));
  CHECK(own.take(1, 1, 2) == Approx(3));
  CHECK(own.take(1, 1, 2) == Approx(5));
  CHECK(own.calibration().worker_receive_ms(1000000) == Approx(2.0));
}

TEST_CASE("pipeline simulation adds the calibrated I/O work to each message", "[sim]") {
  auto [m, p] = two_stages();
  sim::PipelineOptions o;
  o.mode = Mode::kNonpreemptive;
  o.iterations = 2;
  o.servers = 2;
  const double ideal = sim::simulate_pipeline(m, p, o).step_ms;
  REQUIRE(ideal == Approx(6.0));
  // 0.1 ms per message on every side: each activation (sent, received), gradient, push (sent,
  // taken in, replied) and reply (taken in) costs its processes' threads time.
  o.calibration.worker_message_us = 100;
  o.calibration.server_message_us = 100;
  const double costly = sim::simulate_pipeline(m, p, o).step_ms;
  CHECK(costly > ideal + 0.4);
  // On one shared core the same work can only take longer.
  o.host_cores = 1;
  CHECK(sim::simulate_pipeline(m, p, o).step_ms >= costly);
  o.host_cores = 5000;
  CHECK_THROWS_AS(sim::simulate_pipeline(m, p, o), std::invalid_argument);
}
