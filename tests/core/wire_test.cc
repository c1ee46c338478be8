// The wire protocol: a header survives encode/decode with every field; decode_header rejects each
// kind of bad field with the right error code; routing ids parse back.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/wire.h"

using namespace psrt;

namespace {

const Sender kWorker3{wire::WORKER, 3, "job-a"};

std::vector<zmq::message_t> frames(std::initializer_list<std::size_t> sizes) {
  std::vector<zmq::message_t> out;
  for (auto s : sizes) {
    zmq::message_t m(s);
    if (s) std::memset(m.data(), 0x3c, s);
    out.push_back(std::move(m));
  }
  return out;
}

// A well-formed PUSH of `length` fp32 elements in one frame.
wire::Header push_header(uint64_t length) {
  wire::Header h = make_header(kWorker3, wire::PUSH);
  h.set_key(2);
  h.set_offset(128);
  h.set_length(length);
  h.set_iteration(5);
  h.set_codec(wire::CODEC_NONE);
  h.set_num_elements(length);
  h.set_payload_bytes(length * 4);
  return h;
}

// Decodes `h` as sent with `payload`; returns the error (code kMalformed + "ok" message if none).
WireError check(const wire::Header& h, const std::vector<zmq::message_t>& payload,
                const std::string& job = "job-a") {
  wire::Header out;
  WireError err{ErrorCode::kMalformed, "ok"};
  const zmq::message_t frame = encode_header(h);
  if (decode_header(frame, payload, job, out, err)) return {ErrorCode::kMalformed, "ok"};
  REQUIRE(err.message != "ok");
  REQUIRE_FALSE(err.message.empty());
  return err;
}

bool accepted(const wire::Header& h, const std::vector<zmq::message_t>& payload) {
  return check(h, payload).message == "ok";
}

}  // namespace

TEST_CASE("a header with every field survives encode and decode", "[wire]") {
  wire::Header h = push_header(16);
  h.set_priority(7);
  h.set_seq(123456789012ull);
  h.set_iteration(1ull << 40);
  h.set_offset((1ull << 33) + 5);
  auto* reg = h.mutable_register_();
  reg->set_address("tcp://127.0.0.1:5555");
  reg->set_pid(4242);
  reg->set_host("node-7");
  auto* t = reg->add_tensors();
  t->set_key(1);
  t->set_name("fc1.weight");
  t->set_num_elements(1ull << 35);
  t->set_layer(3);
  auto* m = h.mutable_membership();
  m->set_num_servers(2);
  m->set_num_workers(5);
  m->add_server_addresses("tcp://a:1");
  m->add_server_addresses("tcp://b:2");
  auto* c = m->add_chunks();
  c->set_key(1);
  c->set_offset(1024);
  c->set_length(512);
  c->set_server(1);
  h.mutable_barrier()->set_name("start");
  h.mutable_error()->set_code(uint32_t(ErrorCode::kOutOfStep));
  h.mutable_error()->set_message("stale");
  h.mutable_error()->set_about(wire::PUSH);

  const zmq::message_t frame = encode_header(h);
  REQUIRE(frame.size() == h.ByteSizeLong());
  wire::Header back;
  WireError err;
  const auto payload = frames({64});
  REQUIRE(decode_header(frame, payload, "job-a", back, err));
  CHECK(back.SerializeAsString() == h.SerializeAsString());
  CHECK(back.version() == kProtocolVersion);
  CHECK(back.job_id() == "job-a");
  CHECK(back.role() == wire::WORKER);
  CHECK(back.rank() == 3);
  CHECK(back.type() == wire::PUSH);
  CHECK(back.key() == 2);
  CHECK(back.offset() == (1ull << 33) + 5);
  CHECK(back.length() == 16);
  CHECK(back.iteration() == 1ull << 40);
  CHECK(back.priority() == 7);
  CHECK(back.num_elements() == 16);
  CHECK(back.payload_bytes() == 64);
  CHECK(back.seq() == 123456789012ull);
  CHECK(back.register_().tensors(0).name() == "fc1.weight");
  CHECK(back.register_().tensors(0).num_elements() == 1ull << 35);
  CHECK(back.membership().server_addresses(1) == "tcp://b:2");
  CHECK(back.membership().chunks(0).server() == 1);
  CHECK(back.barrier().name() == "start");
  CHECK(back.error().about() == wire::PUSH);
  CHECK(back.error().message() == "stale");
}

