#include "core/rank_env.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>

#include "core/status.h"

namespace psrt {

namespace {
// The first of `vars` that is set, as a non-negative integer; ConfigError if it is not one.
std::optional<int> first_index(std::initializer_list<const char*> vars, const char* what) {
  for (const char* var : vars) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    int value = -1;
    const char* end = v + std::char_traits<char>::length(v);
    auto [ptr, ec] = std::from_chars(v, end, value);
    if (ec != std::errc() || ptr != end || value < 0) {
      throw ConfigError(std::string(var) + "='" + v + "' is not a non-negative integer " + what);
    }
    return value;
  }
  return std::nullopt;
}
}  // namespace

std::optional<int> resolve_rank(int flag) {
  if (flag >= 0) return flag;
  return first_index({"PSRT_RANK", "RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"}, "rank");
}

std::optional<int> local_rank_from_env() {
  return first_index(
      {"PSRT_LOCAL_RANK", "LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"},
      "local rank");
}

std::string role_from_env() {
  const char* v = std::getenv("PSRT_ROLE");
  return v ? std::string(v) : std::string();
}

}  // namespace psrt
