// The devices' gradient pushes to the parameter servers and the parameters' return, as the push
// modes order them (DESIGN.md "Scheduling modes"), for the pipeline simulator.
//
// Every device has its own link to the servers' network and every server its own link, each full
// duplex at the same speed (a host's NIC; how deploy/netem/emunet.sh shapes every process). A
// piece (one chunk, the runtime's message) occupies the device's uplink and its server's downlink
// for its bytes' time, from when both are free; the server aggregates at once and replies over its
// uplink and the device's downlink likewise. So pushes that do not overlap in time each get a
// whole link, and pushes that meet at a server queue there (the devices of a pipeline push at
// different times; a fixed share of the servers' links per device priced them too slowly).
// With R data-parallel replicas the R identical devices of a stage push the same piece at the
// same moment: the server's link carries R copies, so the piece takes R times as long.
// Each device sends its pieces in its mode's order; the devices are interleaved in time (the
// device whose next piece can leave first goes next). The whole-tensor modes send all of a
// tensor's chunks back to back (consecutive messages, as the runtime does).
// With a HostCpu (host_cpu.h) the processes' I/O work comes on top: the device's per message
// sent (while the piece before is on the wire), the server's per push received (per byte too)
// and per reply sent, the device's per reply received (per byte too); R copies at the server.
#pragma once

#include <cstdint>
#include <vector>

#include "scheduler/mode.h"
#include "scheduler/sim/host_cpu.h"

namespace psrt::sim {

struct PushPiece {
  uint64_t bytes = 0;
  uint32_t server = 0;  // the rank that holds this chunk (core/sharding.h)
};

struct PushItem {
  double ready_ms = 0;    // when backward produced the gradient
  uint32_t priority = 0;  // lower goes first (the tensor key)
  std::vector<PushPiece> pieces;  // its chunks, in sending order
};

struct ServerLinks {
  double bytes_per_s = 1.25e9;  // every device's and every server's link, each direction
  double latency_ms = 0;
  uint32_t servers = 1;
  uint32_t copies = 1;  // identical replicas pushing each piece at once
  HostCpu* cpu = nullptr;  // null: no I/O work; else device d is process d, server s D + s
};

// Per device, per item: when the item's new parameters are back on the device (the same shape
// as `devices`). Throws std::invalid_argument for a piece naming a server >= links.servers.
std::vector<std::vector<double>> push_and_return(const std::vector<std::vector<PushItem>>& devices,
                                                 Mode mode, const ServerLinks& links);

}  // namespace psrt::sim
