// Push rules a server enforces with real processes: a repeated push counts once; with compression
// on, a payload is checked on arrival (bad count, index out of range, truncated, wrong codec each
// get an error reply) and a good one is decoded into the update.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "compress/codec_config.h"
#include "compress/registry.h"
#include "tests/integration/raw_client.h"
#include "tests/integration/raw_job.h"

using namespace psrt;
using namespace psrt::test;

namespace {

constexpr uint64_t kSize = 2000;  // one tensor, one chunk
constexpr float kLr = 0.5f;

// One tensor of kSize elements (one chunk): registered, initialised, started and pulled.
std::vector<float> start(const std::vector<RawClient*>& workers, std::mt19937& rng) {
  return start_job(workers, rng, {kSize}).front();
}

std::string yaml(int workers, const std::string& extra) {
  return "job: {id: rules, iterations: 1}\n"
         "cluster: {servers: 1, workers: " + std::to_string(workers) +
         ", heartbeat_s: 0.2, peer_timeout_s: 60}\n"
         "optimizer: {type: sgd, lr: 0.5, momentum: 0, weight_decay: 0}\n"
         "scheduler: {mode: fifo}\n" + extra;
}

// The workers' side of the jobs below: LACO, dense first iteration, then density 0.05, no
// error feedback (as the YAML of each test says).
Result<std::unique_ptr<compress::Codec>> laco_codec(int64_t dense_below) {
  compress::CodecConfig cc;
  cc.codec = "laco";
  cc.calibration_iters = 1;
  cc.warmup_iters = 0;
  cc.density = 0.05;
  cc.dense_below = dense_below;
  cc.error_feedback = false;
  return compress::make_codec(cc);
}

}  // namespace

TEST_CASE("a repeated push (same worker, iteration, key, range) is counted once", "[integration]") {
  ServerProc s(yaml(2, ""));
  zmq::context_t ctx(1);
  RawClient w0(ctx, s.endpoint, "w0", {wire::WORKER, 0, "rules"});
  RawClient w1(ctx, s.endpoint, "w1", {wire::WORKER, 1, "rules"});
  std::mt19937 rng(7);
  auto p = start({&w0, &w1}, rng);

  const auto g0 = dyadic(kSize, rng);
  const auto g1 = dyadic(kSize, rng);
  for (int repeat = 0; repeat < 3; ++repeat) {  // worker 0 pushes the same chunk three times
    const wire::Header h = w0.tensor(wire::PUSH, 0, 0, kSize, 0, &g0);
    w0.send(h, RawClient::frame_of(g0));
    CHECK(expect(w0, wire::ACK).header.seq() == h.seq());
  }
  // Worker 1's push completes the chunk: the reply acknowledges it.
  const wire::Header h1 = w1.tensor(wire::PUSH, 0, 0, kSize, 0, &g1);
  w1.send(h1, RawClient::frame_of(g1));
  for (std::size_t i = 0; i < kSize; ++i) p[i] -= kLr * ((g0[i] + g1[i]) * 0.5f);
  for (auto* w : {&w0, &w1}) {
    const Reply r = w == &w1 ? expect_params_acking(w1, h1.seq()) : expect(*w, wire::PARAMS);
    CHECK(r.header.iteration() == 1);
    CHECK(floats_of(r.payload[0]) == p);  // g0 counted once, not three times
    w->send(w->tensor(wire::ACK, 0, 0, kSize, 1));  // (its seq is unknown: an error reply)
    expect(*w, wire::ERROR);
  }
  CHECK_THAT(s.proc->output(), !Catch::Contains("rejected PUSH"));
  shutdown_and_exit({&w0, &w1}, s);
}

