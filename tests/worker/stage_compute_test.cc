// The replay stage's activation sizes: what crosses each cut of a pipeline, relayed through the
// stages in between when a layer reads an output from further back.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include <unistd.h>

#include "config/job_config.h"
#include "core/config.h"
#include "core/stage_layout.h"
#include "worker/stage_compute.h"

using namespace psrt;

namespace {

// a -> b -> c -> d, with d also reading a's output (a skip over two cuts).
std::string skip_profile() {
  const std::string path = "/tmp/psrt-stage-compute-test-" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(path) << "name: skip\nbatch_size: 4\nlayers:\n"
                         "  - {name: a, forward_ms: 0, backward_ms: 0, activation_elements: 10,"
                         " tensors: [{name: a.w, elements: 3}]}\n"
                         "  - {name: b, forward_ms: 0, backward_ms: 0, activation_elements: 20}\n"
                         "  - {name: c, forward_ms: 0, backward_ms: 0, activation_elements: 30}\n"
                         "  - {name: d, forward_ms: 0, backward_ms: 0, activation_elements: 5,"
                         " inputs: [c, a], tensors: [{name: d.w, elements: 7}]}\n";
  return path;
}

}  // namespace

TEST_CASE("replay stages send every output that crosses their cut", "[worker][stage]") {
  const std::string profile = skip_profile();
  const Config config = parse_config(
      "job: {iterations: 1, batch_size: 4}\ncluster: {workers: 3}\n"
      "model: {backend: replay, profile: '" + profile + "'}\n"
      "placement: {mode: model, partitions: 3}\n",
      "job.yaml");
  const ModelDesc model = stage_model(config);
  StageLayout layout = stage_layout(config, model);
  layout.ranges = {{0, 1}, {1, 3}, {3, 4}};  // [a], [b c], [d]
  layout.slowdown.assign(3, 1.0);
  auto s0 = make_stage_compute(config, layout, 0, 0);
  auto s1 = make_stage_compute(config, layout, 1, 1);
  auto s2 = make_stage_compute(config, layout, 2, 2);
  CHECK(s0->out_width() == 10);  // a's output (b and d read it)
  CHECK(s1->in_width() == 10);
  CHECK(s1->out_width() == 30 + 10);  // c's output, and a's relayed for d
  CHECK(s2->in_width() == 40);
  CHECK(s2->holds_loss());
  std::remove(profile.c_str());
}
