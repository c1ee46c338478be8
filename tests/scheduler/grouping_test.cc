// GradOptimizer's groupings without simulation (scheduler/grouping.h) and the grouping spec.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "core/grouping_spec.h"
#include "scheduler/grouping.h"
#include "tests/sim/sim_test_util.h"

using namespace psrt;

namespace {

// One tensor per layer, `elements` each; backward takes `backward_ms` per layer.
ModelDesc model_of(const std::vector<uint64_t>& elements, double backward_ms = 1) {
  std::vector<sim::test::LayerSpec> specs;
  for (uint64_t e : elements) specs.push_back({0, backward_ms, {e}});
  return sim::test::make_model(specs);
}

}  // namespace

TEST_CASE("grouping specs parse and print back", "[grouping]") {
  for (const char* ok : {"none", "auto", "mgwfbp", "size:65536", "ddp:26214400:1048576"}) {
    const auto s = parse_grouping(ok);
    REQUIRE(s);
    CHECK(s->text() == ok);
  }
  CHECK(parse_grouping("size:4MiB")->bytes == 4u << 20);
  CHECK(parse_grouping("horovod:64MiB:5ms")->cycle_ms == 5.0);
  CHECK(parse_grouping("horovod:64MiB:5")->bytes == 64u << 20);
  CHECK(parse_grouping("horovod:64MiB:1000ms")->cycle_ms == 1000.0);
  std::string why;
  for (const char* bad : {"", "size", "size:", "size:-1", "size:1.5", "ddp:1MiB", "horovod:1MiB:x",
                          "Auto", "none:1", "size:4MiB:1", "horovod:1MiB:1001ms",
                          "horovod:1MiB:-1"}) {
    CHECK_FALSE(parse_grouping(bad, &why));
    CHECK_THAT(why, Catch::Contains("size:BYTES"));
  }
}

TEST_CASE("groupings are runs of consecutive keys closed in backward order", "[grouping]") {
  CHECK_THROWS_AS(Grouping::from_starts({1, 2}, 4), std::invalid_argument);
  CHECK_THROWS_AS(Grouping::from_starts({0, 2, 2}, 4), std::invalid_argument);
  CHECK_THROWS_AS(Grouping::from_starts({0, 4}, 4), std::invalid_argument);
  const auto g = Grouping::from_starts({0, 2}, 4);
  CHECK(g.num_groups() == 2);
  CHECK(g.group_of(1) == 0);
  CHECK(g.group_of(3) == 1);
  CHECK(g.end(1) == 4);

  // Bytes: 400, 40, 40, 400, 4 (keys 0..4); backward order 4, 3, 2, 1, 0.
  const auto m = model_of({100, 10, 10, 100, 1});
  // size:44 closes after key 3 (404 bytes), after 1 (80), then 0 alone.
  CHECK(static_grouping(m, *parse_grouping("size:44")).starts() == std::vector<uint32_t>{0, 1, 3});
  // ddp: the first bucket closes at 4 bytes (key 4 alone), then at 400 (key 3; keys 2-0 are
  // the last bucket).
  CHECK(static_grouping(m, *parse_grouping("ddp:400:4")).starts() ==
        std::vector<uint32_t>{0, 3, 4});
  CHECK(static_grouping(m, *parse_grouping("none")).num_groups() == 5);
  CHECK_THROWS_AS(static_grouping(m, *parse_grouping("auto")), std::invalid_argument);
}

TEST_CASE("horovod fuses what becomes ready within one cycle", "[grouping]") {
  // Backward 1 ms per layer: key 4 ready at 1 ms, key 3 at 2, ..., key 0 at 5.
  const auto m = model_of({10, 10, 10, 10, 10});
  CHECK(backward_ready_ms(m) == std::vector<double>{5, 4, 3, 2, 1});
  // 2 ms cycles: ticks at 2 (keys 4, 3), 4 (keys 2, 1), 6 (key 0).
  CHECK(static_grouping(m, *parse_grouping("horovod:1MiB:2")).starts() ==
        std::vector<uint32_t>{0, 1, 3});
  // The threshold (120 bytes) splits a cycle's tensors too.
  CHECK(static_grouping(m, *parse_grouping("horovod:120:10")).starts() ==
        std::vector<uint32_t>{0, 2});
}

TEST_CASE("message plans pack a group's small chunks per server, large tensors stay chunked",
          "[grouping]") {
  // Keys: 0 (4 KiB), 1 (16 KiB: four 4 KiB chunks), 2 (4 KiB), 3 (4 KiB); one server.
  const auto m = model_of({1024, 4096, 1024, 1024});
  const ShardMap shards(m, 1, 4096);
  REQUIRE(shards.chunks().size() == 7);
  const MessagePlan alone(shards, Grouping::singletons(4));
  CHECK(alone.messages().size() == 7);
  for (const auto& msg : alone.messages()) CHECK(msg.chunks.size() == 1);

  const MessagePlan grouped(shards, Grouping::from_starts({0}, 4));
  REQUIRE(grouped.num_groups() == 1);
  // Key 1's four chunks alone, keys 0, 2 and 3 in one message.
  std::size_t packed = 0, single = 0;
  for (const auto& msg : grouped.messages()) {
    if (msg.chunks.size() == 3) {
      ++packed;
      CHECK(msg.bytes == 3 * 4096);
    } else {
      ++single;
      CHECK(shards.chunks()[msg.chunks[0]].key == 1);
    }
  }
  CHECK(packed == 1);
  CHECK(single == 4);

  // Two servers: each server's share is its own message.
  const ShardMap two(model_of({1024, 1024, 1024, 1024}), 2, 4096);
  const MessagePlan per_server(two, Grouping::from_starts({0}, 4));
  CHECK(per_server.messages().size() == 2);
  CHECK(per_server.messages()[0].server != per_server.messages()[1].server);

  // Messages hold at most half the push credit: under 16 KiB of credit the four 4 KiB tensors
  // of one server go two by two, in key order.
  CHECK(group_message_bytes(16384) == 8192);
  CHECK(group_message_bytes(64u << 20) == kMaxGroupBytes);
  const ShardMap one(model_of({1024, 1024, 1024, 1024}), 1, 4096);
  const MessagePlan halves(one, Grouping::from_starts({0}, 4), group_message_bytes(16384));
  REQUIRE(halves.messages().size() == 2);
  CHECK(halves.messages()[0].chunks == std::vector<uint32_t>{0, 1});
  CHECK(halves.messages()[1].chunks == std::vector<uint32_t>{2, 3});
  // A limit below one member still sends every member, one per message.
  CHECK(MessagePlan(one, Grouping::from_starts({0}, 4), 100).messages().size() == 4);
}
