#include "core/config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/config_limits.h"
#include "core/config_placement.h"
#include "core/grouping_spec.h"
#include "core/status.h"
#include "core/yaml_reader.h"

namespace psrt {

namespace {

constexpr int64_t kMaxInt = 1ll << 40;
constexpr std::size_t kMaxJobId = 128;
constexpr int64_t kMaxHidden = 1 << 16;
constexpr int64_t kMaxModelWeights = 1ll << 30;  // 4 GiB of fp32
constexpr std::uintmax_t kMaxConfigBytes = 1 << 20;

void apply_set(YAML::Node& root, const std::string& set, const std::string& where) {
  const auto eq = set.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError("--set " + set + ": expected key.path=value");
  }
  const std::string path = set.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(set.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw ConfigError("--set " + set + ": value is not valid YAML");
  }
  // Walk the dotted path, creating mappings as needed.
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  std::vector<YAML::Node> chain{root};
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = chain.back()[parts[i]];
    if (next && !next.IsNull() && !next.IsMap()) {
      throw ConfigError(where + ": --set " + path + ": " + parts[i] + " is not a mapping");
    }
    if (!next || next.IsNull()) {
      chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next = chain.back()[parts[i]];
    }
    chain.push_back(next);
  }
  chain.back()[parts.back()] = value;
}

// A relative path means relative to the config file's folder; if nothing is there, relative to
// the working directory (for paths given with --set).
std::string resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || base_dir.empty() || std::filesystem::path(path).is_absolute()) return path;
  auto p = std::filesystem::path(base_dir) / path;
  if (std::filesystem::exists(p)) return p.string();
  return std::filesystem::exists(path) ? path : p.string();
}

}  // namespace

