// Network tests: description, seeding, whole-MLP gradient check, the backward contract, training
// and evaluation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/status.h"
#include "tests/engine/reference.h"
#include "engine/network.h"
#include "engine/predictions.h"

using namespace psrt::engine;
using namespace psrt::engine::testing;

namespace {

void forward_all(Network& net) {
  for (std::size_t i = 0; i < net.desc().layers.size(); ++i) net.forward_layer(i);
}

void backward_all(Network& net) {
  for (std::size_t i = net.desc().layers.size(); i-- > 0;) net.backward_layer(i);
}

std::vector<std::vector<float>> all_grads(const Network& net) {
  std::vector<std::vector<float>> out;
  for (const auto& t : net.desc().tensors) {
    const auto g = net.grad(t.key);
    out.emplace_back(g.begin(), g.end());
  }
  return out;
}

}  // namespace

TEST_CASE("build_network describes the default MLP", "[engine][network]") {
  auto net = build_network(NetSpec{}, 1);
  const auto& d = net->desc();
  CHECK(d.name == "mlp-784-256-128-10");
  REQUIRE(d.layers.size() == 6);
  const char* names[] = {"fc1", "relu1", "fc2", "relu2", "fc3", "loss"};
  const char* kinds[] = {"linear", "relu", "linear", "relu", "linear", "softmax_xent"};
  const uint64_t acts[] = {256, 256, 128, 128, 10, 10};
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(d.layers[i].name == names[i]);
    CHECK(d.layers[i].kind == kinds[i]);
    CHECK(d.layers[i].activation_elements == acts[i]);
    CHECK(d.layers[i].forward_flops > 0);
    CHECK(d.layers[i].forward_ms == 0);
  }
  CHECK(d.layers[0].forward_flops == 2.0 * 784 * 256 + 256);
  REQUIRE(d.tensors.size() == 6);
  const char* tnames[] = {"fc1.weight", "fc1.bias",   "fc2.weight",
                          "fc2.bias",   "fc3.weight", "fc3.bias"};
  const uint64_t sizes[] = {784 * 256, 256, 256 * 128, 128, 128 * 10, 10};
  const uint32_t layer_of[] = {0, 0, 2, 2, 4, 4};
  for (uint32_t k = 0; k < 6; ++k) {
    CHECK(d.tensors[k].key == k);
    CHECK(d.tensors[k].name == tnames[k]);
    CHECK(d.tensors[k].num_elements == sizes[k]);
    CHECK(d.tensors[k].layer == layer_of[k]);
    CHECK(net->param(k).size() == sizes[k]);
    CHECK(net->grad(k).size() == sizes[k]);
  }
  CHECK(d.layers[1].tensors.empty());
  CHECK(d.layers[4].tensors == std::vector<uint32_t>{4, 5});
  CHECK(net->input_size() == 784);
  CHECK_THROWS_AS(net->param(6), std::out_of_range);
}

TEST_CASE("build_network rejects bad specs with ConfigError", "[engine][network]") {
  NetSpec s;
  s.arch = "resnet";
  CHECK_THROWS_AS(build_network(s, 1), psrt::ConfigError);
  s.arch = "lenet5";
  s.height = 8;  // too small for conv2 after pool1
  CHECK_THROWS_AS(build_network(s, 1), psrt::ConfigError);
  s = NetSpec{};
  s.arch = "vgg-small";
  s.dropout = 1.0f;
  CHECK_THROWS_AS(build_network(s, 1), psrt::ConfigError);
  s = NetSpec{};
  s.hidden = {64, 0};
  CHECK_THROWS_AS(build_network(s, 1), psrt::ConfigError);
  s = NetSpec{};
  s.classes = 1;
  CHECK_THROWS_AS(build_network(s, 1), psrt::ConfigError);
  s = NetSpec{};
  s.height = 0;
  CHECK_THROWS_AS(build_network(s, 1), psrt::ConfigError);
  s = NetSpec{};
  s.hidden = {};  // softmax regression is allowed
  CHECK(build_network(s, 1)->desc().layers.size() == 2);
}

TEST_CASE("The same seed gives the same parameters", "[engine][network]") {
  auto a = build_network(NetSpec{}, 42);
  auto b = build_network(NetSpec{}, 42);
  auto c = build_network(NetSpec{}, 43);
  bool all_equal = true, any_differs = false;
  for (const auto& t : a->desc().tensors) {
    const auto pa = a->param(t.key), pb = b->param(t.key), pc = c->param(t.key);
    all_equal = all_equal && std::equal(pa.begin(), pa.end(), pb.begin());
    any_differs = any_differs || !std::equal(pa.begin(), pa.end(), pc.begin());
  }
  CHECK(all_equal);
  CHECK(any_differs);
  for (float v : a->param(1)) REQUIRE(v == 0.0f);  // fc1.bias
}

