// psrt-engine-dump FILE: writes, for seeded inputs, every layer's parameters, input, output,
// upstream gradient and computed gradients, and one whole LeNet-5 SGD step, for
// tests/torch_reference.py to compare with PyTorch.
// Format: records of u32 name length, name bytes, u32 rank, i64 dims[rank], f32 data[prod(dims)]
// (little-endian, as written by this machine). Integers (shapes, labels) are stored as floats.
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/conv2d.h"
#include "engine/dropout.h"
#include "engine/dropout_mask.h"
#include "engine/flatten.h"
#include "engine/linear.h"
#include "engine/maxpool2d.h"
#include "engine/network.h"
#include "engine/relu.h"
#include "engine/softmax_xent.h"

namespace {

using psrt::engine::Layer;

class Writer {
 public:
  explicit Writer(const char* path) : f_(std::fopen(path, "wb")) {}
  ~Writer() {
    if (f_ != nullptr) std::fclose(f_);
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  bool ok() const { return f_ != nullptr && !failed_; }

  void put(const std::string& name, const std::vector<int64_t>& dims, const float* data) {
    std::size_t count = 1;
    for (const int64_t d : dims) count *= static_cast<std::size_t>(d);
    const auto len = static_cast<uint32_t>(name.size());
    const auto rank = static_cast<uint32_t>(dims.size());
    failed_ = failed_ || std::fwrite(&len, 4, 1, f_) != 1 ||
              std::fwrite(name.data(), 1, len, f_) != len || std::fwrite(&rank, 4, 1, f_) != 1 ||
              std::fwrite(dims.data(), 8, rank, f_) != rank ||
              std::fwrite(data, 4, count, f_) != count;
  }
  void put(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    put(name, dims, v.data());
  }

 private:
  std::FILE* f_;
  bool failed_ = false;
};

std::vector<float> uniform(std::size_t n, std::mt19937_64& gen, float lo = -1, float hi = 1) {
  std::vector<float> v(n);
  for (float& x : v) x = lo + (hi - lo) * static_cast<float>(gen() >> 40) * 0x1.0p-24f;
  return v;
}

// Runs forward and backward of `layer` on n seeded samples of shape `in_dims` and writes it all.
void dump_layer(Writer& w, const std::string& tag, Layer& layer, int n,
                const std::vector<int64_t>& in_dims, const std::vector<int64_t>& out_dims,
                uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<int64_t> xd = {n}, yd = {n};
  xd.insert(xd.end(), in_dims.begin(), in_dims.end());
  yd.insert(yd.end(), out_dims.begin(), out_dims.end());
  for (auto& p : layer.params()) {
    const auto v = uniform(p.value.size(), gen, -0.5f, 0.5f);
    std::copy(v.begin(), v.end(), p.value.begin());
  }
  const auto x = uniform(static_cast<std::size_t>(n) * layer.in_size(), gen);
  const auto dy = uniform(static_cast<std::size_t>(n) * layer.out_size(), gen);
  std::vector<float> y(dy.size()), dx(x.size());
  layer.forward(x.data(), y.data(), n, true);
  layer.backward(x.data(), y.data(), dy.data(), dx.data(), n);
  w.put(tag + ".x", xd, x);
  w.put(tag + ".y", yd, y);
  w.put(tag + ".dy", yd, dy);
  w.put(tag + ".dx", xd, dx);
  for (auto& p : layer.params()) {
    const std::vector<int64_t> d = {static_cast<int64_t>(p.value.size())};
    w.put(tag + "." + p.suffix, d, p.value.data());
    w.put(tag + ".d" + p.suffix, d, p.grad.data());
  }
}

void dump_conv(Writer& w, const std::string& tag, const psrt::engine::ConvGeom& g, int n,
               uint64_t seed) {
  psrt::engine::Conv2d conv(tag, g);
  const std::vector<float> cfg = {float(g.in_c),   float(g.in_h),   float(g.in_w), float(g.out_c),
                                  float(g.kernel), float(g.stride), float(g.pad)};
  w.put(tag + ".cfg", {7}, cfg);
  dump_layer(w, tag, conv, n, {g.in_c, g.in_h, g.in_w}, {g.out_c, g.out_h(), g.out_w()}, seed);
}

void dump_lenet5_step(Writer& w) {
  psrt::engine::NetSpec spec;
  spec.arch = "lenet5";
  auto net = psrt::engine::build_network(spec, 3);
  constexpr int n = 8;
  constexpr float lr = 0.1f;
  std::mt19937_64 gen(91);
  const auto x = uniform(static_cast<std::size_t>(n) * 784, gen, 0, 1);
  std::vector<int32_t> labels(n);
  std::vector<float> labels_f(n);
  for (int i = 0; i < n; ++i) labels_f[i] = static_cast<float>(labels[i] = (i * 7 + 3) % 10);
  w.put("lenet5.x", {n, 1, 28, 28}, x);
  w.put("lenet5.labels", {n}, labels_f);
  w.put("lenet5.lr", {1}, &lr);
  const auto& d = net->desc();
  for (const auto& t : d.tensors) {
    w.put("lenet5.param." + t.name, {static_cast<int64_t>(t.num_elements)},
          net->param(t.key).data());
  }
  net->set_batch(x.data(), labels.data(), n);
  for (std::size_t i = 0; i < d.layers.size(); ++i) net->forward_layer(i);
  const float loss = net->loss();
  w.put("lenet5.loss", {1}, &loss);
  for (std::size_t i = d.layers.size(); i-- > 0;) {
    net->backward_layer(i);
    for (const uint32_t key : d.layers[i].tensors) {
      auto p = net->param(key);
      const auto g = net->grad(key);
      for (std::size_t j = 0; j < p.size(); ++j) p[j] -= lr * g[j];
    }
  }
  for (const auto& t : d.tensors) {
    const std::vector<int64_t> dims = {static_cast<int64_t>(t.num_elements)};
    w.put("lenet5.grad." + t.name, dims, net->grad(t.key).data());
    w.put("lenet5.after." + t.name, dims, net->param(t.key).data());
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace psrt::engine;
  // `--help` was taken for FILE: an 800 KB dump named --help in the working folder.
  if (argc != 2 || argv[1][0] == '-') {
    const std::string arg = argc == 2 ? argv[1] : "";
    const bool help = arg == "-h" || arg == "--help";
    std::fprintf(help ? stdout : stderr,
                 "usage: psrt-engine-dump FILE (the layers' reference data for "
                 "tests/torch_reference.py)\n");
    return help ? 0 : 2;
  }
  Writer w(argv[1]);
  if (!w.ok()) {
    std::fprintf(stderr, "psrt-engine-dump: cannot open %s\n", argv[1]);
    return 2;
  }
  Linear linear("linear", 7, 5, LinearInit::kHeNormal);
  dump_layer(w, "linear", linear, 4, {7}, {5}, 1);
  dump_conv(w, "conv_pad", ConvGeom{1, 12, 12, 6, 5, 1, 2}, 2, 2);
  dump_conv(w, "conv_nopad", ConvGeom{6, 9, 9, 16, 5, 1, 0}, 2, 3);
  dump_conv(w, "conv_stride", ConvGeom{3, 9, 8, 4, 3, 2, 1}, 2, 4);
  Relu relu("relu", 20);
  dump_layer(w, "relu", relu, 3, {20}, {20}, 5);
  MaxPool2d pool("maxpool", PoolGeom{3, 7, 6, 2, 2});
  dump_layer(w, "maxpool", pool, 2, {3, 7, 6}, {3, 3, 3}, 6);
  Flatten flatten("flatten", 48);
  dump_layer(w, "flatten", flatten, 2, {48}, {48}, 7);
  Dropout dropout("dropout", 40, 0.5f);
  dropout.init_params(8);
  dump_layer(w, "dropout", dropout, 3, {40}, {40}, 9);
  std::vector<float> mask(120);
  for (std::size_t i = 0; i < mask.size(); ++i) {
    mask[i] = dropout_keeps(dropout.step_seed(), i, dropout_threshold(0.5f)) ? 1.0f : 0.0f;
  }
  w.put("dropout.mask", {3, 40}, mask);

  SoftmaxXent xent("xent", 10);
  std::vector<int32_t> labels = {3, 0, 9, 4};
  std::vector<float> labels_f(labels.begin(), labels.end());
  xent.set_labels(labels.data());
  std::mt19937_64 gen(10);
  const auto z = uniform(40, gen, -3, 3);
  std::vector<float> p(40), dz(40);
  xent.forward(z.data(), p.data(), 4, true);
  xent.backward(z.data(), p.data(), nullptr, dz.data(), 4);
  const float loss = xent.loss();
  w.put("xent.x", {4, 10}, z);
  w.put("xent.labels", {4}, labels_f);
  w.put("xent.loss", {1}, &loss);
  w.put("xent.y", {4, 10}, p);
  w.put("xent.dx", {4, 10}, dz);

  dump_lenet5_step(w);
  if (!w.ok()) {
    std::fprintf(stderr, "psrt-engine-dump: write to %s failed\n", argv[1]);
    return 1;
  }
  return 0;
}
