// Group messages (GradOptimizer, scheduler/grouping.h) against a real psrt-server, driven by a raw
// client posing as worker 0: a correct group push is acknowledged once and answered with one
// group PARAMS holding exactly the optimizer's values; every kind of bad group gets an ERROR
// naming what was wrong, none of its members is taken, and the server carries on.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>

#include "core/group_frames.h"
#include "tests/integration/raw_group.h"
#include "tests/integration/raw_job.h"

using namespace psrt;
using namespace psrt::test;

namespace {

const std::vector<uint64_t> kSizes{10, 30, 3000};  // fifo, one server: one chunk per tensor
constexpr float kLr = 0.5f;

using Group = RawGroup;

Group group_push(RawClient& w, const std::vector<uint32_t>& keys, uint64_t iteration,
                 std::mt19937& rng) {
  return psrt::test::group_push(w, kSizes, keys, iteration, rng);
}

void check_reply(RawClient& w, const Group& g, const Reply& p,
                 std::vector<std::vector<float>>& params);

// Sends `g`, expects one ACK and one group PARAMS with p - lr * g for every member.
void group_round(RawClient& w, const Group& g, std::vector<std::vector<float>>& params) {
  w.send(g.header, g.frames());
  const Reply ack = expect(w, wire::ACK);
  CHECK(ack.header.seq() == g.header.seq());
  CHECK(ack.header.num_elements() == g.header.payload_bytes());  // bytes acknowledged
  check_reply(w, g, expect(w, wire::PARAMS), params);
}

// Sends `g` as a batch (Header.batch): every member completes its chunk in the server's I/O
// thread, so no ACK comes alone; the replies, ready together, come as one PARAMS that carries it.
void batch_round(RawClient& w, Group g, std::vector<std::vector<float>>& params) {
  g.header.set_batch(true);
  w.send(g.header, g.frames());
  check_reply(w, g, expect_params_acking(w, g.header.seq()), params);
}

// `p` holds p - lr * g for every member of `g`; acknowledges it.
void check_reply(RawClient& w, const Group& g, const Reply& p,
                 std::vector<std::vector<float>>& params) {
  CHECK(p.header.iteration() == g.header.iteration() + 1);
  REQUIRE(p.header.members_size() == g.header.members_size());
  // The members are small: the server packs them into one frame.
  REQUIRE(p.payload.size() == 1);
  std::vector<std::span<const uint8_t>> bytes;
  member_payloads(p.header, p.payload, bytes);
  for (int i = 0; i < p.header.members_size(); ++i) {
    // The reply's members in the chunks' order, whatever the push's order.
    const uint32_t key = p.header.members(i).key();
    int pushed = 0;
    while (pushed < g.header.members_size() && g.header.members(pushed).key() != key) ++pushed;
    REQUIRE(pushed < g.header.members_size());
    CHECK(p.header.members(i).frame() == 0);
    auto& values = params[key];
    const auto& grad = g.grads[std::size_t(pushed)];
    for (std::size_t e = 0; e < values.size(); ++e) values[e] -= kLr * grad[e];
    const auto& b = bytes[std::size_t(i)];
    REQUIRE(b.size() == values.size() * sizeof(float));
    std::vector<float> got(values.size());
    std::memcpy(got.data(), b.data(), b.size());
    CHECK(got == values);
  }
  wire::Header back = w.tensor(wire::ACK, p.header.key(), p.header.offset(), p.header.length(),
                               p.header.iteration());
  back.set_seq(p.header.seq());
  w.send(back);
}

// A psrt-server of the raw job, a raw client started as worker 0, the seeded gradients and the
// parameters the client tracks.
struct GroupJob {
  explicit GroupJob(unsigned seed)
      : s(raw_job_yaml()),
        ctx(1),
        w(ctx, s.endpoint, "w0", Sender{wire::WORKER, 0, "rawjob"}),
        rng(seed),
        params(start_job(w, rng, kSizes)) {}
  auto parts() { return std::tie(s, w, rng, params); }
  ServerProc s;
  zmq::context_t ctx;
  RawClient w;
  std::mt19937 rng;
  std::vector<std::vector<float>> params;
};

}  // namespace

