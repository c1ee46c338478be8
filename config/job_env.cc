#include "config/job_env.h"

#include "config/job_config.h"
#include "core/endpoints.h"
#include "core/status.h"

namespace psrt {

Config load_config_with_env(const std::string& path, const std::vector<std::string>& sets) {
  const std::vector<EnvSet> env = cluster_sets_from_env();
  std::vector<std::string> all;
  for (const EnvSet& e : env) all.push_back(e.set);
  all.insert(all.end(), sets.begin(), sets.end());
  try {
    return load_config(path, all);
  } catch (const ConfigError& error) {
    std::string what = error.what();
    for (const EnvSet& e : env) {
      const std::string tag = "(from --set " + e.set + ")";
      const auto at = what.rfind(tag);
      if (at == std::string::npos) continue;
      what.replace(at, tag.size(), "(from the environment: " + e.variable + "=" + e.value + ")");
      throw ConfigError(what);
    }
    throw;
  }
}

}  // namespace psrt