namespace {

Config parse_yaml(const std::string& yaml_text, const std::string& where,
                  const std::vector<std::string>& sets, const std::string& base_dir) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(where + ": not valid YAML: " + e.what());
  }
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw ConfigError(where + ": the top level must be a mapping");
  for (const auto& s : sets) apply_set(root, s, where);

  Config c;
  c.source = where;
  YamlReader top(root, "", where);

  const YamlReader cl = top.child("cluster");
  c.cluster.servers = static_cast<int>(cl.get_int("servers", 1, 1, kMaxServers));
  c.cluster.workers = static_cast<int>(cl.get_int("workers", 1, 1, kMaxWorkers));
  c.cluster.coordinator = cl.get_string("coordinator", c.cluster.coordinator);
  if (c.cluster.coordinator.rfind("tcp://", 0) != 0) {
    cl.fail("coordinator", "'" + c.cluster.coordinator + "' must be a tcp://host:port endpoint");
  }
  c.cluster.bind_host = cl.get_string("bind_host", c.cluster.bind_host);
  if (c.cluster.bind_host.empty()) cl.fail("bind_host", "must not be empty (0.0.0.0: every interface)");
  c.cluster.advertise_host = cl.get_string("advertise_host", "");
  if (cl.has("port_range")) {
    const auto range = cl.get_int_list("port_range", 1, 65535);
    if (range.size() != 2 || range[0] > range[1]) {
      cl.fail("port_range", "must be [first, last] with 1 <= first <= last <= 65535");
    }
    c.cluster.port_min = int(range[0]);
    c.cluster.port_max = int(range[1]);
  } else {
    cl.mark_used("port_range");
  }
  c.cluster.start_timeout_s = cl.get_double("start_timeout_s", c.cluster.start_timeout_s, 0.1, 86400);
  c.cluster.heartbeat_s = cl.get_double("heartbeat_s", c.cluster.heartbeat_s, 0.01, 60);
  c.cluster.peer_timeout_s = cl.get_double("peer_timeout_s", c.cluster.peer_timeout_s, 0.05, 86400);
  if (c.cluster.peer_timeout_s < 2 * c.cluster.heartbeat_s) {
    cl.fail("peer_timeout_s", "must be at least twice cluster.heartbeat_s");
  }
  c.cluster.server_threads = static_cast<int>(cl.get_int("server_threads", 1, 0, 256));
  c.cluster.progress_timeout_s = cl.get_double("progress_timeout_s", 300, 0, 86400 * 7);
  cl.reject_unknown();

  const YamlReader metrics = top.child("metrics");
  c.metrics.port = int(metrics.get_int("port", -1, -1, 65535));
  c.metrics.host = metrics.get_string("host", c.metrics.host);
  if (c.metrics.host.empty()) metrics.fail("host", "must not be empty");
  c.metrics.per_process_ports = metrics.get_bool("per_process_ports", true);
  if (c.metrics.port > 0 && c.metrics.per_process_ports &&
      c.metrics.port + c.cluster.servers + c.cluster.workers - 1 > 65535) {
    metrics.fail("port", "plus one port per process passes 65535");
  }
  metrics.reject_unknown();

  const YamlReader job = top.child("job");
  c.job.id = job.get_string("id", c.job.id);
  if (c.job.id.empty()) job.fail("id", "must not be empty");
  if (c.job.id.size() > kMaxJobId) {
    job.fail("id", "is " + std::to_string(c.job.id.size()) + " bytes; at most " +
                       std::to_string(kMaxJobId) + " allowed");
  }
  for (char ch : c.job.id) {
    if (ch < 0x21 || ch > 0x7e) {
      job.fail("id", "may hold printable ASCII only (no spaces, control or non-ASCII bytes)");
    }
  }
  c.job.iterations = job.get_int("iterations", 0, 0, kMaxInt);
  c.job.epochs = job.get_double("epochs", c.job.epochs, 0, 1e6);
  if (c.job.iterations == 0 && c.job.epochs <= 0) {
    job.fail("epochs", "must be > 0 when job.iterations is 0");
  }
  c.job.batch_size = static_cast<int>(job.get_int("batch_size", c.job.batch_size, 1, 1 << 20));
  c.job.seed = static_cast<uint64_t>(job.get_int("seed", 1, 0, INT64_MAX));
  c.job.log_every = static_cast<int>(job.get_int("log_every", c.job.log_every, 0, 1 << 30));
  c.job.evaluate = job.get_bool("evaluate", true);
  c.job.eval_every = int(job.get_int("eval_every", 0, 0, 1 << 30));
  c.job.dump_params = resolve(job.get_string("dump_params", ""), "");
  c.job.blas_threads = static_cast<int>(job.get_int("blas_threads", 1, 1, 1024));
  job.reject_unknown();

  const YamlReader model = top.child("model");
  c.model.backend = model.get_choice("backend", "native", {"native", "gpu", "replay"});
  c.model.device = model.get_string("device", "auto") == "auto"
                       ? ModelConfig::kDeviceAuto
                       : static_cast<int>(model.get_int("device", 0, 0, 1 << 16));
  c.model.arch = model.get_choice("arch", "mlp", {"mlp", "lenet5", "vgg-small"});
  if (model.has("hidden")) {
    c.model.hidden.clear();
    for (auto h : model.get_int_list("hidden", 1, kMaxHidden)) c.model.hidden.push_back(int(h));
    // Bound the fully connected weights before anyone allocates them (784 inputs, 10 classes).
    double weights = 0, in = 784;
    for (int h : c.model.hidden) {
      weights += in * h;
      in = h;
    }
    weights += in * 10;
    if (weights > double(kMaxModelWeights)) {
      model.fail("hidden", "these layer sizes make " + std::to_string(int64_t(weights)) +
                               " weights; at most " + std::to_string(kMaxModelWeights) + " allowed");
    }
  } else {
    model.mark_used("hidden");
  }
  c.model.dropout = model.get_double("dropout", c.model.dropout, 0, 0.95);
  c.model.profile = resolve(model.get_string("profile", ""), base_dir);
  c.model.scale = model.get_double("scale", 0, 0, 1e6);
  if (c.model.backend == "replay" && c.model.profile.empty()) {
    model.fail("profile", "is required with model.backend: replay");
  }
  model.reject_unknown();

  const YamlReader data = top.child("data");
  c.data.dataset = data.get_choice("dataset", "fashion-mnist", {"fashion-mnist"});
  c.data.path = resolve(data.get_string("path", c.data.path), base_dir);
  c.data.train_limit = data.get_int("train_limit", 0, 0, kMaxInt);
  data.reject_unknown();

  const YamlReader opt = top.child("optimizer");
  c.optimizer.type = opt.get_choice("type", "sgd", {"sgd", "adam"});
  c.optimizer.lr = opt.get_double("lr", c.optimizer.type == "adam" ? 1e-3 : 0.05, 0, 1e6);
  c.optimizer.lr_decay = opt.get_double("lr_decay", 1.0, 1e-6, 1.0);
  c.optimizer.lr_decay_every = opt.get_int("lr_decay_every", 0, 0, kMaxInt);
  c.optimizer.momentum = opt.get_double("momentum", 0.9, 0, 0.999999);
  c.optimizer.weight_decay = opt.get_double("weight_decay", 0, 0, 1);
  c.optimizer.beta1 = opt.get_double("beta1", 0.9, 0, 0.999999);
  c.optimizer.beta2 = opt.get_double("beta2", 0.999, 0, 0.99999999);
  c.optimizer.eps = opt.get_double("eps", 1e-8, 1e-30, 1);
  opt.reject_unknown();

  const YamlReader sch = top.child("scheduler");
  const std::string mode = sch.get_choice("mode", "fifo", mode_names());
  c.scheduler.mode = *parse_mode(mode);
  c.scheduler.chunk_bytes =
      static_cast<uint64_t>(sch.get_int("chunk_bytes", int64_t(c.scheduler.chunk_bytes), 4096, kMaxInt));
  if (c.scheduler.chunk_bytes % 4 != 0) sch.fail("chunk_bytes", "must be a multiple of 4");
  c.scheduler.credit_bytes =
      static_cast<uint64_t>(sch.get_int("credit_bytes", int64_t(c.scheduler.credit_bytes), 1, kMaxInt));
  for (auto p : sch.get_int_list("priority", 0, 1 << 30)) c.scheduler.priority.push_back(int(p));
  c.scheduler.grouping = sch.get_string("grouping", c.scheduler.grouping);
  std::string grouping_error;
  if (!parse_grouping(c.scheduler.grouping, &grouping_error)) sch.fail("grouping", grouping_error);
  c.scheduler.calibration = resolve(sch.get_string("calibration", ""), base_dir);
  c.scheduler.link_bytes_per_s =
      sch.get_double("link_bytes_per_s", c.scheduler.link_bytes_per_s, 1e3, 1e13);
  sch.reject_unknown();

  const YamlReader comp = top.child("compression");
  c.compression.codec =
      comp.get_choice("codec", "none", {"none", "laco", "signsgd", "graddrop", "topk"});
  // LACO's defaults (issue 18): the density, every tensor compressed and compressed replies make
  // the shipped examples push >= 100x fewer bytes than fp32 with one `--set compression.codec=laco`.
  const bool laco = c.compression.codec == "laco";
  c.compression.density =
      comp.get_double("density", laco ? kLacoDensity : c.compression.density, 1e-6, 1.0);
  c.compression.calibration_iters =
      int(comp.get_int("calibration_iters", c.compression.calibration_iters, 1, 1 << 20));
  c.compression.warmup_iters =
      int(comp.get_int("warmup_iters", c.compression.warmup_iters, 0, 1 << 20));
  c.compression.dense_below =
      comp.get_int("dense_below", laco ? 0 : c.compression.dense_below, 0, kMaxInt);
  c.compression.quant_bits = int(comp.get_int("quant_bits", 8, 8, 32));
  if (c.compression.quant_bits != 8 && c.compression.quant_bits != 32) {
    comp.fail("quant_bits", std::to_string(c.compression.quant_bits) + " is not one of: 8, 32");
  }
  c.compression.error_feedback = comp.get_bool("error_feedback", true);
  c.compression.hierarchical = comp.get_bool("hierarchical", true);
  c.compression.compress_replies =
      comp.get_choice("replies", laco ? "compressed" : "dense", {"dense", "compressed"}) ==
      "compressed";
  if (c.compression.compress_replies && c.compression.codec == "none") {
    comp.fail("replies", "compressed needs a codec other than none");
  }
  const bool correction = comp.get_bool("momentum_correction", false);
  c.compression.momentum_masking = comp.get_bool("momentum_masking", false);
  if (c.compression.momentum_masking) {
    if (!correction) comp.fail("momentum_masking", "needs momentum_correction: true");
    if (c.compression.codec != "laco" && c.compression.codec != "graddrop" &&
        c.compression.codec != "topk") {
      comp.fail("momentum_masking", "needs a sparsifying codec (laco, graddrop, topk), not " +
                                        c.compression.codec);
    }
  }
  if (correction) {
    if (c.compression.codec == "none") {
      comp.fail("momentum_correction", "needs a codec other than none");
    }
    if (!c.compression.error_feedback) comp.fail("momentum_correction", "needs error_feedback: true");
    if (c.optimizer.type != "sgd" || c.optimizer.momentum == 0) {
      comp.fail("momentum_correction", "needs optimizer sgd with momentum > 0");
    }
    c.compression.momentum = c.optimizer.momentum;  // the workers apply it ...
    c.optimizer.momentum = 0;                       // ... so the servers must not
  }
  const bool adam_default = c.optimizer.type == "adam" && c.compression.codec != "none" &&
                            c.compression.error_feedback;
  c.compression.adam_global_variance = comp.get_bool("adam_global_variance", true);
  if (comp.get_bool("adam_correction", adam_default)) {
    if (c.optimizer.type != "adam") comp.fail("adam_correction", "needs optimizer adam");
    if (c.compression.codec == "none") comp.fail("adam_correction", "needs a codec other than none");
    if (!c.compression.error_feedback) comp.fail("adam_correction", "needs error_feedback: true");
    c.compression.adam = true;  // the workers run Adam's moments ...
    c.compression.adam_beta1 = c.optimizer.beta1;
    c.compression.adam_beta2 = c.optimizer.beta2;
    c.compression.adam_eps = c.optimizer.eps;
    c.compression.adam_weight_decay = c.optimizer.weight_decay;
    c.compression.adam_workers = c.cluster.workers;
    c.optimizer.type = "sgd";  // ... and the servers apply the mean direction
    c.optimizer.momentum = 0;
    c.optimizer.weight_decay = 0;
  }
  comp.reject_unknown();

  const auto in_base = [&](const std::string& p) { return resolve(p, base_dir); };
  parse_security_and_limits(top, c, in_base);
  c.placement = parse_placement(top.child("placement"), in_base);
  if (c.compression.adam && c.placement.split()) {
    // The global batch is the replicas' (each stage of a replica sees the same samples).
    c.compression.adam_workers = std::max(1, c.cluster.workers / int(c.placement.partitions));
  }
  check_split(c, top.child("placement"));
  const YamlReader ckpt = top.child("checkpoint");
  c.checkpoint.dir = resolve(ckpt.get_string("dir", ""), base_dir);
  c.checkpoint.every = ckpt.get_int("every", 0, 0, kMaxInt);
  c.checkpoint.every_s = ckpt.get_double("every_s", 0, 0, 1e7);
  // Two at least: the servers are up to one iteration apart, so when one was killed right after
  // writing a checkpoint the other may not have written it yet, and the one before is common.
  c.checkpoint.keep = int(ckpt.get_int("keep", 2, 2, 1000));
  if (c.checkpoint.dir.empty() && (c.checkpoint.every > 0 || c.checkpoint.every_s > 0)) {
    ckpt.fail("dir", "must be set when checkpoint.every or checkpoint.every_s is");
  }
  if (!c.checkpoint.dir.empty() && c.checkpoint.every == 0 && c.checkpoint.every_s == 0) {
    ckpt.fail("every", "checkpoint.dir is set but neither every nor every_s is > 0");
  }
  ckpt.reject_unknown();

  c.log_level = top.get_choice("log_level", "info", {"trace", "debug", "info", "warn", "error"});
  c.timeline = top.get_string("timeline", "");
  top.reject_unknown();
  return c;
}

}  // namespace

