#include "core/config_sections.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "core/config_limits.h"
#include "core/durable_file.h"
#include "core/endpoint_form.h"
#include "core/layer_spec.h"
#include "core/status.h"

namespace psrt {

namespace {

constexpr int64_t kMaxInt = kMaxConfigInt;
constexpr std::size_t kMaxJobId = 128;
constexpr int64_t kMaxHidden = 1 << 16;
constexpr int64_t kMaxModelWeights = 1ll << 30;  // 4 GiB of fp32
constexpr int64_t kMaxImageSide = 4096;
constexpr int64_t kMaxImageChannels = 64;
constexpr int64_t kMaxClasses = 1 << 16;
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

}  // namespace

// A relative path means relative to the config file's folder; if nothing is there, relative to
// the working directory (for paths given with --set).
std::string resolve_config_path(const std::string& path, const std::string& base_dir) {
  if (path.empty() || base_dir.empty() || std::filesystem::path(path).is_absolute()) return path;
  auto p = std::filesystem::path(base_dir) / path;
  if (std::filesystem::exists(p)) return p.string();
  return std::filesystem::exists(path) ? path : p.string();
}

void parse_cluster(const YamlReader& cl, ClusterConfig& c) {
  c.servers = static_cast<int>(cl.get_int("servers", 1, 1, kMaxServers));
  c.workers = static_cast<int>(cl.get_int("workers", 1, 1, kMaxWorkers));
  c.coordinator = cl.get_string("coordinator", c.coordinator);
  // The whole form, for every role: a port left out gave the processes other than server 0 an
  // "internal error: Invalid argument" from ZeroMQ's connect.
  std::string host;
  int port = 0;
  if (!split_tcp_endpoint(c.coordinator, host, port)) {
    cl.fail("coordinator", "'" + c.coordinator.substr(0, 200) +
                               "' must be a tcp://HOST:PORT endpoint with a port from 0 to "
                               "65535 (0: server 0 takes a free one, and psrt-launch tells the "
                               "others)");
  }
  c.bind_host = cl.get_string("bind_host", c.bind_host);
  if (c.bind_host.empty()) cl.fail("bind_host", "must not be empty (0.0.0.0: every interface)");
  c.advertise_host = cl.get_string("advertise_host", "");
  if (cl.has("port_range")) {
    const auto range = cl.get_int_list("port_range", 1, 65535);
    if (range.size() != 2 || range[0] > range[1]) {
      cl.fail("port_range", "must be [first, last] with 1 <= first <= last <= 65535");
    }
    c.port_min = int(range[0]);
    c.port_max = int(range[1]);
  } else {
    cl.mark_used("port_range");
  }
  c.start_timeout_s = cl.get_double("start_timeout_s", c.start_timeout_s, 0.1, 86400);
  c.heartbeat_s = cl.get_double("heartbeat_s", c.heartbeat_s, 0.01, 60);
  c.peer_timeout_s = cl.get_double("peer_timeout_s", c.peer_timeout_s, 0.05, 86400);
  if (c.peer_timeout_s < 2 * c.heartbeat_s) {
    cl.fail("peer_timeout_s", "must be at least twice cluster.heartbeat_s");
  }
  c.server_threads = static_cast<int>(cl.get_int("server_threads", 1, 0, 256));
  c.progress_timeout_s = cl.get_double("progress_timeout_s", 300, 0, 86400 * 7);
  cl.reject_unknown();
}

void parse_metrics(const YamlReader& metrics, const ClusterConfig& cluster, MetricsConfig& c) {
  c.port = int(metrics.get_int("port", -1, -1, 65535));
  c.host = metrics.get_string("host", c.host);
  if (c.host.empty()) metrics.fail("host", "must not be empty");
  c.per_process_ports = metrics.get_bool("per_process_ports", true);
  if (c.port > 0 && c.per_process_ports && c.port + cluster.servers + cluster.workers - 1 > 65535) {
    metrics.fail("port", "plus one port per process passes 65535");
  }
  metrics.reject_unknown();
}

void parse_job(const YamlReader& job, JobConfig& c) {
  c.id = job.get_string("id", c.id);
  if (c.id.empty()) job.fail("id", "must not be empty");
  if (c.id.size() > kMaxJobId) {
    job.fail("id", "is " + std::to_string(c.id.size()) + " bytes; at most " +
                       std::to_string(kMaxJobId) + " allowed");
  }
  for (char ch : c.id) {
    if (ch < 0x21 || ch > 0x7e) {
      job.fail("id", "may hold printable ASCII only (no spaces, control or non-ASCII bytes)");
    }
  }
  c.iterations = job.get_int("iterations", 0, 0, kMaxInt);
  c.epochs = job.get_double("epochs", c.epochs, 0, 1e6);
  if (c.iterations == 0 && c.epochs <= 0) {
    job.fail("epochs", "must be > 0 when job.iterations is 0");
  }
  c.batch_size = static_cast<int>(job.get_int("batch_size", c.batch_size, 1, 1 << 20));
  c.seed = static_cast<uint64_t>(job.get_int("seed", 1, 0, INT64_MAX));
  c.log_every = static_cast<int>(job.get_int("log_every", c.log_every, 0, 1 << 30));
  c.evaluate = job.get_bool("evaluate", true);
  c.eval_every = int(job.get_int("eval_every", 0, 0, 1 << 30));
  c.dump_params = resolve_config_path(job.get_string("dump_params", ""), "");
  c.blas_threads = static_cast<int>(job.get_int("blas_threads", 1, 1, 1024));
  job.reject_unknown();
}

namespace {

// model.hidden, bounded by the fully connected weights it makes at Fashion-MNIST's 784 inputs and
// 10 classes (the engine checks the exact sizes of other data when it builds the network) before
// anyone allocates them.
void parse_hidden(const YamlReader& model, ModelConfig& c) {
  if (!model.has("hidden")) {
    model.mark_used("hidden");
    return;
  }
  c.hidden.clear();
  for (auto h : model.get_int_list("hidden", 1, kMaxHidden)) c.hidden.push_back(int(h));
  double weights = 0, in = 784;
  for (int h : c.hidden) {
    weights += in * h;
    in = h;
  }
  weights += in * 10;
  if (weights > double(kMaxModelWeights)) {
    model.fail("hidden", "these layer sizes make " + std::to_string(int64_t(weights)) +
                             " weights; at most " + std::to_string(kMaxModelWeights) + " allowed");
  }
}

}  // namespace

void parse_model(const YamlReader& model, const ConfigPath& in_base, ModelConfig& c) {
  c.backend = model.get_choice("backend", "native", {"native", "gpu", "replay"});
  c.device = model.get_string("device", "auto") == "auto"
                 ? ModelConfig::kDeviceAuto
                 : static_cast<int>(model.get_int("device", 0, 0, 1 << 16));
  c.arch = model.get_choice("arch", "mlp", {"mlp", "lenet5", "vgg-small", "custom"});
  parse_hidden(model, c);
  if (c.arch == "custom") {
    if (!model.has("layers")) model.fail("layers", "is required with model.arch: custom");
    c.layers = read_layer_list(model, "layers");
  } else if (model.has("layers")) {
    model.fail("layers", "is for model.arch: custom, not " + c.arch);
  }
  c.dropout = model.get_double("dropout", c.dropout, 0, 0.95);
  if (c.backend != "replay") {  // keys the network would not use were accepted without a word
    if (model.has("hidden") && c.arch != "mlp") model.fail("hidden", "is for model.arch: mlp");
    if (model.has("dropout") && c.arch != "vgg-small") {
      model.fail("dropout", "is for model.arch: vgg-small (a custom network takes {dropout: P} "
                            "entries)");
    }
  }
  c.profile = in_base(model.get_string("profile", ""));
  c.scale = model.get_double("scale", 0, 0, 1e6);
  // Keys the other kind of backend reads were accepted without a word: a job with a profile but
  // no `backend: replay` trained (and benchmarked) the default MLP.
  if (c.backend == "replay") {
    for (const char* key : {"arch", "hidden", "layers", "dropout"}) {
      if (model.has(key)) {
        model.fail(key, "is for a native network; model.backend: replay replays model.profile");
      }
    }
  } else {
    for (const char* key : {"profile", "scale"}) {
      if (model.has(key)) {
        model.fail(key, "is for model.backend: replay; this job's backend, " + c.backend +
                            ", trains model.arch (" + c.arch + ")");
      }
    }
  }
  if (c.backend == "replay" && c.profile.empty()) {
    model.fail("profile", "is required with model.backend: replay");
  }
  model.reject_unknown();
}

void parse_data(const YamlReader& data, const ConfigPath& in_base, DataConfig& c) {
  c.dataset = data.get_choice("dataset", "fashion-mnist", {"fashion-mnist", "idx"});
  c.path = in_base(data.get_string("path", c.path));
  c.train_limit = data.get_int("train_limit", 0, 0, kMaxInt);
  c.image_rows = int(data.get_int("image_rows", c.image_rows, 1, kMaxImageSide));
  c.image_cols = int(data.get_int("image_cols", c.image_cols, 1, kMaxImageSide));
  c.image_channels =
      int(data.get_int("image_channels", c.image_channels, 1, kMaxImageChannels));
  c.classes = int(data.get_int("classes", c.classes, 2, kMaxClasses));
  data.reject_unknown();
}

void parse_optimizer(const YamlReader& opt, OptimizerConfig& c) {
  c.type = opt.get_choice("type", "sgd", {"sgd", "adam"});
  c.lr = opt.get_double("lr", c.type == "adam" ? 1e-3 : 0.05, 0, 1e6);
  c.lr_decay = opt.get_double("lr_decay", 1.0, 1e-6, 1.0);
  c.lr_decay_every = opt.get_int("lr_decay_every", 0, 0, kMaxInt);
  c.momentum = opt.get_double("momentum", 0.9, 0, 0.999999);
  c.weight_decay = opt.get_double("weight_decay", 0, 0, 1);
  c.beta1 = opt.get_double("beta1", 0.9, 0, 0.999999);
  c.beta2 = opt.get_double("beta2", 0.999, 0, 0.99999999);
  c.eps = opt.get_double("eps", 1e-8, 1e-30, 1);
  // Adam has no momentum key (beta1 is its momentum); SGD has no betas or eps.
  const std::vector<std::string> other =
      c.type == "adam" ? std::vector<std::string>{"momentum"}
                       : std::vector<std::string>{"beta1", "beta2", "eps"};
  for (const auto& key : other) {
    if (!opt.has(key)) continue;
    c.unread.push_back("optimizer." + key + ": set, but optimizer " + c.type +
                       " does not read it" +
                       (key == "momentum" ? " (Adam's momentum is optimizer.beta1)" : ""));
  }
  opt.reject_unknown();
}

void parse_checkpoint(const YamlReader& ckpt, const ConfigPath& in_base, CheckpointConfig& c) {
  c.dir = in_base(ckpt.get_string("dir", ""));
  c.every = ckpt.get_int("every", 0, 0, kMaxInt);
  c.every_s = ckpt.get_double("every_s", 0, 0, 1e7);
  // Two at least: the servers are up to one iteration apart, so when one was killed right after
  // writing a checkpoint the other may not have written it yet, and the one before is common.
  c.keep = int(ckpt.get_int("keep", 2, 2, 1000));
  if (c.dir.empty() && (c.every > 0 || c.every_s > 0)) {
    ckpt.fail("dir", "must be set when checkpoint.every or checkpoint.every_s is");
  }
  if (!c.dir.empty() && c.every == 0 && c.every_s == 0) {
    ckpt.fail("every", "checkpoint.dir is set but neither every nor every_s is > 0");
  }
  ckpt.reject_unknown();
}

namespace {

// The line (from 1) of a `---` that starts a document after the first one's content, or of
// content after a `...` that ended it (yaml-cpp ignored both); 0: none.
int second_document_line(const std::string& text) {
  bool content = false, ended = false;
  int number = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line(text.data() + at, end - at);
    ++number;
    at = end + 1;
    const auto is_marker = [&](std::string_view m) {
      return line.substr(0, 3) == m &&
             (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
    };
    const bool marker = is_marker("---");
    if (marker && content) return number;
    if (is_marker("...")) {
      ended = ended || content;
      continue;
    }
    const auto first = line.find_first_not_of(" \t\r");
    // A directive (%YAML 1.2) comes before the first document's marker: it is not content.
    const bool directive = !content && first == 0 && line[0] == '%';
    if (!marker && !directive && first != std::string_view::npos && line[first] != '#') {
      if (ended) return number;
      content = true;
    }
  }
  return 0;
}

}  // namespace

YAML::Node load_config_root(const std::string& yaml_text, const std::string& where,
                            const std::vector<std::string>& sets) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);  // not LoadAll: it never returns on some malformed input
  } catch (const YAML::Exception& e) {
    throw ConfigError(where + ": not valid YAML: " + e.what());
  }
  if (const int line = second_document_line(yaml_text); line > 0) {  // it was ignored
    throw ConfigError(where + ": line " + std::to_string(line) + " starts a second YAML " +
                      "document (after --- or ...), which would be ignored; a job file is one");
  }
  if (!root || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) throw ConfigError(where + ": the top level must be a mapping");
  for (const auto& s : sets) apply_set(root, s, where);
  return root;
}

