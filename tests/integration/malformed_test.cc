// A raw ZeroMQ client posing as worker 0 drives a real psrt-server through a job by hand and sends
// it every kind of bad message: each gets an ERROR reply naming what was wrong, the server carries
// on, and a correct push afterwards still produces exactly the optimizer's values.
#include <catch2/catch.hpp>

#include <random>

#include "tests/integration/raw_job.h"

using namespace psrt;
using namespace psrt::test;

namespace {

const std::vector<uint64_t> kSizes{10, 3000};  // fifo: one chunk per tensor, all on server 0
constexpr float kLr = 0.5f;

const Sender kW0{wire::WORKER, 0, "rawjob"};

// Pushes a seeded gradient for every chunk at `iteration`; expects PARAMS for iteration + 1
// holding exactly p - lr * g, and acknowledging the push (the one worker completes each chunk).
void push_round(RawClient& w, uint64_t iteration, std::vector<std::vector<float>>& params,
                std::mt19937& rng) {
  for (std::size_t k = 0; k < kSizes.size(); ++k) {
    const auto g = dyadic(kSizes[k], rng);
    const wire::Header h = w.tensor(wire::PUSH, uint32_t(k), 0, kSizes[k], iteration, &g);
    w.send(h, RawClient::frame_of(g));
    for (std::size_t i = 0; i < g.size(); ++i) params[k][i] = params[k][i] - kLr * g[i];
    const Reply p = expect_params_acking(w, h.seq());
    CHECK(p.header.key() == k);
    CHECK(p.header.iteration() == iteration + 1);
    REQUIRE(p.payload.size() == 1);
    CHECK(floats_of(p.payload[0]) == params[k]);
  }
}

// A started job with worker 0's connection; each test sends bad messages, then finish() checks
// that a correct push still gets the optimizer's exact values.
struct StartedJob {
  ServerProc s{raw_job_yaml()};
  zmq::context_t ctx{1};
  RawClient w{ctx, s.endpoint, "w0", kW0};
  std::mt19937 rng{2024};
  std::vector<std::vector<float>> params = start_job(w, rng, kSizes);
  const std::vector<float> g0 = dyadic(kSizes[0], rng);  // a correct push's gradient

  // A push that would be correct, for variations.
  wire::Header good(uint64_t iteration = 0) {
    return w.tensor(wire::PUSH, 0, 0, kSizes[0], iteration, &g0);
  }

  void finish() {
    still_running(s);
    // Whatever came before, a correct push still gets the optimizer's exact values.
    wire::Header probe = w.tensor(wire::PULL, 0, 0, kSizes[0], 0);
    w.send(probe);
    const uint64_t iteration = expect(w, wire::PARAMS).header.iteration();
    push_round(w, iteration, params, rng);
    still_running(s);
    shutdown_and_exit(w, s);
  }
};

}  // namespace

