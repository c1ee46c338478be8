// Start-up errors of the daemons: exit code 2 and one line on stderr naming the problem.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/config_limits.h"
#include "tests/integration/proc_util.h"

using namespace psrt;
using namespace psrt::test;

namespace {

struct Outcome {
  int rc = -1;
  std::string output;
};

Outcome run(const std::vector<std::string>& argv) {
  Proc p("daemon", argv);
  const auto rc = p.wait_exit(30);
  INFO(p.output());
  REQUIRE(rc.has_value());
  return {*rc, p.output()};
}

// Non-empty lines (Process::read_lines may add an empty one at end of file).
std::size_t lines(const std::string& s) { return count_lines(s); }

// Exit code 2, exactly one line of output (stderr: a start-up error logs nothing else), containing
// every string of `names`.
void check_config_error(const Outcome& o, const std::vector<std::string>& names) {
  INFO("output:\n" << o.output);
  CHECK(o.rc == 2);
  CHECK(lines(o.output) == 1);
  for (const auto& n : names) CHECK_THAT(o.output, Catch::Contains(n));
}

std::string replay_yaml(const std::string& extra = "") {
  return "job: {id: ec, iterations: 1}\n"
         "model: {backend: replay, profile: '" +
         source("tests/integration/data/tiny_profile.yaml") + "'}\n" + extra;
}

}  // namespace

TEST_CASE("daemons exit 2 with one line naming a missing config file", "[integration][exit]") {
  const std::string dir = temp_dir("exit");
  for (const char* daemon : {"psrt-server", "psrt-worker"}) {
    INFO(daemon);
    check_config_error(run({bin(daemon), "--config", dir + "/missing.yaml"}),
                       {dir + "/missing.yaml", daemon});
  }
  const auto launch = run({bin("psrt-launch"), dir + "/missing.yaml"});
  CHECK(launch.rc == 2);
  CHECK_THAT(launch.output, Catch::Contains(dir + "/missing.yaml"));
}

TEST_CASE("daemons exit 2 with one line naming a bad key or value", "[integration][exit]") {
  const std::string dir = temp_dir("exit");
  write_file(dir + "/unknown.yaml", replay_yaml("cluster: {servers: 1, bogus_key: 3}\n"));
  write_file(dir + "/ok.yaml", replay_yaml());
  for (const char* daemon : {"psrt-server", "psrt-worker"}) {
    INFO(daemon);
    check_config_error(run({bin(daemon), "--config", dir + "/unknown.yaml"}),
                       {"cluster.bogus_key", dir + "/unknown.yaml"});
    check_config_error(run({bin(daemon), "--config", dir + "/ok.yaml", "--set",
                            "optimizer.type=rmsprop"}),
                       {"optimizer.type", "rmsprop"});
    check_config_error(run({bin(daemon), "--config", dir + "/ok.yaml", "--set",
                            "cluster.workers=zero"}),
                       {"cluster.workers", "zero"});
    // A rank outside the job.
    check_config_error(run({bin(daemon), "--config", dir + "/ok.yaml", "--rank", "3"}), {"rank 3"});
  }
  // The worker's model: a profile that does not exist.
  check_config_error(run({bin("psrt-worker"), "--config", dir + "/ok.yaml", "--set",
                          "model.profile=" + dir + "/nope.yaml"}),
                     {dir + "/nope.yaml"});
}

TEST_CASE("daemons exit 2 on a bad rank variable or a role mismatch", "[integration][exit]") {
  const std::string dir = temp_dir("exit");
  write_file(dir + "/ok.yaml", replay_yaml());
  const char* old = ::getenv("PSRT_RANK");
  const std::string saved = old ? old : "";
  ::setenv("PSRT_RANK", "first", 1);
  const auto server = run({bin("psrt-server"), "--config", dir + "/ok.yaml"});
  const auto worker = run({bin("psrt-worker"), "--config", dir + "/ok.yaml"});
  if (old) {
    ::setenv("PSRT_RANK", saved.c_str(), 1);
  } else {
    ::unsetenv("PSRT_RANK");
  }
  check_config_error(server, {"PSRT_RANK", "first"});
  check_config_error(worker, {"PSRT_RANK", "first"});

  ::setenv("PSRT_ROLE", "worker", 1);
  const auto role = run({bin("psrt-server"), "--config", dir + "/ok.yaml"});
  ::unsetenv("PSRT_ROLE");
  check_config_error(role, {"PSRT_ROLE"});

  // Without --config: a usage error, exit code 2.
  CHECK(run({bin("psrt-server")}).rc == 2);
}

