// NetPlacer's closed-form pipeline model (placement/pipeline_model.h) on cases computed by hand,
// and the simulator's price of the same plans for comparison (the model itself never calls it).
#include <catch2/catch.hpp>

#include <cmath>

#include "placement/baselines.h"
#include "placement/chain_view.h"
#include "placement/netplacer_select.h"
#include "placement/pipeline_model.h"
#include "test_graphs.h"

using namespace psrt;
using placement::PipelineModel;
using placement::Problem;

namespace {

constexpr uint64_t kBig = 1ull << 40;

// l0 -> l1 -> l2 -> l3, and l3 also reads l0 (a skip over two cuts). No parameters; each layer
// 1 ms forward, 2 ms backward; every activation 1000 elements.
ModelDesc skip_graph() {
  ModelDesc m = test_graphs::chain({{0, 1000, 3}, {0, 1000, 3}, {0, 1000, 3}, {0, 1000, 3}});
  m.layers[3].inputs = {2, 0};
  return m;
}

Problem problem(const ModelDesc& m, const DeviceSet& d, Mode mode = Mode::kPreemptive) {
  TrainingSetup s;
  s.batch_size = 4;
  s.micro_batches = 1;
  placement::PlacerOptions o;
  o.mode = mode;
  o.chunk_bytes = 4000000;
  return Problem{m, d, s, o};
}

}  // namespace

TEST_CASE("pipeline model sends an activation that skips stages once, to its consumer",
          "[placement]") {
  // 4 B x 4 samples x 1000 elements = 16 kB at 16 MB/s: 1 ms per transfer, no latency.
  const ModelDesc m = skip_graph();
  const auto d = test_graphs::devices(3, kBig, 1, 16e6);
  const Problem p = problem(m, d);
  // l0 on d0, l1 on d1, l2 and l3 on d2: l0's output goes d0 -> d1 and d0 -> d2 (once each,
  // on their own channels), not twice over the cut between d1 and d2.
  //   d0 forward l0 0-1; a0 to d1 1-2 and to d2 1-2; d1 l1 2-3; a1 to d2 3-4;
  //   d2 l2 4-5, l3 5-6 (a0 was there at 2); backward l3 6-8, l2 8-10;
  //   l0's gradient from d2 8-9, l2's to d1 10-11; d1 backward l1 11-13, l0's gradient 13-14;
  //   d0 backward l0 14-16. No parameters to wait for: the next iteration starts at 16.
  const std::vector<uint32_t> plan = {0, 1, 2, 2};
  CHECK(PipelineModel(p).step_ms(plan) == Approx(16));
  CHECK(placement::simulated_step_ms(p, plan) == Approx(16));
  // NetPlacer's stage cost (cost_model.h, for its DPs only) counts l0 at every cut it passes:
  // the cut before l2 carries l1's and l0's outputs there.
  CHECK(placement::ChainView(m).cross[2] == 2000);
}

TEST_CASE("pipeline model prices a plan on a few of many devices as on those devices alone",
          "[placement]") {
  // The same hand-computed plan as above on devices 7, 4000 and 4095 of 4096 alike: channels are
  // the stages' device pairs (a K x K table per estimate made 4096 devices take minutes).
  const ModelDesc m = skip_graph();
  const auto d = test_graphs::devices(4096, kBig, 1, 16e6);
  const Problem p = problem(m, d);
  CHECK(PipelineModel(p).step_ms({7, 4000, 4095, 4095}) == Approx(16));
  // Two stages in either device order: l0, l1 on one device, l2, l3 on another.
  const double forward = PipelineModel(p).step_ms({12, 12, 3000, 3000});
  CHECK(forward == PipelineModel(problem(m, test_graphs::devices(2, kBig, 1, 16e6)))
                       .step_ms({0, 0, 1, 1}));
  CHECK(PipelineModel(p).step_ms({3000, 3000, 12, 12}) == forward);
}

