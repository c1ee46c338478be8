// The model and data sections beyond the built-in networks: model.arch custom and its layer list
// (what each entry reads as, defaults included, and errors naming the entry), and data.image_rows,
// image_cols and classes.
#include <catch2/catch.hpp>

#include <string>

#include "config/job_config.h"
#include "core/config.h"
#include "core/config_limits.h"
#include "core/layer_spec.h"
#include "core/shared_settings.h"
#include "core/yaml_reader.h"
#include "tests/core/config_test_util.h"

using namespace psrt;
using psrt::test::error_of;
using Kind = LayerSpec::Kind;

namespace {

std::string custom(const std::string& layers) {
  return "model: {arch: custom, layers: " + layers + "}\n";
}

}  // namespace

TEST_CASE("model.layers reads every kind with its defaults", "[config][layers]") {
  const Config c = parse_config(custom("[{conv: 16}, relu, {conv: 8, kernel: 5, stride: 2, pad: 0},"
                                       " pool, {pool: 3, stride: 2}, {pool: 3}, {dropout: 0.25},"
                                       " flatten, {fc: 64}, {relu: ~}, {fc: 10}]"),
                                "job.yaml");
  REQUIRE(c.model.arch == "custom");
  const auto& l = c.model.layers;
  REQUIRE(l.size() == 11);
  CHECK(l[0] == LayerSpec{.kind = Kind::kConv, .out = 16, .kernel = 3, .stride = 1, .pad = 1});
  CHECK(l[1] == LayerSpec{.kind = Kind::kRelu});
  CHECK(l[2] == LayerSpec{.kind = Kind::kConv, .out = 8, .kernel = 5, .stride = 2, .pad = 0});
  CHECK(l[3] == LayerSpec{.kind = Kind::kPool, .kernel = 2, .stride = 2});
  CHECK(l[4] == LayerSpec{.kind = Kind::kPool, .kernel = 3, .stride = 2});
  CHECK(l[5] == LayerSpec{.kind = Kind::kPool, .kernel = 3, .stride = 3});
  CHECK(l[6] == LayerSpec{.kind = Kind::kDropout, .p = 0.25});
  CHECK(l[7] == LayerSpec{.kind = Kind::kFlatten});
  CHECK(l[8] == LayerSpec{.kind = Kind::kFc, .out = 64});
  CHECK(l[9] == LayerSpec{.kind = Kind::kRelu});
  CHECK(l[10] == LayerSpec{.kind = Kind::kFc, .out = 10});
  CHECK(layer_spec_text(l[2]) == "{conv: 8, kernel: 5, stride: 2, pad: 0}");
  CHECK(layer_spec_text(l[6]) == "{dropout: 0.25}");
  CHECK(layer_spec_text(l[7]) == "flatten");
  // --set replaces the whole list.
  const Config s =
      parse_config(custom("[{fc: 10}]"), "job.yaml", {"model.layers=[pool, {fc: 10}]"});
  CHECK(s.model.layers.size() == 2);
  // Other architectures have no layer list.
  CHECK(parse_config("model: {arch: lenet5}", "job.yaml").model.layers.empty());
}

