#include "placement/service/placer_service.h"

#include <signal.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstdlib>
#include <thread>

#include "core/endpoint_form.h"
#include "core/transport.h"
#include "placement/service/request.h"

namespace psrt::placement {

namespace {

// While a search runs on the I/O thread, a thread of its own watches the stop signals: the loop
// read them only between requests, and a 3000-layer search on 1024 devices held a SIGTERM for
// 24 s, then sent its plan anyway. Stopped meanwhile, the placer ends at once; the request is
// abandoned (its client times out) and there is nothing else to save.
class SearchWatch {
 public:
  explicit SearchWatch(int signal_fd) : done_(::eventfd(0, EFD_CLOEXEC)) {
    if (signal_fd < 0 || done_ < 0) return;
    thread_ = std::thread([this, signal_fd] {
      pollfd fds[2] = {{signal_fd, POLLIN, 0}, {done_, POLLIN, 0}};
      while (::poll(fds, 2, -1) < 0 && errno == EINTR) {
      }
      if (fds[1].revents || !(fds[0].revents & POLLIN)) return;
      spdlog::warn("psrt-placer: stopping during a search; the request is abandoned");
      spdlog::default_logger()->flush();
      std::_Exit(0);
    });
  }
  ~SearchWatch() {
    const uint64_t one = 1;
    if (thread_.joinable()) {
      (void)!::write(done_, &one, sizeof one);
      thread_.join();
    }
    if (done_ >= 0) ::close(done_);
  }
  SearchWatch(const SearchWatch&) = delete;
  SearchWatch& operator=(const SearchWatch&) = delete;

 private:
  int done_;
  std::thread thread_;
};

}  // namespace

PlacerService::PlacerService(const std::string& bind, std::string job_id, double max_search_s)
    : job_id_(std::move(job_id)),
      max_search_s_(max_search_s),
      messenger_(job_id_, {}, metrics_, log_),
      router_(messenger_.add_router("a requester")) {
  zmq::socket_t& router = messenger_.socket(router_);
  router.set(zmq::sockopt::maxmsgsize, kMaxRequestBytes);
  // Messages are counted, not weighed: 10000 requests of 32 MiB queued from one connection while
  // a search ran took GBs. A requester has one request out at a time.
  router.set(zmq::sockopt::rcvhwm, 4);
  if (is_ipv6_endpoint(bind)) router.set(zmq::sockopt::ipv6, 1);  // --bind tcp://[::1]:0
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
                  wire::PLACE_REQUEST, m.header.seq());
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
                                const std::string& message, wire::MsgType about, uint64_t seq) {
  ++rejected_;
  // Names in the message are the peer's (a 5 MB placer name made a 10 MB log line and an ERROR
  // too large to send): shown escaped and bounded.
  const std::string shown = printable(message, 2048);
  spdlog::warn("psrt-placer: rejected a request ({}): {} [{} rejected, {} served]",
               error_code_name(code), shown, rejected_, served_);
  auto h = make_header(self_, wire::ERROR);
  h.set_seq(seq);  // the request's: a requester with several out can tell which
  h.mutable_error()->set_code(static_cast<uint32_t>(code));
  h.mutable_error()->set_message(shown);
  h.mutable_error()->set_about(wire::MsgType_IsValid(about) ? about : wire::MsgType(0));
  messenger_.send(router_, &identity, h);
}

void PlacerService::handle(const std::string& identity, const wire::Header& h) {
  if (!h.has_place_request()) {
    reply_error(identity, ErrorCode::kUnexpected,
                "psrt-placer takes PLACE_REQUEST with a request, not an empty one", h.type(),
                h.seq());
    return;
  }
  auto request = from_message(h.place_request());
  if (!request) {
    reply_error(identity, ErrorCode::kMalformed, request.status().message(), h.type(), h.seq());
    return;
  }
  const auto& r = request.value();
  PlacerOptions options = r.options;
  options.max_search_s = max_search_s_;
  spdlog::info("psrt-placer: placing {} layers on {} devices by {}", r.model.layers.size(),
               r.devices.devices.size(), printable(r.placer, 64));
  const auto plan = [&] {
    const SearchWatch watch(signal_fd_);
    return place(r.placer, Problem{r.model, r.devices, r.setup, options});
  }();
  if (!plan) {
    reply_error(identity, ErrorCode::kMalformed, plan.status().message(), h.type(), h.seq());
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
  signal_fd_ = sfd;
  messenger_.watch_fd(sfd, [this] { stop_ = true; });
  // No timers: the loop wakes for requests and the signal only.
  messenger_.run({[this] { return stop_; },
                  [](Messenger::Clock::time_point now) { return now + std::chrono::hours(1); },
                  nullptr, nullptr});
  signal_fd_ = -1;
  ::close(sfd);
  spdlog::info("psrt-placer: stopping; {} served, {} rejected", served_, rejected_);
}

}  // namespace psrt::placement
