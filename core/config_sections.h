// The sections of the job configuration that core owns, and the YAML file machinery every
// module's section parser shares. config/job_config.h composes them with the modules' own
// sections (scheduler/config_section.h, compress/config_section.h); core/config.h has the structs.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/yaml_reader.h"

namespace psrt {

// Turns a path written in the config file into a usable one (relative to the file's folder).
using ConfigPath = std::function<std::string(const std::string&)>;

// The largest integer most keys accept.
inline constexpr int64_t kMaxConfigInt = 1ll << 40;

// A relative path means relative to the config file's folder (`base_dir`); if nothing is there,
// relative to the working directory (for paths given with --set).
std::string resolve_config_path(const std::string& path, const std::string& base_dir);
// Parses `yaml_text` (named `where` in errors) into the top-level mapping, after applying `sets`
// ("a.b=value", value as YAML).
YAML::Node load_config_root(const std::string& yaml_text, const std::string& where,
                            const std::vector<std::string>& sets);
// The text of a config file, bounded; ConfigError when it cannot be read or is too large.
std::string read_config_file(const std::string& path);

void parse_cluster(const YamlReader& r, ClusterConfig& c);
void parse_metrics(const YamlReader& r, const ClusterConfig& cluster, MetricsConfig& c);
void parse_job(const YamlReader& r, JobConfig& c);
void parse_model(const YamlReader& r, const ConfigPath& in_base, ModelConfig& c);
void parse_data(const YamlReader& r, const ConfigPath& in_base, DataConfig& c);
void parse_optimizer(const YamlReader& r, OptimizerConfig& c);
void parse_checkpoint(const YamlReader& r, const ConfigPath& in_base, CheckpointConfig& c);

}  // namespace psrt
