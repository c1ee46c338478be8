// The convolutional networks: LeNet-5 and vgg-small descriptions and parameter counts, seeding,
// whole-network gradient checks against a double reference, and SGD lowering the loss.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>

#include "tests/engine/conv_reference.h"
#include "engine/conv2d.h"
#include "engine/dropout.h"
#include "engine/dropout_mask.h"
#include "engine/flatten.h"
#include "engine/linear.h"
#include "engine/maxpool2d.h"
#include "engine/network.h"
#include "engine/relu.h"
#include "engine/softmax_xent.h"

using namespace psrt::engine;
using namespace psrt::engine::testing;

namespace {

void step_all(Network& net) {
  const auto n = net.desc().layers.size();
  for (std::size_t i = 0; i < n; ++i) net.forward_layer(i);
  for (std::size_t i = n; i-- > 0;) net.backward_layer(i);
}

void sgd(Network& net, float lr) {
  for (const auto& t : net.desc().tensors) {
    auto p = net.param(t.key);
    const auto g = net.grad(t.key);
    for (std::size_t j = 0; j < p.size(); ++j) p[j] -= lr * g[j];
  }
}

// Central differences of f at up to `count` evenly spread entries of v; the others are copied
// from `analytic` so that rel_error compares only the probed entries.
template <typename F>
Vec probe_grad(Vec& v, std::span<const float> analytic, F&& f, std::size_t count) {
  Vec g(analytic.begin(), analytic.end());
  const std::size_t step = std::max<std::size_t>(1, v.size() / count);
  for (std::size_t i = 0; i < v.size(); i += step) {
    const double keep = v[i];
    v[i] = keep + 1e-5;
    const double up = f();
    v[i] = keep - 1e-5;
    const double down = f();
    v[i] = keep;
    g[i] = (up - down) / 2e-5;
  }
  return g;
}

}  // namespace

TEST_CASE("LeNet-5: layers, description and 61,706 parameters", "[engine][convnet]") {
  NetSpec spec;
  spec.arch = "lenet5";
  auto net = build_network(spec, 1);
  const auto& d = net->desc();
  CHECK(d.name == "lenet5");
  const std::vector<std::string> names = {"conv1", "relu1",   "pool1", "conv2", "relu2",
                                          "pool2", "flatten", "fc1",   "relu3", "fc2",
                                          "relu4", "fc3",     "loss"};
  const std::vector<std::string> kinds = {"conv2d",    "relu",    "maxpool2d",   "conv2d", "relu",
                                          "maxpool2d", "flatten", "linear",      "relu",   "linear",
                                          "relu",      "linear",  "softmax_xent"};
  const std::vector<uint64_t> acts = {4704, 4704, 1176, 1600, 1600, 400, 400,
                                      120,  120,  84,   84,   10,   10};
  REQUIRE(d.layers.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    INFO("layer " << i);
    CHECK(d.layers[i].name == names[i]);
    CHECK(d.layers[i].kind == kinds[i]);
    CHECK(d.layers[i].activation_elements == acts[i]);
  }
  CHECK(d.layers[0].forward_flops == (2.0 * 25 + 1) * 4704);
  CHECK(d.layers[3].forward_flops == (2.0 * 150 + 1) * 1600);
  CHECK(d.layers[2].forward_flops == 4.0 * 1176);
  CHECK(d.total_elements() == 61706);
  REQUIRE(d.tensors.size() == 10);
  CHECK(d.tensors[0].name == "conv1.weight");
  CHECK(d.tensors[0].num_elements == 150);
  CHECK(d.tensors[3].name == "conv2.bias");
  CHECK(d.tensors[4].name == "fc1.weight");
  CHECK(d.tensors[4].num_elements == 48000);
  CHECK(net->input_size() == 784);
}

TEST_CASE("vgg-small: layers and 870,634 parameters, dropout 0 leaves the layer out",
          "[engine][convnet]") {
  NetSpec spec;
  spec.arch = "vgg-small";
  auto net = build_network(spec, 1);
  const auto& d = net->desc();
  CHECK(d.name == "vgg-small");
  REQUIRE(d.layers.size() == 16);
  CHECK(d.layers[4].name == "pool1");
  CHECK(d.layers[9].name == "pool2");
  CHECK(d.layers[10].activation_elements == 3136);
  CHECK(d.layers[13].kind == "dropout");
  CHECK(d.layers[14].name == "fc2");
  CHECK(d.total_elements() == 870634);
  CHECK(d.tensors[2].name == "conv2.weight");
  CHECK(d.tensors[2].num_elements == 32 * 32 * 9);
  CHECK(d.layers[2].forward_flops == (2.0 * 288 + 1) * 32 * 784);
  spec.dropout = 0.0f;
  auto plain = build_network(spec, 1);
  CHECK(plain->desc().layers.size() == 15);
  CHECK(plain->desc().total_elements() == 870634);
}

