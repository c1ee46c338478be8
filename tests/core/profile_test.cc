#include <catch2/catch.hpp>

#include "core/model.h"
#include "core/profile.h"
#include "core/status.h"

using psrt::ConfigError;
using psrt::parse_profile;

TEST_CASE("profile gives keys in forward order and scales sizes and times together", "[core]") {
  const char* text = R"(
name: tiny
scale: 1.0
layers:
  - name: a
    forward_ms: 2
    backward_ms: 4
    tensors: [{name: a.w, elements: 1000}, {name: a.b, elements: 10}]
  - name: relu
    forward_ms: 1
  - name: b
    backward_ms: 8
    tensors: [{name: b.w, elements: 500}]
)";
  auto m = parse_profile(text, "tiny.yaml");
  REQUIRE(m.tensors.size() == 3);
  REQUIRE(m.layers.size() == 3);
  CHECK(m.tensors[2].name == "b.w");
  CHECK(m.tensors[2].key == 2);
  CHECK(m.tensors[2].layer == 2);
  CHECK(m.total_elements() == 1510);
  CHECK(m.compute_ms() == Approx(15.0));

  auto half = parse_profile(text, "tiny.yaml", 0.5);
  CHECK(half.tensors[0].num_elements == 500);
  CHECK(half.tensors[1].num_elements == 5);
  CHECK(half.compute_ms() == Approx(7.5));
  // The factor is recorded (GradOptimizer scales its full-size baselines by it): the argument's,
  // or the file's where the argument is 0.
  CHECK(m.scale == 1.0);
  CHECK(half.scale == 0.5);
  std::string quarter_text = text;
  quarter_text.replace(quarter_text.find("scale: 1.0"), 10, "scale: 0.25");
  const auto quarter = parse_profile(quarter_text, "tiny.yaml");
  CHECK(quarter.scale == 0.25);
  CHECK(quarter.tensors[0].num_elements == 250);
}

TEST_CASE("profile errors name the file and the key", "[core]") {
  CHECK_THROWS_WITH(parse_profile("name: x\n", "p.yaml"), Catch::Contains("p.yaml: layers"));
  CHECK_THROWS_WITH(parse_profile("layers: [{name: a, tensors: [{name: w}]}]\n", "p.yaml"),
                    Catch::Contains("elements"));
  CHECK_THROWS_WITH(parse_profile("layers: [{name: a, forward_ms: -1}]\n", "p.yaml"),
                    Catch::Contains("layers[0].forward_ms"));
  CHECK_THROWS_WITH(parse_profile("layers: [{name: a, colour: red}]\n", "p.yaml"),
                    Catch::Contains("layers[0].colour: unknown key"));
  CHECK_THROWS_AS(parse_profile("layers: [", "p.yaml"), ConfigError);
  // A name that is not UTF-8 would not come back the same from profile_yaml (found by fuzz_model).
  CHECK_THROWS_WITH(parse_profile("name: \"t\xff\"\nlayers: [{name: a, tensors: [{name: w, "
                                  "elements: 1}]}]\n",
                                  "p.yaml"),
                    Catch::Contains("name: is not valid UTF-8"));
  // Nor would a carriage return: yaml-cpp writes it as it is, which reads back as a line break
  // and so no name at all (found by fuzz_model in the suite).
  CHECK_THROWS_WITH(parse_profile("layers: [{name: \"a\\r\", tensors: [{elements: 1}]}]\n",
                                  "p.yaml"),
                    Catch::Contains("layers[0].name: holds the control character 0x0d"));
  // A folder, a device or nothing at all: named, not "basic_filebuf::underflow error".
  CHECK_THROWS_WITH(psrt::load_profile("/tmp", 1.0),
                    Catch::Contains("/tmp: not a regular file; a model profile (model.profile"));
  CHECK_THROWS_WITH(psrt::load_profile("/dev/zero", 1.0), Catch::Contains("not a regular file"));
  CHECK_THROWS_WITH(psrt::load_profile("/no/such.yaml", 1.0), Catch::Contains("no such file"));
  // Two tensors of one name (accepted: they named nothing unambiguously in logs and plans).
  CHECK_THROWS_WITH(parse_profile("layers: [{name: a, tensors: [{name: w, elements: 1}]}, "
                                  "{name: b, tensors: [{name: w, elements: 2}]}]\n",
                                  "p.yaml"),
                    Catch::Contains("layers[1].tensors[0].name: names another tensor already"));
  // A layer's name in the error line has its control characters replaced (a NUL went out raw).
  CHECK_THROWS_WITH(parse_profile(std::string("layers: [{name: \"x\\0y\", forward_ms: -1}]\n"),
                                  "p.yaml"),
                    !Catch::Contains(std::string(1, '\0')));
}

