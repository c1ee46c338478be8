#include <catch2/catch.hpp>

#include <algorithm>

#include "core/sharding.h"

using psrt::ModelDesc;
using psrt::ShardMap;

namespace {

// VGG-16's parameter tensors (13 conv + 3 fc, weights and biases): 138,357,544 parameters.
ModelDesc vgg16_params() {
  ModelDesc m;
  const int convs[][2] = {{3, 64},    {64, 64},   {64, 128},  {128, 128}, {128, 256},
                          {256, 256}, {256, 256}, {256, 512}, {512, 512}, {512, 512},
                          {512, 512}, {512, 512}, {512, 512}};
  int i = 0;
  for (const auto& c : convs) {
    const std::string n = "conv" + std::to_string(i++);
    m.add_layer({n, "conv2d", {}},
                {{n + ".weight", uint64_t(c[0]) * c[1] * 9}, {n + ".bias", uint64_t(c[1])}});
  }
  m.add_layer({"fc6", "linear", {}}, {{"fc6.weight", 25088ull * 4096}, {"fc6.bias", 4096}});
  m.add_layer({"fc7", "linear", {}}, {{"fc7.weight", 4096ull * 4096}, {"fc7.bias", 4096}});
  m.add_layer({"fc8", "linear", {}}, {{"fc8.weight", 4096ull * 1000}, {"fc8.bias", 1000}});
  return m;
}

}  // namespace

TEST_CASE("sharding balances bytes over servers on VGG-16", "[core]") {
  const ModelDesc m = vgg16_params();
  REQUIRE(m.total_elements() == 138357544ull);
  for (uint32_t servers : {2u, 3u, 4u, 8u}) {
    for (uint64_t chunk : {1ull << 20, 4ull << 20, 16ull << 20}) {
      ShardMap map(m, servers, chunk);
      const auto& b = map.server_bytes();
      const double ratio = double(*std::max_element(b.begin(), b.end())) /
                           double(*std::min_element(b.begin(), b.end()));
      INFO("servers " << servers << " chunk " << chunk);
      CHECK(ratio <= 1.1);
      uint64_t total = 0;
      for (auto x : b) total += x;
      CHECK(total == m.total_bytes());
    }
  }
}

TEST_CASE("chunks tile each tensor exactly and respect chunk_bytes", "[core]") {
  const ModelDesc m = vgg16_params();
  ShardMap map(m, 3, 1 << 20);
  for (const auto& t : m.tensors) {
    uint64_t next = 0;
    for (uint32_t id : map.tensor_chunks(t.key)) {
      const auto& c = map.chunks()[id];
      CHECK(c.offset == next);
      CHECK(c.bytes() <= (1u << 20));
      CHECK(c.length > 0);
      CHECK(map.find(t.key, c.offset) == &c);
      next += c.length;
    }
    CHECK(next == t.num_elements);
  }
  CHECK(map.find(0, 1) == nullptr);
  CHECK(map.find(999, 0) == nullptr);
}

TEST_CASE("a shard map rebuilt from its chunk list is the same", "[core]") {
  const ModelDesc m = vgg16_params();
  ShardMap a(m, 4, 4 << 20);
  auto list = a.chunks();
  std::reverse(list.begin(), list.end());
  ShardMap b(list, a.num_tensors(), 4);
  REQUIRE(b.chunks().size() == a.chunks().size());
  for (std::size_t i = 0; i < a.chunks().size(); ++i) {
    CHECK(b.chunks()[i].key == a.chunks()[i].key);
    CHECK(b.chunks()[i].offset == a.chunks()[i].offset);
    CHECK(b.chunks()[i].server == a.chunks()[i].server);
  }
  CHECK(b.server_bytes() == a.server_bytes());
}
