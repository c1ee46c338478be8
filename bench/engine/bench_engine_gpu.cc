#include "bench/engine/bench_engine_gpu.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <random>
#include <vector>

#include "engine/network.h"
#ifdef PSRT_BENCH_CUDA
#include "engine/cuda/device_buffer.h"
#include "engine/cuda/gpu_network.h"
#endif

namespace psrt::bench {

GpuStep measure_gpu_step(const std::string& arch, int batch, int steps, int warmup) {
#ifdef PSRT_BENCH_CUDA
  if (engine::cuda::device_count() == 0) return {0, "no GPU (no CUDA device)"};
  try {
    engine::NetSpec spec;
    spec.arch = arch;
    const auto cpu = engine::build_network(spec, 1);
    engine::cuda::GpuNetwork net(*cpu);
    const auto& layers = net.desc().layers;
    std::mt19937_64 gen(7);
    std::vector<float> images(static_cast<std::size_t>(batch) * net.input_size());
    std::vector<int32_t> labels(static_cast<std::size_t>(batch));
    for (float& v : images) v = static_cast<float>(gen() >> 40) * 0x1.0p-24f;
    for (int32_t& l : labels) l = static_cast<int32_t>(gen() % 10);
    auto step = [&] {
      net.set_batch(images.data(), labels.data(), batch);
      for (std::size_t i = 0; i < layers.size(); ++i) net.forward_layer(i);
      for (std::size_t i = layers.size(); i-- > 0;) net.backward_layer(i);
      net.synchronize();
    };
    for (int i = 0; i < warmup; ++i) step();
    std::vector<double> ms;
    for (int i = 0; i < steps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      step();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return {ms[ms.size() / 2], ""};
  } catch (const std::exception& e) {
    return {0, std::string("GPU failed: ") + e.what()};
  }
#else
  (void)arch, (void)batch, (void)steps, (void)warmup;
  return {0, "no GPU (built without CUDA)"};
#endif
}

}  // namespace psrt::bench
