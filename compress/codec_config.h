// The codecs' settings and their validation (the YAML section: compress/config_section.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/compression_config.h"
#include "core/status.h"

namespace psrt::compress {

// The codecs' settings are the job file's `compression:` section: one type, defined below
// compress/ because core's Config composes it (core/compression_config.h).
using CodecConfig = psrt::CompressionConfig;

// The rules between the settings, written once: the YAML section's parser (config_section.h)
// and validate() both ask first_problem.
struct CodecProblem {
  std::string key;   // under compression.
  std::string what;  // what is wrong
};
struct CodecRuleInputs {
  bool momentum_correction = false;  // asked for (the settings' momentum follows from it)
  bool adam_correction = false;
  std::string optimizer_type;        // the job's optimizer; "": not known, its rules are skipped
  double optimizer_momentum = 0;
};
// The first rule `config` breaks, in the order the YAML keys are documented; nullopt: none.
std::optional<CodecProblem> first_problem(const CodecConfig& config, const CodecRuleInputs& in);

// LACO's value encodings (quant_bits, reply_quant_bits): 1 (ternary), 8 (log codes), 32 (fp32).
inline bool is_quant_bits(int bits) { return bits == 1 || bits == 8 || bits == 32; }
inline constexpr const char* kQuantBitsAllowed = "1 (ternary), 8 (log codes) or 32 (fp32)";

// For settings built in code: the ranges the YAML reader checks for a file, first_problem, and
// the settings with no YAML key. Names the key, the value and what is allowed.
Status validate(const CodecConfig& config);

}  // namespace psrt::compress
