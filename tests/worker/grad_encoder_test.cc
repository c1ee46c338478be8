// GradEncoder: which codecs compress on the device, and the rules that hold without one (a tensor's
// residual lives where its first encode ran).
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "compress/error_feedback.h"
#include "compress/job_config.h"
#include "compress/registry.h"
#include "worker/grad_encoder.h"

namespace psrt {

namespace {

ModelDesc two_layers() {
  ModelDesc m;
  LayerDesc layer;
  layer.kind = "linear";
  layer.name = "fc1";
  m.add_layer(layer, {{"fc1.weight", 5000}, {"fc1.bias", 10}});
  layer.name = "fc2";
  m.add_layer(layer, {{"fc2.weight", 3000}});
  return m;
}

CompressionConfig compression(const char* codec, bool error_feedback) {
  CompressionConfig c;
  c.codec = codec;
  c.error_feedback = error_feedback;
  c.calibration_iters = 1;
  c.warmup_iters = 2;
  return c;
}

}  // namespace

TEST_CASE("only laco with error feedback compresses on the device", "[worker][compress]") {
  const ModelDesc model = two_layers();
  CHECK_FALSE(GradEncoder(compression("none", true), model).encodes_on_device());
  CHECK_FALSE(GradEncoder(compression("topk", true), model).encodes_on_device());
  CHECK_FALSE(GradEncoder(compression("laco", false), model).encodes_on_device());
  GradEncoder laco(compression("laco", true), model);
  if (!laco.encodes_on_device()) {
    // No CUDA in this build, or no device: asking is an error, not a crash.
    const ChunkDesc c{.id = 0, .key = 0, .offset = 0, .length = 5000};
    CHECK_THROWS_AS(laco.encode_device(c, 0, nullptr), JobError);
  }
}

TEST_CASE("GradEncoder's host path is ErrorFeedback(LacoCodec), chunk by chunk",
          "[worker][compress]") {
  const ModelDesc model = two_layers();
  const CompressionConfig config = compression("laco", true);
  GradEncoder encoder(config, model);
  auto reference = std::move(*compress::make_codec(config));
  auto state = reference->make_state({.num_elements = 5000, .layer = 0, .num_layers = 2});
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<uint8_t> expected;
  for (uint64_t t = 0; t < 6; ++t) {
    std::vector<float> g(5000);
    for (float& x : g) x = normal(rng);
    for (uint64_t offset : {0u, 2500u}) {
      const ChunkDesc c{.id = 0, .key = 0, .offset = offset, .length = 2500};
      const auto payload = encoder.encode(c, t, g);
      const compress::ChunkInput in{.offset = int64_t(offset),
                                    .values = std::span<const float>(g).subspan(offset, 2500),
                                    .iteration = int64_t(t)};
      REQUIRE(reference->encode(*state, in, expected).is_ok());
      REQUIRE(*payload == expected);
    }
  }
}

TEST_CASE("a tensor encoded on the host cannot switch to the device", "[worker][compress]") {
  GradEncoder encoder(compression("laco", true), two_layers());
  const std::vector<float> g(3000, 1.0f);
  const ChunkDesc c{.id = 0, .key = 2, .offset = 0, .length = 3000};
  encoder.encode(c, 0, g);
  // With a device: the residual is on the host (JobError before the pointer is read); without
  // one: no device path at all.
  CHECK_THROWS_AS(encoder.encode_device(c, 1, nullptr), JobError);
}

}  // namespace psrt