std::string read_config_file(const std::string& path) {
  // O_NONBLOCK: a FIFO nobody writes blocked open() for ever (`psrt-launch --check`, a daemon
  // started by hand); cleared once open, so a pipe that has a writer (`--check <(...)`) is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    throw ConfigError(path + ": cannot open config file: " + std::strerror(errno));
  }
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  const auto fail = [&](const std::string& why) {
    ::close(fd);
    throw ConfigError(path + ": " + why);
  };
  if (stat_ok && S_ISDIR(st.st_mode)) fail("is a directory, not a config file");
  if (stat_ok && S_ISREG(st.st_mode) && uint64_t(st.st_size) > kMaxConfigBytes) {
    fail(std::to_string(st.st_size) + " bytes; a config file may hold at most " +
         std::to_string(kMaxConfigBytes) + " bytes");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string text(kMaxConfigBytes + 1, '\0');  // bounded, also for a pipe or a device
  const ssize_t got = read_fully(fd, reinterpret_cast<uint8_t*>(text.data()), text.size());
  if (got < 0) fail(std::string("cannot read config file: ") + std::strerror(errno));
  ::close(fd);
  text.resize(std::size_t(got));
  if (text.size() > kMaxConfigBytes) {
    throw ConfigError(path + ": more than " + std::to_string(kMaxConfigBytes) +
                      " bytes; a config file may hold at most that");
  }
  if (text.empty() && stat_ok && !S_ISREG(st.st_mode)) {
    throw ConfigError(path +
                      ": not a regular file (a FIFO or a device?), and nothing was read "
                      "from it; save the job to a file");
  }
  return text;
}

}  // namespace psrt