TEST_CASE("model.layers errors name the entry and what is allowed", "[config][layers]") {
  using Catch::Matchers::Contains;
  CHECK_THAT(error_of("model: {arch: custom}"),
             Contains("model.layers") && Contains("required with model.arch: custom"));
  CHECK_THAT(error_of("model: {arch: lenet5, layers: [{fc: 10}]}"),
             Contains("model.layers") && Contains("not lenet5"));
  CHECK_THAT(error_of(custom("[]")), Contains("model.layers: must be a non-empty list"));
  CHECK_THAT(error_of(custom("{fc: 10}")), Contains("model.layers: must be a non-empty list"));
  CHECK_THAT(error_of(custom("[{fc: 10}, relux]")),
             Contains("model.layers[1]") && Contains("'relux' is no layer"));
  CHECK_THAT(error_of(custom("[{conv: 8, fc: 10}]")),
             Contains("model.layers[0]") && Contains("exactly one of") && Contains("found 2"));
  CHECK_THAT(error_of(custom("[{kernel: 3}]")), Contains("model.layers[0]") && Contains("found 0"));
  CHECK_THAT(error_of(custom("[{fc: 10, kernel: 3}]")),
             Contains("model.layers[0].kernel") && Contains("unknown key"));
  CHECK_THAT(error_of(custom("[[1, 2]]")), Contains("model.layers[0]: must be a layer kind"));
  CHECK_THAT(error_of(custom("[{conv: 0}]")), Contains("model.layers[0].conv"));
  CHECK_THAT(error_of(custom("[{conv: 4, stride: 0}]")), Contains("model.layers[0].stride"));
  CHECK_THAT(error_of(custom("[{conv: 4, pad: -1}]")), Contains("model.layers[0].pad"));
  CHECK_THAT(error_of(custom("[{pool: 2, stride: x}]")), Contains("model.layers[0].stride"));
  CHECK_THAT(error_of(custom("[{fc: 100000}]")), Contains("model.layers[0].fc"));
  CHECK_THAT(error_of(custom("[{dropout: 0.99}]")), Contains("model.layers[0].dropout"));
  CHECK_THAT(error_of(custom("[{fc: }]")), Contains("model.layers[0].fc") && Contains("no value"));
  std::string many = "[";
  for (std::size_t i = 0; i <= kMaxLayerSpecs; ++i) many += "relu, ";
  many += "{fc: 10}]";
  CHECK_THAT(error_of(custom(many)), Contains("at most 1024"));
}

TEST_CASE("data.image_rows, image_cols, image_channels and classes: defaults, values and bounds",
          "[config][data]") {
  using Catch::Matchers::Contains;
  const Config d = parse_config("", "job.yaml");
  CHECK(d.data.dataset == "fashion-mnist");
  CHECK(d.data.image_rows == 28);
  CHECK(d.data.image_cols == 28);
  CHECK(d.data.image_channels == 1);
  CHECK(d.data.classes == 10);
  const Config c = parse_config("data: {dataset: idx, path: /x, image_rows: 12, image_cols: 20, "
                                "image_channels: 3, classes: 47}",
                                "job.yaml");
  CHECK(c.data.dataset == "idx");
  CHECK(c.data.image_rows == 12);
  CHECK(c.data.image_cols == 20);
  CHECK(c.data.image_channels == 3);
  CHECK(c.data.classes == 47);
  CHECK_THAT(error_of("data: {classes: 1}"), Contains("data.classes"));
  CHECK_THAT(error_of("data: {image_rows: 0}"), Contains("data.image_rows"));
  CHECK_THAT(error_of("data: {image_cols: 5000}"), Contains("data.image_cols"));
  CHECK_THAT(error_of("data: {image_channels: 0}"), Contains("data.image_channels"));
  CHECK_THAT(error_of("data: {image_channels: 65}"), Contains("data.image_channels"));
  CHECK_THAT(error_of("data: {dataset: cifar}"), Contains("data.dataset"));
}

TEST_CASE("Strings that are not UTF-8 are refused naming the key", "[config][utf8]") {
  using Catch::Matchers::Contains;
  CHECK(valid_utf8("plain ascii"));
  CHECK(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));  // 2, 3 and 4 bytes
  CHECK_FALSE(valid_utf8("\xff"));
  CHECK_FALSE(valid_utf8("\xc3"));              // cut short
  CHECK_FALSE(valid_utf8("\xc3\x28"));          // not a continuation
  CHECK_FALSE(valid_utf8("\xc0\xaf"));          // overlong '/'
  CHECK_FALSE(valid_utf8("\xed\xa0\x80"));      // a surrogate
  CHECK_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  CHECK_THAT(error_of("job: {id: \"a\xff\"}"), Contains("job.id: is not valid UTF-8"));
  // One line of text: a tab is allowed, other control characters are not.
  CHECK_FALSE(control_character("a\tb").has_value());
  CHECK(control_character("a\rb") == '\r');
  CHECK(control_character("\x7f") == '\x7f');
  CHECK_THAT(error_of("job: {id: \"a\\nb\"}"),
             Contains("job.id: holds the control character 0x0a"));
}