TEST_CASE("well-formed messages of every kind are accepted", "[wire]") {
  CHECK(accepted(push_header(16), frames({64})));
  CHECK(accepted(push_header(16), frames({10, 0, 54})));  // split over frames: sizes add up
  wire::Header init = push_header(3);
  init.set_type(wire::INIT);
  CHECK(accepted(init, frames({12})));
  wire::Header pull = push_header(3);
  pull.set_type(wire::PULL);
  pull.set_num_elements(0);
  pull.set_payload_bytes(0);
  CHECK(accepted(pull, {}));
  for (auto type : {wire::REGISTER, wire::MEMBERSHIP, wire::BARRIER, wire::BARRIER_RELEASE,
                    wire::HEARTBEAT, wire::ABORT, wire::ERROR}) {
    INFO(wire::MsgType_Name(type));
    CHECK(accepted(make_header(kWorker3, type), {}));
  }
  wire::Header laco = push_header(1000);
  laco.set_codec(wire::CODEC_LACO);
  laco.set_payload_bytes(77);  // compressed: any size that matches the frames
  CHECK(accepted(laco, frames({77})));
}

TEST_CASE("decode_header rejects each kind of bad field", "[wire]") {
  SECTION("empty header frame") {
    wire::Header out;
    WireError err;
    const zmq::message_t empty;
    CHECK_FALSE(decode_header(empty, {}, "job-a", out, err));
    CHECK(err.code == ErrorCode::kMalformed);
  }
  SECTION("bytes that are not a protobuf") {
    std::mt19937 rng(42);
    int rejected = 0;
    for (int trial = 0; trial < 200; ++trial) {
      zmq::message_t frame(1 + rng() % 64);
      auto* p = static_cast<uint8_t*>(frame.data());
      for (std::size_t i = 0; i < frame.size(); ++i) p[i] = uint8_t(rng());
      wire::Header out;
      WireError err;
      // Random bytes may happen to parse; they must still never pass all checks.
      if (!decode_header(frame, {}, "job-a", out, err)) {
        ++rejected;
        CHECK_FALSE(err.message.empty());
      }
    }
    CHECK(rejected == 200);
    wire::Header out;
    WireError err;
    const std::string bad = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff";  // broken varint
    const zmq::message_t frame(bad.data(), bad.size());
    CHECK_FALSE(decode_header(frame, {}, "job-a", out, err));
    CHECK(err.code == ErrorCode::kMalformed);
  }
  SECTION("protocol version") {
    wire::Header h = push_header(16);
    h.set_version(kProtocolVersion + 1);
    CHECK(check(h, frames({64})).code == ErrorCode::kVersion);
    h.set_version(0);
    CHECK(check(h, frames({64})).code == ErrorCode::kVersion);
  }
  SECTION("job id") {
    const auto e = check(push_header(16), frames({64}), "job-b");
    CHECK(e.code == ErrorCode::kWrongJob);
    // Neither id is quoted (issue 17: a peer's id may be megabytes, or forge log lines).
    CHECK_THAT(e.message, Catch::Contains("job id differs"));
    CHECK_THAT(e.message, !Catch::Contains("job-a") && !Catch::Contains("job-b"));
  }
  SECTION("role") {
    wire::Header h = push_header(16);
    h.set_role(wire::ROLE_UNSPECIFIED);
    CHECK(check(h, frames({64})).code == ErrorCode::kMalformed);
    h.set_role(static_cast<wire::Role>(17));
    CHECK(check(h, frames({64})).code == ErrorCode::kMalformed);
  }
  SECTION("message type") {
    wire::Header h = push_header(16);
    h.set_type(wire::MSG_UNSPECIFIED);
    CHECK(check(h, frames({64})).code == ErrorCode::kMalformed);
    h.set_type(static_cast<wire::MsgType>(99));
    CHECK(check(h, frames({64})).code == ErrorCode::kMalformed);
  }
  SECTION("payload frames on a control message") {
    CHECK(check(make_header(kWorker3, wire::HEARTBEAT), frames({4})).code == ErrorCode::kMalformed);
    CHECK(check(make_header(kWorker3, wire::REGISTER), frames({0})).code == ErrorCode::kMalformed);
  }
}