TEST_CASE("group pushes get one ACK and one grouped reply, and bad groups are refused whole",
          "[integration][malformed][grouping]") {
  GroupJob job(77);
  auto [s, w, rng, params] = job.parts();
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
    refused(g, ErrorCode::kBadSize, "group member 2 (tensor 2): claims 12000 bytes, frame 2");
    g = group_push(w, {0, 1, 2}, 1, rng);
    g.header.mutable_members(1)->set_frame(0);
    g.header.mutable_members(2)->set_frame(1);
    g.header.set_payload_bytes(g.header.payload_bytes() + 4);
    auto frames = g.frames();
    frames.emplace_back(4);  // a frame no member names
    w.send(g.header, std::move(frames));
    CHECK_THAT(expect_error(w, ErrorCode::kBadSize),
               Catch::Contains("fill 2 of its 3 payload frames"));
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
  SECTION("packed frames: members out of order, or not filling their frame") {
    Group g = group_push(w, {0, 1, 2}, 1, rng);
    g.header.mutable_members(1)->set_frame(0);
    g.header.mutable_members(2)->set_frame(2);  // skips frame 1 (sent empty)
    refused(g, ErrorCode::kMalformed, "group member 2 (tensor 2): in frame 2 after frame 0");
    g = group_push(w, {0, 1, 2}, 1, rng);
    g.header.mutable_members(0)->set_frame(1);
    g.header.mutable_members(1)->set_frame(0);  // back to an earlier frame
    refused(g, ErrorCode::kMalformed, "group member 0");
    g = group_push(w, {0, 1, 2}, 1, rng).packed();
    g.grads[2].push_back(0.5f);  // 4 bytes more than the members claim
    g.header.set_payload_bytes(g.header.payload_bytes() + 4);
    refused(g, ErrorCode::kBadSize, "the last with 12160 of 12164 bytes");
    g = group_push(w, {0, 1, 2}, 1, rng).packed();
    g.grads[2].pop_back();  // 4 bytes fewer
    g.header.set_payload_bytes(g.header.payload_bytes() - 4);
    refused(g, ErrorCode::kBadSize,
            "group member 2 (tensor 2): claims 12000 bytes, frame 0 has 11996 left");
    g = group_push(w, {0, 1, 2}, 1, rng);
    g.header.mutable_members(2)->set_frame(1);
    g.grads[1].pop_back();  // member 1 claims 4 bytes more than it put in: member 2 overruns
    g.header.set_payload_bytes(g.header.payload_bytes() - 4);
    refused(g, ErrorCode::kBadSize,
            "group member 2 (tensor 2): claims 12000 bytes, frame 1 has 11996 left");
  }
  SECTION("one member out of step or non-finite: none is taken") {
    Group g = group_push(w, {0, 1, 2}, 1, rng);
    g.grads[2][5] = std::numeric_limits<float>::quiet_NaN();
    refused(g, ErrorCode::kNonFinite, "group member 2");
    g = group_push(w, {0, 1, 2}, 0, rng);  // iteration 0 is over
    refused(g, ErrorCode::kOutOfStep, "group member 0");
  }
  still_running(s);
  // Nothing of the refused groups was counted: the next correct one gives exact values, with
  // its members in a frame each or packed into one.
  group_round(w, group_push(w, {0, 1, 2}, 1, rng), params);
  group_round(w, group_push(w, {0, 1, 2}, 2, rng).packed(), params);
  group_round(w, group_push(w, {2, 0}, 3, rng).packed(), params);
  shutdown_and_exit(w, s);
}

TEST_CASE("batched pushes: each member as if pushed alone, the ACK riding on the replies",
          "[integration][malformed][grouping]") {
  GroupJob job(78);
  auto [s, w, rng, params] = job.parts();
  batch_round(w, group_push(w, {2, 0, 1}, 0, rng).packed(), params);
  batch_round(w, group_push(w, {0, 1}, 1, rng), params);  // a frame each
  // Tensor 2 alone at iteration 1, then with the others at 2: each member keeps its own step.
  Group two = group_push(w, {2, 0}, 1, rng);
  two.header.clear_members();
  two.grads.resize(1);
  two.header.set_num_elements(kSizes[2]);
  two.header.set_payload_bytes(kSizes[2] * 4);
  std::vector<zmq::message_t> frame;
  frame.emplace_back(two.grads[0].data(), kSizes[2] * 4);
  w.send(two.header, std::move(frame));
  const Reply alone = expect_params_acking(w, two.header.seq());
  CHECK(alone.header.members_size() == 0);
  auto& v = params[2];
  for (std::size_t e = 0; e < v.size(); ++e) v[e] -= kLr * two.grads[0][e];
  CHECK(floats_of(alone.payload[0]) == v);
  wire::Header back = w.tensor(wire::ACK, 2, 0, kSizes[2], 2);
  back.set_seq(alone.header.seq());
  w.send(back);

  SECTION("one bad member refuses the whole batch") {
    Group g = group_push(w, {0, 1, 2}, 2, rng).packed();
    g.header.set_batch(true);
    g.grads[1][3] = std::numeric_limits<float>::infinity();
    w.send(g.header, g.frames());
    CHECK_THAT(expect_error(w, ErrorCode::kNonFinite), Catch::Contains("group member 1"));
  }
  SECTION("only a group PUSH is a batch") {
    Group g = group_push(w, {0}, 2, rng);
    g.header.clear_members();
    g.header.set_batch(true);
    w.send(g.header, g.frames());
    CHECK_THAT(expect_error(w, ErrorCode::kMalformed), Catch::Contains("only a PUSH with group"));
  }
  still_running(s);
  batch_round(w, group_push(w, {0, 1, 2}, 2, rng).packed(), params);
  shutdown_and_exit(w, s);
}
