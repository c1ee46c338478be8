// Group pushes (GradOptimizer, scheduler/grouping.h) built by hand for raw clients: seeded
// gradients for whole tensors, laid out a frame per member or packed into one.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "tests/integration/raw_client.h"

namespace psrt::test {

struct RawGroup {
  wire::Header header;
  std::vector<std::vector<float>> grads;  // by member
  // The payload as the members' `frame` fields lay it out: members that share a frame back to
  // back (protocol version 3), a frame per distinct index.
  std::vector<zmq::message_t> frames() const;
  // Every member in one packed frame (the layout a worker sends for small members).
  RawGroup& packed();
};

// A correct group push of `keys` (whole tensors of `sizes` elements, by key) for `iteration`,
// with dyadic gradients from `rng`.
RawGroup group_push(RawClient& w, const std::vector<uint64_t>& sizes,
                    const std::vector<uint32_t>& keys, uint64_t iteration, std::mt19937& rng);

}  // namespace psrt::test