TEST_CASE("decode_header rejects each kind of bad chunk field", "[wire]") {
  SECTION("chunk length zero or absurd") {
    wire::Header h = push_header(16);
    h.set_length(0);
    h.set_num_elements(0);
    h.set_payload_bytes(0);
    CHECK(check(h, frames({0})).code == ErrorCode::kMalformed);
    h = push_header(16);
    h.set_length(kMaxChunkElements + 1);
    h.set_num_elements(kMaxChunkElements + 1);
    CHECK(check(h, frames({64})).code == ErrorCode::kMalformed);
    h.set_length(UINT64_MAX);
    h.set_num_elements(UINT64_MAX);
    CHECK(check(h, frames({64})).code == ErrorCode::kMalformed);
  }
  SECTION("acknowledgements: on PARAMS and ACK only, and bounded") {
    wire::Header params = push_header(16);
    params.set_type(wire::PARAMS);
    params.add_acks(7);
    params.add_acks(9);
    CHECK(accepted(params, frames({64})));
    wire::Header ack = push_header(16);
    ack.set_type(wire::ACK);
    ack.set_payload_bytes(0);
    ack.add_acks(3);
    CHECK(accepted(ack, {}));
    for (int i = 0; i < kMaxAcks; ++i) ack.add_acks(uint64_t(i));
    CHECK(check(ack, {}).code == ErrorCode::kLimit);
    wire::Header push = push_header(16);
    push.add_acks(1);
    CHECK(check(push, frames({64})).code == ErrorCode::kMalformed);
  }
  SECTION("absurd offset") {
    wire::Header h = push_header(16);
    h.set_offset(UINT64_MAX);
    CHECK(check(h, frames({64})).code == ErrorCode::kMalformed);
  }
  SECTION("unknown codec") {
    wire::Header h = push_header(16);
    h.set_codec(static_cast<wire::Codec>(42));
    CHECK(check(h, frames({64})).code == ErrorCode::kMalformed);
  }
}

TEST_CASE("decode_header rejects each kind of bad payload field", "[wire]") {
  SECTION("absurd claimed payload size") {
    wire::Header h = push_header(16);
    h.set_payload_bytes(kMaxPayloadBytes + 1);
    CHECK(check(h, frames({64})).code == ErrorCode::kBadSize);
    h.set_payload_bytes(UINT64_MAX);
    CHECK(check(h, frames({64})).code == ErrorCode::kBadSize);
  }
  SECTION("truncated payload: header claims more than the frames hold") {
    const auto e = check(push_header(16), frames({63}));
    CHECK(e.code == ErrorCode::kBadSize);
    CHECK_THAT(e.message, Catch::Contains("64") && Catch::Contains("63"));
    CHECK(check(push_header(16), frames({32, 31})).code == ErrorCode::kBadSize);
  }
  SECTION("payload larger than claimed") {
    CHECK(check(push_header(16), frames({65})).code == ErrorCode::kBadSize);
  }
  SECTION("PUSH, INIT or PARAMS without a payload frame") {
    for (auto type : {wire::PUSH, wire::INIT, wire::PARAMS}) {
      wire::Header h = push_header(16);
      h.set_type(type);
      h.set_payload_bytes(0);
      CHECK(check(h, {}).code == ErrorCode::kBadSize);
    }
  }
  SECTION("element count contradicts the chunk length") {
    wire::Header h = push_header(16);
    h.set_num_elements(15);
    CHECK(check(h, frames({64})).code == ErrorCode::kMalformed);
  }
  SECTION("uncompressed chunk of the wrong byte size") {
    wire::Header h = push_header(16);
    h.set_payload_bytes(60);
    CHECK(check(h, frames({60})).code == ErrorCode::kBadSize);
  }
  SECTION("PULL or ACK with payload frames") {
    wire::Header h = push_header(16);
    h.set_type(wire::PULL);
    CHECK(check(h, frames({64})).code == ErrorCode::kMalformed);
    h.set_type(wire::ACK);
    CHECK(check(h, frames({64})).code == ErrorCode::kMalformed);
  }
}

TEST_CASE("routing ids name role and rank and parse back", "[wire]") {
  CHECK(routing_id(wire::WORKER, 3) == "w3");
  CHECK(routing_id(wire::SERVER, 0) == "s0");
  CHECK(routing_id(wire::TOOL, 12) == "t12");
  CHECK(peer_name(wire::WORKER, 3) == "worker 3");
  CHECK(peer_name(wire::SERVER, 0) == "server 0");
  for (auto role : {wire::SERVER, wire::WORKER, wire::TOOL}) {
    for (uint32_t rank : {0u, 1u, 77u, 4294967295u}) {
      wire::Role r{};
      uint32_t k = 99;
      REQUIRE(parse_routing_id(routing_id(role, rank), r, k));
      CHECK(r == role);
      CHECK(k == rank);
    }
  }
  wire::Role r{};
  uint32_t k = 0;
  for (const std::string& bad : std::vector<std::string>{
           "", "w", "x3", "w-1", "w3x", "w 3", "W3", "w4294967296", "w99999999999",
           std::string("w3\0", 3), "garbage!", "w06", "s00", "w+6"}) {
    INFO("'" << bad << "'");
    CHECK_FALSE(parse_routing_id(bad, r, k));
  }
}

