// The placement service's messages to and from the placement library's types, with every check a
// request from a peer needs (sizes, ranges, graph shape) before the library sees it.
#pragma once

#include <cstdint>
#include <string>

#include "core/model.h"
#include "core/plan.h"
#include "core/status.h"
#include "placement/placer.h"
#include "proto/psrt_fwd.h"

namespace psrt::placement {

constexpr uint32_t kMaxRequestLayers = 20000;  // NetPlacer answers 10,000 in seconds
constexpr uint32_t kMaxAnnealLayers = 1000;     // annealing simulates every candidate
// The placers that simulate every candidate (annealing, exhaustive): each simulation's cost grows
// with the square of the chunks, which grow with the servers (the shard map balances them).
constexpr uint32_t kMaxSimSearchServers = 64;
constexpr uint32_t kMaxRequestDevices = 1024;
constexpr double kMaxExactSteps = 1e10;  // pipedream, torchgpipe: devices x layers^2 (seconds)
constexpr int64_t kMaxRequestBytes = 32 << 20;  // the placer's socket takes headers up to this

struct Request {
  ModelDesc model;
  DeviceSet devices;
  TrainingSetup setup;
  PlacerOptions options;
  std::string placer = "netplacer";
};

// Builds the request message (the client side).
wire::PlaceRequest to_message(const Request& r);
// Checks and converts a request from a peer; the error says what is wrong.
Result<Request> from_message(const wire::PlaceRequest& m);

wire::PlaceReply to_reply(const Plan& plan);
// Checks a reply against the request it answers and turns it into a plan.
Result<Plan> plan_from_reply(const wire::PlaceReply& m, const Request& request);

}  // namespace psrt::placement
