#include "core/abort_notice.h"

#include <sys/resource.h>

#include <new>
#include <optional>
#include <stdexcept>

#include "core/config_limits.h"
#include "core/curve.h"
#include "core/endpoints.h"
#include "core/transport.h"

namespace psrt {

void tell_coordinator_abort(const Config& config, wire::Role role, uint32_t rank,
                            const std::string& why) {
  if ((role == wire::SERVER && rank == 0) || config.cluster.coordinator.empty()) return;
  try {
    std::optional<CurveKeys> curve;
    if (config.security.curve) curve = load_curve_keys(config.security);
    zmq::context_t ctx(1);
    zmq::socket_t socket = make_dealer(
        ctx, process_identity(role, rank),
        socket_options(config.limits, curve ? &*curve : nullptr, 0, uses_ipv6(config.cluster)));
    socket.set(zmq::sockopt::linger, 1000);
    socket.connect(config.cluster.coordinator);
    wire::Header h = make_header({role, rank, config.job.id}, wire::ABORT);
    h.mutable_error()->set_message(why.substr(0, std::size_t(config.limits.max_string_bytes)));
    send_envelope(socket, nullptr, h);
    socket.close();  // waits for the linger at most
  } catch (const std::exception&) {
    // Best effort: the process exits with its own message either way.
  }
}

std::string failure_reason(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) {
    // Under an address-space limit (ulimit -v, a batch system's), the limit is often the cause.
    rlimit lim{};
    if (::getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
      return "out of memory (the address-space limit, ulimit -v, is " +
             std::to_string(lim.rlim_cur >> 20) + " MiB)";
    }
    return "out of memory";
  }
  if (dynamic_cast<const std::length_error*>(&e)) {
    return std::string("a size too large: ") + e.what();
  }
  return std::string("internal error: ") + e.what();
}

}  // namespace psrt
