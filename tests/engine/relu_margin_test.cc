// relu_margin (relu_margin.h) on the CPU: the cause of the first GPU run's one failure, reproduced
// without a GPU. In "A GpuNetwork copied mid-training continues the CPU dropout stream" (vgg-small,
// seed 11, batch 201 after step 0), one input of relu3 lies 3.3e-8 of the layer's RMS from zero;
// cuBLAS summed it to the other side of zero. Nudging it across zero on the CPU alone gives the
// failure the GPU run reported: conv1..conv3 gradients off by 0.34-0.51%, the loss, conv4 and the
// fully connected layers unchanged.
#include <catch2/catch.hpp>

#include <random>

#include "tests/engine/reference.h"
#include "tests/engine/relu_margin.h"
#include "engine/network.h"

using namespace psrt::engine;
using namespace psrt::engine::testing;

namespace {

struct Batch {
  std::vector<float> images;
  std::vector<int32_t> labels;
};

// As gpu_network_test.cc's make_batch, n = 4.
Batch batch(const Network& net, uint64_t seed) {
  std::mt19937_64 gen(seed);
  Batch b;
  b.images = to_float(random_vec(net.input_size() * 4, gen, 0.0, 1.0));
  for (int r = 0; r < 4; ++r) b.labels.push_back(static_cast<int32_t>(gen() % net.classes()));
  return b;
}

void step(Network& net, const Batch& b) {
  net.set_batch(b.images.data(), b.labels.data(), 4);
  const std::size_t layers = net.desc().layers.size();
  for (std::size_t i = 0; i < layers; ++i) net.forward_layer(i);
  for (std::size_t i = layers; i-- > 0;) net.backward_layer(i);
}

uint32_t key_of(const Network& net, const std::string& name) {
  for (const auto& t : net.desc().tensors) {
    if (t.name == name) return t.key;
  }
  FAIL("no tensor " << name);
  return 0;
}

}  // namespace

TEST_CASE("relu_margin flags the batch whose ReLU flip failed the GPU comparison", "[engine]") {
  NetSpec vgg;
  vgg.arch = "vgg-small";
  vgg.dropout = 0.5f;
  auto a = build_network(vgg, 11);
  auto b = build_network(vgg, 11);
  step(*a, batch(*a, 200));
  step(*b, batch(*b, 200));
  const Batch bad = batch(*a, 201);
  CHECK(relu_margin(vgg, 11, *a, bad.images, 4) < 1e-7);
  // gpu_network_test.cc's conditioned_batch takes the first of 201, 1201, 2201, ... that is
  // well-conditioned: there is one among the first few.
  int tries = 1;
  while (relu_margin(vgg, 11, *a, batch(*a, 201 + 1000 * tries).images, 4) < kReluMargin) {
    REQUIRE(++tries < 10);
  }

  // The near-zero input is conv3's, channel 48 of sample 3 (+3.3e-8): a bias of -1e-7 on that
  // channel puts it on the other side, and moves the channel's other outputs by 1e-7 only.
  const uint32_t bias = key_of(*b, "conv3.bias");
  b->param(bias)[48] = -1e-7f;
  step(*a, bad);
  step(*b, bad);
  CHECK(a->loss() == Approx(b->loss()).epsilon(1e-6));
  for (const auto& t : a->desc().tensors) {
    INFO(t.name);
    const double err = rel_error(a->grad(t.key), b->grad(t.key));
    if (t.name.starts_with("conv1") || t.name.starts_with("conv2") ||
        t.name.starts_with("conv3")) {
      CHECK(err > 3e-3);
      CHECK(err < 6e-3);
    } else {
      CHECK(err < 1e-5);
    }
  }
}
