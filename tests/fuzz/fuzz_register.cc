// libFuzzer: server 0's coordinator (server/coordinator.h) as it takes a job's registrations: a
// sequence of REGISTER messages, some with a StageInfo, from the servers and workers of a job of
// 2 servers and 2 workers, then the membership once everyone is in. A refusal must say why; the
// membership either builds or throws with a reason (the server then ends the job with it), and
// what it carries must be usable by every process: the job's sizes and addresses, chunks that
// tile each tensor exactly on servers of the job, a stage map for every worker or none, and a
// grouping plan that passes the workers' own checks.
//
// Input: records of [selector][u16 LE length][REGISTER bytes], followed, where the selector's
// bit 5 is set, by [u16 LE length][StageInfo bytes]. Selector bit 7: a worker (else a server);
// bits 0-1: the rank (2 and 3 are not in the job).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "core/wire_grouping.h"
#include "scheduler/grouping.h"
#include "server/coordinator.h"

namespace {

constexpr int kServers = 2, kWorkers = 2;

// The next length-prefixed field, or false at the end of the input.
bool take(const uint8_t* data, size_t size, size_t& at, std::string& out) {
  if (at + 2 > size) return false;
  const size_t n = std::min<size_t>(size - at - 2, data[at] | (data[at + 1] << 8));
  out.assign(reinterpret_cast<const char*>(data + at + 2), n);
  at += 2 + n;
  return true;
}

// Each tensor's chunks, by offset, cover [0, num_elements) without gap or overlap.
void check_chunks(const psrt::wire::Membership& m) {
  std::vector<std::map<uint64_t, uint64_t>> by_key(std::size_t(m.tensors_size()));
  for (const auto& c : m.chunks()) {
    if (c.key() >= by_key.size() || c.server() >= kServers || c.length() == 0) __builtin_trap();
    if (!by_key[c.key()].emplace(c.offset(), c.length()).second) __builtin_trap();
  }
  for (std::size_t k = 0; k < by_key.size(); ++k) {
    uint64_t next = 0;
    for (const auto& [offset, length] : by_key[k]) {
      if (offset != next) __builtin_trap();
      next = offset + length;
    }
    if (next != m.tensors(int(k)).num_elements()) __builtin_trap();
  }
}

void check_membership(const psrt::wire::Membership& m, const psrt::wire::StageMap& stages) {
  if (m.num_servers() != kServers || m.num_workers() != kWorkers) __builtin_trap();
  if (m.server_addresses_size() != kServers || m.worker_identities_size() != kWorkers) {
    __builtin_trap();
  }
  if (stages.workers_size() != 0 && stages.workers_size() != kWorkers) __builtin_trap();
  check_chunks(m);
  if (!m.has_grouping()) return;
  const uint32_t tensors = uint32_t(m.tensors_size());
  if (psrt::grouping_plan_error(m.grouping(), tensors)) __builtin_trap();
  for (const auto& c : m.grouping().candidates()) {
    // What every worker does with it (worker/grouping_plan.cc): it throws on what the check missed.
    try {
      (void)psrt::Grouping::from_starts({c.starts().begin(), c.starts().end()}, tensors);
    } catch (const std::exception&) {
      __builtin_trap();
    }
  }
}

}  // namespace

// protobuf logs each string field with invalid UTF-8; the fuzzer makes millions of them.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  psrt::SchedulerConfig scheduler;
  scheduler.chunk_bytes = 4096;
  psrt::RegisterLimits limits;
  limits.server_bytes = 64u << 20;  // as server 0 sets from its memory: bounds the chunk table
  psrt::Coordinator c(kServers, kWorkers, scheduler, limits);
  const auto now = psrt::Clock::now();
  size_t at = 0;
  std::string reg_bytes, stage_bytes;
  while (at < size) {
    const uint8_t selector = data[at++];
    if (!take(data, size, at, reg_bytes)) break;
    psrt::wire::Register reg;
    if (!reg.ParseFromString(reg_bytes)) continue;
    psrt::wire::StageInfo stage;
    const bool staged = (selector & 0x20) != 0;
    if (staged && (!take(data, size, at, stage_bytes) || !stage.ParseFromString(stage_bytes))) {
      continue;
    }
    const psrt::PeerId peer{(selector & 0x80) ? psrt::wire::WORKER : psrt::wire::SERVER,
                            uint32_t(selector & 3)};
    const auto refused = c.on_register(peer, "id" + std::to_string(selector & 0x83), reg, now,
                                       staged ? &stage : nullptr);
    if (refused && refused->message.empty()) __builtin_trap();  // a refusal says why
  }
  if (!c.all_registered()) return 0;
  const psrt::wire::Membership* m = nullptr;
  try {
    m = &c.membership();
  } catch (const std::exception& e) {
    if (std::string(e.what()).empty()) __builtin_trap();  // the job ends, saying why
    return 0;
  }
  check_membership(*m, c.stage_map());
  return 0;
}