TEST_CASE("pipeline model prices the push a chunk behind, and the next forward waits for it",
          "[placement]") {
  // One device, one layer: 1 ms forward, 2 ms backward, 8 MB of parameters at 1 GB/s (8 ms up).
  const ModelDesc m = test_graphs::chain({{2000000, 10, 3}});
  const auto d = test_graphs::devices(1, kBig, 1, 1e9);
  const std::vector<uint32_t> plan = {0};
  // Preemptive: 4 MB chunks; the values follow the last chunk up 4 ms behind: 3 + 8 + 4.
  const Problem pre = problem(m, d, Mode::kPreemptive);
  CHECK(PipelineModel(pre).step_ms(plan) == Approx(15));
  CHECK(placement::simulated_step_ms(pre, plan) == Approx(15));
  // Non-preemptive: NetPlacer's closed form takes the tensor as one 8 MB piece, its return
  // another 8 ms: 3 + 8 + 8. The simulator sends it as the runtime does, two consecutive 4 MB
  // messages (core kMaxChunkBytes), each replied on its own: the first's reply 7-11, the
  // second's 11-15.
  const Problem whole = problem(m, d, Mode::kNonpreemptive);
  CHECK(PipelineModel(whole).step_ms(plan) == Approx(19));
  CHECK(placement::simulated_step_ms(whole, plan) == Approx(15));
  // The placers' options carry a calibration to the simulator's price (not to the model's):
  // 1 ns per byte received costs the server 4 ms per chunk taken in and the device 4 ms per
  // reply, so the step grows; the closed form stays as it was.
  Problem costly = problem(m, d, Mode::kPreemptive);
  costly.options.calibration.server_byte_ns = 1;
  costly.options.calibration.worker_byte_ns = 1;
  CHECK(placement::simulated_step_ms(costly, plan) > 15 + 4);
  CHECK(PipelineModel(costly).step_ms(plan) == Approx(15));
}

TEST_CASE("pipeline model refuses cyclic waits and plans over memory", "[placement]") {
  const ModelDesc m = test_graphs::chain({{10, 10, 3}, {10, 10, 3}, {10, 10, 3}});
  const auto roomy = test_graphs::devices(2, kBig, 1, 1e9);
  const Problem p = problem(m, roomy);  // (a Problem holds references: no temporaries)
  const PipelineModel model(p);
  CHECK(std::isfinite(model.step_ms({0, 0, 1})));
  // d0 holds l0 and l2, d1 holds l1: d0 -> d1 -> d0, the stages wait on each other.
  CHECK(std::isinf(model.step_ms({0, 1, 0})));
  const auto small = test_graphs::devices(2, 100, 1, 1e9);
  const Problem tight = problem(m, small);
  CHECK(std::isinf(PipelineModel(tight).step_ms({0, 0, 1})));
}

TEST_CASE("runs of an assignment along the chain, and polishing under the model", "[placement]") {
  // Six equal layers (0.5 ms forward, 1 ms backward per micro-batch) on three equal devices, two
  // micro-batches, links too fast to matter. 2 | 2 | 2: forward 0-1, 1-2 | 1-2, 2-3 | 2-3, 3-4;
  // backward 4-6, 6-8 | 6-8, 8-10 | 8-10, 10-12: 12 ms (3 | 3: 13.5; one device: 18).
  const ModelDesc m = test_graphs::chain(std::vector<test_graphs::Spec>(6, {0, 10, 3}));
  const auto d = test_graphs::devices(3, kBig, 1, 1e12);
  const placement::ChainView chain(m);
  placement::Runs runs;
  REQUIRE(placement::as_runs(chain, {1, 1, 1, 1, 1, 0}, 3, runs));
  CHECK(runs.cuts == std::vector<std::size_t>{0, 5, 6, 6});
  CHECK(runs.devices == std::vector<uint32_t>{1, 0, 2});
  CHECK_FALSE(placement::as_runs(chain, {0, 1, 0, 0, 0, 0}, 3, runs));
  TrainingSetup s;
  s.batch_size = 4;
  s.micro_batches = 2;
  const Problem p{m, d, s, {}};
  const PipelineModel model(p);
  REQUIRE(placement::as_runs(chain, {0, 0, 0, 0, 0, 1}, 3, runs));
  const double before = model.step_ms({0, 0, 0, 0, 0, 1});
  const double after = placement::polish(model, chain, runs, 1000);
  CHECK(before == Approx(18 - 1.5));  // 5 | 1: the last micro-batch's backward of l5 overlaps
  CHECK(after == Approx(12));
  CHECK(after == Approx(model.step_ms(chain.assignment(runs.cuts, runs.devices))));
  CHECK(after ==
        Approx(placement::simulated_step_ms(p, chain.assignment(runs.cuts, runs.devices))));
}

