// The memory a native network needs at the least (engine/memory_estimate.h): close to, and not
// above, what a training step and an evaluation really take (measured as the growth of this
// process's peak resident memory), so that a refusal on it does not turn down a job that fits;
// and the evaluation batch that keeps a large network's evaluation within its bound.
#include "engine/memory_estimate.h"

#include <catch2/catch.hpp>

#include <vector>

#include "engine/network.h"
#include "tests/common/peak_memory.h"

using namespace psrt;
using namespace psrt::engine;

namespace {

// A convolution of `channels` 1x1 filters on 64x64 images: activations far above its parameters.
NetSpec wide_conv(int channels) {
  NetSpec spec;
  spec.arch = "custom";
  spec.height = spec.width = 64;
  spec.layers = {{.kind = LayerSpec::Kind::kConv, .out = channels, .kernel = 1, .stride = 1},
                 {.kind = LayerSpec::Kind::kRelu},
                 {.kind = LayerSpec::Kind::kFc, .out = 10}};
  return spec;
}

uint64_t input_floats(const NetSpec& spec) {
  return uint64_t(spec.channels) * spec.height * spec.width;
}

}  // namespace

TEST_CASE("the least memory of a network is below what its training and evaluation take",
          "[engine][memory]") {
  const NetSpec spec = wide_conv(64);  // 64 x 64 x 64 floats of activations per layer and sample
  const ModelDesc desc = describe_network(spec);
  const NetMemory memory{desc, input_floats(spec)};
  constexpr int kBatch = 16, kEval = 48;
  const double least_mib = double(least_memory_bytes(memory, kBatch, true, kEval)) / (1 << 20);
  const std::vector<float> images(std::size_t(kEval) * input_floats(spec), 0.5f);
  const std::vector<int32_t> labels(kEval, 3);
  const double measured = psrt::test::peak_growth_mib([&] {
    auto net = build_network(spec, 1);
    net->set_batch(images.data(), labels.data(), kBatch);
    const std::size_t layers = net->desc().layers.size();
    for (std::size_t l = 0; l < layers; ++l) net->forward_layer(l);
    for (std::size_t l = layers; l-- > 0;) net->backward_layer(l);
    (void)net->evaluate(images.data(), labels.data(), kEval, eval_batch(memory, kEval));
  });
  if (measured < 0) {
    WARN("/proc/self/clear_refs is not writable here: memory growth not measured");
    return;
  }
  INFO("least " << least_mib << " MiB, measured " << measured << " MiB");
  // It tracks what is held (the buffers are most of it), never far above: the measure reads a
  // little low where freed memory of earlier tests is reused, and the refusal compares with 80%
  // of what is available.
  CHECK(least_mib > 0.5 * measured);
  CHECK(least_mib <= 1.05 * measured);
}

TEST_CASE("evaluation batches shrink where a batch's activations pass the bound", "[engine]") {
  const NetSpec small = wide_conv(1);
  const ModelDesc small_desc = describe_network(small);
  CHECK(eval_batch({small_desc, input_floats(small)}) == kMostEvalBatch);
  CHECK(eval_batch({small_desc, input_floats(small)}, 7) == 7);
  // 1024 channels of 64x64: 32 MiB of activations a sample, 8 samples in 256 MiB.
  const NetSpec wide = wide_conv(1024);
  const ModelDesc wide_desc = describe_network(wide);
  const NetMemory memory{wide_desc, input_floats(wide)};
  CHECK(eval_batch(memory) == int(kEvalBytes / (memory.activation_floats() * sizeof(float))));
  CHECK(eval_batch(memory) < 10);
  CHECK(eval_batch(memory) >= 1);
}

TEST_CASE("a network that cannot fit says how much it needs and what to change", "[engine]") {
  const NetSpec spec = wide_conv(1024);
  const ModelDesc desc = describe_network(spec);
  const NetMemory memory{desc, input_floats(spec)};
  const uint64_t one = least_memory_bytes(memory, 32, false, kMostEvalBatch);
  CHECK(memory_problem(memory, 32, false, kMostEvalBatch, 1, one).empty());
  CHECK(memory_problem(memory, 32, false, kMostEvalBatch, 1, 0).empty());  // nothing known
  const std::string why = memory_problem(memory, 32, false, kMostEvalBatch, 2, one);
  CHECK_THAT(why, Catch::Contains("needs at least " + std::to_string((2 * one) >> 20) +
                                  " MiB for its 2 workers") &&
                      Catch::Contains("at job.batch_size 32") &&
                      Catch::Contains("job.batch_size smaller"));
  // Evaluation is counted once, on the worker that evaluates.
  const uint64_t evaluating = least_memory_bytes(memory, 32, true, kMostEvalBatch);
  CHECK(memory_problem(memory, 32, true, kMostEvalBatch, 2, one + evaluating).empty());
}
