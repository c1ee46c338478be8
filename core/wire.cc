#include "core/wire.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <random>

namespace psrt {

const char* error_code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::kMalformed: return "malformed";
    case ErrorCode::kVersion: return "version";
    case ErrorCode::kWrongJob: return "wrong-job";
    case ErrorCode::kNotRegistered: return "not-registered";
    case ErrorCode::kUnknownChunk: return "unknown-chunk";
    case ErrorCode::kBadSize: return "bad-size";
    case ErrorCode::kOutOfStep: return "out-of-step";
    case ErrorCode::kBadPayload: return "bad-payload";
    case ErrorCode::kUnexpected: return "unexpected";
    case ErrorCode::kNotReady: return "not-ready";
    case ErrorCode::kTaken: return "rank-taken";
    case ErrorCode::kNonFinite: return "non-finite";
    case ErrorCode::kLimit: return "limit";
    case ErrorCode::kInconsistent: return "inconsistent";
  }
  return "unknown";
}

wire::Header make_header(const Sender& from, wire::MsgType type) {
  wire::Header h;
  reset_header(h, from, type);
  return h;
}

wire::Header& reset_header(wire::Header& h, const Sender& from, wire::MsgType type) {
  h.Clear();
  h.set_version(kProtocolVersion);
  h.set_job_id(from.job_id);
  h.set_role(from.role);
  h.set_rank(from.rank);
  h.set_type(type);
  return h;
}

wire::Header& acks_header(wire::Header& ack, const Sender& from, const ChunkDesc& about,
                          uint64_t iteration, const std::vector<uint64_t>& seqs) {
  reset_header(ack, from, wire::ACK);
  ack.set_key(about.key);
  ack.set_offset(about.offset);
  ack.set_length(about.length);
  ack.set_iteration(iteration);
  ack.set_seq(seqs.at(0));
  for (std::size_t i = 1; i < seqs.size(); ++i) ack.add_acks(seqs[i]);
  return ack;
}

zmq::message_t encode_header(const wire::Header& header) {
  zmq::message_t frame(header.ByteSizeLong());
  header.SerializeWithCachedSizesToArray(static_cast<uint8_t*>(frame.data()));
  return frame;
}

std::string oversize_header(const wire::Header& header, const std::string& what) {
  const uint64_t bytes = header.ByteSizeLong();
  if (bytes <= kMaxPayloadBytes) return "";
  return std::string(wire::MsgType_Name(header.type())) + " of " + std::to_string(bytes) +
         " bytes (" + what + ") is over the " + std::to_string(kMaxPayloadBytes) +
         " bytes one message may carry";
}

bool is_tensor_message(wire::MsgType type) {
  return type == wire::INIT || type == wire::PULL || type == wire::PUSH || type == wire::ACK ||
         type == wire::PARAMS;
}

uint64_t payload_size(const std::vector<zmq::message_t>& payload) {
  uint64_t n = 0;
  for (const auto& f : payload) n += f.size();
  return n;
}

