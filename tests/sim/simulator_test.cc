// Hand-computed timelines. Every chunk is 4096 bytes and takes exactly 1 ms on a link
// (kOneChunkPerMs); times are sums of binary-exact numbers, so the results compare exactly.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "scheduler/sim/simulator.h"
#include "sim_test_util.h"

using psrt::Mode;
using psrt::sim::SimConfig;
using psrt::sim::simulate;
using psrt::sim::test::kOneChunkPerMs;
using psrt::sim::test::make_model;

namespace {

SimConfig base(Mode mode, uint32_t workers = 1, uint32_t servers = 1) {
  SimConfig c;
  c.workers = workers;
  c.servers = servers;
  c.bandwidth_bytes_per_s = kOneChunkPerMs;
  c.mode = mode;
  c.chunk_bytes = 4096;
  c.credit_bytes = 4096;
  c.iterations = 5;
  c.batch_bytes = 0;  // the timelines below send every chunk alone (batching: its own case)
  return c;
}

}  // namespace

// f [0,1], b [1,3], up [3,4], aggregate, down [4,5]: the next forward starts at 5.
TEST_CASE("one layer: forward, backward, one chunk up and down", "[sim]") {
  const auto model = make_model({{1, 2, {1024}}});
  for (Mode m :
       {Mode::kBigdl, Mode::kFifo, Mode::kFifoChunked, Mode::kNonpreemptive, Mode::kPreemptive}) {
    CAPTURE(psrt::mode_name(m));
    const auto r = simulate(model, base(m));
    CHECK(r.iteration_ms == 5.0);
    CHECK(r.iteration_start_ms == std::vector<double>{0, 5, 10, 15, 20});
    CHECK(r.end_ms == 25.0);
    CHECK(r.chunks == 1);
    CHECK(r.bounds.compute_ms == 3.0);
    CHECK(r.bounds.link_ms == 1.0);
    CHECK(r.bounds.critical_ms == 5.0);
    CHECK(r.ratio_to_bound() == 1.0);
    CHECK(r.forward_wait_ms == std::vector<double>{2.0});  // b ends at 3, the reply lands at 5
  }
}

// Up [3,4] lands at 4.25, aggregation 0.5 ms (W * 4096 B at 8192000 B/s), down [4.75,5.75]
// lands at 6.
TEST_CASE("one layer with latency and aggregation time", "[sim]") {
  const auto model = make_model({{1, 2, {1024}}});
  auto c = base(Mode::kPreemptive);
  c.latency_ms = 0.25;
  c.aggregation_bytes_per_s = 8192000.0;
  const auto r = simulate(model, c);
  CHECK(r.iteration_ms == 6.0);
  CHECK(r.bounds.critical_ms == 6.0);
}

// Layer 0: tensor A (1024 elements); layer 1: tensor B (4096). f = b = 1 ms each.
// f0 [0,1] f1 [1,2] b1 [2,3] b0 [3,4]; B is ready at 3, A at 4. Credit: one 4 KiB chunk.
// Chunked modes: A is one chunk, B four (1 ms each).
//  fifo_chunked: B c0..c3 up [3,7], A up [7,8], A down [8,9] -> 9.
//  preemptive: B c0 [3,4], then A overtakes: up [4,5], down [5,6]; forward 0 starts at 6,
//    forward 1 waits for B's last chunk (down [8,9]); from the second iteration on: c0
//    [s+5,s+6], A [s+6,s+7], A down [s+7,s+8] -> 8.
// Whole-tensor modes, one server: A and B are one message each (B 4 ms; over the credit, so it
//   goes alone).
//  fifo / nonpreemptive: B up [3,7], A up [7,8]; B's reply [7,11] holds the reply credit, so
//    A's reply goes [11,12] -> 12.
//  bigdl: nothing leaves before A: A [4,5] and back [5,6], B [5,9] and back [9,13] -> 13.
TEST_CASE("two layers: the modes order the same pushes differently", "[sim]") {
  const auto model = make_model({{1, 1, {1024}}, {1, 1, {4096}}});
  struct Case {
    Mode mode;
    uint32_t chunks;
    double iteration_ms;
  };
  for (const Case& k :
       {Case{Mode::kBigdl, 2, 13}, Case{Mode::kFifo, 2, 12}, Case{Mode::kFifoChunked, 5, 9},
        Case{Mode::kNonpreemptive, 2, 12}, Case{Mode::kPreemptive, 5, 8}}) {
    CAPTURE(psrt::mode_name(k.mode));
    const auto r = simulate(model, base(k.mode));
    CHECK(r.chunks == k.chunks);
    CHECK(r.iteration_ms == k.iteration_ms);
    CHECK(r.bounds.compute_ms == 4.0);
    CHECK(r.bounds.link_ms == 5.0);
    CHECK(r.bounds.critical_ms == 6.0);
  }
  const auto pre = simulate(model, base(Mode::kPreemptive));
  CHECK(pre.iteration_start_ms == std::vector<double>{0, 6, 14, 22, 30});
}

