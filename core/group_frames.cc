#include "core/group_frames.h"

#include <cstring>
#include <stdexcept>

#include "psrt.pb.h"

namespace psrt {

void GroupFrames::plan(wire::Header& h) {
  frames_.clear();
  frame_of_.clear();
  out_.clear();
  written_ = 0;
  bool open = false;  // the last frame is packed and takes more members
  for (auto& m : *h.mutable_members()) {
    const uint64_t b = m.payload_bytes();
    if (b > kPackedMemberBytes) {
      frames_.push_back({b, false});
      open = false;
    } else if (open && frames_.back().bytes + b <= kPackedFrameBytes) {
      frames_.back().bytes += b;
    } else {
      frames_.push_back({b, true});
      open = true;
    }
    frame_of_.push_back(uint32_t(frames_.size() - 1));
    m.set_frame(frame_of_.back());
  }
}

void GroupFrames::put(std::size_t member, std::span<const uint8_t> bytes) {
  const uint32_t f = frame_of_.at(member);
  if (!frames_[f].packed || f + 1 < out_.size() || f > out_.size()) {
    throw std::logic_error("GroupFrames::put out of order");
  }
  if (f == out_.size()) {  // the frame's first member
    out_.emplace_back(frames_[f].bytes);
    written_ = 0;
  }
  if (written_ + bytes.size() > frames_[f].bytes) throw std::logic_error("GroupFrames::put size");
  if (!bytes.empty()) {
    std::memcpy(static_cast<uint8_t*>(out_.back().data()) + written_, bytes.data(), bytes.size());
  }
  written_ += bytes.size();
}

void GroupFrames::own(std::size_t member, zmq::message_t frame) {
  const uint32_t f = frame_of_.at(member);
  if (frames_[f].packed || f != out_.size() || frame.size() != frames_[f].bytes) {
    throw std::logic_error("GroupFrames::own out of order");
  }
  out_.push_back(std::move(frame));
}

std::vector<zmq::message_t> GroupFrames::take() {
  if (out_.size() != frames_.size() || (!frames_.empty() && frames_.back().packed &&
                                        written_ != frames_.back().bytes)) {
    throw std::logic_error("GroupFrames::take before every member was given");
  }
  frames_.clear();
  return std::move(out_);
}

void member_payloads(const wire::Header& h, const std::vector<zmq::message_t>& payload,
                     std::vector<std::span<const uint8_t>>& out) {
  out.clear();
  uint32_t frame = 0;
  uint64_t at = 0;
  for (const auto& m : h.members()) {
    if (m.frame() != frame) {
      frame = m.frame();
      at = 0;
    }
    const auto* base = static_cast<const uint8_t*>(payload.at(frame).data());
    out.emplace_back(base + at, m.payload_bytes());
    at += m.payload_bytes();
  }
}

}  // namespace psrt