TEST_CASE("Whole-MLP gradients match central differences of a double reference",
          "[engine][network]") {
  NetSpec spec;
  spec.hidden = {6, 5};
  spec.height = 2;
  spec.width = 4;
  spec.classes = 3;
  constexpr int n = 5, in = 8;
  auto net = build_network(spec, 7);
  std::mt19937_64 gen(21);
  // Non-zero biases so that they matter.
  for (uint32_t k : {1u, 3u, 5u}) {
    const Vec b = random_vec(net->param(k).size(), gen, -0.2, 0.2);
    std::copy(b.begin(), b.end(), net->param(k).begin());
  }
  const Vec x = as_float_values(random_vec(n * in, gen));
  const std::vector<int32_t> labels = {0, 2, 1, 1, 0};
  const auto xf = to_float(x);
  net->set_batch(xf.data(), labels.data(), n);
  forward_all(*net);
  backward_all(*net);

  std::vector<Vec> p;
  for (const auto& t : net->desc().tensors)
    p.emplace_back(net->param(t.key).begin(), net->param(t.key).end());
  const int widths[] = {in, 6, 5, 3};
  auto loss = [&] {
    Vec h = x;
    for (int l = 0; l < 3; ++l) {
      h = linear_ref(h, p[2 * l], p[2 * l + 1], n, widths[l], widths[l + 1]);
      if (l < 2) h = relu_ref(h);
    }
    return xent_ref(h, labels, n, 3);
  };
  CHECK(net->loss() == Approx(loss()).epsilon(1e-5));
  for (std::size_t k = 0; k < p.size(); ++k) {
    INFO("tensor " << net->desc().tensors[k].name);
    CHECK(rel_error(net->grad(static_cast<uint32_t>(k)), numeric_grad(p[k], loss, 1e-5)) < 1e-3);
  }
}

TEST_CASE("After backward_layer(i) returns, layer i's parameters may be overwritten",
          "[engine][network]") {
  NetSpec spec;
  spec.hidden = {32, 16};
  spec.height = 4;
  spec.width = 4;
  auto net = build_network(spec, 3);
  std::mt19937_64 gen(5);
  const auto x = to_float(random_vec(8 * 16, gen));
  std::vector<int32_t> labels(8);
  for (int i = 0; i < 8; ++i) labels[i] = i % 10;
  net->set_batch(x.data(), labels.data(), 8);
  forward_all(*net);
  backward_all(*net);
  const auto clean = all_grads(*net);

  // Same again, but every layer's parameters are trashed the moment its backward returns.
  std::vector<std::vector<float>> saved;
  for (const auto& t : net->desc().tensors)
    saved.emplace_back(net->param(t.key).begin(), net->param(t.key).end());
  forward_all(*net);
  const auto& layers = net->desc().layers;
  for (std::size_t i = layers.size(); i-- > 0;) {
    net->backward_layer(i);
    for (uint32_t k : layers[i].tensors) {
      auto v = net->param(k);
      std::fill(v.begin(), v.end(), std::numeric_limits<float>::quiet_NaN());
    }
  }
  CHECK(all_grads(*net) == clean);
  for (const auto& t : net->desc().tensors)
    std::copy(saved[t.key].begin(), saved[t.key].end(), net->param(t.key).begin());
}

TEST_CASE("Plain SGD on a separable problem lowers the loss clearly", "[engine][network]") {
  NetSpec spec;
  spec.hidden = {16};
  spec.height = 2;
  spec.width = 4;
  spec.classes = 4;
  constexpr int kSamples = 256, kIn = 8, kBatch = 32;
  std::mt19937_64 gen(99);
  std::vector<float> images(kSamples * kIn);
  std::vector<int32_t> labels(kSamples);
  const Vec noise = random_vec(images.size(), gen, -0.5, 0.5);
  for (int s = 0; s < kSamples; ++s) {
    labels[s] = s % 4;
    for (int j = 0; j < kIn; ++j) {
      // class c has +2 on dimension c and -2 on dimension c + 4
      const double centre = j == labels[s] ? 2.0 : (j == labels[s] + 4 ? -2.0 : 0.0);
      images[s * kIn + j] = static_cast<float>(centre + noise[s * kIn + j]);
    }
  }
  auto net = build_network(spec, 17);
  const auto& desc = net->desc();
  float first = 0, last = 0;
  for (int step = 0; step < 64; ++step) {
    const int start = (step * kBatch) % kSamples;
    net->set_batch(images.data() + start * kIn, labels.data() + start, kBatch);
    forward_all(*net);
    if (step == 0) first = net->loss();
    last = net->loss();
    for (std::size_t i = desc.layers.size(); i-- > 0;) {
      net->backward_layer(i);
      for (uint32_t k : desc.layers[i].tensors) {
        auto p = net->param(k);
        const auto g = net->grad(k);
        for (std::size_t j = 0; j < p.size(); ++j) p[j] -= 0.1f * g[j];
      }
    }
  }
  INFO("first loss " << first << ", last loss " << last);
  CHECK(first > 0.5f);
  CHECK(last < 0.25f * first);
  CHECK(net->evaluate(images.data(), labels.data(), kSamples, 50) > 0.95);
}