TEST_CASE("error codes have names", "[wire]") {
  CHECK(std::string(error_code_name(ErrorCode::kOutOfStep)) == "out-of-step");
  CHECK(std::string(error_code_name(ErrorCode::kBadSize)) == "bad-size");
  CHECK(std::string(error_code_name(static_cast<ErrorCode>(999))) == "unknown");
}

TEST_CASE("group messages: members checked against the header and the frames", "[wire][grouping]") {
  // Two members: (2, 128, 10) and (3, 0, 6), dense.
  auto group = [] {
    wire::Header h = push_header(10);
    uint32_t frame = 0;
    for (auto [key, offset, length] : {std::tuple{2u, 128ull, 10ull}, std::tuple{3u, 0ull, 6ull}}) {
      auto* m = h.add_members();
      m->set_key(key);
      m->set_offset(offset);
      m->set_length(length);
      m->set_payload_bytes(length * 4);
      m->set_codec(wire::CODEC_NONE);
      m->set_frame(frame++);
    }
    h.set_num_elements(16);
    h.set_payload_bytes(64);
    return h;
  };
  CHECK(check(group(), frames({40, 24})).message == "ok");
  CHECK(check(group(), frames({40, 20, 4})).code == ErrorCode::kBadSize);  // 3 frames, 2 members
  // Packed (protocol version 3): both members in frame 0, back to back.
  wire::Header packed = group();
  packed.mutable_members(1)->set_frame(0);
  CHECK(check(packed, frames({64})).message == "ok");
  CHECK(check(packed, frames({60})).code == ErrorCode::kBadSize);     // member 1 overruns
  CHECK(check(packed, frames({68})).code == ErrorCode::kBadSize);     // 4 bytes nobody claims
  CHECK(check(packed, frames({40, 24})).code == ErrorCode::kBadSize);  // frame 1 unclaimed
  CHECK(check(group(), frames({44, 20})).code == ErrorCode::kBadSize);  // member 1 starts early
  packed.mutable_members(1)->set_frame(2);  // skips frame 1
  CHECK(check(packed, frames({40, 24})).code == ErrorCode::kMalformed);
  wire::Header h = group();
  h.mutable_members(1)->set_payload_bytes(20);
  CHECK(check(h, frames({40, 24})).code == ErrorCode::kBadSize);
  h = group();
  h.set_num_elements(10);
  CHECK(check(h, frames({40, 24})).code == ErrorCode::kMalformed);
  h = group();
  h.mutable_members(0)->set_key(7);  // the header names another first member
  CHECK(check(h, frames({40, 24})).code == ErrorCode::kMalformed);
  h = group();
  h.mutable_members(1)->set_length(0);
  h.mutable_members(1)->set_payload_bytes(0);
  h.set_num_elements(10);
  CHECK(check(h, frames({40, 24})).code == ErrorCode::kMalformed);
  h = group();
  h.mutable_members(1)->set_codec(wire::CODEC_LACO);  // a push's members share the codec
  CHECK(check(h, frames({40, 24})).code == ErrorCode::kMalformed);
  h = group();
  h.set_type(wire::INIT);
  CHECK(check(h, frames({40, 24})).code == ErrorCode::kMalformed);
  h = group();
  h.mutable_members()->RemoveLast();
  h.set_num_elements(10);
  h.set_payload_bytes(40);
  CHECK(check(h, frames({40})).code == ErrorCode::kMalformed);  // one member is no group
  // A batch (Header.batch) is a group PUSH, nothing else.
  h = group();
  h.set_batch(true);
  CHECK(check(h, frames({40, 24})).message == "ok");
  h.set_type(wire::PARAMS);
  CHECK(check(h, frames({40, 24})).code == ErrorCode::kMalformed);
  wire::Header lone = push_header(16);
  lone.set_batch(true);
  CHECK(check(lone, frames({64})).code == ErrorCode::kMalformed);
  // Replies may mix dense and encoded members.
  h = group();
  h.set_type(wire::PARAMS);
  h.mutable_members(1)->set_codec(wire::CODEC_LACO);
  h.mutable_members(1)->set_payload_bytes(9);
  h.set_payload_bytes(49);
  CHECK(check(h, frames({40, 9})).message == "ok");
}