TEST_CASE("profile sizes that would overflow are refused, never wrapped", "[core]") {
  // 2^63 - 1 elements once became a 1-element tensor (the scaled size overflowed llround).
  CHECK_THROWS_WITH(
      parse_profile("layers: [{name: a, tensors: [{elements: 9223372036854775807}]}]\n", "p.yaml"),
      Catch::Contains("layers[0].tensors[0].elements"));
  CHECK_THROWS_WITH(
      parse_profile("layers: [{name: a, activation_elements: 9223372036854775807, "
                    "tensors: [{elements: 4}]}]\n",
                    "p.yaml"),
      Catch::Contains("layers[0].activation_elements"));
  // A scale so small that every tensor is one element and every time nothing.
  const std::string one = "layers: [{name: a, forward_ms: 1, tensors: [{elements: 1000}]}]\n";
  CHECK_THROWS_WITH(parse_profile(one, "p.yaml", 1e-300), Catch::Contains("1e-300 is below 1e-06"));
  CHECK_THROWS_WITH(parse_profile("scale: 1e-12\n" + one, "p.yaml"), Catch::Contains("scale"));
  CHECK(parse_profile(one, "p.yaml", 1e-3).tensors[0].num_elements == 1);
  // Within the limit, but not once scaled.
  CHECK_THROWS_WITH(
      parse_profile("scale: 4\nlayers: [{name: a, tensors: [{elements: 1099511627776}]}]\n",
                    "p.yaml"),
      Catch::Contains("times the scale"));
  // Each tensor within the limit, their sum over it.
  std::string many = "layers:\n";
  for (int i = 0; i < 3; ++i) {
    many += "  - {name: l" + std::to_string(i) + ", tensors: [{elements: 549755813888}]}\n";
  }
  CHECK_THROWS_WITH(parse_profile(many, "p.yaml"),
                    Catch::Contains("p.yaml: the profile's tensors"));
  const psrt::ModelDesc at_limit = parse_profile(
      "layers: [{name: a, tensors: [{elements: 1099511627776}]}]\n", "p.yaml");
  CHECK(at_limit.tensors[0].num_elements == psrt::kMaxElements);
}

TEST_CASE("profile inputs default to the previous layer and may name any layers", "[core]") {
  const char* text = R"(
name: diamond
layers:
  - {name: a, tensors: [{name: a.w, elements: 4}], activation_elements: 10}
  - {name: b, activation_elements: 5}
  - {name: c, inputs: [a], activation_elements: 6}
  - {name: d, inputs: [b, c]}
  - {name: side, inputs: [input]}
)";
  auto m = parse_profile(text, "d.yaml");
  REQUIRE(m.layers.size() == 5);
  CHECK(m.layers[0].reads_input);
  CHECK(m.layers[0].inputs.empty());
  CHECK(m.layers[1].inputs == std::vector<uint32_t>{0});
  CHECK(m.layers[2].inputs == std::vector<uint32_t>{0});
  CHECK(m.layers[3].inputs == std::vector<uint32_t>{1, 2});
  CHECK(m.layers[4].reads_input);
  CHECK(m.layers[4].inputs.empty());
  CHECK(m.layers[2].activation_elements == 6);
  CHECK(psrt::topological_order(m, "d.yaml") == std::vector<uint32_t>{0, 1, 2, 3, 4});
}

TEST_CASE("profile graph errors name the file and the layer", "[core]") {
  CHECK_THROWS_WITH(
      parse_profile("layers: [{name: a, tensors: [{name: w, elements: 1}]}, "
                    "{name: b, inputs: [nope]}]\n",
                    "g.yaml"),
      Catch::Contains("g.yaml") && Catch::Contains("layer 'b'") && Catch::Contains("'nope'"));
  CHECK_THROWS_WITH(
      parse_profile("layers: [{name: a, inputs: [c], tensors: [{name: w, elements: 1}]}, "
                    "{name: b}, {name: c}]\n",
                    "g.yaml"),
      Catch::Contains("g.yaml") && Catch::Contains("cycle") && Catch::Contains("layer 'a'"));
  CHECK_THROWS_WITH(
      parse_profile("layers: [{name: a, inputs: [a], tensors: [{name: w, elements: 1}]}]\n",
                    "g.yaml"),
      Catch::Contains("g.yaml") && Catch::Contains("layer 'a'"));
  CHECK_THROWS_WITH(
      parse_profile("layers: [{name: a, tensors: [{name: w, elements: 1}]}, "
                    "{name: big, activation_elements: -3}]\n",
                    "g.yaml"),
      Catch::Contains("g.yaml") && Catch::Contains("activation_elements") &&
          Catch::Contains("layer 'big'"));
  CHECK_THROWS_WITH(
      parse_profile("layers: [{name: a, tensors: [{name: w, elements: -1}]}]\n", "g.yaml"),
      Catch::Contains("g.yaml") && Catch::Contains("layer 'a'"));
  CHECK_THROWS_WITH(parse_profile("layers: [{name: a}, {name: a}]\n", "g.yaml"),
                    Catch::Contains("used twice"));
}

