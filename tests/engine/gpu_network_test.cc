// [gpu] GpuNetwork against the CPU Network it was built from: the same batch through a full
// forward and backward gives the same loss and gradients, new parameters uploaded to both give the
// same second step (dropout draws the same masks), and evaluate() gives the same accuracy without
// touching the training state. Reports itself skipped (gpu_test_util.h) where there is no CUDA
// device.
//
// Every batch compared is well-conditioned (relu_margin.h): no ReLU input lies within rounding of
// zero, where cuBLAS and OpenBLAS may legitimately take different sides of the ReLU. The first
// GPU run failed "copied mid-training" on exactly that: one conv3 input of batch 201 was 3.3e-8
// of its layer's RMS, and flipping that one ReLU moves conv1..conv3's gradients by 0.34-0.51%
// (relu_margin_test.cc reproduces it on the CPU).
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "tests/engine/gpu_test_util.h"
#include "engine/cuda/device_buffer.h"
#include "engine/cuda/gpu_network.h"
#include "engine/network.h"

using namespace psrt::engine;
using namespace psrt::engine::testing;
using psrt::engine::cuda::GpuNetwork;

namespace {

// Whole networks: float sums in another order through several layers.
constexpr double kTol = 1e-4;

template <typename Net>
void train_step(Net& net, const Batch& b) {
  net.set_batch(b.images.data(), b.labels.data(), b.n);
  const std::size_t layers = net.desc().layers.size();
  for (std::size_t i = 0; i < layers; ++i) net.forward_layer(i);
  for (std::size_t i = layers; i-- > 0;) net.backward_layer(i);
}

std::vector<float> gpu_grad(const GpuNetwork& gpu, const psrt::TensorDesc& t) {
  std::vector<float> g(t.num_elements);
  gpu.download_grad(t.key, g);
  return g;
}

// One step on both networks from the same batch; the loss and every gradient compared.
void step_and_compare(Network& cpu, GpuNetwork& gpu, const Batch& b) {
  train_step(cpu, b);
  train_step(gpu, b);
  CHECK(gpu.loss() == Approx(cpu.loss()).epsilon(kTol));
  for (const auto& t : cpu.desc().tensors) {
    INFO("gradient of " << t.name);
    CHECK(rel_error(gpu_grad(gpu, t), cpu.grad(t.key)) < kTol);
  }
}

// p -= lr * grad on the CPU network, and the same values uploaded into the GPU one.
void sgd_both(Network& cpu, GpuNetwork& gpu, float lr) {
  for (const auto& t : cpu.desc().tensors) {
    const auto p = cpu.param(t.key);
    const auto g = cpu.grad(t.key);
    for (std::size_t i = 0; i < p.size(); ++i) p[i] -= lr * g[i];
    gpu.upload_param(t.key, p);
    std::vector<float> back(p.size());
    gpu.download_param(t.key, back);
    CHECK(std::equal(back.begin(), back.end(), p.begin()));
  }
}

// The CPU network's class for one image (in evaluation), by asking evaluate() about each class.
int32_t cpu_prediction(Network& cpu, const float* image) {
  for (int32_t c = 0; c < cpu.classes(); ++c) {
    if (cpu.evaluate(image, &c, 1, 1) == 1.0) return c;
  }
  FAIL("no class is the CPU network's argmax");
  return -1;
}

struct Case {
  const char* label;
  NetSpec spec;
  int n;
};

std::vector<Case> cases() {
  NetSpec mlp;
  mlp.arch = "mlp";
  mlp.hidden = {64, 32};
  NetSpec lenet;
  lenet.arch = "lenet5";
  NetSpec vgg;
  vgg.arch = "vgg-small";
  vgg.dropout = 0.5f;
  // A layer list with shapes the built-in networks lack: a strided convolution, an overlapping
  // pool, dropout on an image, a conv without a ReLU after it (nothing to fuse).
  using K = psrt::LayerSpec::Kind;
  NetSpec custom;
  custom.arch = "custom";
  custom.layers = {{.kind = K::kConv, .out = 6, .kernel = 5, .stride = 2, .pad = 2},
                   {.kind = K::kRelu},
                   {.kind = K::kDropout, .p = 0.2},
                   {.kind = K::kPool, .kernel = 3, .stride = 2},
                   {.kind = K::kConv, .out = 4, .kernel = 1, .stride = 1, .pad = 0},
                   {.kind = K::kFc, .out = 10}};
  return {{"mlp", mlp, 16},
          {"lenet5", lenet, 8},
          {"vgg-small with dropout", vgg, 4},
          {"custom layers", custom, 6}};
}

}  // namespace