TEST_CASE_METHOD(StartedJob, "bad headers, payloads, keys and sizes get error replies - a correct "
                             "push still works", "[integration][malformed]") {
  SECTION("random bytes as the header") {
    for (int trial = 0; trial < 20; ++trial) {
      zmq::message_t frame(1 + rng() % 200);
      auto* p = static_cast<uint8_t*>(frame.data());
      for (std::size_t i = 0; i < frame.size(); ++i) p[i] = uint8_t(rng());
      std::vector<zmq::message_t> frames;
      frames.push_back(std::move(frame));
      w.send_frames(std::move(frames));
      const Reply r = expect(w, wire::ERROR);
      CHECK_FALSE(r.header.error().message().empty());
    }
  }
  SECTION("truncated payload") {
    wire::Header h = w.tensor(wire::PUSH, 1, 0, kSizes[1], 0);
    h.set_num_elements(kSizes[1]);
    h.set_payload_bytes(kSizes[1] * 4);
    std::vector<float> half(kSizes[1] / 2, 0.25f);
    w.send(h, RawClient::frame_of(half));
    CHECK_THAT(expect_error(w, ErrorCode::kBadSize), Catch::Contains("12000"));
    // Header and frames agree, but the chunk needs more bytes.
    h.set_payload_bytes(half.size() * 4);
    w.send(h, RawClient::frame_of(half));
    expect_error(w, ErrorCode::kBadSize);
  }
  SECTION("unknown key or offset") {
    wire::Header h = good();
    h.set_key(7);
    w.send(h, RawClient::frame_of(g0));
    CHECK_THAT(expect_error(w, ErrorCode::kUnknownChunk), Catch::Contains("7"));
    const std::vector<float> g1(kSizes[1], 0.5f);
    wire::Header o = w.tensor(wire::PUSH, 1, 5, kSizes[1], 0, &g1);
    w.send(o, RawClient::frame_of(g1));
    expect_error(w, ErrorCode::kUnknownChunk);
    w.send(w.tensor(wire::PULL, 99, 0, 4, 0));
    expect_error(w, ErrorCode::kUnknownChunk);
  }
  SECTION("wrong chunk size") {
    const std::vector<float> five(5, 1.0f);
    w.send(w.tensor(wire::PUSH, 0, 0, 5, 0, &five), RawClient::frame_of(five));
    CHECK_THAT(expect_error(w, ErrorCode::kBadSize), Catch::Contains("10"));
    w.send(w.tensor(wire::PULL, 0, 0, 11, 0));
    expect_error(w, ErrorCode::kBadSize);
  }
  finish();
}

TEST_CASE_METHOD(StartedJob, "bad iterations, lengths, versions, jobs and identities get error "
                             "replies - a correct push still works", "[integration][malformed]") {
  SECTION("stale and future iterations") {
    wire::Header f = good(3);
    w.send(f, RawClient::frame_of(g0));
    const Reply r = expect(w, wire::ERROR);
    CHECK(r.header.error().code() == uint32_t(ErrorCode::kOutOfStep));
    CHECK(r.header.error().about() == wire::PUSH);
    CHECK(r.header.seq() == f.seq());
    CHECK(r.header.iteration() == 3);
    push_round(w, 0, params, rng);
    w.send(good(0), RawClient::frame_of(g0));  // iteration 0 is over
    expect_error(w, ErrorCode::kOutOfStep);
    push_round(w, 1, params, rng);
  }
  SECTION("absurd claimed lengths") {
    wire::Header h = good();
    h.set_length(1ull << 40);
    h.set_num_elements(1ull << 40);
    h.set_payload_bytes(1ull << 42);
    w.send(h, RawClient::frame_of(g0));
    expect_error(w, ErrorCode::kMalformed);
    h = good();
    h.set_payload_bytes(1ull << 62);
    w.send(h, RawClient::frame_of(g0));
    expect_error(w, ErrorCode::kBadSize);
    h = good();
    h.set_num_elements(UINT64_MAX);
    w.send(h, RawClient::frame_of(g0));
    expect_error(w, ErrorCode::kMalformed);
    h = good();
    h.set_offset(UINT64_MAX - 3);
    w.send(h, RawClient::frame_of(g0));
    expect_error(w, ErrorCode::kMalformed);
  }
  SECTION("wrong version, job, identity or codec; INIT after the start") {
    wire::Header h = good();
    h.set_version(kProtocolVersion + 1);
    w.send(h, RawClient::frame_of(g0));
    expect_error(w, ErrorCode::kVersion);
    h = good();
    h.set_job_id("otherjob");
    w.send(h, RawClient::frame_of(g0));
    expect_error(w, ErrorCode::kWrongJob);
    h = good();
    h.set_rank(5);  // the connection belongs to w0
    w.send(h, RawClient::frame_of(g0));
    expect_error(w, ErrorCode::kNotRegistered);
    h = good();
    h.set_codec(wire::CODEC_LACO);
    h.set_payload_bytes(7);
    std::vector<zmq::message_t> junk;
    junk.emplace_back(7);
    w.send(h, std::move(junk));
    expect_error(w, ErrorCode::kBadPayload);
    h = good();
    h.set_type(wire::INIT);
    w.send(h, RawClient::frame_of(g0));
    expect_error(w, ErrorCode::kUnexpected);
    w.send(w.header(wire::MEMBERSHIP));
    expect_error(w, ErrorCode::kUnexpected);
    wire::Header b = w.header(wire::BARRIER);
    b.mutable_barrier()->set_name("lunch");
    w.send(b);
    expect_error(w, ErrorCode::kMalformed);
  }
  finish();
}

