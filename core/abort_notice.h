// The last word of a process that fails before it has registered with the coordinator (start-up:
// a data file missing on its host, a device that cannot be opened, a bad calibration file): it
// tells the coordinator why, over a connection of its own, and the coordinator ends the job at
// once with that reason (server/server_data.cc admits an ABORT from a rank of the job that has
// not registered). Without it the rest of the job waited out cluster.start_timeout_s and then
// blamed the silence ("never came: worker 0"), the reason only in that host's log.
#pragma once

#include <cstdint>
#include <exception>
#include <string>

#include "core/config.h"
#include "core/wire.h"

namespace psrt {

// Best effort, at most about a second (the socket's linger): nothing is said by server 0 (it is
// the coordinator) or without a coordinator address, and a coordinator that is gone, or refuses
// the notice (this rank registered over another connection), changes nothing here. Never throws.
void tell_coordinator_abort(const Config& config, wire::Role role, uint32_t rank,
                            const std::string& why);

// Why a process fails, in the words told to the job and printed: "out of memory", "a size too
// large: ..." (std::length_error), else "internal error: ...".
std::string failure_reason(const std::exception& e);

}  // namespace psrt