TEST_CASE("evaluate counts argmax hits over ragged chunks and keeps the batch state",
          "[engine][network]") {
  NetSpec spec;
  spec.hidden = {};
  spec.height = 1;
  spec.width = 3;
  spec.classes = 3;
  auto net = build_network(spec, 1);
  auto w = net->param(0);
  std::fill(w.begin(), w.end(), 0.0f);
  for (int i = 0; i < 3; ++i) w[i * 3 + i] = 1.0f;  // logits = input
  const std::vector<float> images = {3, 1, 2, 0, 5, 1, 1, 0, 9, 2, 1, 0, 0, 0, 1};
  // argmax:                        0        1        2        0        2
  const std::vector<int32_t> labels = {0, 1, 0, 0, 1};
  const std::vector<int32_t> train_labels = {2, 2};

  net->set_batch(images.data(), train_labels.data(), 2);
  forward_all(*net);
  const float loss_before = net->loss();
  CHECK(net->evaluate(images.data(), labels.data(), 5, 2) == Approx(0.6));
  CHECK(net->evaluate(images.data(), labels.data(), 5, 64) == Approx(0.6));
  CHECK(net->evaluate(images.data(), labels.data(), 1, 1) == Approx(1.0));
  CHECK(net->evaluate(images.data(), labels.data(), 0, 8) == 0.0);
  CHECK(net->loss() == loss_before);
  backward_all(*net);  // still the training batch: softmax(3,1,2) and (0,5,1) vs label 2
  const auto gb = net->grad(1);
  double expected = 0;
  for (const float* z : {images.data(), images.data() + 3}) {
    const double s = std::exp(z[0]) + std::exp(z[1]) + std::exp(z[2]);
    expected += (std::exp(z[2]) / s - 1.0) / 2;
  }
  CHECK(gb[2] == Approx(expected).epsilon(1e-5));
  const std::vector<int32_t> bad_labels = {0, 3};
  CHECK_THROWS_AS(net->set_batch(images.data(), bad_labels.data(), 2), std::invalid_argument);
  CHECK_THROWS_AS(net->set_batch(images.data(), labels.data(), 0), std::invalid_argument);
}

// A model that diverged in its last updates (outputs NaN) was reported at 1 / classes accuracy,
// max_element over NaN picking class 0, and the job exited 0.
TEST_CASE("evaluation refuses a model whose outputs are not finite, saying how many",
          "[engine][network]") {
  auto net = build_network(NetSpec{}, 1);
  const int n = 6;
  std::vector<float> x(std::size_t(n) * net->input_size(), 0.5f);
  std::vector<int32_t> labels(n, 0);
  const double before = net->evaluate(x.data(), labels.data(), n, 4);
  CHECK((before >= 0.0 && before <= 1.0));
  auto w = net->param(net->desc().tensors.back().key);  // the last layer: ReLU takes NaN for 0
  std::fill(w.begin(), w.end(), std::numeric_limits<float>::quiet_NaN());
  CHECK_THROWS_WITH(net->evaluate(x.data(), labels.data(), n, 4),
                    Catch::Contains("NaN or infinite for 4 of 4 samples") &&
                        Catch::Contains("training diverged"));
  // Every class from finite logits; one infinite row is enough to refuse.
  const float finite[] = {0.1f, 0.9f, 0.2f, 0.8f, 0.3f, 0.7f};
  const int32_t want[] = {1, 1, 0};
  CHECK(count_correct(finite, want, 3, 2) == 2);
  const float inf[] = {0.1f, std::numeric_limits<float>::infinity()};
  CHECK_THROWS_WITH(count_correct(inf, want, 1, 2), Catch::Contains("1 of 1"));
}