TEST_CASE("pipeline model: a later gradient preempts the push at a piece boundary",
          "[placement]") {
  // One device; l0 then l1, each 1 ms forward and 2 ms backward; l0 2 MB, l1 4 MB of parameters
  // at 1 GB/s (1 ms per MB) in 1 MB chunks: l1's gradient is ready at 4, l0's at 6.
  const ModelDesc m = test_graphs::chain({{500000, 10, 3}, {1000000, 10, 3}});
  const auto d = test_graphs::devices(1, kBig, 1, 1e9);
  const std::vector<uint32_t> plan = {0, 0};
  Problem pre = problem(m, d, Mode::kPreemptive);
  pre.options.chunk_bytes = 1000000;
  // Preemptive, first iteration: l1's chunks go up 4-5, 5-6; l0, released at 6, goes 6-8 and
  // its values are back at 9; l1's last chunks go 8-10, back at 11. The next forward: l0 9-10,
  // l1 11-12, backward 12-16, pushes from 14 and 16 alike: every iteration 10 ms.
  CHECK(PipelineModel(pre).step_ms(plan) == Approx(10));
  CHECK(placement::simulated_step_ms(pre, plan) == Approx(10));
  // FIFO, whole tensors: l1 up 4-8 and back 8-12, l0 up 8-10 and back only at 14 (behind l1 on
  // the downlink): the next forward starts at 14, every iteration 14 ms.
  Problem fifo = problem(m, d, Mode::kFifo);
  fifo.options.chunk_bytes = 1000000;
  CHECK(PipelineModel(fifo).step_ms(plan) == Approx(14));
  CHECK(placement::simulated_step_ms(fifo, plan) == Approx(14));
}

TEST_CASE("layer moves split a DAG's interleaved branches, which runs of its order cannot",
          "[placement]") {
  // in -> a1 -> a2 -> out and in -> b1 -> b2 -> out, listed in, a1, b1, a2, b2, out: the
  // topological order interleaves the branches, so a contiguous split puts a1 and b1 together.
  ModelDesc m = test_graphs::chain({{0, 10, 0.3}, {0, 10, 10}, {0, 10, 10}, {0, 10, 10},
                                    {0, 10, 10}, {0, 10, 0.3}});
  m.layers[2].inputs = {0};
  m.layers[3].inputs = {1};
  m.layers[4].inputs = {2};
  m.layers[5].inputs = {3, 4};
  const auto d = test_graphs::devices(2, kBig, 1, 1e12);
  const Problem p = problem(m, d);
  const PipelineModel model(p);
  const placement::ChainView chain(m);
  // The best contiguous split; one micro-batch, so d1 waits for a1 and b1 on d0: 30.6 ms.
  std::vector<uint32_t> a = {0, 0, 0, 1, 1, 1};
  const double before = model.step_ms(a);
  CHECK(before == Approx(30.6));
  CHECK(before == Approx(placement::simulated_step_ms(p, a)));
  const double after = placement::move_layers(model, m, a, before, 1000);
  // One branch per device, both at once: 2 x 10 ms + in and out (0.3 ms each) = 20.6 ms. No
  // single move gets there (each one alone makes one device do three branch layers).
  CHECK(a[1] == a[3]);
  CHECK(a[2] == a[4]);
  CHECK(a[1] != a[2]);
  CHECK(after == Approx(20.6));
  CHECK(after == Approx(model.step_ms(a)));
  CHECK(after == Approx(placement::simulated_step_ms(p, a)));
}