TEST_CASE(
    "a completing push is acknowledged by its reply, and one ACK acknowledges several replies",
    "[integration]") {
  ServerProc s(yaml(1, ""));
  zmq::context_t ctx(1);
  RawClient w(ctx, s.endpoint, "w0", {wire::WORKER, 0, "rules"});
  std::mt19937 rng(11);
  auto p = start({&w}, rng);
  std::vector<uint64_t> replies;
  for (uint64_t it = 0; it < 3; ++it) {
    const auto g = dyadic(kSize, rng);
    const wire::Header h = w.tensor(wire::PUSH, 0, 0, kSize, it, &g);
    w.send(h, RawClient::frame_of(g));
    for (std::size_t i = 0; i < kSize; ++i) p[i] -= kLr * g[i];
    const Reply r = expect_params_acking(w, h.seq());  // no ACK before it: the next is PARAMS
    CHECK(r.header.iteration() == it + 1);
    CHECK(floats_of(r.payload[0]) == p);
    replies.push_back(r.header.seq());
  }
  // The three replies acknowledged by one ACK: no error, the server answers the next PULL.
  wire::Header ack = w.tensor(wire::ACK, 0, 0, kSize, 3);
  ack.set_seq(replies[0]);
  ack.add_acks(replies[1]);
  ack.add_acks(replies[2]);
  w.send(ack);
  w.send(w.tensor(wire::PULL, 0, 0, kSize, 3));
  CHECK(floats_of(expect(w, wire::PARAMS).payload[0]) == p);
  // An acknowledgement of a reply no longer in flight is refused, and the server carries on.
  w.send(ack);
  CHECK_THAT(expect_error(w, ErrorCode::kUnexpected), Catch::Contains("not in flight"));
  shutdown_and_exit(w, s);
}

TEST_CASE("compressed pushes are checked on arrival and decoded into the update",
          "[integration][compress]") {
  ServerProc s(yaml(1, "compression: {codec: laco, calibration_iters: 1, warmup_iters: 0, "
                       "density: 0.05, error_feedback: false, replies: dense}\n"));
  zmq::context_t ctx(1);
  RawClient w(ctx, s.endpoint, "w0", {wire::WORKER, 0, "rules"});
  std::mt19937 rng(11);
  auto p = start({&w}, rng);

  auto codec = laco_codec(1024);
  REQUIRE(codec);
  auto state = codec.value()->make_state({int64_t(kSize), 0, 1});
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> g(kSize);
  for (auto& x : g) x = normal(rng);
  std::vector<uint8_t> payload;
  REQUIRE(codec.value()->encode(*state, {0, g, 0}, payload));  // calibration: sent dense
  REQUIRE(codec.value()->encode(*state, {0, g, 1}, payload));  // then sparse, 8-bit codes
  REQUIRE(payload.size() < kSize * 4 / 4);

  auto push = [&](const std::vector<uint8_t>& bytes, wire::Codec wc) {
    wire::Header h = w.tensor(wire::PUSH, 0, 0, kSize, 0);
    h.set_codec(wc);
    h.set_num_elements(kSize);
    h.set_payload_bytes(bytes.size());
    zmq::message_t frame(bytes.data(), bytes.size());
    std::vector<zmq::message_t> frames;
    frames.push_back(std::move(frame));
    w.send(h, std::move(frames));
    return h.seq();
  };

  SECTION("bad payloads get error replies, then a good one updates") {
    std::vector<uint8_t> truncated(payload.begin(), payload.begin() + long(payload.size() / 2));
    push(truncated, wire::CODEC_LACO);
    expect_error(w, ErrorCode::kBadPayload);

    std::vector<uint8_t> bad_count = payload;
    bad_count[12] = 0xff;  // count field: more elements than the payload holds
    bad_count[13] = 0xff;
    push(bad_count, wire::CODEC_LACO);
    expect_error(w, ErrorCode::kBadPayload);

    std::vector<uint8_t> bad_length = payload;
    bad_length[8] = uint8_t(kSize / 2);  // length field: not this chunk's length
    bad_length[9] = 0;
    bad_length[10] = 0;
    bad_length[11] = 0;
    push(bad_length, wire::CODEC_LACO);
    expect_error(w, ErrorCode::kBadPayload);

    std::vector<uint8_t> garbage(64);
    for (auto& b : garbage) b = uint8_t(rng());
    push(garbage, wire::CODEC_LACO);
    expect_error(w, ErrorCode::kBadPayload);

    const std::vector<float> dense(kSize, 0.5f);  // uncompressed while the job compresses
    w.send(w.tensor(wire::PUSH, 0, 0, kSize, 0, &dense), RawClient::frame_of(dense));
    CHECK_THAT(expect_error(w, ErrorCode::kBadPayload), Catch::Contains("CODEC_LACO"));

    const uint64_t seq = push(payload, wire::CODEC_LACO);
    std::vector<float> decoded(kSize);
    REQUIRE(codec.value()->decode(payload, decoded));
    for (std::size_t i = 0; i < kSize; ++i) p[i] = p[i] - kLr * decoded[i];
    const Reply r = expect_params_acking(w, seq);  // the one worker's push completes the chunk
    CHECK(r.header.iteration() == 1);
    CHECK(floats_of(r.payload[0]) == p);
  }
  shutdown_and_exit(w, s);
}

