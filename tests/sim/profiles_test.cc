// The model profiles in bench/profiles/ parse with load_profile and hold the published
// parameter counts exactly.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "core/profile.h"

namespace {

std::string profile(const std::string& name) {
  return std::string(PSRT_SOURCE_DIR) + "/bench/profiles/" + name + ".yaml";
}

}  // namespace

TEST_CASE("every profile loads with its exact parameter total", "[sim][profiles]") {
  struct Case {
    const char* name;
    uint64_t params;
    std::size_t tensors;
  };
  for (const Case& k :
       {Case{"vgg16", 138357544, 32}, Case{"resnet50", 25557032, 161},
        Case{"inception_v3", 23834568, 284}, Case{"lenet5", 61706, 10}, Case{"mlp", 235146, 6}}) {
    CAPTURE(k.name);
    const auto m = psrt::load_profile(profile(k.name));
    CHECK(m.name == k.name);
    CHECK(m.total_elements() == k.params);
    CHECK(m.tensors.size() == k.tensors);
    CHECK(m.compute_ms() > 0);
    for (const auto& l : m.layers) {
      CHECK(l.backward_ms == Approx(2 * l.forward_ms).epsilon(1e-6));
    }
    // The input-side layer has parameters: the critical-path bound goes through layer 0.
    CHECK_FALSE(m.layers.front().tensors.empty());
  }
}

TEST_CASE("profile times follow the stated formula", "[sim][profiles]") {
  // VGG-16 conv1_1: 224*224*64*3*9 MACs, 2 FLOPs each, batch 32 at 10 TFLOPS.
  const auto vgg = psrt::load_profile(profile("vgg16"));
  const double flops = 2.0 * 224 * 224 * 64 * 3 * 9;
  CHECK(vgg.layers[0].name == "conv1_1");
  CHECK(vgg.layers[0].forward_flops == flops);
  CHECK(vgg.layers[0].forward_ms == Approx(flops * 32 / 1e13 * 1e3).epsilon(1e-8));
  CHECK(vgg.compute_ms() == Approx(297.03).epsilon(1e-3));
  const auto mlp = psrt::load_profile(profile("mlp"));
  CHECK(mlp.layers.size() == 5);  // fc1 relu fc2 relu fc3
  CHECK(mlp.tensors[0].num_elements == 784u * 256);
  CHECK(mlp.tensors[5].num_elements == 10u);
}

TEST_CASE("scale shrinks sizes and times together", "[sim][profiles]") {
  const auto full = psrt::load_profile(profile("resnet50"));
  const auto small = psrt::load_profile(profile("resnet50"), 0.05);
  CHECK(small.compute_ms() == Approx(full.compute_ms() * 0.05).epsilon(1e-9));
  const double ratio =
      static_cast<double>(small.total_elements()) / static_cast<double>(full.total_elements());
  CHECK(ratio == Approx(0.05).epsilon(1e-3));
}