TEST_CASE("Convnets: the same seed gives the same parameters", "[engine][convnet]") {
  for (const char* arch : {"lenet5", "vgg-small"}) {
    NetSpec spec;
    spec.arch = arch;
    auto a = build_network(spec, 42), b = build_network(spec, 42), c = build_network(spec, 43);
    bool equal = true, differs = false;
    for (const auto& t : a->desc().tensors) {
      const auto pa = a->param(t.key), pb = b->param(t.key), pc = c->param(t.key);
      equal = equal && std::equal(pa.begin(), pa.end(), pb.begin());
      differs = differs || !std::equal(pa.begin(), pa.end(), pc.begin());
    }
    INFO(arch);
    CHECK(equal);
    CHECK(differs);
  }
}

TEST_CASE("A small net of every layer kind matches a double reference end to end",
          "[engine][convnet]") {
  // conv(2->3, 3x3 pad 1) relu pool conv(3->4, 3x3 stride 2 pad 1) relu flatten fc(16->6) relu
  // dropout fc(6->3) loss, on 2 samples of 2x8x8.
  constexpr int n = 2;
  const ConvShape c1{n, 2, 8, 8, 3, 3, 1, 1}, c2{n, 3, 4, 4, 4, 3, 2, 1};
  std::vector<std::unique_ptr<Layer>> layers;
  layers.push_back(std::make_unique<Conv2d>("conv1", ConvGeom{2, 8, 8, 3, 3, 1, 1}));
  layers.push_back(std::make_unique<Relu>("relu1", 192));
  layers.push_back(std::make_unique<MaxPool2d>("pool1", PoolGeom{3, 8, 8, 2, 2}));
  layers.push_back(std::make_unique<Conv2d>("conv2", ConvGeom{3, 4, 4, 4, 3, 2, 1}));
  layers.push_back(std::make_unique<Relu>("relu2", 16));
  layers.push_back(std::make_unique<Flatten>("flatten", 16));
  layers.push_back(std::make_unique<Linear>("fc1", 16, 6, LinearInit::kHeNormal));
  layers.push_back(std::make_unique<Relu>("relu3", 6));
  auto drop = std::make_unique<Dropout>("dropout1", 6, 0.25f);
  const Dropout* dropout = drop.get();
  layers.push_back(std::move(drop));
  layers.push_back(std::make_unique<Linear>("fc2", 6, 3, LinearInit::kXavierUniform));
  layers.push_back(std::make_unique<SoftmaxXent>("loss", 3));
  Network net("tiny", std::move(layers), 5);

  std::mt19937_64 gen(71);
  for (uint32_t k : {1u, 3u, 5u, 7u}) {  // non-zero biases
    const Vec b = random_vec(net.param(k).size(), gen, -0.1, 0.1);
    std::copy(b.begin(), b.end(), net.param(k).begin());
  }
  const Vec x = as_float_values(random_vec(n * 128, gen));
  const std::vector<int32_t> labels = {2, 0};
  const auto xf = to_float(x);
  net.set_batch(xf.data(), labels.data(), n);
  step_all(net);

  std::vector<Vec> p;
  for (const auto& t : net.desc().tensors)
    p.emplace_back(net.param(t.key).begin(), net.param(t.key).end());
  Vec mask(n * 6);
  for (std::size_t i = 0; i < mask.size(); ++i)
    mask[i] = dropout_keeps(dropout->step_seed(), i, dropout_threshold(0.25f)) ? 1 / 0.75 : 0.0;
  auto loss = [&] {
    Vec h = relu_ref(conv2d_ref(x, p[0], p[1], c1));
    h = maxpool_ref(h, n, 3, 8, 8, 2, 2);
    h = relu_ref(conv2d_ref(h, p[2], p[3], c2));
    h = relu_ref(linear_ref(h, p[4], p[5], n, 16, 6));
    for (std::size_t i = 0; i < h.size(); ++i) h[i] *= mask[i];
    return xent_ref(linear_ref(h, p[6], p[7], n, 6, 3), labels, n, 3);
  };
  CHECK(net.loss() == Approx(loss()).epsilon(1e-5));
  for (std::size_t k = 0; k < p.size(); ++k) {
    INFO("tensor " << net.desc().tensors[k].name);
    CHECK(rel_error(net.grad(static_cast<uint32_t>(k)), numeric_grad(p[k], loss, 1e-5)) < 1e-3);
  }
}

