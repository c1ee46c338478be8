// scheduler.grouping as written in YAML or on a command line (GradOptimizer, scheduler/grouping.h):
//   none                 every tensor is its own message (the default)
//   auto                 GradOptimizer's search: the grouping the simulator finds fastest
//   size:BYTES           consecutive tensors (backward order) until a group holds >= BYTES
//   ddp:BYTES:FIRST      PyTorch DDP's buckets: FIRST for the first bucket, BYTES after
//   horovod:BYTES:MS     Horovod tensor fusion: what is ready at each MS cycle, up to BYTES
//   mgwfbp               MG-WFBP's merge rule (merge when waiting costs less than a message)
// Sizes take the units of psrt-sim (4MiB, 64KiB, 1000000).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace psrt {

struct GroupingSpec {
  enum class Kind { kNone, kAuto, kSize, kDdp, kHorovod, kMgwfbp };
  Kind kind = Kind::kNone;
  uint64_t bytes = 0;        // size, ddp (bucket cap), horovod (fusion threshold)
  uint64_t first_bytes = 0;  // ddp: first bucket's cap
  double cycle_ms = 0;       // horovod: cycle time

  std::string text() const;  // as parse_grouping() reads it
};

// nullopt, with `error` saying what is allowed, for anything else.
std::optional<GroupingSpec> parse_grouping(const std::string& text, std::string* error = nullptr);

// "4MiB" -> 4194304; KiB/MiB/GiB binary, KB/MB/GB decimal, B or nothing: bytes. nullopt if not
// a whole positive number of bytes.
std::optional<uint64_t> parse_byte_size(const std::string& text);

}  // namespace psrt