// A large credit lets fifo hand A over behind B at once, and the server's reply to A queue
// behind B's on its uplink: the same 12 ms.
TEST_CASE("two layers, fifo with a large credit", "[sim]") {
  const auto model = make_model({{1, 1, {1024}}, {1, 1, {4096}}});
  auto c = base(Mode::kFifo);
  c.credit_bytes = 1 << 20;
  CHECK(simulate(model, c).iteration_ms == 12.0);
}

// One layer of 8 chunks and 0.5 ms of compute: the worker's uplink is busy from 0.5 to 8.5,
// the last reply lands at 9.5. Bound: 8 ms of link.
TEST_CASE("link-bound: eight chunks through one uplink", "[sim]") {
  const auto model = make_model({{0.25, 0.25, {8192}}});
  auto c = base(Mode::kPreemptive);
  c.credit_bytes = 8192;
  const auto r = simulate(model, c);
  CHECK(r.chunks == 8);
  CHECK(r.iteration_ms == 9.5);
  CHECK(r.bounds.link_ms == 8.0);
  CHECK(r.bounds.max_ms() == 8.0);
  CHECK(std::string(r.bounds.binding()) == "link");
}

// The same with adaptive batching (scheduler.batch_bytes 8 KiB): the credit releases two chunks
// at a time and they travel as one 2 ms message, acknowledged once; each batch's replies go back
// as one. Up [0.5,2.5] [2.5,4.5] [4.5,6.5] [6.5,8.5], down [2.5,4.5] ... [8.5,10.5]: 10.5, a
// millisecond later than chunk by chunk, since a batch's replies wait for its last byte. With a
// per-message cost of 1 ms at the worker (calibration), halving the messages wins instead.
TEST_CASE("adaptive batching: chunks released together travel as one message", "[sim]") {
  const auto model = make_model({{0.25, 0.25, {8192}}});
  auto c = base(Mode::kPreemptive);
  c.credit_bytes = 8192;
  c.batch_bytes = 8192;
  CHECK(simulate(model, c).iteration_ms == 10.5);
  c.batch_bytes = 4096;  // a batch holds chunks of at most half of it: none here
  CHECK(simulate(model, c).iteration_ms == 9.5);
  c.calibration.worker_message_us = 1000;
  const double alone = simulate(model, c).iteration_ms;
  c.batch_bytes = 8192;
  const double batched = simulate(model, c).iteration_ms;
  CAPTURE(alone, batched);
  CHECK(batched < alone);
}

// Two workers, one server, one chunk: the server's downlink takes w0 [0.5,1.5] then w1
// [1.5,2.5]; its uplink replies to w0 [2.5,3.5] then w1 [3.5,4.5]. Worker 1 runs 1 ms behind
// worker 0 from then on; worker 0's iterations start at 0, 3.5, 7, ...
TEST_CASE("link-bound: two workers share the server's links", "[sim]") {
  const auto model = make_model({{0.25, 0.25, {1024}}});
  const auto r = simulate(model, base(Mode::kFifo, 2, 1));
  CHECK(r.iteration_start_ms == std::vector<double>{0, 3.5, 7, 10.5, 14});
  CHECK(r.iteration_ms == 3.5);
  CHECK(r.bounds.link_ms == 2.0);
  CHECK(r.bounds.busiest_link == "server 0 up/down");
  CHECK(r.bounds.critical_ms == 2.5);
}

