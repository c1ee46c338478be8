// Server 0's admission of the messages on its router, and its last duty when the job ends before
// every process has registered: the processes still to come would otherwise wait out
// cluster.start_timeout_s for a coordinator that is gone and then blame the network
// ("never heard from the coordinator ... nothing answered there"). For a while after the abort
// each one's first message is answered with the ABORT and its reason.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/server.h"

namespace psrt {

bool Server::coordinator_admits(const std::string& identity, PeerId from, const wire::Header& h) {
  if (aborted_) {
    tell_latecomer(identity, from);
    return false;
  }
  if (from == Coordinator::self()) {
    reply_error(identity, &h, {ErrorCode::kNotRegistered, "server 0 is this process"});
    return false;
  }
  if (h.type() == wire::REGISTER) return true;  // the coordinator binds the identity
  // A process of the job that fails before it registers (a data file missing on its host, a
  // grouping search that cannot run) says why, and the job ends now with its reason instead of
  // waiting out cluster.start_timeout_s. Once a rank is registered only its connection may.
  if (h.type() == wire::ABORT && coordinator_->in_job(from) && !coordinator_->is_registered(from)) {
    return true;
  }
  if (!coordinator_->holds(from, identity)) {
    reply_error(identity, &h,
                {ErrorCode::kNotRegistered,
                 describe(from) + " has not registered" +
                     (coordinator_->is_registered(from) ? " over this connection" : "")});
    return false;
  }
  coordinator_->seen(from, Clock::now());
  return true;
}

void Server::tell_latecomer(const std::string& identity, PeerId from) {
  if (!coordinator_->in_job(from) || coordinator_->is_registered(from)) return;  // told already
  if (!told_.insert(from).second) return;
  wire::Header h = make_header(self_, wire::ABORT);
  h.mutable_error()->set_message(*aborted_);
  messenger_.send(router_, &identity, h);
  spdlog::info("told {}, which had not registered, that the job ended", describe(from));
}

void Server::tell_latecomers(const std::string& why) {
  const int job = config_.cluster.servers + config_.cluster.workers;
  const auto unregistered = [&] {
    int n = 0;
    for (int r = 0; r < job; ++r) {
      const bool server = r < config_.cluster.servers;
      const PeerId p{server ? wire::SERVER : wire::WORKER,
                     uint32_t(server ? r : r - config_.cluster.servers)};
      n += !coordinator_->is_registered(p) && !told_.count(p);
    }
    return n;
  };
  // Until the start's own deadline at the latest: a process later than that gives up by itself.
  const auto deadline = std::min(liveness_.start_deadline(), Clock::now() + kLatecomerWindow);
  if (unregistered() == 0 || deadline <= Clock::now()) return;
  spdlog::info("the job ended before every process registered ({}): for up to {:.0f} s the ones "
               "still to come are told why",
               why, std::chrono::duration<double>(deadline - Clock::now()).count());
  aborted_ = why;
  try {
    messenger_.run({[&] { return done_ || Clock::now() >= deadline || unregistered() == 0; },
                    [&](Clock::time_point) { return deadline; }, nullptr, nullptr});
  } catch (const std::exception& e) {
    // A signal, or the transport: the job's own reason stands; the latecomers time out alone.
    spdlog::warn("stopped telling the processes still to come: {}", e.what());
  }
}

}  // namespace psrt