namespace {

bool fail(WireError& error, ErrorCode code, std::string message) {
  error = {code, std::move(message)};
  return false;
}

// Group member `i`'s place in the payload frames (GroupMember.frame): in the frame of the member
// before it or the next one (which the members before must have filled), within the frame's bytes.
// `frame` and `taken` carry the place from member to member.
bool next_member_frame(const wire::GroupMember& m, std::size_t i,
                       const std::vector<zmq::message_t>& payload, std::size_t& frame,
                       uint64_t& taken, WireError& error) {
  if (i > 0 && m.frame() == frame + 1) {
    if (taken != payload[frame].size()) {
      return fail(error, ErrorCode::kBadSize,
                  "starts frame " + std::to_string(m.frame()) + " while frame " +
                      std::to_string(frame) + " has " +
                      std::to_string(payload[frame].size() - taken) + " bytes left");
    }
    ++frame;
    taken = 0;
  } else if (m.frame() != frame) {
    return fail(error, ErrorCode::kMalformed,
                "in frame " + std::to_string(m.frame()) + " after frame " + std::to_string(frame) +
                    " (members fill the frames in order)");
  }
  if (frame >= payload.size() || m.payload_bytes() > payload[frame].size() - taken) {
    return fail(error, ErrorCode::kBadSize,
                "claims " + std::to_string(m.payload_bytes()) + " bytes, frame " +
                    std::to_string(m.frame()) + " has " +
                    std::to_string(frame < payload.size() ? payload[frame].size() - taken : 0) +
                    " left");
  }
  taken += m.payload_bytes();
  return true;
}

// A group PUSH or PARAMS: the members against the header and the frames.
bool check_group(const wire::Header& h, const std::vector<zmq::message_t>& payload,
                 WireError& error) {
  const auto n = static_cast<std::size_t>(h.members_size());
  if (h.type() != wire::PUSH && h.type() != wire::PARAMS) {
    return fail(error, ErrorCode::kMalformed,
                std::string(wire::MsgType_Name(h.type())) + " carries no group members");
  }
  if (n < 2 || n > kMaxGroupMembers) {
    return fail(error, ErrorCode::kMalformed,
                "a group holds 2 to " + std::to_string(kMaxGroupMembers) + " members, this one " +
                    std::to_string(n));
  }
  if (payload.empty() || payload.size() > n) {
    return fail(error, ErrorCode::kBadSize,
                "group of " + std::to_string(n) + " members with " +
                    std::to_string(payload.size()) + " payload frames");
  }
  const auto& first = h.members(0);
  if (first.key() != h.key() || first.offset() != h.offset() || first.length() != h.length() ||
      first.codec() != h.codec()) {
    return fail(error, ErrorCode::kMalformed, "the header does not name the group's first member");
  }
  uint64_t elements = 0;
  std::size_t frame = 0;
  uint64_t taken = 0;  // bytes of `frame` its members before this one hold
  for (std::size_t i = 0; i < n; ++i) {
    const auto& m = h.members(int(i));
    // Built only for an error: a string per member is most of a valid group's check.
    const auto which = [&] {
      return "group member " + std::to_string(i) + " (tensor " + std::to_string(m.key()) + ")";
    };
    if (m.length() == 0 || m.length() > kMaxChunkElements || m.offset() > kMaxTensorElements) {
      return fail(error, ErrorCode::kMalformed,
                  which() + ": length " + std::to_string(m.length()) + " at offset " +
                      std::to_string(m.offset()) + " is outside the limits");
    }
    if (!next_member_frame(m, i, payload, frame, taken, error)) {
      error.message = which() + ": " + error.message;
      return false;
    }
    if (!wire::Codec_IsValid(m.codec()) || (h.type() == wire::PUSH && m.codec() != h.codec())) {
      return fail(error, ErrorCode::kMalformed,
                  which() + ": codec " + std::to_string(m.codec()) +
                      (h.type() == wire::PUSH ? " differs from the header's" : " is unknown"));
    }
    if (m.codec() == wire::CODEC_NONE && m.payload_bytes() != m.length() * sizeof(float)) {
      return fail(error, ErrorCode::kBadSize,
                  which() + ": " + std::to_string(m.length()) + " uncompressed elements need " +
                      std::to_string(m.length() * sizeof(float)) + " bytes, got " +
                      std::to_string(m.payload_bytes()));
    }
    elements += m.length();
  }
  if (frame + 1 != payload.size() || taken != payload[frame].size()) {
    return fail(error, ErrorCode::kBadSize,
                "the group's members fill " + std::to_string(frame + 1) + " of its " +
                    std::to_string(payload.size()) + " payload frames, the last with " +
                    std::to_string(taken) + " of " + std::to_string(payload[frame].size()) +
                    " bytes");
  }
  if (h.num_elements() != elements) {
    return fail(error, ErrorCode::kMalformed,
                "the group's members hold " + std::to_string(elements) +
                    " elements, the header says " + std::to_string(h.num_elements()));
  }
  return true;
}

// The envelope every message shares: frame size, parse, version, job, role and type.
bool check_envelope(const zmq::message_t& frame, const std::string& job_id, wire::Header& h,
                    WireError& error) {
  if (frame.size() == 0 || frame.size() > (1u << 24)) {
    return fail(error, ErrorCode::kMalformed,
                "header frame of " + std::to_string(frame.size()) + " bytes");
  }
  if (!h.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
    return fail(error, ErrorCode::kMalformed, "header frame does not parse as psrt.wire.Header");
  }
  if (h.version() != kProtocolVersion) {
    return fail(error, ErrorCode::kVersion,
                "protocol version " + std::to_string(h.version()) + ", this process speaks " +
                    std::to_string(kProtocolVersion));
  }
  if (h.job_id() != job_id) {
    // Neither id is quoted: the sender's may be anything, and this one is not its business.
    return fail(error, ErrorCode::kWrongJob,
                "job id differs from the one this process serves (" +
                    std::to_string(h.job_id().size()) + " bytes): check job.id in the config");
  }
  if (!wire::Role_IsValid(h.role()) || h.role() == wire::ROLE_UNSPECIFIED) {
    return fail(error, ErrorCode::kMalformed, "role " + std::to_string(h.role()) + " is unknown");
  }
  if (!wire::MsgType_IsValid(h.type()) || h.type() == wire::MSG_UNSPECIFIED) {
    return fail(error, ErrorCode::kMalformed, "message type " + std::to_string(h.type()) +
                                                  " is unknown");
  }
  return true;
}

// A tensor message's chunk: length, offset, codec and the payload's size.
bool check_chunk(const wire::Header& h, uint64_t bytes, WireError& error) {
  if (h.length() == 0 || h.length() > kMaxChunkElements) {
    return fail(error, ErrorCode::kMalformed,
                "chunk length " + std::to_string(h.length()) + " elements is outside [1, " +
                    std::to_string(kMaxChunkElements) + "]");
  }
  if (h.offset() > kMaxTensorElements) {
    return fail(error, ErrorCode::kMalformed,
                "offset " + std::to_string(h.offset()) + " is absurd");
  }
  if (!wire::Codec_IsValid(h.codec())) {
    return fail(error, ErrorCode::kMalformed, "codec " + std::to_string(h.codec()) + " is unknown");
  }
  if (h.payload_bytes() > kMaxPayloadBytes) {
    return fail(error, ErrorCode::kBadSize,
                "claimed payload of " + std::to_string(h.payload_bytes()) + " bytes is absurd");
  }
  if (h.payload_bytes() != bytes) {
    return fail(error, ErrorCode::kBadSize,
                "header claims " + std::to_string(h.payload_bytes()) +
                    " payload bytes, frames hold " + std::to_string(bytes));
  }
  return true;
}

// A single chunk's values (INIT, PUSH, PARAMS) or their absence (the other tensor messages).
bool check_values(const wire::Header& h, const std::vector<zmq::message_t>& payload,
                  uint64_t bytes, WireError& error) {
  const bool carries_values =
      h.type() == wire::INIT || h.type() == wire::PUSH || h.type() == wire::PARAMS;
  if (carries_values) {
    if (payload.empty()) {
      return fail(error, ErrorCode::kBadSize,
                  std::string(wire::MsgType_Name(h.type())) + " without a payload frame");
    }
    if (h.num_elements() != h.length()) {
      return fail(error, ErrorCode::kMalformed,
                  "payload decodes to " + std::to_string(h.num_elements()) +
                      " elements, chunk has " + std::to_string(h.length()));
    }
    if (h.codec() == wire::CODEC_NONE && bytes != h.length() * sizeof(float)) {
      return fail(error, ErrorCode::kBadSize,
                  "uncompressed chunk of " + std::to_string(h.length()) + " elements needs " +
                      std::to_string(h.length() * sizeof(float)) + " bytes, got " +
                      std::to_string(bytes));
    }
  } else if (!payload.empty()) {
    return fail(error, ErrorCode::kMalformed,
                std::string(wire::MsgType_Name(h.type())) + " carries no payload frames");
  }
  return true;
}

}  // namespace

