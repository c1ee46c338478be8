// Where a process learns its rank: --rank, then PSRT_RANK, RANK, SLURM_PROCID,
// OMPI_COMM_WORLD_RANK (DESIGN.md, Configuration).
#pragma once

#include <optional>
#include <string>

namespace psrt {

// `flag` is the --rank value if given (negative: not given). Throws ConfigError on a variable that
// is set but not a non-negative integer; returns nullopt when nothing says.
std::optional<int> resolve_rank(int flag);
// The process's index among those of its host: PSRT_LOCAL_RANK, LOCAL_RANK, SLURM_LOCALID,
// OMPI_COMM_WORLD_LOCAL_RANK; nullopt when none is set; ConfigError on one that is not an index.
std::optional<int> local_rank_from_env();
// PSRT_ROLE if set ("server" or "worker"), else empty.
std::string role_from_env();

}  // namespace psrt
