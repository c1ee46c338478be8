#include "bench/transport/psrt_rig.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <span>
#include <stdexcept>

#include "core/config.h"

namespace psrt::bench {

using launch::Child;

std::string self_dir() {
  return std::filesystem::canonical("/proc/self/exe").parent_path().string();
}

std::string wait_listening(Child& child) {
  while (child.out_fd() >= 0) {
    for (const auto& line : child.read_lines(child.out_fd())) {
      if (line.rfind("PSRT_LISTENING ", 0) == 0) return line.substr(15);
    }
    if (child.poll_exit()) break;
    pollfd p{child.out_fd(), POLLIN, 0};
    ::poll(&p, 1, 200);
  }
  throw std::runtime_error(child.name() + " did not start");
}

void reap(Child& child) {
  while (!child.poll_exit()) {
    std::vector<pollfd> fds;
    for (int fd : {child.out_fd(), child.err_fd()})
      if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 50);
    for (const auto& p : fds)
      if (p.revents) child.read_lines(p.fd);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void with_psrt(const ModelDesc& model, const RigOptions& o,
               const std::function<void(PsClient&)>& body) {
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("psrt-bench-transport-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string cfg = dir + "/job.yaml";
  {
    std::FILE* f = std::fopen(cfg.c_str(), "w");
    std::fprintf(f,
                 "job: {id: bench-transport, iterations: 1}\n"
                 "cluster: {servers: 1, workers: 1, coordinator: 'tcp://127.0.0.1:0'}\n"
                 "model: {backend: replay, profile: unused.yaml}\n"
                 "optimizer: {type: sgd, lr: 0.000001, momentum: 0}\n"
                 "scheduler: {mode: %s, chunk_bytes: %llu, credit_bytes: %llu}\n"
                 "log_level: warn\n",
                 o.mode.c_str(), (unsigned long long)o.chunk_bytes,
                 (unsigned long long)o.credit_bytes);
    if (o.curve) {
      std::fprintf(f, "security: {curve: true, secret_file: job.secret}\n");
      std::FILE* k = std::fopen((dir + "/job.secret").c_str(), "w");
      std::fprintf(k, "psrt-bench-transport secret, not for real jobs");
      std::fclose(k);
    }
    std::fclose(f);
  }
  Child server("server 0", {self_dir() + "/psrt-server", "--config", cfg});
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
  std::filesystem::remove_all(dir);
}

}  // namespace psrt::bench
