// Codec registry: name -> factory. Built by a function (no static globals); make_codec() wraps a
// codec in the error-feedback decorator when the config asks for it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compress/codec.h"
#include "compress/codec_config.h"
#include "core/status.h"

namespace psrt::compress {

class CodecRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Codec>(const CodecConfig&)>;

  void add(std::string name, Factory factory);
  std::vector<std::string> names() const;
  // Validates the config, builds the codec, and decorates it with error feedback if asked.
  Result<std::unique_ptr<Codec>> make(const CodecConfig& config) const;

 private:
  std::map<std::string, Factory, std::less<>> factories_;
};

// A registry holding none, laco, signsgd, graddrop and topk.
CodecRegistry default_registry();

// default_registry().make(config).
Result<std::unique_ptr<Codec>> make_codec(const CodecConfig& config);

}  // namespace psrt::compress
