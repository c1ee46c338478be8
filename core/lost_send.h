// A message dropped at a full queue (limits.socket_hwm) that nothing sends again: a worker's INIT,
// PULL or push. Each was a log line, and the job then waited for what never came until
// cluster.progress_timeout_s (300 s) and blamed a peer; the worker now gives up at once, naming
// the limit. A server's reply dropped is counted only: a worker that floods a server without
// reading its replies must not end the job (the byte credit keeps the replies below the mark).
#pragma once

#include <string>

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
inline std::string lost_send_reason(wire::MsgType type, const std::string& to, int hwm) {
  return std::string(wire::MsgType_Name(type)) + " to " + to +
         " dropped: its queue was at limits.socket_hwm (" + std::to_string(hwm) +
         " messages), and nothing sends it again, so the job cannot go on: raise "
         "limits.socket_hwm above the messages a link can have in flight "
         "(scheduler.credit_bytes / chunk_bytes, or the number of small tensors)";
}

}  // namespace psrt
