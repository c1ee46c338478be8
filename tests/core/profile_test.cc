#include <catch2/catch.hpp>

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
}
