// A raw ZeroMQ client for integration tests: a DEALER with a chosen routing id that speaks the wire
// protocol by hand (or sends any frames at all), plus the steps that bring a one-worker job to the
// start barrier.
#pragma once

#include <zmq.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/transport.h"
#include "core/wire.h"
#include "tests/integration/proc_util.h"

namespace psrt::test {

struct Reply {
  wire::Header header;
  std::vector<zmq::message_t> payload;
};

class RawClient {
 public:
  // Connects a DEALER with routing id `identity` to `endpoint`; headers say `self`.
  RawClient(zmq::context_t& ctx, const std::string& endpoint, const std::string& identity,
            Sender self, const SocketOptions& options = {});

  void send_frames(std::vector<zmq::message_t> frames);
  void send(const wire::Header& h, std::vector<zmq::message_t> payload = {});
  // The next message that is not a HEARTBEAT; nullopt after `seconds`. A reply that fails
  // decode_header fails the test.
  std::optional<Reply> recv(double seconds = 10);

  wire::Header header(wire::MsgType type) const { return make_header(self_, type); }
  // A tensor message for (key, offset, length) with `values` as one raw fp32 frame (or none).
  wire::Header tensor(wire::MsgType type, uint32_t key, uint64_t offset, uint64_t length,
                      uint64_t iteration, const std::vector<float>* values = nullptr);
  static std::vector<zmq::message_t> frame_of(const std::vector<float>& values);

  const Sender& self() const { return self_; }
  zmq::socket_t& socket() { return socket_; }
  uint64_t next_seq() { return ++seq_; }

 private:
  zmq::socket_t socket_;
  Sender self_;
  uint64_t seq_ = 0;
};

std::vector<float> floats_of(const zmq::message_t& frame);

// The next reply, which must be of `type` (the test fails otherwise).
Reply expect(RawClient& w, wire::MsgType type);
// PARAMS that also acknowledges push `push_seq` (Header.acks): a push that completes its chunk
// is acknowledged by the reply, not by an ACK of its own (protocol version 2).
Reply expect_params_acking(RawClient& w, uint64_t push_seq);
// An ERROR reply with `code` and a message; returns the message.
std::string expect_error(RawClient& w, ErrorCode code);

// A psrt-server started on an OS-chosen port with this YAML config (written to a temp dir).
struct ServerProc {
  ServerProc(const std::string& yaml, const std::vector<std::string>& extra_args = {});
  std::string endpoint;
  std::string dir;
  std::unique_ptr<Proc> proc;
};

}  // namespace psrt::test
