#include "core/config_limits.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace psrt {

namespace {

// MemAvailable from /proc/meminfo, in bytes; 0 if unknown.
uint64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream fields(line.substr(13));
      uint64_t kb = 0;
      fields >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

// What the cgroup (v2) still allows: memory.max - memory.current; 0 if unlimited or unknown.
uint64_t cgroup_available() {
  std::ifstream max_in("/sys/fs/cgroup/memory.max"), cur_in("/sys/fs/cgroup/memory.current");
  uint64_t max = 0, cur = 0;
  if (!(max_in >> max) || !(cur_in >> cur)) return 0;  // "max" does not parse: no limit
  return max > cur ? max - cur : 1;
}

}  // namespace

SocketOptions socket_options(const LimitsConfig& limits, const CurveKeys* curve,
                             uint64_t credit_bytes, bool ipv6) {
  SocketOptions o;
  o.ipv6 = ipv6;
  o.hwm = limits.socket_hwm;
  o.curve = curve;
  o.buffer_bytes = limits.socket_buffer_bytes;
  o.held_bytes = std::max<std::size_t>(o.held_bytes, std::size_t(4 * credit_bytes));
  return o;
}

uint64_t memory_cap() {
  uint64_t avail = mem_available();
  const uint64_t group = cgroup_available();
  if (group > 0) avail = avail > 0 ? std::min(avail, group) : group;
  return avail / 5 * 4;
}

std::string replay_memory_problem(const std::string& profile, uint64_t elements, int copies,
                                  uint64_t available) {
  const uint64_t need = elements * 8 * uint64_t(copies);  // the values and their gradients
  if (available == 0 || need <= available) return "";
  return "model.profile: " + profile + " holds " + std::to_string(elements) +
         " parameters (at model.scale): with their gradients that is " +
         std::to_string(need >> 20) + " MiB" +
         (copies > 1 ? " for its " + std::to_string(copies) + " workers" : std::string()) +
         ", over the " + std::to_string(available >> 20) +
         " MiB this machine has available (80%); shrink it with model.scale" +
         (copies > 1 ? " or run fewer workers here" : "");
}

uint64_t server_memory_cap(const LimitsConfig& limits) {
  return limits.server_memory_bytes > 0 ? limits.server_memory_bytes : memory_cap();
}

constexpr int kMinSocketBufferBytes = 64 << 10;

void parse_security_and_limits(const YamlReader& top, Config& c,
                               const std::function<std::string(const std::string&)>& resolve) {
  const YamlReader sec = top.child("security");
  c.security.curve = sec.get_bool("curve", false);
  c.security.secret_file = resolve(sec.get_string("secret_file", ""));
  sec.reject_unknown();

  const YamlReader lim = top.child("limits");
  LimitsConfig& l = c.limits;
  l.socket_hwm = int(lim.get_int("socket_hwm", l.socket_hwm, 100, 10'000'000));
  l.socket_buffer_bytes =
      int(lim.get_int("socket_buffer_bytes", l.socket_buffer_bytes, 0, int64_t(1) << 30));
  // 1 KiB stalled the job for good after its start (bytes stuck in a send queue, mss 576), and
  // the workers then blamed server 0; a few KiB ran tens of times slower.
  if (l.socket_buffer_bytes > 0 && l.socket_buffer_bytes < kMinSocketBufferBytes) {
    lim.fail("socket_buffer_bytes", "must be 0 (the OS's default) or at least " +
                                        std::to_string(kMinSocketBufferBytes) + ", not " +
                                        std::to_string(l.socket_buffer_bytes));
  }
  l.error_replies_per_s = lim.get_double("error_replies_per_s", l.error_replies_per_s, 0.1, 1e6);
  l.log_lines_per_s = lim.get_double("log_lines_per_s", l.log_lines_per_s, 0.1, 1e6);
  l.server_memory_bytes = uint64_t(lim.get_int("server_memory_bytes", 0, 0, int64_t(1) << 50));
  l.max_string_bytes = int(lim.get_int("max_string_bytes", l.max_string_bytes, 64, 1 << 20));
  l.allow_non_finite = lim.get_bool("allow_non_finite", false);
  lim.reject_unknown();
}

}  // namespace psrt
