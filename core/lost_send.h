// A message dropped at a full queue that nothing sends again: a worker's INIT, PULL or push, past
// the mark (limits.socket_hwm) and what its sender holds for the peer (core/held_sends.h: a
// server that stopped reading). The job waited for it until cluster.progress_timeout_s (300 s)
// and then blamed a peer; the worker now gives up at once, naming why. A server's reply dropped so
// is counted only: a worker that floods a server without reading its replies must not end the
// job.
#pragma once

#include <string>

#include "core/transport.h"
#include "core/wire.h"

namespace psrt {

// Whether a drop of `type` loses something the job waits for (heartbeats recur; an ERROR, an
// ABORT or a placer's reply is the peer's own to lose).
inline bool lost_if_dropped(wire::MsgType type) {
  switch (type) {
    case wire::HEARTBEAT:
    case wire::ERROR:
    case wire::ABORT:
    case wire::PLACE_REQUEST:
    case wire::PLACE_REPLY:
      return false;
    default:
      return true;
  }
}

// The job's end, worded: "PUSH to server 1 dropped ...".
inline std::string lost_send_reason(wire::MsgType type, const std::string& to,
                                    const SocketOptions& options) {
  return std::string(wire::MsgType_Name(type)) + " to " + to +
         " dropped: its queue was at limits.socket_hwm (" + std::to_string(options.hwm) +
         " messages) and " + std::to_string(options.held_bytes >> 20) +
         " MiB more waited for it (the larger of 64 MiB and 4x scheduler.credit_bytes): it reads "
         "far slower than this worker sends, or not at all; nothing sends it again, so the job "
         "cannot go on";
}

}  // namespace psrt