// Issue 17, row 5: configs that were accepted and silently wrong, or ended in "internal error".
TEST_CASE("duplicate keys, empty ids, negative ranks, oversize values and a directory are config "
          "errors", "[integration][exit][issue17]") {
  const std::string dir = temp_dir("exit");
  write_file(dir + "/ok.yaml", replay_yaml());
  write_file(dir + "/dup.yaml", replay_yaml("cluster: {servers: 1}\ncluster: {servers: 2}\n"));
  write_file(dir + "/dupinner.yaml", replay_yaml("cluster: {workers: 1, workers: 2}\n"));
  write_file(dir + "/noid.yaml", "job: {id: , iterations: 1}\n");
  write_file(dir + "/longid.yaml",
             "job: {id: " + std::string(300, 'x') + ", iterations: 1}\nmodel: {backend: replay}\n");
  write_file(dir + "/hugeid.yaml", "job: {id: " + std::string(5 << 20, 'x') + "}\n");
  write_file(dir + "/hidden.yaml", "model: {hidden: [1048576, 1048576]}\n");
  write_file(dir + "/hidden2.yaml", "model: {hidden: [60000, 60000, 60000]}\n");
  std::string list = "scheduler: {priority: [0";
  for (int i = 0; i < 5000; ++i) list += ", 1";
  write_file(dir + "/list.yaml", list + "]}\n");
  std::string big = "scheduler: {priority: [0";
  while (big.size() < (3u << 20)) big += ", 1";
  write_file(dir + "/biglist.yaml", big + "]}\n");

  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> names;
  };
  const std::vector<Case> cases = {
      {{"--config", dir + "/dup.yaml"}, {"dup.yaml", "cluster: appears twice"}},
      {{"--config", dir + "/dupinner.yaml"}, {"cluster.workers: appears twice"}},
      {{"--config", dir + "/ok.yaml", "--set", "job.id="}, {"job.id: has no value"}},
      {{"--config", dir + "/noid.yaml"}, {"job.id: has no value"}},
      {{"--config", dir + "/ok.yaml", "--set", "job.id=''"}, {"job.id: must not be empty"}},
      {{"--config", dir + "/ok.yaml", "--set", "job.id='a b'"},
       {"job.id: may hold printable ASCII"}},
      {{"--config", dir + "/ok.yaml", "--rank", "-1"}, {"--rank -1: must be a non-negative"}},
      {{"--config", dir + "/longid.yaml"}, {"job.id: is 300 bytes; at most 128"}},
      {{"--config", dir + "/hugeid.yaml"},
       {"hugeid.yaml", "a config file may hold at most 1048576"}},
      {{"--config", dir + "/hidden.yaml"}, {"model.hidden[0]", "[1, 65536]"}},
      {{"--config", dir + "/hidden2.yaml"}, {"model.hidden: these layer sizes make"}},
      {{"--config", dir + "/list.yaml"},
       {"scheduler.priority: a list of 5001 entries; at most 4096"}},
      {{"--config", dir + "/biglist.yaml"}, {"biglist.yaml", "at most 1048576"}},
      {{"--config", dir}, {dir + ": is a directory, not a config file"}},
  };
  for (const char* daemon : {"psrt-server", "psrt-worker"}) {
    for (const auto& c : cases) {
      std::vector<std::string> argv{bin(daemon)};
      argv.insert(argv.end(), c.args.begin(), c.args.end());
      INFO(daemon << " " << c.args.back());
      check_config_error(run(argv), c.names);
    }
  }
  // psrt-launch reads the same config first.
  check_config_error(run({bin("psrt-launch"), dir + "/dup.yaml"}), {"cluster: appears twice"});
  check_config_error(run({bin("psrt-launch"), dir}), {"is a directory"});
}

TEST_CASE("a replay profile too large to hold is a config error, not a failed allocation",
          "[integration][exit]") {
  const std::string dir = temp_dir("exit");
  // A one-layer profile with a tensor of `elements`, and a replay job on it: the job file's path.
  const auto replay_job = [&dir](const std::string& name, const std::string& elements) {
    write_file(dir + "/" + name + ".yaml",
               "name: " + name + "\nlayers:\n  - name: fc\n    kind: linear\n    forward_ms: 1\n"
               "    backward_ms: 2\n    tensors: [{name: w, elements: " + elements + "}]\n");
    write_file(dir + "/" + name + "-job.yaml",
               "job: {id: huge, iterations: 1}\n"
               "model: {backend: replay, profile: '" + dir + "/" + name + ".yaml'}\n");
    return dir + "/" + name + "-job.yaml";
  };
  check_config_error(run({bin("psrt-worker"), "--config", replay_job("huge", "34359738368")}),
                     {"model.profile", "34359738368 parameters", "model.scale"});
  // Within that cap but past this machine's memory (2^33 elements, 64 GiB with the gradients):
  // the kernel killed the worker half a minute into its allocation (exit 137), nothing said.
  if (memory_cap() < (uint64_t(64) << 30)) {
    check_config_error(run({bin("psrt-worker"), "--config", replay_job("big", "8589934592")}),
                       {"model.profile", "8589934592 parameters", "this machine has available"});
  }
  // Past what any profile may hold (2^40 elements): refused by the profile reader, naming the key.
  check_config_error(
      run({bin("psrt-worker"), "--config", replay_job("huger", "4611686018427387904")}),
      {"huger.yaml", "layers[0].tensors[0].elements", "out of range"});
}
