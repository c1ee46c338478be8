// The payload frames of a group message (proto GroupMember.frame, protocol version 3). A sender
// packs runs of small members into shared frames and gives each large member a frame of its own;
// a receiver finds each member's bytes again.
//
// Why pack: ZeroMQ sends a frame smaller than its 8 KiB batch buffer by copying it into that
// buffer, one send syscall per 8 KiB and one receive per 8 KiB on the other side, where a large
// frame goes out of its own memory in one call. A group of a hundred 4 KiB members as a hundred
// frames cost 3.7x the time of one 400 KiB tensor on loopback (README, "Transport").
#pragma once

#include <zmq.hpp>

#include <cstdint>
#include <span>
#include <vector>

#include "proto/psrt_fwd.h"

namespace psrt {

// Members up to this size are packed (copied) into shared frames of at most kPackedFrameBytes;
// larger ones travel in their own frame, without a copy.
constexpr uint64_t kPackedMemberBytes = 64 << 10;
constexpr uint64_t kPackedFrameBytes = 1 << 20;

// Builds a group message's frames. Tell it every member's size (plan), then hand it the members
// in order: `packed(i)` says whether member i's bytes are copied in (put) or sent as they are
// (own). Reusable: plan() starts over.
class GroupFrames {
 public:
  // Sets the frame of each of the header's members (their payload_bytes must be set).
  void plan(wire::Header& h);
  bool packed(std::size_t member) const { return frames_[frame_of_[member]].packed; }
  void put(std::size_t member, std::span<const uint8_t> bytes);
  void own(std::size_t member, zmq::message_t frame);
  // The frames, in order; plan() again before the next message.
  std::vector<zmq::message_t> take();
  // All of it for the header's `n` members: plan(), then member i's bytes(i) copied in where it is
  // packed or its frame(i) sent as it is, then take().
  template <typename Bytes, typename Frame>
  std::vector<zmq::message_t> build(wire::Header& h, std::size_t n, Bytes bytes, Frame frame) {
    plan(h);
    for (std::size_t i = 0; i < n; ++i) {
      if (packed(i)) {
        put(i, bytes(i));
      } else {
        own(i, frame(i));
      }
    }
    return take();
  }

 private:
  struct Frame {
    uint64_t bytes = 0;
    bool packed = false;
  };
  std::vector<Frame> frames_;
  std::vector<uint32_t> frame_of_;
  std::vector<zmq::message_t> out_;
  uint64_t written_ = 0;  // bytes put into the last packed frame so far
};

// Each member's bytes of a group message that decode_header accepted, in member order, into
// `out` (cleared first). The spans point into `payload`.
void member_payloads(const wire::Header& h, const std::vector<zmq::message_t>& payload,
                     std::vector<std::span<const uint8_t>>& out);

}  // namespace psrt
