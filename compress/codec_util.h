// Pieces every codec shares: a state base with the tensor's description and counters, and the
// checks every encode makes on its chunk.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "compress/codec.h"
#include "core/status.h"

namespace psrt::compress {

class BasicState : public CodecState {
 public:
  explicit BasicState(const TensorInfo& info) : info_(info) {}
  TensorInfo info_;
  EncodeStats stats_;
};

// Checks that chunk [offset, offset + len) lies inside a tensor of n elements and fits the wire
// format.
inline Status check_chunk(int64_t n, int64_t offset, int64_t len, std::string_view codec) {
  if (offset < 0 || len < 0 || len > n || offset > n - len) {
    return Status::error(std::string(codec) + ": chunk [" + std::to_string(offset) + ", +" +
                         std::to_string(len) + ") outside tensor of " + std::to_string(n));
  }
  if (len > int64_t{std::numeric_limits<uint32_t>::max()}) {
    return Status::error(std::string(codec) + ": chunk of " + std::to_string(len) +
                         " elements exceeds 2^32-1");
  }
  return Status::ok();
}

// Casts the state and checks the chunk (check_chunk).
template <typename State>
Result<State*> checked_state(CodecState& state, const ChunkInput& chunk, std::string_view codec) {
  auto* s = dynamic_cast<State*>(&state);
  if (s == nullptr) return Status::error(std::string(codec) + ": state made by another codec");
  const auto len = static_cast<int64_t>(chunk.values.size());
  PSRT_RETURN_IF_ERROR(check_chunk(s->info_.num_elements, chunk.offset, len, codec));
  return s;
}

inline void count(BasicState& s, size_t elements, size_t sent, size_t bytes) {
  s.stats_.elements += static_cast<int64_t>(elements);
  s.stats_.sent += static_cast<int64_t>(sent);
  s.stats_.bytes += static_cast<int64_t>(bytes);
}

inline EncodeStats basic_stats(const CodecState& state) {
  const auto* s = dynamic_cast<const BasicState*>(&state);
  return s != nullptr ? s->stats_ : EncodeStats{};
}

}  // namespace psrt::compress
