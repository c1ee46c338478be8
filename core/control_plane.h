// The member side of the control plane, for every process but the coordinator (server 0): the
// link to the coordinator on the process's Messenger, registration, barriers, heartbeats, the
// start timeout and the coordinator's silence (Liveness), and what the coordinator answers
// (MEMBERSHIP, BARRIER_RELEASE, ABORT, a refusal). psrt-server and the worker's PsClient both run
// it; the coordinator's own side (membership, barriers, every peer's liveness) is
// server/coordinator.h on server 0.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/config.h"
#include "core/liveness.h"
#include "core/messenger.h"
#include "core/wire.h"

namespace psrt {

class ControlPlane {
 public:
  using Clock = std::chrono::steady_clock;
  // What the owning daemon does about the control plane's events. Every one runs on the I/O
  // thread; `failed` and `refused` may throw to end the loop.
  struct Events {
    std::function<void(const wire::Membership&, const wire::StageMap&)> membership;
    std::function<void(const std::string& barrier)> released;
    // A configuration error: the coordinator serves another job, refused the registration, or
    // was never reached.
    std::function<void(const std::string& why)> refused;
    // The job ends: aborted by the coordinator, the start did not come, the coordinator is lost.
    std::function<void(const std::string& why)> failed;
    // A heartbeat is due: send it (ControlPlane::heartbeat()) and check progress.
    std::function<void(Clock::time_point now)> heartbeat;
    // This process did not run for a while: clocks of one's own restart at `now`.
    std::function<void(Clock::time_point now)> resumed;
    // An ERROR from the coordinator about anything but the registration (optional: else failed).
    std::function<void(const wire::Header&)> error;
    // A HEARTBEAT from the coordinator (optional): what it says (keep_checkpoints).
    std::function<void(const wire::Header&)> coordinator_heartbeat;
    // HEARTBEAT, MEMBERSHIP and the rest have handlers here; types the owner takes on the same
    // link (a worker's link to server 0 also carries its data) are registered by the owner.
  };

  // `link`: the DEALER connected to cluster.coordinator; `self` names this process.
  ControlPlane(Messenger& messenger, Messenger::LinkId link, Sender self,
               const ClusterConfig& cluster, std::size_t max_string_bytes, Events events);

  Messenger::LinkId link() const { return link_; }
  bool send(const wire::Header& h, std::vector<zmq::message_t> payload = {});
  void register_with(const wire::Register& reg, const wire::StageInfo* stage = nullptr);
  void arrive(const std::string& barrier);
  // `keep_checkpoints`: a server's, until the job ends (server/server_keep.cc).
  void heartbeat(uint32_t waits_for_server_plus_one = 0, bool keep_checkpoints = false);
  // Tells the coordinator why this process gives up (so that the job ends naming the cause), then
  // `failed`.
  void give_up(const std::string& why);

  // Once per loop pass, given whether the membership is known and the start barrier passed.
  // Returns when it must run next.
  Clock::time_point tick(Clock::time_point now, bool membership, bool started);
  Clock::time_point started_at() const { return liveness_.started_at(); }

 private:
  void on_bad(const wire::Header& h, const WireError& err);
  void on_error(const wire::Header& h);
  std::string who() const;  // "server 2", "worker 3"

  Messenger& messenger_;
  Messenger::LinkId link_;
  Sender self_;
  ClusterConfig cluster_;
  std::size_t max_string_bytes_;
  Events events_;
  Liveness liveness_;
};

}  // namespace psrt
