// libFuzzer: a header frame and its payload frames, as a receiver gets them, through
// decode_header (every self-contained check), and the routing-id parser.
//
// Input: byte 0 low 2 bits = number of payload frames k; then k little-endian u16 frame sizes;
// the rest is the header frame. Payload frames are zero-filled at those sizes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "core/wire.h"

// protobuf logs each string field with invalid UTF-8; the fuzzer makes millions of them.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::size_t frames = data[0] & 3u;
  std::size_t at = 1;
  std::vector<zmq::message_t> payload;
  for (std::size_t i = 0; i < frames && at + 2 <= size; ++i, at += 2) {
    payload.emplace_back(std::size_t(data[at] | (data[at + 1] << 8)));
  }
  const zmq::message_t frame(data + at, size - at);
  psrt::wire::Header header;
  psrt::WireError error;
  if (psrt::decode_header(frame, payload, "fuzz-job", header, error)) {
    // What a receiver does next with a header that passed.
    (void)psrt::is_tensor_message(header.type());
    (void)psrt::peer_name(header.role(), header.rank());
    (void)psrt::payload_size(payload);
  } else if (error.message.empty()) {
    __builtin_trap();  // a rejection must say why
  }
  psrt::wire::Role role;
  uint32_t rank = 0;
  const std::string id(reinterpret_cast<const char*>(data + at), size - at);
  if (psrt::parse_routing_id(id, role, rank) && psrt::routing_id(role, rank) != id) {
    __builtin_trap();  // a parsed id must be the canonical one
  }
  return 0;
}