bool decode_header(const zmq::message_t& frame, const std::vector<zmq::message_t>& payload,
                   const std::string& job_id, wire::Header& h, WireError& error) {
  if (!check_envelope(frame, job_id, h, error)) return false;
  const uint64_t bytes = payload_size(payload);
  if (h.type() == wire::ACTIVATION || h.type() == wire::ACTIVATION_GRAD) {
    // The receiving stage checks the sizes against its schedule (worker/ps_client_stage.cc).
    if (payload.empty() || h.payload_bytes() != bytes) {
      return fail(error, ErrorCode::kBadSize,
                  "header claims " + std::to_string(h.payload_bytes()) + " payload bytes, " +
                      std::to_string(payload.size()) + " frames hold " + std::to_string(bytes));
    }
    return true;
  }
  if (!is_tensor_message(h.type())) {
    if (!payload.empty()) {
      return fail(error, ErrorCode::kMalformed,
                  std::string(wire::MsgType_Name(h.type())) + " carries no payload frames, got " +
                      std::to_string(payload.size()));
    }
    return true;
  }
  if (!check_chunk(h, bytes, error)) return false;
  if (h.acks_size() > 0 && h.type() != wire::ACK && h.type() != wire::PARAMS) {
    return fail(error, ErrorCode::kMalformed,
                std::string(wire::MsgType_Name(h.type())) + " carries no acknowledgements");
  }
  if (h.acks_size() > kMaxAcks) {
    return fail(error, ErrorCode::kLimit, std::to_string(h.acks_size()) +
                                              " acknowledgements in one message; at most " +
                                              std::to_string(kMaxAcks));
  }
  if (h.batch() && (h.type() != wire::PUSH || h.members_size() == 0)) {
    return fail(error, ErrorCode::kMalformed, "only a PUSH with group members is a batch");
  }
  if (h.members_size() > 0) return check_group(h, payload, error);
  return check_values(h, payload, bytes, error);
}

