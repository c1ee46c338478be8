// The job configuration, composed: core parses its own sections (core/config_sections.h), each
// module above core parses and validates its own (scheduler/config_section.h,
// compress/config_section.h; placement's stays in core/config_placement.h), and this library,
// which may include every module, reads the file and calls them in one fixed order. The typed
// structs are core/config.h's Config.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"

namespace psrt {

// Parses `yaml_text` (named `where` in errors) after applying `sets` ("a.b=value", value as YAML).
// Relative paths in the file are resolved against `base_dir`.
Config parse_config(const std::string& yaml_text, const std::string& where,
                    const std::vector<std::string>& sets = {}, const std::string& base_dir = "");
Config load_config(const std::string& path, const std::vector<std::string>& sets = {});

// Settings that run but cannot be expected to converge like dense training (the codec cannot
// correct the optimizer): one line each, for the workers to log at start.
std::vector<std::string> compression_warnings(const Config& config);

}  // namespace psrt
