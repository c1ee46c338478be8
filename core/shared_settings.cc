#include "core/shared_settings.h"

#include <cstdio>
#include <cstdlib>

#include "core/mode.h"

namespace psrt {

namespace {

// The shortest text that reads back as `v`: any difference shows, and 0.05 stays "0.05".
std::string number(double v) {
  char buf[32];
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace

std::vector<std::string> shared_settings(const Config& c) {
  std::vector<std::string> out;
  const auto add = [&](const char* key, const std::string& value) {
    out.push_back(std::string(key) + "=" + value);
  };
  add("cluster.servers", std::to_string(c.cluster.servers));
  add("cluster.workers", std::to_string(c.cluster.workers));
  // Not job.iterations nor job.epochs: a worker counts its own iterations from them and its
  // data, and the workers' counts are compared as such (Register.iterations).
  add("job.batch_size", std::to_string(c.job.batch_size));
  add("job.seed", std::to_string(c.job.seed));
  const OptimizerConfig& o = c.optimizer;
  add("optimizer.type", o.type);
  add("optimizer.lr", number(o.lr));
  add("optimizer.lr_decay", number(o.lr_decay));
  add("optimizer.lr_decay_every", std::to_string(o.lr_decay_every));
  add("optimizer.momentum", number(o.momentum));
  add("optimizer.weight_decay", number(o.weight_decay));
  add("optimizer.beta1", number(o.beta1));
  add("optimizer.beta2", number(o.beta2));
  add("optimizer.eps", number(o.eps));
  add("scheduler.mode", mode_name(c.scheduler.mode));
  add("scheduler.chunk_bytes", std::to_string(c.scheduler.chunk_bytes));
  const CompressionConfig& z = c.compression;
  add("compression.codec", z.codec);
  add("compression.density", number(z.density));
  add("compression.calibration_iters", std::to_string(z.calibration_iters));
  add("compression.warmup_iters", std::to_string(z.warmup_iters));
  add("compression.dense_below", std::to_string(z.dense_below));
  add("compression.quant_bits", std::to_string(z.quant_bits));
  add("compression.hierarchical", z.hierarchical ? "true" : "false");
  add("compression.error_feedback", z.error_feedback ? "true" : "false");
  add("compression.momentum_correction", number(z.momentum));
  add("compression.momentum_masking", z.momentum_masking ? "true" : "false");
  add("compression.adam_correction", z.adam ? "true" : "false");
  add("placement.mode", c.placement.mode);
  add("placement.partitions", std::to_string(c.placement.partitions));
  add("placement.micro_batches", std::to_string(c.placement.micro_batches));
  return out;
}

std::string settings_difference(const std::vector<std::string>& theirs, const std::string& they,
                                const std::vector<std::string>& mine, const std::string& me) {
  if (theirs.empty() || mine.empty()) return "";
  for (std::size_t i = 0; i < theirs.size() || i < mine.size(); ++i) {
    const std::string a = i < theirs.size() ? theirs[i] : "", b = i < mine.size() ? mine[i] : "";
    if (a == b) continue;
    const std::string& line = a.empty() ? b : a;
    const std::string key = line.substr(0, line.find('='));
    const auto value = [&](const std::string& l) {
      return l.rfind(key + "=", 0) == 0 ? l.substr(key.size() + 1) : std::string("(not said)");
    };
    return key + " is " + value(a) + " for " + they + ", " + value(b) + " for " + me;
  }
  return "";
}

}  // namespace psrt