std::string peer_name(wire::Role role, uint32_t rank) {
  switch (role) {
    case wire::SERVER: return "server " + std::to_string(rank);
    case wire::WORKER: return "worker " + std::to_string(rank);
    case wire::TOOL: return "tool " + std::to_string(rank);
    default: return "peer " + std::to_string(rank);
  }
}

std::string routing_id(wire::Role role, uint32_t rank) {
  const char c = role == wire::SERVER ? 's' : role == wire::WORKER ? 'w' : 't';
  return std::string(1, c) + std::to_string(rank);
}

bool parse_routing_id(const std::string& id, wire::Role& role, uint32_t& rank) {
  if (id.size() < 2 || id.size() > 11) return false;
  switch (id[0]) {
    case 's': role = wire::SERVER; break;
    case 'w': role = wire::WORKER; break;
    case 't': role = wire::TOOL; break;
    default: return false;
  }
  const char* first = id.data() + 1;
  const char* last = id.data() + id.size();
  // Canonical digits only: "w06" would otherwise be a second identity for worker 6 (found by
  // tests/fuzz/fuzz_header).
  if (*first == '0' && id.size() > 2) return false;
  auto [ptr, ec] = std::from_chars(first, last, rank);
  return ec == std::errc() && ptr == last;
}

Metrics::Kind metrics_kind(wire::MsgType type) {
  switch (type) {
    case wire::PUSH: return Metrics::Kind::kPush;
    case wire::PARAMS: return Metrics::Kind::kParams;
    case wire::ACK: return Metrics::Kind::kAck;
    case wire::ACTIVATION:
    case wire::ACTIVATION_GRAD:
    case wire::STAGE_ACK:
      return Metrics::Kind::kActivation;
    default: return Metrics::Kind::kControl;
  }
}

std::string process_identity(wire::Role role, uint32_t rank) {
  std::random_device rd;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%08x%08x", rd(), rd());
  return routing_id(role, rank) + "." + hex;
}

bool parse_identity(const std::string& id, wire::Role& role, uint32_t& rank) {
  const auto dot = id.find('.');
  if (dot == std::string::npos) return parse_routing_id(id, role, rank);
  return id.size() == dot + 17 && parse_routing_id(id.substr(0, dot), role, rank);
}

std::string printable(const std::string& bytes, std::size_t max) {
  std::string out;
  const std::size_t n = std::min(bytes.size(), max);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += char(c);
    } else {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (bytes.size() > max) out += "...";
  return out;
}

}  // namespace psrt
