// Times one training step (set_batch, forward and backward over all layers, SGD update) of the
// 784-256-128-10 MLP at batch 64. A developer check, not a test: figures are never asserted.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "engine/network.h"

int main() {
  using psrt::engine::build_network;
  constexpr int kBatch = 64;
  constexpr int kWarmup = 20, kSteps = 200;
  auto net = build_network(psrt::engine::NetSpec{}, 1);
  const auto& desc = net->desc();
  std::mt19937_64 gen(7);
  std::vector<float> images(static_cast<std::size_t>(kBatch) * net->input_size());
  std::vector<int32_t> labels(kBatch);
  for (auto& v : images) v = static_cast<float>(gen() % 256) / 255.0f;
  for (auto& l : labels) l = static_cast<int32_t>(gen() % 10);

  auto step = [&] {
    net->set_batch(images.data(), labels.data(), kBatch);
    for (std::size_t i = 0; i < desc.layers.size(); ++i) net->forward_layer(i);
    for (std::size_t i = desc.layers.size(); i-- > 0;) {
      net->backward_layer(i);
      for (uint32_t key : desc.layers[i].tensors) {
        auto p = net->param(key);
        auto g = net->grad(key);
        for (std::size_t j = 0; j < p.size(); ++j) p[j] -= 0.01f * g[j];
      }
    }
  };
  for (int i = 0; i < kWarmup; ++i) step();
  std::vector<double> ms;
  for (int i = 0; i < kSteps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%s batch %d: step median %.3f ms, p10 %.3f ms, p90 %.3f ms (%d steps), loss %.4f\n",
              desc.name.c_str(), kBatch, ms[ms.size() / 2], ms[ms.size() / 10],
              ms[ms.size() * 9 / 10], kSteps, static_cast<double>(net->loss()));
  return 0;
}
