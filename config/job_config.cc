#include "config/job_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <new>

#include "compress/config_section.h"
#include "core/config_limits.h"
#include "core/config_placement.h"
#include "core/config_sections.h"
#include "core/status.h"
#include "scheduler/config_section.h"

namespace psrt {

namespace {

Config parse_yaml(const std::string& yaml_text, const std::string& where,
                  const std::vector<std::string>& sets, const std::string& base_dir) {
  Config c;
  c.source = where;
  YamlReader top(load_config_root(yaml_text, where, sets), "", where);
  const ConfigPath in_base = [&](const std::string& p) { return resolve_config_path(p, base_dir); };
  parse_cluster(top.child("cluster"), c.cluster);
  parse_metrics(top.child("metrics"), c.cluster, c.metrics);
  parse_job(top.child("job"), c.job);
  parse_model(top.child("model"), in_base, c.model);
  parse_data(top.child("data"), in_base, c.data);
  parse_optimizer(top.child("optimizer"), c.optimizer);
  parse_scheduler_section(top.child("scheduler"), in_base, c.scheduler);
  c.placement = parse_placement(top.child("placement"), in_base);
  // A tensor's gradients come from one worker per replica (each stage of a replica sees the same
  // samples): Adam's global batch and the union of the pushes count replicas, not workers.
  compress::parse_compression_section(top.child("compression"),
                                      int(c.placement.replicas(c.cluster.workers)), c.optimizer,
                                      c.compression);
  parse_security_and_limits(top, c, in_base);
  check_split(c, top.child("placement"));
  parse_checkpoint(top.child("checkpoint"), in_base, c.checkpoint);
  c.log_level = top.get_choice("log_level", "info", {"trace", "debug", "info", "warn", "error"});
  c.timeline = top.get_string("timeline", "");
  top.reject_unknown();
  return c;
}

// An error about a key a --set gave (the last one, which wins) says so: it read as the file's.
std::string with_set_named(const std::string& error, const std::string& where,
                           const std::vector<std::string>& sets) {
  for (auto it = sets.rbegin(); it != sets.rend(); ++it) {
    const std::string key = where + ": " + it->substr(0, it->find('='));
    if (error.rfind(key, 0) != 0 || error.size() == key.size()) continue;
    const char next = error[key.size()];
    if (next == ':' || next == '[') return error + " (from --set " + *it + ")";
  }
  return error;
}

}  // namespace

Config parse_config(const std::string& yaml_text, const std::string& where,
                    const std::vector<std::string>& sets, const std::string& base_dir) {
  try {
    return parse_yaml(yaml_text, where, sets, base_dir);
  } catch (const ConfigError& e) {
    if (sets.empty()) throw;
    throw ConfigError(with_set_named(e.what(), where, sets));
  } catch (const std::bad_alloc&) {
    throw ConfigError(where + ": out of memory while parsing the config (a value far too large?)");
  } catch (const YAML::Exception& e) {  // anything yaml-cpp throws past the checks above
    throw ConfigError(where + ": " + e.what());
  }
}

namespace {
// A file whose YAML holds nothing: empty, blank or comments only.
bool holds_nothing(const std::string& text) {
  try {
    const YAML::Node root = YAML::Load(text);
    return !root || root.IsNull();
  } catch (const YAML::Exception&) {
    return false;  // parse_config names the error
  }
}
}  // namespace

Config load_config(const std::string& path, const std::vector<std::string>& sets) {
  const std::string text = read_config_file(path);
  // A job file emptied by a failed copy, or the wrong file, ran the defaults as if all was well.
  if (holds_nothing(text)) {
    throw ConfigError(path + ": the file sets nothing (" +
                      (text.empty() ? "it is empty" : "blank or comments only") +
                      "); a job file sets at least job.id and the model (docs/config.md)");
  }
  const auto dir = std::filesystem::path(path).parent_path().string();
  return parse_config(text, path, sets, dir.empty() ? "." : dir);
}

std::vector<std::string> compression_warnings(const Config& c) {
  std::vector<std::string> out;
  const CompressionConfig& z = c.compression;
  if (!z.idle_keys.empty()) {
    std::string keys;
    for (const auto& k : z.idle_keys) {
      keys += (keys.empty() ? "compression." : ", compression.") + k;
    }
    out.push_back(keys + ": set, but codec " + z.codec + " with these settings does not read " +
                  (z.idle_keys.size() == 1 ? "it" : "them") + " (docs/config.md says what " +
                  "each key is for)");
  }
  if (z.codec == "none") return out;
  const OptimizerConfig& o = c.optimizer;
  if (o.type == "adam") {
    out.push_back("compression." + z.codec + " with the servers' Adam (adam_correction: false): "
                  "Adam's second moment sees each element arrive as a burst of its residual, "
                  "which shrinks its steps; expect a loss of accuracy (adam_correction: true "
                  "runs Adam on the workers)");
  } else if (o.momentum > 0) {
    out.push_back("compression." + z.codec + " with the servers' SGD momentum " +
                  std::to_string(o.momentum) + ": the momentum keeps pushing each burst of a "
                  "sparse gradient; set compression.momentum_correction: true");
  }
  if (!z.error_feedback) {
    out.push_back("compression." + z.codec + " without error_feedback: what is not sent is lost, "
                  "and training drifts from dense; set compression.error_feedback: true");
  }
  return out;
}

}  // namespace psrt
