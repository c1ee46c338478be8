#include "bench/transport/psrt_rig.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <span>
#include <stdexcept>

#include "config/job_config.h"
#include "core/config.h"

namespace psrt::bench {

std::string self_dir() {
  return std::filesystem::canonical("/proc/self/exe").parent_path().string();
}

std::string wait_listening(Process& child) {
  const std::string prefix = "PSRT_LISTENING ";
  const auto line =
      child.wait_line([&](const std::string& l) { return l.rfind(prefix, 0) == 0; }, 60);
  if (!line) throw std::runtime_error(child.name() + " did not start");
  return line->substr(prefix.size());
}

void reap(Process& child) {
  if (!child.wait_exit(60)) throw std::runtime_error(child.name() + " did not exit");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

namespace {
// Writes the one-server one-worker job into `dir`; returns the config's path.
std::string write_job(const std::string& dir, const RigOptions& o) {
  const std::string cfg = dir + "/job.yaml";
  std::FILE* f = std::fopen(cfg.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + cfg);
  const std::string batch =
      o.batch_bytes >= 0 ? ", batch_bytes: " + std::to_string(o.batch_bytes) : std::string();
  std::fprintf(f,
               "job: {id: bench-transport, iterations: 1}\n"
               "cluster: {servers: 1, workers: 1, coordinator: 'tcp://127.0.0.1:0'}\n"
               "model: {backend: replay, profile: unused.yaml}\n"
               "optimizer: {type: sgd, lr: 0.000001, momentum: 0}\n"
               "scheduler: {mode: %s, chunk_bytes: %llu, credit_bytes: %llu, grouping: '%s'%s}\n"
               "log_level: warn\n",
               o.mode.c_str(), (unsigned long long)o.chunk_bytes,
               (unsigned long long)o.credit_bytes, o.grouping.c_str(), batch.c_str());
  if (o.socket_buffer_bytes >= 0) {
    std::fprintf(f, "limits: {socket_buffer_bytes: %lld}\n", (long long)o.socket_buffer_bytes);
  }
  if (o.curve) {
    std::fprintf(f, "security: {curve: true, secret_file: job.secret}\n");
    std::FILE* k = std::fopen((dir + "/job.secret").c_str(), "w");
    if (!k) throw std::runtime_error("cannot write " + dir + "/job.secret");
    std::fprintf(k, "psrt-bench-transport secret, not for real jobs");
    std::fclose(k);
  }
  std::fclose(f);
  return cfg;
}
}  // namespace

void with_psrt(const ModelDesc& model, const RigOptions& o,
               const std::function<void(PsClient&)>& body) {
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("psrt-bench-transport-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  struct RemoveAtEnd {  // a failure left the folder behind
    std::string dir;
    ~RemoveAtEnd() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } remove_at_end{dir};
  const std::string cfg = write_job(dir, o);
  // The job's checks here, naming the setting (--chunk-bytes 1 said only "server 0 did not
  // start", the server's own reason unseen).
  load_config(cfg, {"cluster.coordinator=tcp://127.0.0.1:1"});
  Process server("server 0", {self_dir() + "/psrt-server", "--config", cfg});
  const std::string endpoint = wait_listening(server);
  Config config = load_config(cfg, {"cluster.coordinator=" + endpoint});
  std::vector<std::vector<float>> params(model.tensors.size());
  for (const auto& t : model.tensors) params[t.key].assign(t.num_elements, 0.5f);
  {
    PsClient client(config, 0, model, [&](uint32_t key) { return std::span<float>(params[key]); });
    client.start();
    body(client);
    client.wait_all(0);
    client.finish();
  }
  reap(server);
}

}  // namespace psrt::bench