TEST_CASE("GpuNetwork matches the CPU network step by step and in evaluation", "[gpu][engine]") {
  if (!have_gpu()) return;
  for (const Case& c : cases()) {
    INFO(c.label);
    const uint64_t net_seed = 7;
    auto cpu = build_network(c.spec, net_seed);
    GpuNetwork gpu(*cpu);
    const psrt::ModelDesc& d = cpu->desc();
    REQUIRE(gpu.desc().layers.size() == d.layers.size());
    REQUIRE(gpu.desc().tensors.size() == d.tensors.size());
    CHECK(gpu.input_size() == cpu->input_size());
    CHECK(gpu.classes() == cpu->classes());
    for (const auto& t : d.tensors) {
      INFO(t.name);
      CHECK(gpu.desc().tensors[t.key].name == t.name);
      CHECK(gpu.device_param(t.key) != nullptr);
      CHECK(gpu.device_grad(t.key) != nullptr);
      std::vector<float> p(t.num_elements);
      gpu.download_param(t.key, p);
      const auto want = std::as_const(*cpu).param(t.key);
      CHECK(std::equal(p.begin(), p.end(), want.begin()));  // the same start, bit for bit
    }

    const std::size_t in = cpu->input_size();
    const int k = cpu->classes();
    step_and_compare(*cpu, gpu, conditioned_batch(c.spec, net_seed, *cpu, c.n, 100));
    sgd_both(*cpu, gpu, 0.05f);
    step_and_compare(*cpu, gpu, conditioned_batch(c.spec, net_seed, *cpu, c.n, 101));

    // Evaluation over ragged chunks (16, 16, 5), labelled with the CPU network's own predictions:
    // the CPU scores 1 and the GPU must agree (one near-tie of the logits may flip).
    constexpr int kTest = 37;
    Batch test = make_batch(in, k, kTest, 102);
    for (int r = 0; r < kTest; ++r) {
      test.labels[static_cast<std::size_t>(r)] =
          cpu_prediction(*cpu, test.images.data() + static_cast<std::size_t>(r) * in);
    }
    const float loss = gpu.loss();
    std::vector<std::vector<float>> grads;
    for (const auto& t : d.tensors) grads.push_back(gpu_grad(gpu, t));
    CHECK(cpu->evaluate(test.images.data(), test.labels.data(), kTest, 16) == 1.0);
    CHECK(gpu.evaluate(test.images.data(), test.labels.data(), kTest, 16) >= 1.0 - 1.5 / kTest);
    CHECK(gpu.loss() == loss);
    for (const auto& t : d.tensors) CHECK(gpu_grad(gpu, t) == grads[t.key]);

    // The training state really is untouched: a third step still matches the CPU.
    sgd_both(*cpu, gpu, 0.05f);
    step_and_compare(*cpu, gpu, conditioned_batch(c.spec, net_seed, *cpu, c.n, 103));
  }
}

TEST_CASE("A GpuNetwork copied mid-training continues the CPU dropout stream", "[gpu][engine]") {
  if (!have_gpu()) return;
  NetSpec vgg;
  vgg.arch = "vgg-small";
  vgg.dropout = 0.5f;
  auto cpu = build_network(vgg, 11);
  const std::size_t in = cpu->input_size();
  train_step(*cpu, make_batch(in, cpu->classes(), 4, 200));  // the CPU alone takes step 0
  GpuNetwork gpu(*cpu);
  // Both draw step 1. Batch 201 itself is ill-conditioned (relu_margin_test.cc): a later seed is
  // taken.
  step_and_compare(*cpu, gpu, conditioned_batch(vgg, 11, *cpu, 4, 201));
}

TEST_CASE("GpuNetwork rejects a bad batch like the CPU network", "[gpu][engine]") {
  if (!have_gpu()) return;
  auto cpu = build_network(NetSpec{}, 1);
  GpuNetwork gpu(*cpu);
  const Batch b = make_batch(cpu->input_size(), cpu->classes(), 2, 300);
  CHECK_THROWS_AS(gpu.forward_layer(0), std::logic_error);  // before set_batch
  CHECK_THROWS_AS(gpu.set_batch(b.images.data(), b.labels.data(), 0), std::invalid_argument);
  const int32_t bad[] = {0, 10};
  CHECK_THROWS_AS(gpu.set_batch(b.images.data(), bad, 2), std::invalid_argument);
  gpu.set_batch(b.images.data(), b.labels.data(), 2);
  CHECK_THROWS_AS(gpu.forward_layer(gpu.desc().layers.size()), std::out_of_range);
  std::vector<float> wrong(3);
  CHECK_THROWS_AS(gpu.upload_param(0, wrong), std::invalid_argument);
  CHECK_THROWS_AS(gpu.download_grad(0, wrong), std::invalid_argument);
  CHECK_THROWS_AS(gpu.device_grad(99), std::out_of_range);
  CHECK(gpu.evaluate(b.images.data(), b.labels.data(), 0, 8) == 0.0);
  CHECK_THROWS_AS(gpu.evaluate(b.images.data(), b.labels.data(), 2, 0), std::invalid_argument);
}
