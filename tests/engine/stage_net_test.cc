// engine::StageNet: a network cut into stages computes what the whole Network does — the same
// initial parameters, loss and gradients bit for bit with one micro-batch, and with several the
// gradients summed to within float rounding of the whole batch's.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "engine/network.h"
#include "engine/stage_net.h"

using namespace psrt::engine;

namespace {

struct Batch {
  std::vector<float> images;
  std::vector<int32_t> labels;
};

Batch random_batch(int n, std::size_t width, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> px(0.0f, 1.0f);
  std::uniform_int_distribution<int32_t> label(0, 9);
  Batch b;
  for (std::size_t i = 0; i < std::size_t(n) * width; ++i) b.images.push_back(px(rng));
  for (int i = 0; i < n; ++i) b.labels.push_back(label(rng));
  return b;
}

// Runs rows [first, first + n) of `b` through the two stages in slot `slot` and back.
float run_micro(StageNet& s0, StageNet& s1, const Batch& b, int first, int n, uint32_t slot,
                float scale, bool first_micro) {
  auto in = s0.input(slot, n);
  std::copy_n(b.images.begin() + std::ptrdiff_t(first) * std::ptrdiff_t(s0.in_width()), in.size(),
              in.begin());
  for (uint32_t l = s0.first(); l < s0.last(); ++l) s0.forward_layer(slot, l);
  auto mid = s1.input(slot, n);
  std::copy(s0.output(slot).begin(), s0.output(slot).end(), mid.begin());
  s1.set_labels(slot, {b.labels.data() + first, std::size_t(n)});
  for (uint32_t l = s1.first(); l < s1.last(); ++l) s1.forward_layer(slot, l);
  for (uint32_t l = s1.last(); l-- > s1.first();) s1.backward_layer(slot, l, scale, first_micro);
  auto dout = s0.output_grad(slot);
  std::copy(s1.input_grad(slot).begin(), s1.input_grad(slot).end(), dout.begin());
  for (uint32_t l = s0.last(); l-- > s0.first();) s0.backward_layer(slot, l, scale, first_micro);
  return s1.loss(slot);
}

}  // namespace

TEST_CASE("LeNet-5 in two stages equals the whole network", "[unit][engine][stage]") {
  NetSpec spec;
  spec.arch = "lenet5";
  auto net = build_network(spec, 3);
  const auto& desc = net->desc();
  const auto cut = uint32_t(desc.layers.size() / 2);
  const int n = 8;
  const Batch b = random_batch(n, net->input_size(), 5);
  net->set_batch(b.images.data(), b.labels.data(), n);
  for (std::size_t l = 0; l < desc.layers.size(); ++l) net->forward_layer(l);
  for (std::size_t l = desc.layers.size(); l-- > 0;) net->backward_layer(l);

  SECTION("one micro-batch: bit for bit") {
    StageNet s0(spec, 3, 0, cut, 1), s1(spec, 3, cut, uint32_t(desc.layers.size()), 1);
    CHECK(s0.desc().tensors.size() == desc.tensors.size());
    for (const auto& t : desc.tensors) {
      StageNet& s = t.layer < cut ? s0 : s1;
      const auto p = s.param(t.key), q = net->param(t.key);
      REQUIRE(std::vector<float>(p.begin(), p.end()) == std::vector<float>(q.begin(), q.end()));
    }
    CHECK_THROWS_AS(s0.param(desc.tensors.back().key), std::out_of_range);  // not its layer
    CHECK(run_micro(s0, s1, b, 0, n, 0, 1.0f, true) == net->loss());
    for (const auto& t : desc.tensors) {
      const auto g = (t.layer < cut ? s0 : s1).grad(t.key), h = net->grad(t.key);
      CHECK(std::vector<float>(g.begin(), g.end()) == std::vector<float>(h.begin(), h.end()));
    }
  }
  SECTION("two micro-batches in flight: the sum of their gradients is the batch's") {
    StageNet s0(spec, 3, 0, cut, 2), s1(spec, 3, cut, uint32_t(desc.layers.size()), 2);
    run_micro(s0, s1, b, 0, 3, 0, 3.0f / n, true);
    run_micro(s0, s1, b, 3, 5, 1, 5.0f / n, false);
    float worst = 0;
    for (const auto& t : desc.tensors) {
      const auto g = (t.layer < cut ? s0 : s1).grad(t.key), h = net->grad(t.key);
      for (std::size_t i = 0; i < g.size(); ++i) {
        worst = std::max(worst, std::fabs(g[i] - h[i]) / (std::fabs(h[i]) + 1e-3f));
      }
    }
    CHECK(worst < 1e-4f);
  }
}

TEST_CASE("a test-set pass through the stages counts what Network::evaluate counts",
          "[unit][engine][stage]") {
  NetSpec spec;
  spec.arch = "vgg-small";
  spec.dropout = 0.5;  // the identity in evaluation, and its mask stream is not drawn from
  auto net = build_network(spec, 7);
  net->reseed_randomness(21);
  const auto& desc = net->desc();
  const auto layers = uint32_t(desc.layers.size());
  const auto cut = layers / 2;
  const int n = 40, chunk = 8;
  const Batch test = random_batch(n, net->input_size(), 9);
  const double want = net->evaluate(test.images.data(), test.labels.data(), n, chunk);

  StageNet s0(spec, 7, 0, cut, 1), s1(spec, 7, cut, layers, 1);
  s0.reseed_randomness(21);
  s1.reseed_randomness(21);
  int64_t correct = 0;
  for (int first = 0; first < n; first += chunk) {
    auto in = s0.input(0, chunk);
    std::copy_n(test.images.begin() + std::ptrdiff_t(first) * std::ptrdiff_t(s0.in_width()),
                in.size(), in.begin());
    s0.eval_forward(0);
    auto mid = s1.input(0, chunk);
    std::copy(s0.output(0).begin(), s0.output(0).end(), mid.begin());
    s1.eval_forward(0);
    s1.set_labels(0, {test.labels.data() + first, std::size_t(chunk)});
    correct += s1.eval_correct(0);
  }
  CHECK(double(correct) / n == want);
  CHECK_THROWS_AS(s0.eval_correct(0), std::logic_error);  // only the last stage has logits

  // Training after the pass is what it would have been without it (dropout masks included).
  const Batch b = random_batch(8, net->input_size(), 5);
  net->set_batch(b.images.data(), b.labels.data(), 8);
  for (std::size_t l = 0; l < layers; ++l) net->forward_layer(l);
  for (std::size_t l = layers; l-- > 0;) net->backward_layer(l);
  CHECK(run_micro(s0, s1, b, 0, 8, 0, 1.0f, true) == net->loss());
  for (const auto& t : desc.tensors) {
    const auto g = (t.layer < cut ? s0 : s1).grad(t.key), h = net->grad(t.key);
    CHECK(std::vector<float>(g.begin(), g.end()) == std::vector<float>(h.begin(), h.end()));
  }
}
