#include "core/rank_env.h"

#include <charconv>
#include <cstdlib>

#include "core/status.h"

namespace psrt {

std::optional<int> resolve_rank(int flag) {
  if (flag >= 0) return flag;
  for (const char* var : {"PSRT_RANK", "RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    int rank = -1;
    const char* end = v + std::char_traits<char>::length(v);
    auto [ptr, ec] = std::from_chars(v, end, rank);
    if (ec != std::errc() || ptr != end || rank < 0) {
      throw ConfigError(std::string(var) + "='" + v + "' is not a non-negative integer rank");
    }
    return rank;
  }
  return std::nullopt;
}

std::string role_from_env() {
  const char* v = std::getenv("PSRT_ROLE");
  return v ? std::string(v) : std::string();
}

}  // namespace psrt
