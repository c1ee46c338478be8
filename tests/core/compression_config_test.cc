// The compression section of the job configuration: each codec's defaults, momentum and Adam
// correction, and LACO's defaults under Adam (ternary values, gradient selection, reply density).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compress/job_config.h"
#include "config/job_config.h"
#include "core/config.h"
#include "core/status.h"
#include "tests/core/config_test_util.h"

using namespace psrt;
using psrt::test::error_of;

TEST_CASE("compression: codec laco's defaults: compressed replies, every tensor compressed, "
          "kLacoDensity", "[config]") {
  const Config laco = parse_config("compression: {codec: laco}", "j");
  CHECK(laco.compression.compress_replies);
  CHECK(laco.compression.dense_below == 0);
  CHECK(laco.compression.density == kLacoDensity);
  CHECK(laco.compression.quant_bits == 8);
  CHECK_FALSE(laco.compression.adam_select_gradient);
  CHECK(laco.compression.reply_density == 0);  // replies at `density`
  CHECK(compress::reply_codec_config(laco.compression).density == kLacoDensity);
  const Config topk = parse_config("compression: {codec: topk}", "j");
  CHECK(topk.compression.density == 0.01);
  CHECK(topk.compression.dense_below == 1024);
}

TEST_CASE("compression: codec laco under Adam correction: ternary values selected in the "
          "gradient's units", "[config]") {
  const Config on = parse_config("optimizer: {type: adam}\ncompression: {codec: laco}", "j");
  CHECK(on.compression.quant_bits == 1);
  CHECK(on.compression.density == kLacoTernaryDensity);
  CHECK(on.compression.adam_select_gradient);
  CHECK(on.compression.reply_density == kLacoTernaryDensity);  // 1 worker
  const Config four = parse_config(
      "cluster: {workers: 4}\noptimizer: {type: adam}\ncompression: {codec: laco}", "j");
  CHECK(four.compression.reply_density == Approx(4 * kLacoTernaryDensity));
  CHECK(compress::reply_codec_config(four.compression).density ==
        Approx(4 * kLacoTernaryDensity));
  CHECK(compress::reply_codec_config(four.compression).quant_bits == 1);
  const Config log8_replies = parse_config("optimizer: {type: adam}\n"
                                           "compression: {codec: laco, reply_quant_bits: 8}", "j");
  CHECK(log8_replies.compression.quant_bits == 1);  // the pushes keep theirs
  CHECK(compress::reply_codec_config(log8_replies.compression).quant_bits == 8);
  CHECK_THAT(error_of("compression: {codec: laco, reply_quant_bits: 4}"),
             Catch::Contains("compression.reply_quant_bits"));
  CHECK(log8_replies.compression.adam_residual_cap == kAdamResidualCap);
  CHECK(parse_config("optimizer: {type: adam}\ncompression: {codec: laco, adam_residual_cap: 0}",
                     "j").compression.adam_residual_cap == 0);
  CHECK(parse_config("compression: {codec: laco}", "j").compression.adam_residual_cap == 0);
  CHECK_THAT(error_of("compression: {codec: laco, adam_residual_cap: -1}"),
             Catch::Contains("compression.adam_residual_cap"));
  CHECK_FALSE(compress::reply_codec_config(four.compression).adam_select_gradient);
  CHECK(parse_config("cluster: {workers: 4}\noptimizer: {type: adam}\n"
                     "compression: {codec: laco, reply_density: 0.02}", "j")
            .compression.reply_density == 0.02);
  const Config log8 =
      parse_config("optimizer: {type: adam}\ncompression: {codec: laco, quant_bits: 8}", "j");
  CHECK(log8.compression.density == kLacoDensity);
  CHECK_FALSE(log8.compression.adam_select_gradient);
  CHECK_FALSE(parse_config("optimizer: {type: adam}\n"
                           "compression: {codec: laco, adam_select: direction}",
                           "j")
                  .compression.adam_select_gradient);
  CHECK(parse_config("optimizer: {type: adam}\ncompression: {codec: topk}", "j")
            .compression.quant_bits == 8);
  CHECK_THAT(error_of("optimizer: {type: adam}\n"
                      "compression: {codec: laco, quant_bits: 8, adam_select: gradient}"),
             Catch::Contains("compression.adam_select"));
  CHECK_THAT(error_of("compression: {codec: laco, quant_bits: 1, adam_select: gradient}"),
             Catch::Contains("compression.adam_select"));
  CHECK_THAT(error_of("compression: {codec: laco, quant_bits: 4}"),
             Catch::Contains("compression.quant_bits"));
}

