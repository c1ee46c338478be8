#include "tools/launch/temp_folder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/status.h"

namespace psrt::launch {

std::string temp_folder() {
  const char* env = std::getenv("TMPDIR");
  const bool set = env != nullptr && *env != '\0';
  const std::string dir = set ? env : "/tmp";
  const std::string named = set ? "TMPDIR=" + dir : dir + " (TMPDIR is not set)";
  const std::string use = " (psrt-launch writes the job's secret and an auto plan there)";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) throw ConfigError(named + ": " + std::strerror(errno) + use);
  if (!S_ISDIR(st.st_mode)) throw ConfigError(named + ": not a folder" + use);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw ConfigError(named + ": " + std::strerror(errno) + use);
  }
  return dir;
}

}  // namespace psrt::launch