// f = b = 2 ms per layer, one chunk each: B goes [6,7] and back [7,8] while b0 runs [6,8];
// A goes [8,9] and back [9,10]. The iteration is compute + one chunk up + one down.
TEST_CASE("compute-bound: communication hides behind backward", "[sim]") {
  const auto model = make_model({{2, 2, {1024}}, {2, 2, {1024}}});
  const auto r = simulate(model, base(Mode::kPreemptive));
  CHECK(r.iteration_ms == 10.0);
  CHECK(r.forward_wait_ms == std::vector<double>{2.0, 0.0});  // A lands at 10, B at 8
  CHECK(r.bounds.compute_ms == 8.0);
  CHECK(r.bounds.critical_ms == 10.0);
  CHECK(r.ratio_to_bound() == 1.0);
}

// The same with two workers and two servers (A on server 0, B on server 1): each server's
// downlink takes w0 then w1, so worker 0 waits for A's aggregation at 10, reply [10,11].
TEST_CASE("compute-bound with two workers and two servers", "[sim]") {
  const auto model = make_model({{2, 2, {1024}}, {2, 2, {1024}}});
  const auto r = simulate(model, base(Mode::kPreemptive, 2, 2));
  CHECK(r.iteration_start_ms[1] == 11.0);
  CHECK(r.iteration_ms == 11.0);
  CHECK(r.bounds.link_ms == 2.0);
}

// Two workers whose I/O threads each pay 1 ms per message (the server nothing): on a machine of
// two cores they never wait for one another, as on a cluster; on one core their messages take
// turns, and the iteration is longer.
TEST_CASE("host_cores: I/O work waits for a free core of the shared machine", "[sim]") {
  const auto model = make_model({{0.25, 0.25, {1024}}, {0.25, 0.25, {1024}}});
  auto c = base(Mode::kFifo, 2, 1);
  c.calibration.worker_message_us = 1000;
  const auto own = simulate(model, c);
  // Each worker sends 2 pushes and takes in 2 replies per iteration, 1 ms each: 2 x 5 x 4 ms.
  CHECK(own.io_work_ms == 40.0);
  CHECK(simulate(model, base(Mode::kFifo, 2, 1)).io_work_ms == 0.0);  // uncalibrated: none
  c.host_cores = 2;
  const auto two = simulate(model, c);
  CHECK(two.iteration_start_ms == own.iteration_start_ms);
  CHECK(two.io_work_ms == own.io_work_ms);
  c.host_cores = 1;
  const auto one = simulate(model, c);
  CAPTURE(own.iteration_ms, one.iteration_ms);
  CHECK(one.iteration_ms > own.iteration_ms);
  c.host_cores = 5000;
  CHECK_THROWS_AS(simulate(model, c), std::invalid_argument);
}

TEST_CASE("the simulation is deterministic", "[sim]") {
  const auto model = make_model({{1, 2, {3000, 10}}, {0.5, 1, {}}, {1, 2, {70000, 5}}});
  auto c = base(Mode::kPreemptive, 3, 2);
  c.bandwidth_bytes_per_s = 1e8;
  c.chunk_bytes = 16384;
  c.credit_bytes = 32768;
  const auto a = simulate(model, c);
  const auto b = simulate(model, c);
  CHECK(a.iteration_start_ms == b.iteration_start_ms);
  CHECK(a.events == b.events);
  CHECK(a.iteration_ms >= a.bounds.max_ms());
}

