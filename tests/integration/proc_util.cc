#include "tests/integration/proc_util.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <iterator>
#include <stdexcept>

namespace psrt::test {

Proc::Proc(std::string name, std::vector<std::string> argv)
    : child_(std::make_unique<Process>(std::move(name), argv, Process::Interrupt::kDefault)) {}

bool Proc::wait_line(const std::string& text, double seconds) {
  if (output_.find(text) != std::string::npos) return true;
  const auto line = child_->wait_line(
      [&](const std::string& l) {
        take(l);
        return l.find(text) != std::string::npos;
      },
      seconds, [&](const std::string& l) { take(l); });
  return line.has_value();
}

std::optional<int> Proc::wait_exit(double seconds) {
  return child_->wait_exit(seconds, [&](const std::string& l) { take(l); });
}

void Proc::kill(int sig) { child_->signal(sig); }

std::string bin(const std::string& name) { return std::string(PSRT_BIN_DIR) + "/" + name; }
std::string source(const std::string& path) { return std::string(PSRT_SOURCE_DIR) + "/" + path; }

std::string temp_dir(const std::string& tag) {
  std::string templ = "/tmp/psrt-test-" + tag + "-XXXXXX";
  if (!::mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
  return templ;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

Daemons start_daemons(const std::string& cfg, int servers, int workers,
                      const std::vector<std::vector<std::string>>& worker_args,
                      const std::vector<std::string>& server_args) {
  Daemons d;
  auto start = [&](const std::string& program, const std::string& role, int rank,
                   const std::string& coordinator) {
    d.names.push_back(role + " " + std::to_string(rank));
    std::vector<std::string> argv{bin(program), "--config", cfg, "--rank", std::to_string(rank),
                                  "--set", "cluster.coordinator=" + coordinator};
    if (role == "worker" && std::size_t(rank) < worker_args.size()) {
      argv.insert(argv.end(), worker_args[rank].begin(), worker_args[rank].end());
    }
    if (role == "server") argv.insert(argv.end(), server_args.begin(), server_args.end());
    d.procs.push_back(std::make_unique<Proc>(d.names.back(), std::move(argv)));
  };
  start("psrt-server", "server", 0, "tcp://127.0.0.1:0");
  if (!d.procs[0]->wait_line("PSRT_LISTENING ", 30)) return d;
  const std::string& out = d.procs[0]->output();
  const auto at = out.find("PSRT_LISTENING ") + 15;
  d.endpoint = out.substr(at, out.find('\n', at) - at);
  for (int s = 1; s < servers; ++s) start("psrt-server", "server", s, d.endpoint);
  for (int w = 0; w < workers; ++w) start("psrt-worker", "worker", w, d.endpoint);
  d.started = d.procs[0]->wait_line("start barrier passed", 30);
  return d;
}

std::size_t count_lines(const std::string& s) {
  std::size_t n = 0;
  for (std::size_t at = 0; at < s.size();) {
    const auto nl = std::min(s.find('\n', at), s.size());
    if (nl > at) ++n;
    at = nl + 1;
  }
  return n;
}

std::vector<float> read_floats(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const auto bytes = std::size_t(in.tellg());
  std::vector<float> v(bytes / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), std::streamsize(bytes));
  return v;
}

float max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<float>::infinity();
  float d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

std::vector<std::pair<pid_t, std::string>> processes_with(const std::string& needle) {
  std::vector<std::pair<pid_t, std::string>> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd;
    try {  // a process that ends while read fails the read with ESRCH (an exception here)
      std::ifstream in(e.path() / "cmdline", std::ios::binary);
      cmd.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::exception&) {
      continue;
    }
    for (auto& c : cmd)
      if (c == '\0') c = ' ';
    // Zombies have an empty command line: they are gone as processes.
    if (cmd.find(needle) != std::string::npos && cmd.find("psrt-launch") == std::string::npos) {
      out.emplace_back(pid_t(std::stol(name)), cmd);
    }
  }
  return out;
}

pid_t daemon_pid(const std::string& needle, const std::string& program, int rank) {
  const std::string flag = "--rank " + std::to_string(rank) + " ";
  for (const auto& [pid, cmd] : processes_with(needle)) {
    if (cmd.find(program) != std::string::npos && cmd.find(flag) != std::string::npos) return pid;
  }
  return 0;
}

}  // namespace psrt::test
