#include <catch2/catch.hpp>

#include "compress/error_feedback.h"
#include "compress/registry.h"
#include "test_util.h"

namespace psrt::compress {

TEST_CASE("the registry builds every codec by name, with its wire id", "[compress][registry]") {
  const CodecRegistry registry = default_registry();
  REQUIRE(registry.names() ==
          std::vector<std::string>{"graddrop", "laco", "none", "signsgd", "topk"});
  const std::pair<const char*, CodecId> expected[] = {{"none", CodecId::kNone},
                                                      {"laco", CodecId::kLaco},
                                                      {"signsgd", CodecId::kSignSgd},
                                                      {"graddrop", CodecId::kGradDrop},
                                                      {"topk", CodecId::kTopK}};
  for (const auto& [name, id] : expected) {
    Result<std::unique_ptr<Codec>> codec = registry.make(testing::config_for(name));
    REQUIRE(codec.is_ok());
    CHECK((*codec)->id() == id);
    CHECK((*codec)->name() == name);
    CHECK(codec_name(id) == name);
    // Error feedback decorates every codec but none.
    CHECK((dynamic_cast<ErrorFeedback*>(codec->get()) != nullptr) == (id != CodecId::kNone));
  }
  CHECK(static_cast<int>(CodecId::kTopK) == 4);
}

TEST_CASE("bad configs name the key and what is allowed", "[compress][registry]") {
  CodecConfig c = testing::config_for("zstd");
  Result<std::unique_ptr<Codec>> r = make_codec(c);
  REQUIRE_FALSE(r.is_ok());
  CHECK_THAT(r.status().message(), Catch::Contains("compression.codec = zstd"));

  c = testing::config_for("laco");
  c.density = 0;
  CHECK_THAT(make_codec(c).status().message(), Catch::Contains("compression.density"));
  c = testing::config_for("laco");
  c.quant_bits = 4;
  CHECK_THAT(make_codec(c).status().message(), Catch::Contains("compression.quant_bits"));

  CodecRegistry empty;
  REQUIRE_FALSE(empty.make(testing::config_for("none")).is_ok());
}

TEST_CASE("encode rejects chunks outside the tensor and foreign states", "[compress][registry]") {
  for (const char* name : testing::kAllCodecs) {
    auto codec = testing::make(testing::config_for(name));
    auto other = testing::make(testing::config_for(name, false));
    REQUIRE(codec);
    auto state = codec->make_state(TensorInfo{.num_elements = 100});
    const std::vector<float> g(60, 1.0f);
    std::vector<uint8_t> payload;
    INFO(name);
    CHECK_FALSE(codec->encode(*state, ChunkInput{.offset = 50, .values = g}, payload).is_ok());
    CHECK_FALSE(codec->encode(*state, ChunkInput{.offset = -1, .values = g}, payload).is_ok());
    CHECK(codec->encode(*state, ChunkInput{.offset = 40, .values = g}, payload).is_ok());
    if (std::string(name) != "none") {
      auto foreign = other->make_state(TensorInfo{.num_elements = 100});
      CHECK_FALSE(codec->encode(*foreign, ChunkInput{.offset = 0, .values = g}, payload).is_ok());
    }
  }
}

}  // namespace psrt::compress
