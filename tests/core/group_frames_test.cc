// GroupFrames (core/group_frames.h): small members packed back to back into shared frames of at
// most kPackedFrameBytes, large ones in frames of their own; what it builds passes the receiver's
// checks and member_payloads gives every member's bytes back.
#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>

#include "core/group_frames.h"
#include "core/wire.h"

using namespace psrt;

namespace {

// A group PUSH of members with these payload sizes (codec none: sizes are multiples of 4),
// built with GroupFrames; member i's bytes are all (i + 1) & 0xff.
struct Built {
  wire::Header header;
  std::vector<zmq::message_t> frames;
};

Built build(const std::vector<uint64_t>& sizes) {
  Built b;
  b.header = make_header({wire::WORKER, 0, "job"}, wire::PUSH);
  uint64_t elements = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    auto* m = b.header.add_members();
    m->set_key(uint32_t(i));
    m->set_length(sizes[i] / 4);
    m->set_payload_bytes(sizes[i]);
    m->set_codec(wire::CODEC_NONE);
    elements += sizes[i] / 4;
  }
  b.header.set_key(0);
  b.header.set_length(sizes[0] / 4);
  b.header.set_codec(wire::CODEC_NONE);
  b.header.set_num_elements(elements);
  b.header.set_payload_bytes(std::accumulate(sizes.begin(), sizes.end(), uint64_t{0}));
  GroupFrames g;
  g.plan(b.header);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<uint8_t> bytes(sizes[i], uint8_t(i + 1));
    if (g.packed(i)) {
      g.put(i, bytes);
    } else {
      zmq::message_t own(bytes.data(), bytes.size());
      g.own(i, std::move(own));
    }
  }
  b.frames = g.take();
  return b;
}

std::vector<uint32_t> frames_of(const wire::Header& h) {
  std::vector<uint32_t> out;
  for (const auto& m : h.members()) out.push_back(m.frame());
  return out;
}

}  // namespace

TEST_CASE("group frames: small members packed, large ones alone, and every byte comes back",
          "[wire][grouping]") {
  const uint64_t big = kPackedMemberBytes + 4;
  const std::vector<uint64_t> sizes{4096, 4096, big, 8, kPackedMemberBytes, 12, big, big};
  Built b = build(sizes);
  CHECK(frames_of(b.header) == std::vector<uint32_t>{0, 0, 1, 2, 2, 2, 3, 4});
  REQUIRE(b.frames.size() == 5);
  CHECK(b.frames[0].size() == 8192);
  CHECK(b.frames[2].size() == 8 + kPackedMemberBytes + 12);

  wire::Header out;
  WireError err;
  REQUIRE(decode_header(encode_header(b.header), b.frames, "job", out, err));
  std::vector<std::span<const uint8_t>> bytes;
  member_payloads(out, b.frames, bytes);
  REQUIRE(bytes.size() == sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    REQUIRE(bytes[i].size() == sizes[i]);
    CHECK(std::all_of(bytes[i].begin(), bytes[i].end(),
                      [&](uint8_t v) { return v == uint8_t(i + 1); }));
  }
}

TEST_CASE("group frames: a packed frame closes at its size limit", "[wire][grouping]") {
  // 256 members of 8 KiB: 2 MiB in frames of 1 MiB each.
  const std::vector<uint64_t> sizes(256, 8192);
  Built b = build(sizes);
  REQUIRE(b.frames.size() == 2);
  CHECK(b.frames[0].size() == kPackedFrameBytes);
  CHECK(b.header.members(127).frame() == 0);
  CHECK(b.header.members(128).frame() == 1);
  wire::Header out;
  WireError err;
  CHECK(decode_header(encode_header(b.header), b.frames, "job", out, err));
}

TEST_CASE("group frames: members given out of plan are a programming error", "[wire][grouping]") {
  wire::Header h;
  for (uint64_t s : {uint64_t{8}, kPackedMemberBytes + 4}) h.add_members()->set_payload_bytes(s);
  GroupFrames g;
  g.plan(h);
  const std::vector<uint8_t> eight(8), too_many(12);
  CHECK_THROWS_AS(g.own(0, zmq::message_t(8)), std::logic_error);  // member 0 is packed
  CHECK_THROWS_AS(g.put(0, too_many), std::logic_error);           // more than planned
  CHECK_THROWS_AS(g.take(), std::logic_error);                     // nothing given yet
  g.put(0, eight);
  CHECK_THROWS_AS(g.own(1, zmq::message_t(4)), std::logic_error);  // not its planned size
  g.own(1, zmq::message_t(kPackedMemberBytes + 4));
  CHECK(g.take().size() == 2);
}