TEST_CASE("LeNet-5 gradients match a double reference on a tiny input", "[engine][convnet]") {
  // 1x12x12: conv1 -> 6x12x12, pool -> 6x6, conv2 -> 16x2x2, pool -> 16x1x1, fc 16-120-84-3.
  NetSpec spec;
  spec.arch = "lenet5";
  spec.height = spec.width = 12;
  spec.classes = 3;
  constexpr int n = 2;
  auto net = build_network(spec, 8);
  std::mt19937_64 gen(72);
  for (const auto& t : net->desc().tensors) {
    if (t.name.ends_with(".bias")) {
      const Vec b = random_vec(t.num_elements, gen, -0.1, 0.1);
      std::copy(b.begin(), b.end(), net->param(t.key).begin());
    }
  }
  const Vec x = as_float_values(random_vec(n * 144, gen));
  const std::vector<int32_t> labels = {1, 2};
  const auto xf = to_float(x);
  net->set_batch(xf.data(), labels.data(), n);
  step_all(*net);
  std::vector<Vec> p;
  for (const auto& t : net->desc().tensors)
    p.emplace_back(net->param(t.key).begin(), net->param(t.key).end());
  auto loss = [&] {
    Vec h = relu_ref(conv2d_ref(x, p[0], p[1], {n, 1, 12, 12, 6, 5, 1, 2}));
    h = maxpool_ref(h, n, 6, 12, 12, 2, 2);
    h = relu_ref(conv2d_ref(h, p[2], p[3], {n, 6, 6, 6, 16, 5, 1, 0}));
    h = maxpool_ref(h, n, 16, 2, 2, 2, 2);
    h = relu_ref(linear_ref(h, p[4], p[5], n, 16, 120));
    h = relu_ref(linear_ref(h, p[6], p[7], n, 120, 84));
    return xent_ref(linear_ref(h, p[8], p[9], n, 84, 3), labels, n, 3);
  };
  CHECK(net->loss() == Approx(loss()).epsilon(1e-5));
  for (std::size_t k = 0; k < p.size(); ++k) {
    INFO("tensor " << net->desc().tensors[k].name);
    const auto g = net->grad(static_cast<uint32_t>(k));
    CHECK(rel_error(g, probe_grad(p[k], g, loss, 40)) < 1e-3);
  }
}

TEST_CASE("A few SGD steps on a small batch lower the loss of LeNet-5 and vgg-small",
          "[engine][convnet]") {
  std::mt19937_64 gen(73);
  constexpr int n = 8;
  const auto x = to_float(random_vec(n * 784, gen, 0, 1));
  std::vector<int32_t> labels(n);
  for (int i = 0; i < n; ++i) labels[i] = i % 10;
  for (const auto& [arch, lr] : {std::pair{"lenet5", 0.1f}, std::pair{"vgg-small", 0.02f}}) {
    NetSpec spec;
    spec.arch = arch;
    auto net = build_network(spec, 3);
    net->set_batch(x.data(), labels.data(), n);
    float first = 0, last = 0;
    for (int step = 0; step < 30; ++step) {
      step_all(*net);
      if (step == 0) first = net->loss();
      last = net->loss();
      sgd(*net, lr);
    }
    INFO(arch << ": first loss " << first << ", last " << last);
    CHECK(first > 1.5f);
    CHECK(last < 0.3f * first);
    CHECK(net->evaluate(x.data(), labels.data(), n, 3) >= 0.75);
  }
}

TEST_CASE("reseed_randomness gives a replica its own dropout stream and keeps its parameters",
          "[engine][convnet]") {
  NetSpec spec;
  spec.arch = "vgg-small";
  auto a = build_network(spec, 42), b = build_network(spec, 42), c = build_network(spec, 42);
  b->reseed_randomness(7);
  c->reseed_randomness(7);
  const auto& da = dynamic_cast<const Dropout&>(a->layer(13));
  const auto& db = dynamic_cast<const Dropout&>(b->layer(13));
  const auto& dc = dynamic_cast<const Dropout&>(c->layer(13));
  CHECK(da.seed() != db.seed());
  CHECK(db.seed() == dc.seed());  // the same reseed, the same masks
  CHECK(db.next_step() == 0);
  for (const auto& t : a->desc().tensors) {
    const auto pa = a->param(t.key), pb = b->param(t.key);
    REQUIRE(std::equal(pa.begin(), pa.end(), pb.begin()));
  }
}