// A section present without a value (`job:` and nothing under it, or --set job=) reset the whole
// section to its defaults, silently: job.id became psrt, checkpoints were not written.
TEST_CASE("a section with no value is refused, naming it", "[config]") {
  CHECK_THAT(error_of("job:\ncluster: {workers: 2}\n"),
             Catch::Contains("job: has no value"));
  CHECK_THAT(error_of("cluster: {workers: 2}\ncheckpoint: ~\n"),
             Catch::Contains("checkpoint: has no value"));
  CHECK_THAT(error_of("job: {id: x}\n", {"job="}), Catch::Contains("job: has no value"));
  // Left out: the defaults.
  CHECK(parse_config("cluster: {workers: 2}\n", "job.yaml").job.id == "psrt");
}

// A value out of range given by --set was reported as the file's ("job.yaml: job.iterations: ..."),
// sending the user to a file that did not hold it.
TEST_CASE("an error about a key a --set gave names the --set", "[config]") {
  CHECK_THAT(error_of("job: {iterations: 5}\n", {"job.iterations=-5"}),
             Catch::EndsWith("job.iterations: -5 is out of range [0, 1099511627776] "
                             "(from --set job.iterations=-5)"));
  CHECK_THAT(error_of("job: {iterations: -5}\n", {"cluster.workers=2"}),
             !Catch::Contains("--set"));  // the file's own key
  // The last --set of a key is the one in force; a key that only starts like it is another.
  CHECK_THAT(error_of("", {"cluster.workers=2", "cluster.workers=5000"}),
             Catch::EndsWith("(from --set cluster.workers=5000)"));
  CHECK_THAT(error_of("scheduler: {mode: foo}\n", {"scheduler.mod=1"}), !Catch::Contains("(from"));
}

TEST_CASE("a job file may start with a YAML directive", "[config]") {
  // "%YAML 1.2" before the first "---" was taken for content, and the marker for a second document.
  CHECK(parse_config("%YAML 1.2\n---\njob: {id: directed}\n", "job.yaml").job.id == "directed");
  CHECK_THAT(error_of("%YAML 1.2\n---\njob: {id: a}\n---\njob: {id: b}\n"),
             Catch::Contains("line 4 starts a second YAML document"));
}

TEST_CASE("replay workers that cannot fit this machine's memory together are named", "[config]") {
  // 1000 parameters with their gradients are 8000 bytes a worker.
  CHECK(replay_memory_problem("p.yaml", 1000, 1, 8000).empty());
  CHECK(replay_memory_problem("p.yaml", 1000, 4, 0).empty());  // nothing known
  CHECK_THAT(replay_memory_problem("p.yaml", 1000, 2, 8000),
             Catch::Contains("model.profile: p.yaml holds 1000 parameters") &&
                 Catch::Contains("for its 2 workers") && Catch::Contains("fewer workers here"));
  CHECK_THAT(replay_memory_problem("p.yaml", 1 << 20, 1, 1 << 20),
             Catch::Contains("8 MiB, over the 1 MiB") && !Catch::Contains("workers"));
}

TEST_CASE("shared settings name the first key two processes disagree on", "[config]") {
  const auto a = shared_settings(parse_config("optimizer: {type: adam, lr: 0.001}", "job.yaml"));
  const auto b = shared_settings(parse_config("optimizer: {type: adam, lr: 0.002}", "job.yaml"));
  CHECK(settings_difference(a, "server 0", a, "worker 1").empty());
  CHECK(settings_difference(a, "server 0", b, "worker 1") ==
        "optimizer.lr is 0.001 for server 0, 0.002 for worker 1");
  // A default and the same value written out are alike; a process that says none is not checked.
  CHECK(shared_settings(parse_config("job: {batch_size: 64}", "job.yaml")) ==
        shared_settings(parse_config("", "job.yaml")));
  CHECK(settings_difference({}, "server 0", b, "worker 1").empty());
  // Per-host keys may differ.
  CHECK(shared_settings(parse_config("data: {train_limit: 100}\ntimeline: /tmp/x", "job.yaml")) ==
        shared_settings(parse_config("", "job.yaml")));
  // A list that is shorter: the missing line is named as not said.
  auto shorter = a;
  shorter.pop_back();
  CHECK_THAT(settings_difference(a, "server 0", shorter, "worker 1"),
             Catch::Contains("for server 0, (not said) for worker 1"));
}
