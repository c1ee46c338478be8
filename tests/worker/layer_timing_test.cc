// Measured layer times for GradOptimizer's search on a native network: real figures, and training
// afterwards exactly as without the measurement (parameters untouched, dropout masks put back).
#include <catch2/catch.hpp>

#include <cstring>

#include "config/job_config.h"
#include "core/config.h"
#include "worker/backend.h"
#include "worker/layer_timing.h"

using namespace psrt;

namespace {

// Iteration 0's forward and backward; returns every gradient, concatenated.
std::vector<float> step_zero(Backend& b) {
  b.begin_iteration(0);
  const std::size_t n = b.desc().layers.size();
  for (std::size_t l = 0; l < n; ++l) b.forward_layer(l);
  for (std::size_t l = n; l-- > 0;) b.backward_layer(l);
  std::vector<float> out;
  for (const auto& t : b.desc().tensors) {
    const auto g = b.grad(t.key);
    out.insert(out.end(), g.begin(), g.end());
  }
  return out;
}

}  // namespace

TEST_CASE("grouping needs layer times only for searches on a model without them",
          "[worker][grouping]") {
  ModelDesc timed, untimed;
  LayerDesc l;
  l.name = "fc";
  untimed.add_layer(l, {{"fc.weight", 10}});
  l.backward_ms = 1.5;
  timed.add_layer(l, {{"fc.weight", 10}});
  for (const char* text : {"auto", "mgwfbp", "horovod:64MiB:5"}) {
    INFO(text);
    CHECK(grouping_needs_layer_times(*parse_grouping(text), untimed));
    CHECK_FALSE(grouping_needs_layer_times(*parse_grouping(text), timed));
  }
  for (const char* text : {"none", "size:64KiB", "ddp:25MiB:1MiB"}) {
    INFO(text);
    CHECK_FALSE(grouping_needs_layer_times(*parse_grouping(text), untimed));
  }
}

TEST_CASE("measured layer times are real and leave training untouched", "[worker][grouping]") {
  // vgg-small has dropout: its masks must come out as if nothing had run.
  const Config config =
      parse_config("job: {seed: 3, batch_size: 8}\ncluster: {workers: 2}\n"
                   "model: {backend: native, arch: vgg-small}\n"
                   "data: {path: /usr/share/datasets/fashion-mnist}",
                   "job.yaml");
  auto measured = make_backend(config, 1);
  auto fresh = make_backend(config, 1);
  ModelDesc desc = measured->desc();
  measure_layer_times(*measured, desc, 2);
  double total = 0;
  for (std::size_t i = 0; i < desc.layers.size(); ++i) {
    INFO(desc.layers[i].name);
    CHECK(desc.layers[i].forward_ms >= 0);
    CHECK(desc.layers[i].backward_ms >= 0);
    total += desc.layers[i].forward_ms + desc.layers[i].backward_ms;
    if (desc.layers[i].kind == "conv2d") CHECK(desc.layers[i].backward_ms > 0);
  }
  CHECK(total > 0);
  const auto a = step_zero(*measured), b = step_zero(*fresh);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}
