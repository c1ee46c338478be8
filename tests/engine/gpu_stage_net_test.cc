// [gpu] GpuStageNet against the CPU StageNet it was built from: a network cut into two stages,
// both pipelines fed the same well-conditioned batch (relu_margin.h) as one micro-batch and as
// two in flight (GPipe: forwards 0, 1, backwards 1, 0), give the same losses and gradient sums
// within kTol; parameters uploaded after an SGD step give the same second step (dropout: the
// masks of each micro-batch); the test-set pass counts what the CPU stages count. Reports
// itself skipped (gpu_test_util.h) where there is no CUDA device.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "engine/cuda/gpu_stage_net.h"
#include "engine/network.h"
#include "engine/stage_net.h"
#include "tests/engine/gpu_test_util.h"

using namespace psrt::engine;
using namespace psrt::engine::testing;
using psrt::engine::cuda::GpuStageNet;

namespace {

// As gpu_network_test.cc: float sums in another order through several layers.
constexpr double kTol = 1e-4;

// Micro-batch `slot` (rows [first, first + rows) of b) forward through s0 then s1; the loss.
template <typename Stage>
float forward_micro(Stage& s0, Stage& s1, const Batch& b, int first, int rows, uint32_t slot) {
  auto in = s0.input(slot, rows);
  std::copy_n(b.images.begin() + std::ptrdiff_t(first) * std::ptrdiff_t(s0.in_width()), in.size(),
              in.begin());
  for (uint32_t l = s0.first(); l < s0.last(); ++l) s0.forward_layer(slot, l);
  const auto out = s0.output(slot);
  auto mid = s1.input(slot, rows);
  REQUIRE(mid.size() == out.size());
  std::copy(out.begin(), out.end(), mid.begin());
  s1.set_labels(slot, {b.labels.data() + first, std::size_t(rows)});
  for (uint32_t l = s1.first(); l < s1.last(); ++l) s1.forward_layer(slot, l);
  return s1.loss(slot);
}

// Its backward through s1 then s0, the activation gradient passed back through the host.
template <typename Stage>
void backward_micro(Stage& s0, Stage& s1, uint32_t slot, float scale, bool first_micro) {
  for (uint32_t l = s1.last(); l-- > s1.first();) s1.backward_layer(slot, l, scale, first_micro);
  const auto din = s1.input_grad(slot);
  auto dout = s0.output_grad(slot);
  REQUIRE(dout.size() == din.size());
  std::copy(din.begin(), din.end(), dout.begin());
  for (uint32_t l = s0.last(); l-- > s0.first();) s0.backward_layer(slot, l, scale, first_micro);
}

// One iteration of `micro` micro-batches (1 or 2) on a pipeline; the batch-mean loss.
template <typename Stage>
double iteration(Stage& s0, Stage& s1, const Batch& b, int micro) {
  if (micro == 1) {
    const float loss = forward_micro(s0, s1, b, 0, b.n, 0);
    backward_micro(s0, s1, 0, 1.0f, true);
    return loss;
  }
  const int r0 = b.n / 2 - 1, r1 = b.n - r0;  // unequal on purpose
  const float l0 = forward_micro(s0, s1, b, 0, r0, 0);
  const float l1 = forward_micro(s0, s1, b, r0, r1, 1);
  backward_micro(s0, s1, 1, float(r1) / float(b.n), true);
  backward_micro(s0, s1, 0, float(r0) / float(b.n), false);
  return (double(l0) * r0 + double(l1) * r1) / b.n;
}

std::vector<float> gpu_grad(const GpuStageNet& s, const psrt::TensorDesc& t) {
  std::vector<float> g(t.num_elements);
  s.download_grad(t.key, g);
  return g;
}

StageNet& holder(StageNet& s0, StageNet& s1, const psrt::TensorDesc& t) {
  return t.layer < s0.last() ? s0 : s1;
}
GpuStageNet& holder(GpuStageNet& s0, GpuStageNet& s1, const psrt::TensorDesc& t) {
  return t.layer < s0.last() ? s0 : s1;
}

void compare_grads(StageNet& c0, StageNet& c1, GpuStageNet& g0, GpuStageNet& g1) {
  for (const auto& t : c0.desc().tensors) {
    INFO("gradient sum of " << t.name);
    CHECK(rel_error(gpu_grad(holder(g0, g1, t), t), holder(c0, c1, t).grad(t.key)) < kTol);
  }
}

// p -= lr * grad on the CPU stages (and on `whole`, which picks the next conditioned batch), the
// same values uploaded into the GPU stages and read back.
void sgd_all(StageNet& c0, StageNet& c1, GpuStageNet& g0, GpuStageNet& g1, Network& whole,
             float lr) {
  for (const auto& t : c0.desc().tensors) {
    StageNet& c = holder(c0, c1, t);
    const auto p = c.param(t.key);
    const auto g = c.grad(t.key);
    for (std::size_t i = 0; i < p.size(); ++i) p[i] -= lr * g[i];
    std::copy(p.begin(), p.end(), whole.param(t.key).begin());
    holder(g0, g1, t).upload_param(t.key, p);
    std::vector<float> back(p.size());
    holder(g0, g1, t).download_param(t.key, back);
    CHECK(std::equal(back.begin(), back.end(), p.begin()));
  }
}

// Test-set passes through both pipelines (chunks of 16, 16, 5): correct counts.
template <typename Stage>
int64_t eval_count(Stage& s0, Stage& s1, const Batch& test) {
  int64_t correct = 0;
  for (int first = 0; first < test.n; first += 16) {
    const int rows = std::min(16, test.n - first);
    auto in = s0.input(0, rows);
    std::copy_n(test.images.begin() + std::ptrdiff_t(first) * std::ptrdiff_t(s0.in_width()),
                in.size(), in.begin());
    s0.eval_forward(0);
    const auto out = s0.output(0);
    auto mid = s1.input(0, rows);
    std::copy(out.begin(), out.end(), mid.begin());
    s1.eval_forward(0);
    s1.set_labels(0, {test.labels.data() + first, std::size_t(rows)});
    correct += s1.eval_correct(0);
  }
  return correct;
}

struct Case {
  const char* label;
  NetSpec spec;
  int n;
};

std::vector<Case> cases() {
  NetSpec lenet;
  lenet.arch = "lenet5";
  NetSpec vgg;
  vgg.arch = "vgg-small";
  vgg.dropout = 0.5f;
  return {{"lenet5", lenet, 8}, {"vgg-small with dropout", vgg, 6}};
}

}  // namespace