TEST_CASE("shipped profiles are graphs: ResNet skips, Inception branches, GNMT", "[core]") {
  const std::string dir = std::string(PSRT_SOURCE_DIR) + "/bench/profiles/";
  auto index = [](const psrt::ModelDesc& m, const std::string& name) {
    for (uint32_t i = 0; i < m.layers.size(); ++i) {
      if (m.layers[i].name == name) return i;
    }
    FAIL("no layer " << name);
    return 0u;
  };
  const auto resnet = psrt::load_profile(dir + "resnet50.yaml");
  CHECK(resnet.total_elements() == 25557032);
  const auto& add = resnet.layers[index(resnet, "layer1.1.add")];
  CHECK(add.inputs ==
        std::vector<uint32_t>{index(resnet, "layer1.1.conv3"), index(resnet, "layer1.0.add")});
  const auto inception = psrt::load_profile(dir + "inception_v3.yaml");
  CHECK(inception.layers[index(inception, "Mixed_5c.concat")].inputs.size() == 4);
  CHECK(inception.layers[index(inception, "Mixed_5c.branch5x5_1")].inputs ==
        std::vector<uint32_t>{index(inception, "Mixed_5b.concat")});
  const auto gnmt = psrt::load_profile(dir + "gnmt.yaml");
  int lstms = 0;
  for (const auto& l : gnmt.layers) lstms += l.kind == "lstm";
  CHECK(lstms == 16);
  CHECK(gnmt.layers[index(gnmt, "dec.embedding")].reads_input);
  CHECK(gnmt.tensors[gnmt.layers[0].tensors[0]].num_elements == 32000ull * 1024);
  for (const char* f : {"vgg16", "lenet5", "mlp"}) {
    const auto m = psrt::load_profile(dir + f + ".yaml");
    for (uint32_t i = 1; i < m.layers.size(); ++i) CHECK(m.layers[i].inputs == std::vector{i - 1});
  }
}

TEST_CASE("a model written as a profile reads back the same", "[core]") {
  const std::string dir = std::string(PSRT_SOURCE_DIR) + "/bench/profiles/";
  for (const char* name : {"gnmt.yaml", "resnet50.yaml"}) {
    INFO(name);
    const psrt::ModelDesc m = psrt::load_profile(dir + name);
    const psrt::ModelDesc back = parse_profile(psrt::profile_yaml(m), "written");
    CHECK(back.name == m.name);
    CHECK(back.batch_size == m.batch_size);
    CHECK(back.device_gflops == m.device_gflops);
    REQUIRE(back.layers.size() == m.layers.size());
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
      const auto &a = m.layers[i], &b = back.layers[i];
      CHECK(b.name == a.name);
      CHECK(b.kind == a.kind);
      CHECK(b.forward_ms == a.forward_ms);
      CHECK(b.backward_ms == a.backward_ms);
      CHECK(b.forward_flops == a.forward_flops);
      CHECK(b.activation_elements == a.activation_elements);
      CHECK(b.inputs == a.inputs);
      CHECK(b.tensors == a.tensors);
    }
    REQUIRE(back.tensors.size() == m.tensors.size());
    for (std::size_t k = 0; k < m.tensors.size(); ++k) {
      CHECK(back.tensors[k].name == m.tensors[k].name);
      CHECK(back.tensors[k].num_elements == m.tensors[k].num_elements);
    }
  }
}

TEST_CASE("a scaled model written as a profile keeps its scale without scaling again", "[core]") {
  const std::string dir = std::string(PSRT_SOURCE_DIR) + "/bench/profiles/";
  const psrt::ModelDesc m = psrt::load_profile(dir + "resnet50.yaml", 0.01);
  const std::string text = psrt::profile_yaml(m);
  CHECK_THAT(text, Catch::Contains("scaled_by"));
  const psrt::ModelDesc back = parse_profile(text, "written");
  CHECK(back.scale == m.scale);  // GradOptimizer's baselines are scaled alike
  REQUIRE(back.tensors.size() == m.tensors.size());
  for (std::size_t k = 0; k < m.tensors.size(); ++k) {
    CHECK(back.tensors[k].num_elements == m.tensors[k].num_elements);
  }
  CHECK(back.layers[0].forward_ms == m.layers[0].forward_ms);
  // A further scale applies to the written sizes, and the record is the product.
  const psrt::ModelDesc half = parse_profile(text, "written", 0.5);
  CHECK(half.scale == 0.5 * m.scale);
  CHECK(half.layers[0].forward_ms == 0.5 * m.layers[0].forward_ms);
  // A full-size model writes no scaled_by, and a bad one is refused.
  CHECK_THAT(psrt::profile_yaml(psrt::load_profile(dir + "lenet5.yaml")),
             !Catch::Contains("scaled_by"));
  CHECK_THROWS_WITH(parse_profile("scaled_by: -1\nlayers: [{name: a, tensors: [{elements: 4}]}]\n",
                                  "p.yaml"),
                    Catch::Contains("scaled_by"));
}

