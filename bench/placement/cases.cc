#include "cases.h"

#include <random>

#include "core/profile.h"
#include "engine/network.h"

namespace psrt::bench {

ModelDesc load_model(const std::string& name, const std::string& profile_dir) {
  if (name == "vgg-small" || name == "lenet5-native") {
    engine::NetSpec spec;
    spec.arch = name == "vgg-small" ? "vgg-small" : "lenet5";
    ModelDesc m = engine::build_network(spec, 1)->desc();
    m.name = name;
    set_times_from_flops(m, 32, 10000);
    return m;
  }
  return load_profile(profile_dir + "/" + name + ".yaml");
}

DeviceSet make_devices(uint32_t k, bool heterogeneous, uint64_t memory) {
  DeviceSet set;
  for (uint32_t d = 0; d < k; ++d) {
    const bool slow = heterogeneous && d >= k / 2;
    std::string name = slow ? "slow" : "gpu";
    name += std::to_string(d);
    set.devices.push_back({name, slow ? memory / 2 : memory, slow ? 5000.0 : 10000.0});
  }
  set.link = {12.5e9, 0.01};
  set.server_link = {12.5e9, 0.01};
  return set;
}

ModelDesc synthetic_dag(uint32_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> ms(0.1, 2.0), unit(0, 1);
  ModelDesc m;
  m.name = "dag" + std::to_string(n);
  m.batch_size = 32;
  m.device_gflops = 10000;
  for (uint32_t i = 0; i < n; ++i) {
    LayerDesc l;
    l.name = "n";
    l.name += std::to_string(i);
    l.forward_ms = ms(rng) / 3;
    l.backward_ms = 2 * l.forward_ms;
    l.activation_elements = 1000 + rng() % 1000000;
    if (i > 1 && unit(rng) < 0.3) {
      const uint32_t back = 2 + static_cast<uint32_t>(rng() % std::min<uint32_t>(i - 1, 15));
      l.inputs = {i - 1, i - back};
    }
    std::vector<std::pair<std::string, uint64_t>> t;
    const uint64_t params = rng() % 2000000;
    if (params) t.emplace_back(l.name + ".w", params);
    m.add_layer(l, t);
  }
  return m;
}

}  // namespace psrt::bench
