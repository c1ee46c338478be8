// model.arch: custom: a layer list builds the network it describes. Written as LeNet-5 or
// vgg-small it is those networks (names, tensors, initial values, a training step); other shapes
// (strided convolutions, overlapping pools, dropout on an image, no explicit flatten) build with
// the sizes they imply and train; a list that cannot be built is a ConfigError naming the entry.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/layer_spec.h"
#include "core/status.h"
#include "engine/layer.h"
#include "engine/network.h"

using namespace psrt;
using namespace psrt::engine;
using Kind = LayerSpec::Kind;

namespace {

LayerSpec conv(int out, int kernel, int stride, int pad) {
  return {.kind = Kind::kConv, .out = out, .kernel = kernel, .stride = stride, .pad = pad};
}
LayerSpec pool(int kernel, int stride) {
  return {.kind = Kind::kPool, .kernel = kernel, .stride = stride};
}
LayerSpec fc(int out) {
  return {.kind = Kind::kFc, .out = out};
}
LayerSpec dropout(double p) {
  return {.kind = Kind::kDropout, .p = p};
}
const LayerSpec kRelu{.kind = Kind::kRelu};
const LayerSpec kFlatten{.kind = Kind::kFlatten};

NetSpec custom(std::vector<LayerSpec> layers) {
  NetSpec spec;
  spec.arch = "custom";
  spec.layers = std::move(layers);
  return spec;
}

// One forward and backward of every layer on a fixed random batch; returns the loss.
float step(Network& net, int n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> pixel(0, 1);
  std::vector<float> x(std::size_t(n) * net.input_size());
  for (auto& v : x) v = pixel(gen);
  std::vector<int32_t> labels(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) labels[std::size_t(i)] = i % 10;
  net.set_batch(x.data(), labels.data(), n);
  const auto layers = net.desc().layers.size();
  for (std::size_t i = 0; i < layers; ++i) net.forward_layer(i);
  for (std::size_t i = layers; i-- > 0;) net.backward_layer(i);
  return net.loss();
}

void check_same_network(const NetSpec& a, const NetSpec& b) {
  auto x = build_network(a, 5), y = build_network(b, 5);
  const ModelDesc &dx = x->desc(), &dy = y->desc();
  REQUIRE(dx.layers.size() == dy.layers.size());
  for (std::size_t i = 0; i < dx.layers.size(); ++i) {
    CHECK(dx.layers[i].name == dy.layers[i].name);
    CHECK(x->layer(i).kind() == y->layer(i).kind());
  }
  REQUIRE(dx.tensors.size() == dy.tensors.size());
  CHECK(step(*x, 4, 9) == step(*y, 4, 9));
  for (const auto& t : dx.tensors) {
    CHECK(t.name == dy.tensors[t.key].name);
    const auto px = x->param(t.key), py = y->param(t.key);
    const auto gx = x->grad(t.key), gy = y->grad(t.key);
    REQUIRE(px.size() == py.size());
    CHECK(std::equal(px.begin(), px.end(), py.begin()));
    CHECK(std::equal(gx.begin(), gx.end(), gy.begin()));
  }
}

}  // namespace

TEST_CASE("A layer list written as LeNet-5 or vgg-small is that network", "[engine][custom]") {
  NetSpec lenet;
  lenet.arch = "lenet5";
  check_same_network(lenet, custom({conv(6, 5, 1, 2), kRelu, pool(2, 2), conv(16, 5, 1, 0), kRelu,
                                    pool(2, 2), kFlatten, fc(120), kRelu, fc(84), kRelu, fc(10)}));
  NetSpec vgg;
  vgg.arch = "vgg-small";
  // No explicit flatten: the first fc flattens.
  check_same_network(vgg, custom({conv(32, 3, 1, 1), kRelu, conv(32, 3, 1, 1), kRelu, pool(2, 2),
                                  conv(64, 3, 1, 1), kRelu, conv(64, 3, 1, 1), kRelu, pool(2, 2),
                                  fc(256), kRelu, dropout(0.5), fc(10)}));
}

TEST_CASE("Strided convolutions, overlapping pools and dropout on an image build and train",
          "[engine][custom]") {
  auto net = build_network(
      custom({conv(8, 3, 2, 1), kRelu, dropout(0.1), pool(3, 2), conv(4, 1, 1, 0), kRelu, fc(10)}),
      3);
  const ModelDesc& d = net->desc();
  // 1x28x28 -> conv 8x14x14 -> pool 3/2: 8x6x6 -> conv 1x1: 4x6x6 -> flatten 144 -> fc 10.
  const std::vector<std::string> names = {"conv1", "relu1",   "dropout1", "pool1", "conv2",
                                          "relu2", "flatten", "fc1",      "loss"};
  REQUIRE(d.layers.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) CHECK(d.layers[i].name == names[i]);
  CHECK(net->layer(3).out_size() == 8 * 6 * 6);
  CHECK(net->layer(4).out_size() == 4 * 6 * 6);
  REQUIRE(d.tensors.size() == 6);
  CHECK(d.tensors[0].num_elements == 8 * 9);     // conv1.weight
  CHECK(d.tensors[2].num_elements == 4 * 8);     // conv2.weight
  CHECK(d.tensors[4].num_elements == 144 * 10);  // fc1.weight
  float first = 0, last = 0;
  for (int s = 0; s < 40; ++s) {
    last = step(*net, 8, 17);
    if (s == 0) first = last;
    for (const auto& t : d.tensors) {
      auto p = net->param(t.key);
      const auto g = net->grad(t.key);
      for (std::size_t j = 0; j < p.size(); ++j) p[j] -= 0.05f * g[j];
    }
  }
  INFO("first loss " << first << ", last " << last);
  CHECK(last < 0.5f * first);
}

TEST_CASE("A layer list that cannot be built names its entry", "[engine][custom]") {
  using Catch::Matchers::Contains;
  auto error = [](std::vector<LayerSpec> layers) -> std::string {
    try {
      (void)describe_network(custom(std::move(layers)));
    } catch (const ConfigError& e) {
      return e.what();
    }
    FAIL("built");
    return {};
  };
  CHECK_THAT(error({conv(8, 29, 1, 0), fc(10)}),
             Contains("model.layers[0]") && Contains("does not fit its input 1x28x28"));
  CHECK_THAT(error({pool(2, 2), pool(2, 2), pool(2, 2), pool(2, 2), pool(2, 2), fc(10)}),
             Contains("model.layers[4]") && Contains("1x1x1"));
  CHECK_THAT(error({fc(64), conv(4, 3, 1, 1), fc(10)}),
             Contains("model.layers[1]") && Contains("after the network was flattened"));
  CHECK_THAT(error({kFlatten, kFlatten, fc(10)}),
             Contains("model.layers[1]") && Contains("after the network was flattened"));
  CHECK_THAT(error({fc(64), kRelu}), Contains("64 floats per sample") && Contains("{fc: 10}"));
  CHECK_THAT(error({conv(65536, 3, 1, 1), fc(10)}),
             Contains("model.layers[0]") && Contains("floats per sample; at most"));
  CHECK_THAT(error({conv(4096, 1, 4, 0), conv(4096, 9, 1, 4), fc(10)}),
             Contains("model.layers[1]") && Contains("parameters; at most"));
  CHECK_THAT(error({}), Contains("no layers"));
}