Config parse_config(const std::string& yaml_text, const std::string& where,
                    const std::vector<std::string>& sets, const std::string& base_dir) {
  try {
    return parse_yaml(yaml_text, where, sets, base_dir);
  } catch (const std::bad_alloc&) {
    throw ConfigError(where + ": out of memory while parsing the config (a value far too large?)");
  } catch (const YAML::Exception& e) {  // anything yaml-cpp throws past the checks above
    throw ConfigError(where + ": " + e.what());
  }
}

std::vector<std::string> compression_warnings(const Config& c) {
  std::vector<std::string> out;
  const CompressionConfig& z = c.compression;
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

Config load_config(const std::string& path, const std::vector<std::string>& sets) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError(path + ": is a directory, not a config file");
  }
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open config file");
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxConfigBytes) {
    throw ConfigError(path + ": " + std::to_string(size) + " bytes; a config file may hold at most " +
                      std::to_string(kMaxConfigBytes) + " bytes");
  }
  std::string text(kMaxConfigBytes + 1, '\0');  // bounded, also for a pipe or a device
  in.read(text.data(), std::streamsize(text.size()));
  text.resize(std::size_t(in.gcount()));
  if (text.size() > kMaxConfigBytes) {
    throw ConfigError(path + ": more than " + std::to_string(kMaxConfigBytes) +
                      " bytes; a config file may hold at most that");
  }
  const auto dir = std::filesystem::path(path).parent_path().string();
  return parse_config(text, path, sets, dir.empty() ? "." : dir);
}

}  // namespace psrt
