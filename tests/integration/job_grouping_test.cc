// Worker 0 alone chooses the job's grouping (worker/grouping_plan.h): it searches before it
// registers, and every other worker runs what the membership brings, whatever its own config
// says. Here worker 1's config names no grouping, no trials and a calibration file that cannot be
// read (a search there would fail on it); it warns, runs worker 0's search's choice and online
// trials, and the job ends normally with both workers holding the same parameters.
#include <catch2/catch.hpp>

#include <string>

#include "tests/integration/proc_util.h"

using namespace psrt::test;

namespace {

void write_job(const std::string& dir, const std::string& grouping) {
  write_file(dir + "/job.yaml",
             "job: {id: grouping, iterations: 14, batch_size: 32, seed: 7, log_every: 0, "
             "evaluate: false, dump_params: '" + dir + "/params-{rank}.bin'}\n"
             "cluster: {servers: 1, workers: 2, start_timeout_s: 120}\n"
             "model: {backend: native, arch: mlp, hidden: [64, 32]}\n"
             "data: {train_limit: 2000}\n"
             "optimizer: {type: sgd, lr: 0.1, momentum: 0.9}\n"
             "scheduler: {mode: preemptive, chunk_bytes: 4096, credit_bytes: 16384, "
             "grouping: '" + grouping + "', grouping_trials: 2, grouping_trial_iterations: 1}\n");
}

void all_exit_0(Daemons& d) {
  REQUIRE(d.procs.size() == 3);
  for (std::size_t i = 0; i < d.procs.size(); ++i) {
    const auto rc = d.procs[i]->wait_exit(120);
    INFO(d.names[i] << ": " << d.procs[i]->output());
    CHECK(rc == std::optional<int>(0));
  }
}

}  // namespace

TEST_CASE("every worker runs worker 0's grouping, searched once for the job",
          "[integration][grouping]") {
  const std::string dir = temp_dir("job-grouping");
  write_job(dir, "auto");
  write_file(dir + "/broken-calibration.yaml", "per_message: [not, a, number\n");
  auto d = start_daemons(dir + "/job.yaml", 1, 2,
                         {{}, {"--set", "scheduler.grouping=none", "--set",
                               "scheduler.grouping_trials=0", "--set",
                               "scheduler.calibration=" + dir + "/broken-calibration.yaml",
                               "--set", "log_level=debug"}});
  all_exit_0(d);
  const Proc &w0 = *d.procs[1], &w1 = *d.procs[2];
  INFO(w0.output());
  INFO(w1.output());
  CHECK_THAT(w0.output(), Catch::Contains("grouping auto (") &&
                              Catch::Contains("grouping trials: 2 groupings taking turns") &&
                              Catch::Contains("grouping kept: "));
  CHECK_THAT(w1.output(), Catch::Contains("worker 0 groups by 'auto' and this worker's "
                                          "scheduler.grouping says 'none'"));
  // Worker 1 ran worker 0's trials, though its own config asks for none, and took worker 0's
  // choice when it came.
  CHECK_THAT(w1.output(), Catch::Contains("grouping trials done: auto: ") &&
                              Catch::Contains("worker 0 chooses") &&
                              !Catch::Contains("did not arrive"));
  const auto p0 = read_floats(dir + "/params-0.bin");
  CHECK(!p0.empty());
  CHECK(p0 == read_floats(dir + "/params-1.bin"));
}

TEST_CASE("the same grouping written two ways draws no warning", "[integration][grouping]") {
  const std::string dir = temp_dir("job-grouping-same");
  write_job(dir, "size:16384");
  auto d = start_daemons(dir + "/job.yaml", 1, 2,
                         {{}, {"--set", "scheduler.grouping=size:16KiB"}});
  all_exit_0(d);
  INFO(d.procs[2]->output());
  CHECK_THAT(d.procs[1]->output(), Catch::Contains("grouping size:16384: "));
  CHECK_THAT(d.procs[2]->output(), !Catch::Contains("worker 0 groups by"));
}