TEST_CASE("GpuStageNet matches the CPU StageNet with one and two micro-batches", "[gpu][engine]") {
  if (!have_gpu()) return;
  constexpr uint64_t kSeed = 7;
  for (const Case& c : cases()) {
    for (const int micro : {1, 2}) {
      INFO(c.label << ", " << micro << " micro-batch(es)");
      auto whole = build_network(c.spec, kSeed);
      const auto layers = uint32_t(whole->desc().layers.size());
      const uint32_t cut = layers / 2;
      StageNet c0(c.spec, kSeed, 0, cut, uint32_t(micro)),
          c1(c.spec, kSeed, cut, layers, uint32_t(micro));
      c0.reseed_randomness(21);  // as a stage worker does: a replica's own dropout stream
      c1.reseed_randomness(21);
      GpuStageNet g0(c0), g1(c1);
      REQUIRE(g0.in_width() == c0.in_width());
      REQUIRE(g1.out_width() == c1.out_width());
      CHECK(g1.holds_loss());
      CHECK_FALSE(g0.holds_loss());
      for (const auto& t : c0.desc().tensors) {  // the same start, bit for bit
        std::vector<float> p(t.num_elements);
        holder(g0, g1, t).download_param(t.key, p);
        const auto want = holder(c0, c1, t).param(t.key);
        CHECK(std::equal(p.begin(), p.end(), want.begin()));
      }
      for (uint64_t step = 0; step < 2; ++step) {
        const Batch b = conditioned_batch(c.spec, kSeed, *whole, c.n, 300 + step);
        const double want = iteration(c0, c1, b, micro);
        CHECK(iteration(g0, g1, b, micro) == Approx(want).epsilon(kTol));
        compare_grads(c0, c1, g0, g1);
        if (step == 0) {
          // A test-set pass between iterations: the same count, and the training state (the
          // dropout streams, the gradient sums) untouched, so that the next step still matches.
          const Batch test = make_batch(c0.in_width(), c1.classes(), 37, 400);
          CHECK(std::llabs(eval_count(g0, g1, test) - eval_count(c0, c1, test)) <= 1);
          compare_grads(c0, c1, g0, g1);
          sgd_all(c0, c1, g0, g1, *whole, 0.05f);
        }
      }
    }
  }
}

TEST_CASE("GpuStageNet refuses what StageNet refuses", "[gpu][engine]") {
  if (!have_gpu()) return;
  NetSpec spec;
  spec.arch = "lenet5";
  const StageNet c0(spec, 3, 0, 4, 1);
  GpuStageNet g0(c0);
  CHECK_THROWS_AS(g0.forward_layer(0, 0), std::logic_error);  // before input
  CHECK_THROWS_AS(g0.input(0, 0), std::invalid_argument);
  CHECK_THROWS_AS(g0.input(1, 2), std::out_of_range);  // one slot
  (void)g0.input(0, 2);
  CHECK_THROWS_AS(g0.forward_layer(0, 4), std::out_of_range);  // not its layer
  CHECK_THROWS_AS(g0.eval_correct(0), std::logic_error);       // not the last stage
  std::vector<float> wrong(3);
  CHECK_THROWS_AS(g0.upload_param(0, wrong), std::invalid_argument);
  CHECK_THROWS_AS(g0.download_grad(0, wrong), std::invalid_argument);
  CHECK_THROWS_AS(g0.device_grad(uint32_t(c0.desc().tensors.size() - 1)), std::out_of_range);
}