TEST_CASE("compressed replies: first values dense, then each update's encoded change, the same "
          "for every worker", "[integration][compress]") {
  ServerProc s(yaml(2, "compression: {codec: laco, calibration_iters: 1, warmup_iters: 0, "
                       "density: 0.05, dense_below: 0, error_feedback: false, "
                       "replies: compressed}\n"));
  zmq::context_t ctx(1);
  RawClient w0(ctx, s.endpoint, "w0", {wire::WORKER, 0, "rules"});
  RawClient w1(ctx, s.endpoint, "w1", {wire::WORKER, 1, "rules"});
  std::mt19937 rng(5);
  const std::vector<float> p = start({&w0, &w1}, rng);  // dense PULL replies, checked there

  auto codec = laco_codec(0);
  REQUIRE(codec);
  const compress::Codec& laco = *codec.value();
  std::vector<std::unique_ptr<compress::CodecState>> states;
  for (int w = 0; w < 2; ++w) states.push_back(laco.make_state({int64_t(kSize), 0, 1}));

  std::vector<float> server = p;                    // the server's values, computed here
  std::vector<std::vector<float>> copies = {p, p};  // what each worker holds
  std::normal_distribution<float> normal(0.0f, 1.0f);
  RawClient* workers[] = {&w0, &w1};
  for (uint64_t t = 0; t < 4; ++t) {
    std::vector<float> mean(kSize, 0.0f);
    for (int w = 0; w < 2; ++w) {
      std::vector<float> g(kSize);
      for (auto& x : g) x = normal(rng);
      std::vector<uint8_t> payload;
      REQUIRE(laco.encode(*states[std::size_t(w)], {0, g, int64_t(t)}, payload));
      REQUIRE(laco.decode_accumulate(payload, mean, 0.5f));
      wire::Header h = workers[w]->tensor(wire::PUSH, 0, 0, kSize, t);
      h.set_codec(wire::CODEC_LACO);
      h.set_num_elements(kSize);
      h.set_payload_bytes(payload.size());
      std::vector<zmq::message_t> frames;
      frames.emplace_back(payload.data(), payload.size());
      workers[w]->send(h, std::move(frames));
      if (w == 0) expect(*workers[w], wire::ACK);  // worker 1's completes the chunk: its reply acks
    }
    for (std::size_t i = 0; i < kSize; ++i) server[i] -= kLr * mean[i];
    auto distance = [&](const std::vector<float>& v) {
      double d = 0;
      for (std::size_t i = 0; i < kSize; ++i) d += std::pow(double(server[i]) - v[i], 2);
      return std::sqrt(d);
    };
    const double before = distance(copies[0]);
    std::size_t reply_bytes = 0;
    for (int w = 0; w < 2; ++w) {
      const Reply r = expect(*workers[w], wire::PARAMS);
      INFO("iteration " << t << ", worker " << w);
      REQUIRE(r.header.codec() == wire::CODEC_LACO);
      CHECK(r.header.iteration() == t + 1);
      const auto& frame = r.payload[0];
      reply_bytes = frame.size();
      REQUIRE(laco.decode_accumulate({static_cast<const uint8_t*>(frame.data()), frame.size()},
                                     copies[std::size_t(w)], 1.0f));
    }
    INFO("iteration " << t);
    CHECK(copies[0] == copies[1]);  // bit for bit: one payload for every worker
    if (t == 0) {
      // Calibration: the change goes dense, so the copies hold the server's values (up to the
      // rounding of published + (new - published)).
      CHECK(distance(copies[0]) < 1e-5);
    } else {
      CHECK(reply_bytes < kSize * sizeof(float) / 4);  // sparse 8-bit codes
      CHECK(distance(copies[0]) < before);             // the copies follow the server
      CHECK(distance(copies[0]) > 0);                  // and trail it by what was left out
    }
  }
  shutdown_and_exit({&w0, &w1}, s);
}
