// Group messages (GradOptimizer, scheduler/grouping.h) against a real psrt-server, driven by a raw
// client posing as worker 0: a correct group push is acknowledged once and answered with one
// group PARAMS holding exactly the optimizer's values; every kind of bad group gets an ERROR
// naming what was wrong, none of its members is taken, and the server carries on.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "tests/integration/raw_job.h"

using namespace psrt;
using namespace psrt::test;

namespace {

const std::vector<uint64_t> kSizes{10, 30, 3000};  // fifo, one server: one chunk per tensor
constexpr float kLr = 0.5f;

struct Group {
  wire::Header header;
  std::vector<std::vector<float>> grads;  // by member
  std::vector<zmq::message_t> frames() const {
    std::vector<zmq::message_t> out;
    for (const auto& g : grads) out.emplace_back(g.data(), g.size() * sizeof(float));
    return out;
  }
};

// A correct group push of `keys` (whole tensors) for `iteration` with seeded gradients.
Group group_push(RawClient& w, const std::vector<uint32_t>& keys, uint64_t iteration,
                 std::mt19937& rng) {
  Group g;
  uint64_t elements = 0;
  for (uint32_t k : keys) g.grads.push_back(dyadic(kSizes[k], rng));
  g.header = w.tensor(wire::PUSH, keys[0], 0, kSizes[keys[0]], iteration, &g.grads[0]);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto* m = g.header.add_members();
    m->set_key(keys[i]);
    m->set_offset(0);
    m->set_length(kSizes[keys[i]]);
    m->set_payload_bytes(kSizes[keys[i]] * 4);
    m->set_codec(wire::CODEC_NONE);
    elements += kSizes[keys[i]];
  }
  g.header.set_num_elements(elements);
  g.header.set_payload_bytes(elements * 4);
  return g;
}

// Sends `g`, expects one ACK and one group PARAMS with p - lr * g for every member.
void group_round(RawClient& w, const Group& g, std::vector<std::vector<float>>& params) {
  w.send(g.header, g.frames());
  const Reply ack = expect(w, wire::ACK);
  CHECK(ack.header.seq() == g.header.seq());
  CHECK(ack.header.num_elements() == g.header.payload_bytes());  // bytes acknowledged
  const Reply p = expect(w, wire::PARAMS);
  CHECK(p.header.iteration() == g.header.iteration() + 1);
  REQUIRE(p.header.members_size() == g.header.members_size());
  REQUIRE(p.payload.size() == g.grads.size());
  for (int i = 0; i < p.header.members_size(); ++i) {
    const uint32_t key = g.header.members(i).key();
    CHECK(p.header.members(i).key() == key);
    auto& values = params[key];
    for (std::size_t e = 0; e < values.size(); ++e) values[e] -= kLr * g.grads[std::size_t(i)][e];
    CHECK(floats_of(p.payload[std::size_t(i)]) == values);
  }
  wire::Header back = w.tensor(wire::ACK, p.header.key(), p.header.offset(), p.header.length(),
                               p.header.iteration());
  back.set_seq(p.header.seq());
  w.send(back);
}

}  // namespace

TEST_CASE("group pushes get one ACK and one grouped reply, and bad groups are refused whole",
          "[integration][malformed][grouping]") {
  ServerProc s(raw_job_yaml());
  zmq::context_t ctx(1);
  RawClient w(ctx, s.endpoint, "w0", Sender{wire::WORKER, 0, "rawjob"});
  std::mt19937 rng(77);
  auto params = start_job(w, rng, kSizes);
  group_round(w, group_push(w, {0, 1, 2}, 0, rng), params);

  auto refused = [&](Group g, ErrorCode code, const char* says) {
    w.send(g.header, g.frames());
    CHECK_THAT(expect_error(w, code), Catch::Contains(says));
  };
  SECTION("a member for an unknown tensor") {
    Group g = group_push(w, {0, 1}, 1, rng);
    g.header.mutable_members(1)->set_key(9);
    refused(g, ErrorCode::kUnknownChunk, "group member 1");
  }
  SECTION("a member named twice") {
    refused(group_push(w, {0, 1, 1}, 1, rng), ErrorCode::kMalformed, "twice");
  }
  SECTION("frames and members disagree") {
    Group g = group_push(w, {0, 1, 2}, 1, rng);
    g.grads.pop_back();
    g.header.set_payload_bytes(40 * 4);
    refused(g, ErrorCode::kBadSize, "3 members with 2 payload frames");
    g = group_push(w, {0, 1}, 1, rng);
    g.header.mutable_members(1)->set_payload_bytes(8);
    refused(g, ErrorCode::kBadSize, "group member 1");
    g = group_push(w, {1}, 1, rng);
    refused(g, ErrorCode::kMalformed, "2 to 256 members");
    g = group_push(w, {0, 1}, 1, rng);
    g.header.set_num_elements(41);
    refused(g, ErrorCode::kMalformed, "40 elements");
    g = group_push(w, {0, 1}, 1, rng);
    g.header.set_key(1);
    g.header.set_length(30);
    refused(g, ErrorCode::kMalformed, "first member");
  }
  SECTION("one member out of step or non-finite: none is taken") {
    Group g = group_push(w, {0, 1, 2}, 1, rng);
    g.grads[2][5] = std::numeric_limits<float>::quiet_NaN();
    refused(g, ErrorCode::kNonFinite, "group member 2");
    g = group_push(w, {0, 1, 2}, 0, rng);  // iteration 0 is over
    refused(g, ErrorCode::kOutOfStep, "group member 0");
  }
  still_running(s);
  // Nothing of the refused groups was counted: the next correct one gives exact values.
  group_round(w, group_push(w, {0, 1, 2}, 1, rng), params);
  group_round(w, group_push(w, {0, 1, 2}, 2, rng), params);
  shutdown_and_exit(w, s);
}
