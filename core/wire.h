// Header frames: encoding, decoding and the checks every receiver runs before it touches a
// payload. Semantic checks (does this chunk exist here, is the iteration current) belong to the
// receiver; these are the ones that need nothing but the message itself.
#pragma once

#include <zmq.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/sharding.h"
#include "core/status.h"
#include "core/metrics.h"
#include "psrt.pb.h"

namespace psrt {

// 2: PARAMS may acknowledge pushes and an ACK several replies (Header.acks).
// 3: a group message's small members share payload frames (GroupMember.frame); batched pushes
// (Header.batch); a server's ACK may acknowledge several pushes (Header.acks).
// 4: worker 0's choice of grouping after online trials, relayed on PARAMS (Header.grouping_*).
// 5: worker 0's grouping plan (its choice and runners-up) in REGISTER and MEMBERSHIP
// (GroupingPlan), instead of its layer times for every worker's own search.
constexpr uint32_t kProtocolVersion = 5;
// Acknowledgements one message may carry (Header.acks).
constexpr int kMaxAcks = 1 << 16;
// What one message from a peer may claim or make a process allocate (ZeroMQ's maxmsgsize): the
// shard map never makes a chunk larger than kMaxChunkBytes.
constexpr uint64_t kMaxChunkElements = kMaxChunkBytes / 4;
constexpr uint64_t kMaxTensorElements = kMaxElements;
constexpr uint64_t kMaxPayloadBytes = kMaxChunkBytes + 4096;  // room for a codec's own header

enum class ErrorCode : uint32_t {
  kMalformed = 1,       // header does not parse, or fields contradict each other
  kVersion = 2,         // protocol version mismatch
  kWrongJob = 3,        // job id differs
  kNotRegistered = 4,   // sender unknown here, or role/rank do not match its identity
  kUnknownChunk = 5,    // key or (key, offset, length) not held by this server
  kBadSize = 6,         // payload size does not match the header, or the chunk
  kOutOfStep = 7,       // iteration is not the one this chunk is collecting
  kBadPayload = 8,      // payload does not decode
  kUnexpected = 9,      // a message type this receiver does not take now
  kNotReady = 10,       // membership not yet known
  kTaken = 11,          // REGISTER for a role and rank another process holds
  kNonFinite = 12,      // a gradient holds NaN or infinity (limits.allow_non_finite: false)
  kLimit = 13,          // a message exceeds a limit (string length, model size)
  kInconsistent = 14,   // a worker's model or iteration count is not the others': the job ends
};
const char* error_code_name(ErrorCode c);

// A check failure: what to put in the error reply.
struct WireError {
  ErrorCode code;
  std::string message;
};

// The header, plus the job and sender identity every message carries.
struct Sender {
  wire::Role role = wire::ROLE_UNSPECIFIED;
  uint32_t rank = 0;
  std::string job_id;
};

wire::Header make_header(const Sender& from, wire::MsgType type);
// make_header into an existing header: cleared, then the fields every message carries. A header
// reused for each message of a kind keeps its job id's string and its repeated fields' storage,
// so the hot path builds headers without allocating.
wire::Header& reset_header(wire::Header& h, const Sender& from, wire::MsgType type);
zmq::message_t encode_header(const wire::Header& header);
// Why `header` cannot travel ("" when it can): a frame over kMaxPayloadBytes makes the receiver's
// ZeroMQ (maxmsgsize) drop the connection without a word, and the message is lost. `what` names
// what made it large, for the message.
std::string oversize_header(const wire::Header& header, const std::string& what);
// An ACK of several messages at once into `ack` (reset_header first): `seqs` (at least one) in
// `seq` and `acks`, naming the chunk `about` and `iteration` (checked like any tensor message).
wire::Header& acks_header(wire::Header& ack, const Sender& from, const ChunkDesc& about,
                          uint64_t iteration, const std::vector<uint64_t>& seqs);

// Parses a header frame and runs the self-contained checks against the payload frames that came
// with it. On failure `error` says why and the result is false.
bool decode_header(const zmq::message_t& frame, const std::vector<zmq::message_t>& payload,
                   const std::string& job_id, wire::Header& header, WireError& error);

bool is_tensor_message(wire::MsgType type);
// The type label a message is counted under in the metrics.
Metrics::Kind metrics_kind(wire::MsgType type);

uint64_t payload_size(const std::vector<zmq::message_t>& payload);

// Peer naming for logs and errors: "worker 3", "server 0".
std::string peer_name(wire::Role role, uint32_t rank);
// ZeroMQ routing identity of a process: "w3", "s0", "t7".
std::string routing_id(wire::Role role, uint32_t rank);
// Parses a routing id back; false for anything that is not one.
bool parse_routing_id(const std::string& id, wire::Role& role, uint32_t& rank);
// The routing id a process uses on every connection: routing_id() + "." + 16 random hex digits,
// so that another process claiming the same role and rank cannot take over its links.
std::string process_identity(wire::Role role, uint32_t rank);
// Parses the role and rank out of a routing id or a process identity.
bool parse_identity(const std::string& id, wire::Role& role, uint32_t& rank);
// Bytes from a peer made fit for a log line or a reply: printable ASCII kept, anything else as
// \xNN, at most `max` bytes of input shown (then "...").
std::string printable(const std::string& bytes, std::size_t max = 32);

}  // namespace psrt
