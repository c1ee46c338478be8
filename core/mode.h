// The push scheduler's modes (scheduler.mode in YAML); see DESIGN.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace psrt {

enum class Mode {
  kBigdl,          // no overlap: all gradients after the whole backward, in parameter order
  kFifo,           // each tensor whole, in the order gradients became ready
  kFifoChunked,    // fifo order, but in chunks of chunk_bytes (P3's "slicing only")
  kNonpreemptive,  // whole tensors; the highest-priority ready tensor goes next
  kPreemptive,     // chunk by chunk; the highest-priority ready chunk goes next
};

const char* mode_name(Mode m);
std::optional<Mode> parse_mode(const std::string& name);
const std::vector<std::string>& mode_names();
// What a mode means (what is sent next, what the compute waits for): scheduler/schedule_policy.h.

}  // namespace psrt