TEST_CASE("bad configurations are rejected", "[sim]") {
  const auto model = make_model({{1, 2, {1024}}});
  auto c = base(Mode::kPreemptive);
  c.workers = 0;
  CHECK_THROWS_AS(simulate(model, c), std::invalid_argument);
  c = base(Mode::kPreemptive);
  c.bandwidth_bytes_per_s = 0;
  CHECK_THROWS_AS(simulate(model, c), std::invalid_argument);
  c = base(Mode::kPreemptive);
  c.iterations = 1;
  CHECK_THROWS_AS(simulate(model, c), std::invalid_argument);
  c = base(Mode::kPreemptive);
  c.batch_bytes = psrt::kMaxGroupBytes + 1;
  CHECK_THROWS_AS(simulate(model, c), std::invalid_argument);
  CHECK_THROWS_AS(simulate(make_model({{1, 1, {}}}), base(Mode::kFifo)), std::invalid_argument);
}

// Worker 0 computes without pause but for its forward's waits, so the measured iteration is the
// model's compute plus the waits the result lists, in every mode, with several peers.
TEST_CASE("the iteration is compute plus the forward's waits", "[sim]") {
  const auto model = make_model({{1, 2, {3000, 10}}, {0.5, 1, {}}, {1, 2, {70000, 5}}});
  const double compute = 1 + 2 + 0.5 + 1 + 1 + 2;
  for (Mode m :
       {Mode::kBigdl, Mode::kFifo, Mode::kFifoChunked, Mode::kNonpreemptive, Mode::kPreemptive}) {
    CAPTURE(psrt::mode_name(m));
    auto c = base(m, 3, 2);
    c.bandwidth_bytes_per_s = 1e8;
    c.chunk_bytes = 16384;
    c.credit_bytes = 32768;
    const auto r = simulate(model, c);
    REQUIRE(r.forward_wait_ms.size() == 3);
    double waits = 0;
    for (double w : r.forward_wait_ms) {
      CHECK(w >= 0);
      waits += w;
    }
    CHECK(waits > 0);  // three workers share the servers' links: not all hides behind backward
    CHECK(r.iteration_ms == Approx(compute + waits).margin(1e-9));
  }
}

// psrt-sim reports steady_ms(): the mean of worker 0's iterations after the first, as a run's
// steady state measures it; iteration_ms is the next to last alone.
TEST_CASE("steady_ms is the mean of the iterations after the first", "[sim]") {
  psrt::sim::SimResult r;
  r.iteration_ms = 150;
  r.iteration_start_ms = {0, 100, 250, 350, 500};  // 100, then 150, 100, 150
  CHECK(r.steady_ms() == Approx(400.0 / 3));
  r.iteration_start_ms = {0, 100};
  CHECK(r.steady_ms() == 150);  // too few iterations for a mean: the prediction as it is
  // A simulation whose iterations are all alike: the mean is each of them.
  const auto model = make_model({{1, 1, {1024}}, {1, 1, {4096}}});
  auto c = base(Mode::kFifo);
  c.credit_bytes = 1 << 20;
  c.iterations = 6;
  const auto s = simulate(model, c);
  REQUIRE(s.iteration_start_ms.size() == 6);
  CHECK(s.steady_ms() == Approx(s.iteration_ms));
  CHECK(s.steady_ms() == Approx((s.iteration_start_ms[5] - s.iteration_start_ms[1]) / 4));
}

TEST_CASE("a reduced cluster: at most N workers, each standing for W / N, weights compounding",
          "[sim]") {
  SimConfig c;
  c.workers = 64;
  c.servers = 8;
  const SimConfig r = reduced_cluster(c, 16);
  CHECK(r.workers == 16);
  CHECK(r.worker_weight == 4.0);
  CHECK(r.servers == 8);
  c.worker_weight = 2;  // already standing for two each
  CHECK(reduced_cluster(c, 16).worker_weight == 8.0);
  c.worker_weight = 1;
  c.workers = 12;  // no more than asked: unchanged
  CHECK(reduced_cluster(c, 16).workers == 12);
  CHECK(reduced_cluster(c, 16).worker_weight == 1.0);
  CHECK(reduced_cluster(c, 0).workers == 1);  // at least one simulated worker
  CHECK(reduced_cluster(c, 0).worker_weight == 12.0);
}