TEST_CASE("the server survives garbage frames foreign identities and early pushes",
          "[integration][malformed]") {
  ServerProc s(raw_job_yaml());
  zmq::context_t ctx(1);
  RawClient w(ctx, s.endpoint, "w0", kW0);
  std::mt19937 rng(77);

  // A PUSH (and a PULL) before registration.
  const std::vector<float> g(kSizes[0], 0.5f);
  w.send(w.tensor(wire::PUSH, 0, 0, kSizes[0], 0, &g), RawClient::frame_of(g));
  CHECK_THAT(expect_error(w, ErrorCode::kNotRegistered), Catch::Contains("worker 0"));
  w.send(w.tensor(wire::PULL, 0, 0, kSizes[0], 0));
  expect_error(w, ErrorCode::kNotRegistered);
  w.send(w.header(wire::HEARTBEAT));
  expect_error(w, ErrorCode::kNotRegistered);
  still_running(s);

  auto params = start_job(w, rng, kSizes);

  SECTION("a multipart message of 0-length frames") {
    for (int n : {1, 2, 5}) {
      std::vector<zmq::message_t> frames(static_cast<std::size_t>(n));
      w.send_frames(std::move(frames));
      expect_error(w, ErrorCode::kMalformed);
    }
  }
  SECTION("a message with 100 payload frames") {
    // The sizes add up to the chunk's 40 bytes: the header checks pass, the server still refuses.
    wire::Header h = w.tensor(wire::PUSH, 0, 0, kSizes[0], 0, &g);
    std::vector<zmq::message_t> frames;
    for (int i = 0; i < 100; ++i) frames.emplace_back(i < 10 ? 4 : 0);
    w.send(h, std::move(frames));
    expect_error(w, ErrorCode::kBadPayload);
    // 100 frames whose sizes do not add up.
    std::vector<zmq::message_t> many;
    for (int i = 0; i < 100; ++i) many.emplace_back(40);
    w.send(h, std::move(many));
    expect_error(w, ErrorCode::kBadSize);
    // 100 frames on a control message.
    std::vector<zmq::message_t> hb;
    for (int i = 0; i < 100; ++i) hb.emplace_back(1);
    w.send(w.header(wire::HEARTBEAT), std::move(hb));
    expect_error(w, ErrorCode::kMalformed);
  }
  SECTION("identities that are not routing ids, or not this peer's") {
    for (const std::string id : {"garbage!", "w", "x0", "w99999999999", "s0"}) {
      INFO("identity '" << id << "'");
      RawClient stranger(ctx, s.endpoint, id, kW0);
      stranger.send(stranger.header(wire::HEARTBEAT));
      expect_error(stranger, ErrorCode::kNotRegistered);
      stranger.send(stranger.tensor(wire::PUSH, 0, 0, kSizes[0], 0, &g), RawClient::frame_of(g));
      expect_error(stranger, ErrorCode::kNotRegistered);
    }
    // A well-formed stranger: a worker rank outside the job, and a tool.
    RawClient w7(ctx, s.endpoint, "w7", {wire::WORKER, 7, "rawjob"});
    w7.send(register_header(w7, kSizes));
    CHECK_THAT(expect_error(w7, ErrorCode::kNotRegistered), Catch::Contains("worker 7"));
    RawClient t0(ctx, s.endpoint, "t0", {wire::TOOL, 0, "rawjob"});
    t0.send(t0.header(wire::BARRIER));
    expect_error(t0, ErrorCode::kNotRegistered);
  }
  still_running(s);
  push_round(w, 0, params, rng);
  push_round(w, 1, params, rng);
  still_running(s);
  shutdown_and_exit(w, s);
}

