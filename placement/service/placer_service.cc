#include "placement/service/placer_service.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "core/transport.h"
#include "placement/service/request.h"

namespace psrt::placement {

PlacerService::PlacerService(const std::string& bind, std::string job_id, double max_search_s)
    : job_id_(std::move(job_id)),
      max_search_s_(max_search_s),
      messenger_(job_id_, {}, metrics_, log_),
      router_(messenger_.add_router("a requester")) {
  zmq::socket_t& router = messenger_.socket(router_);
  router.set(zmq::sockopt::maxmsgsize, kMaxRequestBytes);
  endpoint_ = bind_endpoint(router, bind);
  messenger_.on_bad(router_, [this](const std::string& identity, const wire::Header& h,
                                    const WireError& err) {
    reply_error(identity, err.code, err.message, h.type());
  });
  messenger_.on(router_, wire::PLACE_REQUEST, [this](Inbound& m) {
    try {
      handle(m.identity, m.header);
    } catch (const std::exception& e) {  // a bug, not the peer's: still answer and carry on
      reply_error(m.identity, ErrorCode::kMalformed, std::string("internal: ") + e.what(),
                  wire::PLACE_REQUEST);
    }
  });
  messenger_.otherwise(router_, [this](Inbound& m) {
    reply_error(m.identity, ErrorCode::kUnexpected,
                std::string("psrt-placer takes PLACE_REQUEST with a request, not ") +
                    wire::MsgType_Name(m.header.type()),
                m.header.type());
  });
  self_.role = wire::TOOL;
  self_.rank = 0;
  self_.job_id = job_id_;
}

void PlacerService::reply_error(const std::string& identity, ErrorCode code,
                                const std::string& message, wire::MsgType about) {
  ++rejected_;
  spdlog::warn("psrt-placer: rejected a request ({}): {} [{} rejected, {} served]",
               error_code_name(code), message, rejected_, served_);
  auto h = make_header(self_, wire::ERROR);
  h.mutable_error()->set_code(static_cast<uint32_t>(code));
  h.mutable_error()->set_message(message);
  h.mutable_error()->set_about(about);
  messenger_.send(router_, &identity, h);
}

void PlacerService::handle(const std::string& identity, const wire::Header& h) {
  if (!h.has_place_request()) {
    reply_error(identity, ErrorCode::kUnexpected,
                "psrt-placer takes PLACE_REQUEST with a request, not an empty one", h.type());
    return;
  }
  auto request = from_message(h.place_request());
  if (!request) {
    reply_error(identity, ErrorCode::kMalformed, request.status().message(), h.type());
    return;
  }
  const auto& r = request.value();
  PlacerOptions options = r.options;
  options.max_search_s = max_search_s_;
  const auto plan = place(r.placer, Problem{r.model, r.devices, r.setup, options});
  if (!plan) {
    reply_error(identity, ErrorCode::kMalformed, plan.status().message(), h.type());
    return;
  }
  ++served_;
  spdlog::info("psrt-placer: {} layers on {} devices by {} in {:.1f} ms, step {:.3f} ms",
               r.model.layers.size(), r.devices.devices.size(), r.placer, plan->search_ms,
               plan->step_ms);
  auto reply = make_header(self_, wire::PLACE_REPLY);
  reply.set_seq(h.seq());
  *reply.mutable_place_reply() = to_reply(*plan);
  messenger_.send(router_, &identity, reply);
}

void PlacerService::run() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  const int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
  if (sfd < 0) throw std::runtime_error("psrt-placer: signalfd failed");
  messenger_.watch_fd(sfd, [this] { stop_ = true; });
  // No timers: the loop wakes for requests and the signal only.
  messenger_.run({[this] { return stop_; },
                  [](Messenger::Clock::time_point now) { return now + std::chrono::hours(1); },
                  nullptr, nullptr});
  ::close(sfd);
  spdlog::info("psrt-placer: stopping; {} served, {} rejected", served_, rejected_);
}

}  // namespace psrt::placement
