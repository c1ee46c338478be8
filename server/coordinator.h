// Server 0's coordinator role, as logic without sockets: registration, membership, barriers and
// liveness. The server's I/O loop feeds it messages and the clock and sends what it decides.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"
#include "core/wire.h"  // WireError, and the wire types it names (messaging layer)

namespace psrt {

using Clock = std::chrono::steady_clock;

struct PeerId {
  wire::Role role;
  uint32_t rank;
  auto operator<=>(const PeerId&) const = default;
};

// What a registration may ask of the servers.
struct RegisterLimits {
  uint64_t server_bytes = 0;     // memory a server may give its shard; 0: no cap
  double bytes_per_element = 4;  // parameters, optimizer state and reply state, per element
  std::size_t max_string = 1024;  // tensor names, addresses
  // The transport servers register their addresses on: tcp:// for a job; inproc:// when the
  // coordinator itself is in-process (tests running daemons on threads, core/endpoints.h).
  std::string transport = "tcp://";
};

class Coordinator {
 public:
  // Largest tensor a worker may register (2^34 fp32 elements: 64 GiB).
  static constexpr uint64_t kMaxModelElements = 1ull << 34;
  static constexpr int kMaxTensors = 1 << 20;
  static constexpr int kMaxSettings = 256;  // lines of a registration's settings
  Coordinator(int servers, int workers, const SchedulerConfig& scheduler,
              const RegisterLimits& limits = {});

  // A process announced itself over the connection `identity`, which is bound to its role and
  // rank from now on. Rejects unknown ranks, a rank another identity holds (kTaken), models over
  // the limits (kLimit) and workers whose model differs from the first worker's. A repeat from the
  // holder is accepted.
  // A stage worker of a model-parallel job also sends its StageInfo (`stage`; null otherwise):
  // either every worker does, for the same number of stages, or none.
  std::optional<WireError> on_register(PeerId peer, const std::string& identity,
                                       const wire::Register& reg, Clock::time_point now,
                                       const wire::StageInfo* stage = nullptr);
  // The same with the peer's plain routing id as its identity.
  Status on_register(PeerId peer, const wire::Register& reg, Clock::time_point now);
  bool all_registered() const;
  // Everyone registered: the membership to send (computed once).
  const wire::Membership& membership();
  // What building the membership found worth saying (a worker's compression state restarting
  // empty at the resume point), for the caller's log.
  const std::vector<std::string>& notes() const { return notes_; }
  // With the membership: every worker's StageInfo by rank; empty for a data-parallel job.
  const wire::StageMap& stage_map() const { return stage_map_; }

  void seen(PeerId peer, Clock::time_point now);
  // Everyone counts as heard from now: after this process itself was not running (stopped,
  // swapped out), silence it could not observe is not the peers' fault.
  void refresh(Clock::time_point now);
  // The first registered peer (other than server 0) silent for longer than `timeout`, if any.
  std::optional<PeerId> lost(Clock::time_point now, Clock::duration timeout) const;
  double silent_seconds(PeerId peer, Clock::time_point now) const;

  // Returns true when this arrival completes the barrier. Barrier "membership": every server
  // (they hold their chunk tables, so workers may learn the membership); "start": every
  // process; "shutdown": every worker (servers wait for the release).
  bool arrive(const std::string& barrier, PeerId peer);
  // Names the processes that have not arrived at `barrier` (or not registered if empty).
  std::string missing(const std::string& barrier) const;

  std::vector<PeerId> registered_peers() const;  // everyone but server 0
  bool is_registered(PeerId peer) const { return last_seen_.count(peer) > 0 || peer == self(); }
  // A rank of the job's (server 0 included).
  bool in_job(PeerId peer) const {
    return peer.role == wire::SERVER ? peer.rank < uint32_t(servers_)
                                     : peer.role == wire::WORKER && peer.rank < uint32_t(workers_);
  }
  // Whether `peer` is registered over the connection `identity`.
  bool holds(PeerId peer, const std::string& identity) const;
  const std::string& identity(PeerId peer) const { return identities_.at(peer); }
  static PeerId self() { return {wire::SERVER, 0}; }

 private:
  std::vector<PeerId> expected(const std::string& barrier) const;
  // Its settings (core/shared_settings.h) against those registered before it.
  std::optional<WireError> check_settings(PeerId peer, const wire::Register& reg) const;
  std::optional<WireError> check_worker(PeerId peer, const wire::Register& reg) const;
  std::optional<WireError> check_stage(PeerId peer, const wire::Register& reg,
                                       const wire::StageInfo* stage) const;
  // With --resume: the newest iteration every server holding a chunk has a checkpoint of
  // (throws if none); a worker whose compression state lacks it is noted (notes()).
  void set_resume_point(wire::Membership& m);

  std::vector<std::string> notes_;
  int servers_;
  int workers_;
  SchedulerConfig scheduler_;
  RegisterLimits limits_;
  std::map<PeerId, wire::Register> registrations_;
  std::map<PeerId, std::string> identities_;
  std::map<PeerId, Clock::time_point> last_seen_;
  std::map<std::string, std::set<PeerId>> barriers_;
  std::optional<wire::Membership> membership_;
  std::map<uint32_t, wire::StageInfo> stages_;  // by worker rank
  wire::StageMap stage_map_;
};

std::string describe(PeerId peer);

}  // namespace psrt
