#include "placement/service/client.h"

#include <unistd.h>

#include <chrono>

#include "core/endpoints.h"
#include "core/liveness.h"
#include "core/transport.h"
#include "core/wire.h"

namespace psrt::placement {

Result<Plan> ask_placer(const std::string& address, const std::string& job_id,
                        const Request& request, double timeout_s) {
  zmq::context_t ctx;
  const Sender self{wire::TOOL, static_cast<uint32_t>(::getpid()), job_id};
  SocketOptions options;
  options.ipv6 = is_ipv6_endpoint(address);
  zmq::socket_t dealer = make_dealer(ctx, routing_id(wire::TOOL, self.rank), options);
  try {
    dealer.connect(address);
  } catch (const zmq::error_t& e) {
    return Status::error("psrt-placer address " + address + ": " + e.what() +
                         " (the form is tcp://HOST:PORT)");
  }
  auto h = make_header(self, wire::PLACE_REQUEST);
  h.set_seq(1);
  *h.mutable_place_request() = to_message(request);
  send_envelope(dealer, nullptr, h);
  zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
  const auto wait = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  if (zmq::poll(&item, 1, wait) == 0) {
    dealer.set(zmq::sockopt::linger, 0);  // the unsent request kept it 2 s past the timeout
    std::string host;
    int port = 0;
    const bool lost = split_tcp_endpoint(address, host, port) && !resolves(host);
    return Status::error("psrt-placer at " + address + " did not answer within " +
                         seconds_text(timeout_s) + " s" +
                         (lost ? ": its host '" + host + "' does not resolve" : std::string()));
  }
  Envelope env;
  if (!recv_envelope(dealer, env, false)) return Status::error("psrt-placer: no reply frame");
  wire::Header reply;
  WireError err;
  if (!decode_header(env.header, env.payload, job_id, reply, err)) {
    // Its refusal of our job id carries its own: it was reported as "a bad reply" with the
    // length of the placer's id.
    if (err.code == ErrorCode::kWrongJob) {
      return Status::error("psrt-placer at " + address + " serves another job than '" +
                           printable(job_id, 64) + "': check job.id (psrt-place --job-id) " +
                           "against the placer's --job-id");
    }
    return Status::error("psrt-placer at " + address + " sent a bad reply: " + err.message);
  }
  if (reply.type() == wire::ERROR) {
    return Status::error("psrt-placer at " + address + ": " +
                         printable(reply.error().message(), 1024));
  }
  if (reply.type() != wire::PLACE_REPLY) {
    return Status::error("psrt-placer at " + address + " answered " +
                         wire::MsgType_Name(reply.type()));
  }
  auto plan = plan_from_reply(reply.place_reply(), request);
  if (!plan) return Status::error("psrt-placer at " + address + ": " + plan.status().message());
  return plan;
}

}  // namespace psrt::placement