TEST_CASE("a registration the server cannot serve is refused and the server carries on",
          "[integration][malformed]") {
  ServerProc s(raw_job_yaml());
  zmq::context_t ctx(1);
  RawClient w(ctx, s.endpoint, "w0", kW0);
  std::mt19937 rng(5);

  SECTION("tensor keys that are not 0..n-1") {
    w.send(register_header(w, {10, 20}, {0, 7}));
  }
  SECTION("an absurd tensor size") {
    w.send(register_header(w, {10, 1ull << 50}));
  }
  const auto r = w.recv(15);
  {
    (void)s.proc->wait_exit(0.2);
    INFO(s.proc->output());
    REQUIRE(r);
    INFO("got " << wire::MsgType_Name(r->header.type()));
    REQUIRE(r->header.type() == wire::ERROR);
  }
  still_running(s);
  auto params = start_job(w, rng, kSizes);
  push_round(w, 0, params, rng);
  shutdown_and_exit(w, s);
}

// A process of another release registering: the start deadline said only "never came: worker 0".
TEST_CASE("a registration in another protocol version is named when the start never ends",
          "[integration][malformed]") {
  std::string yaml = raw_job_yaml();
  yaml.replace(yaml.find("start_timeout_s: 60"), 19, "start_timeout_s: 2");
  ServerProc s(yaml);
  zmq::context_t ctx(1);
  RawClient w(ctx, s.endpoint, "w0", kW0);
  wire::Header reg = register_header(w, kSizes);
  reg.set_version(reg.version() + 1);
  w.send(reg);
  expect_error(w, ErrorCode::kVersion);
  REQUIRE(s.proc->wait_exit(30).has_value());
  CHECK_THAT(s.proc->output(),
             Catch::Contains("never came: worker 0") &&
                 Catch::Contains("refused for its protocol version: worker 0 (protocol version"));
}

// Worker 0's grouping choice after online trials (Header.grouping_choice / grouping_from): the
// server relays the last one it received on every PARAMS it sends after, whatever the value
// (the workers check it), and carries on.
TEST_CASE_METHOD(StartedJob, "worker 0's grouping choice is relayed on every later reply",
                 "[integration][grouping]") {
  wire::Header plain = good(0);
  w.send(plain, RawClient::frame_of(g0));
  CHECK(expect_params_acking(w, plain.seq()).header.grouping_choice() == 0);
  wire::Header h = good(1);
  h.set_grouping_choice(4000000000u);
  h.set_grouping_from(5);
  w.send(h, RawClient::frame_of(g0));
  const Reply r = expect_params_acking(w, h.seq());
  CHECK(r.header.grouping_choice() == 4000000000u);
  CHECK(r.header.grouping_from() == 5);
  // a reply to a pull, and to a later push without a choice, carry the last one
  w.send(w.tensor(wire::PULL, 1, 0, kSizes[1], 0));
  const Reply pulled = expect(w, wire::PARAMS);
  CHECK(pulled.header.key() == 1);
  CHECK(pulled.header.grouping_choice() == 4000000000u);
  wire::Header later = good(2);
  w.send(later, RawClient::frame_of(g0));
  const Reply again = expect_params_acking(w, later.seq());
  CHECK(again.header.grouping_choice() == 4000000000u);
  CHECK(again.header.grouping_from() == 5);
  still_running(s);
  shutdown_and_exit(w, s);
}