TEST_CASE("compression: momentum correction moves SGD's momentum from the servers to the "
          "workers", "[config]") {
  const Config on = parse_config(
      "optimizer: {momentum: 0.8}\ncompression: {codec: topk, momentum_correction: true}", "j");
  CHECK(on.compression.momentum == 0.8);
  CHECK(on.optimizer.momentum == 0);
  const Config off = parse_config("optimizer: {momentum: 0.8}\ncompression: {codec: topk}", "j");
  CHECK(off.compression.momentum == 0);
  CHECK(off.optimizer.momentum == 0.8);
  CHECK(parse_config("compression: {codec: signsgd, momentum_correction: true}", "j")
            .compression.momentum == 0.9);
  CHECK_FALSE(on.compression.momentum_masking);
  CHECK(parse_config("compression: {codec: laco, momentum_correction: true, "
                     "momentum_masking: true}", "j").compression.momentum_masking);
  CHECK_THAT(error_of("compression: {codec: signsgd, momentum_correction: true, "
                      "momentum_masking: true}"),
             Catch::Contains("compression.momentum_masking") && Catch::Contains("signsgd"));
  CHECK_THAT(error_of("compression: {codec: laco, momentum_masking: true}"),
             Catch::Contains("compression.momentum_masking") &&
                 Catch::Contains("momentum_correction"));
  CHECK_THAT(error_of("compression: {momentum_correction: true}"),
             Catch::Contains("compression.momentum_correction") && Catch::Contains("none"));
  CHECK_THAT(error_of("compression: {codec: laco, error_feedback: false, "
                      "momentum_correction: true}"),
             Catch::Contains("compression.momentum_correction") &&
                 Catch::Contains("error_feedback"));
  CHECK_THAT(error_of("optimizer: {type: adam}\n"
                      "compression: {codec: laco, momentum_correction: true}"),
             Catch::Contains("compression.momentum_correction") && Catch::Contains("sgd"));
  CHECK_THAT(error_of("optimizer: {momentum: 0}\n"
                      "compression: {codec: laco, momentum_correction: true}"),
             Catch::Contains("compression.momentum_correction") && Catch::Contains("momentum > 0"));
}

TEST_CASE("compression: Adam correction: on by default with adam and a codec, the servers then "
          "run SGD", "[config]") {
  const Config on = parse_config(
      "optimizer: {type: adam, lr: 0.002, beta1: 0.8, weight_decay: 0.001}\n"
      "compression: {codec: laco}", "j");
  CHECK(on.compression.adam);
  CHECK(on.compression.adam_beta1 == 0.8);
  CHECK(on.compression.adam_weight_decay == 0.001);
  CHECK(on.optimizer.type == "sgd");
  CHECK(on.optimizer.lr == 0.002);
  CHECK(on.optimizer.momentum == 0);
  CHECK(on.optimizer.weight_decay == 0);
  CHECK(compression_warnings(on).empty());
  const Config off = parse_config(
      "optimizer: {type: adam}\ncompression: {codec: laco, adam_correction: false}", "j");
  CHECK_FALSE(off.compression.adam);
  CHECK(off.optimizer.type == "adam");
  REQUIRE(compression_warnings(off).size() == 1);
  CHECK_THAT(compression_warnings(off)[0], Catch::Contains("adam_correction"));
  CHECK_FALSE(parse_config("optimizer: {type: adam}", "j").compression.adam);  // codec none
  CHECK_FALSE(parse_config("optimizer: {type: adam}\n"
                           "compression: {codec: laco, error_feedback: false}", "j")
                  .compression.adam);
  CHECK_THAT(error_of("compression: {codec: laco, adam_correction: true}"),
             Catch::Contains("compression.adam_correction") && Catch::Contains("adam"));
  CHECK_THAT(compression_warnings(parse_config("compression: {codec: topk}", "j"))[0],
             Catch::Contains("momentum_correction"));
}

// Keys that the chosen codec does not read changed nothing, without a word: signSGD's density,
// top-k's quant_bits, a LACO file switched to codec none.
TEST_CASE("keys the codec does not read are named in a warning", "[config][compression]") {
  const auto warnings = [](const std::string& yaml) {
    return compression_warnings(parse_config(yaml, "j"));
  };
  const auto idle = [](const std::string& yaml) {
    return parse_config(yaml, "j").compression.idle_keys;
  };
  CHECK(idle("compression: {codec: signsgd, density: 0.5}") ==
        std::vector<std::string>{"density"});
  CHECK(idle("compression: {codec: topk, density: 0.5, quant_bits: 32, warmup_iters: 3}") ==
        std::vector<std::string>{"warmup_iters", "quant_bits"});
  CHECK(idle("compression: {codec: none, density: 0.5, hierarchical: false}") ==
        std::vector<std::string>{"density", "hierarchical"});
  CHECK(idle("compression: {codec: laco, density: 0.5, quant_bits: 32, warmup_iters: 3}").empty());
  CHECK(idle("compression: {codec: laco, replies: dense, reply_density: 0.1}") ==
        std::vector<std::string>{"reply_density"});
  const auto w = warnings("compression: {codec: topk, quant_bits: 32}");
  REQUIRE_FALSE(w.empty());
  CHECK_THAT(w[0], Catch::Contains("compression.quant_bits: set, but codec topk"));
  CHECK(warnings("compression: {codec: none}").empty());
}
