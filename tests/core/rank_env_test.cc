// Rank from the environment: --rank, then PSRT_RANK, RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK; a
// variable that is set but not a non-negative integer is an error naming it.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <map>
#include <optional>
#include <string>

#include "core/rank_env.h"
#include "core/status.h"

using namespace psrt;

namespace {

const char* const kVars[] = {"PSRT_RANK",       "RANK",       "SLURM_PROCID",
                             "OMPI_COMM_WORLD_RANK", "PSRT_ROLE", "PSRT_LOCAL_RANK",
                             "LOCAL_RANK",      "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"};

// Clears the rank variables for a test and puts the previous values back afterwards.
class EnvGuard {
 public:
  EnvGuard() {
    for (const char* v : kVars) {
      if (const char* old = ::getenv(v)) saved_[v] = old;
      ::unsetenv(v);
    }
  }
  ~EnvGuard() {
    for (const char* v : kVars) {
      auto it = saved_.find(v);
      if (it != saved_.end()) {
        ::setenv(v, it->second.c_str(), 1);
      } else {
        ::unsetenv(v);
      }
    }
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  std::map<std::string, std::string> saved_;
};

}  // namespace

TEST_CASE("rank: the flag then PSRT_RANK RANK SLURM_PROCID OMPI_COMM_WORLD_RANK", "[rank_env]") {
  EnvGuard guard;
  CHECK(resolve_rank(-1) == std::nullopt);
  CHECK(resolve_rank(0) == 0);
  ::setenv("OMPI_COMM_WORLD_RANK", "4", 1);
  CHECK(resolve_rank(-1) == 4);
  ::setenv("SLURM_PROCID", "3", 1);
  CHECK(resolve_rank(-1) == 3);
  ::setenv("RANK", "2", 1);
  CHECK(resolve_rank(-1) == 2);
  ::setenv("PSRT_RANK", "1", 1);
  CHECK(resolve_rank(-1) == 1);
  CHECK(resolve_rank(7) == 7);  // the flag beats every variable
  ::unsetenv("PSRT_RANK");
  CHECK(resolve_rank(-1) == 2);
  ::unsetenv("RANK");
  CHECK(resolve_rank(-1) == 3);
  ::unsetenv("SLURM_PROCID");
  CHECK(resolve_rank(-1) == 4);
  // An empty variable counts as unset.
  ::setenv("PSRT_RANK", "", 1);
  CHECK(resolve_rank(-1) == 4);
  ::setenv("RANK", "12345", 1);
  CHECK(resolve_rank(-1) == 12345);
}

TEST_CASE("rank: a variable that is not a non-negative integer is an error naming it",
          "[rank_env]") {
  EnvGuard guard;
  for (const char* var : {"PSRT_RANK", "RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"}) {
    for (const char* bad : {"abc", "-1", "3x", " 3", "1.5", "99999999999999999999"}) {
      INFO(var << "=" << bad);
      ::setenv(var, bad, 1);
      try {
        (void)resolve_rank(-1);
        FAIL("no ConfigError");
      } catch (const ConfigError& e) {
        CHECK_THAT(std::string(e.what()), Catch::Contains(var) && Catch::Contains(bad));
      }
      // The flag is not second-guessed by the environment.
      CHECK(resolve_rank(5) == 5);
      ::unsetenv(var);
    }
  }
  // A bad variable lower in the order does not matter when a higher one says.
  ::setenv("PSRT_RANK", "6", 1);
  ::setenv("RANK", "bogus", 1);
  CHECK(resolve_rank(-1) == 6);
}

TEST_CASE("role comes from PSRT_ROLE", "[rank_env]") {
  EnvGuard guard;
  CHECK(role_from_env().empty());
  ::setenv("PSRT_ROLE", "worker", 1);
  CHECK(role_from_env() == "worker");
}

TEST_CASE("local rank: PSRT_LOCAL_RANK LOCAL_RANK SLURM_LOCALID OMPI_COMM_WORLD_LOCAL_RANK",
          "[rank_env]") {
  EnvGuard guard;
  CHECK(local_rank_from_env() == std::nullopt);
  ::setenv("PSRT_RANK", "5", 1);  // a global rank is not a local one
  CHECK(local_rank_from_env() == std::nullopt);
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  CHECK(local_rank_from_env() == 3);
  ::setenv("SLURM_LOCALID", "2", 1);
  CHECK(local_rank_from_env() == 2);
  ::setenv("LOCAL_RANK", "1", 1);
  CHECK(local_rank_from_env() == 1);
  ::setenv("PSRT_LOCAL_RANK", "0", 1);
  CHECK(local_rank_from_env() == 0);
  ::setenv("PSRT_LOCAL_RANK", "x", 1);
  CHECK_THROWS_WITH(local_rank_from_env(), Catch::Contains("PSRT_LOCAL_RANK") &&
                                               Catch::Contains("local rank"));
}
