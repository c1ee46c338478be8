// Worker 0's grouping as it travels (worker/grouping_plan.h): what every worker takes from the
// membership is worker 0's choice and runners-up exactly, and a plan that does not fit this
// worker's model is refused with the reason instead of being run.
#include <catch2/catch.hpp>

#include "worker/grouping_plan.h"

using namespace psrt;

namespace {

// 40 layers of one tensor each, sizes and backward times varied so that the search has choices.
ModelDesc model() {
  ModelDesc m;
  for (int i = 0; i < 40; ++i) {
    LayerDesc l;
    l.name = std::to_string(i);
    l.name.insert(l.name.begin(), 'l');
    l.forward_ms = 0.1 + 0.01 * (i % 7);
    l.backward_ms = 0.2 + 0.02 * (i % 5);
    m.add_layer(l, {{l.name + ".weight", uint64_t(1000 + 9000 * (i % 4) + 50000 * (i % 9 == 0))}});
  }
  return m;
}

sim::SimConfig cluster() {
  sim::SimConfig c;
  c.workers = 4;
  c.servers = 2;
  c.bandwidth_bytes_per_s = 62.5e6;
  c.chunk_bytes = 16384;
  c.credit_bytes = 262144;
  return c;
}

}  // namespace

TEST_CASE("a searched grouping and its runners-up reach every worker as worker 0 chose them",
          "[worker][grouping]") {
  const ModelDesc m = model();
  const auto choice = sim::choose_grouping(m, cluster(), *parse_grouping("auto"), 40, 4, 1);
  REQUIRE_FALSE(choice.alternatives.empty());
  const uint32_t tensors = uint32_t(m.tensors.size());
  const JobGrouping job = job_grouping(grouping_plan("auto", choice, 4, 3, 5), tensors);
  CHECK(job.spec == "auto");
  CHECK(job.search == sim::describe_search(choice, 4));
  CHECK(job.trial_iterations == 5);
  REQUIRE(job.candidates.size() == std::min<std::size_t>(3, 1 + choice.alternatives.size()));
  CHECK(job.candidates[0].name == "auto");
  CHECK(job.candidates[0].grouping == choice.grouping);
  CHECK(job.candidates[0].price_ms == choice.iteration_ms);
  for (std::size_t i = 1; i < job.candidates.size(); ++i) {
    CHECK(job.candidates[i].name == choice.alternatives[i - 1].name);
    CHECK(job.candidates[i].grouping == choice.alternatives[i - 1].grouping);
    CHECK(job.candidates[i].price_ms == choice.alternatives[i - 1].price_ms);
  }
  // Without trials only the choice travels.
  const JobGrouping alone = job_grouping(grouping_plan("auto", choice, 4, 0, 5), tensors);
  CHECK(alone.candidates.size() == 1);
  CHECK(alone.trial_iterations == 0);
}

TEST_CASE("a static grouping travels as one candidate named by its spec", "[worker][grouping]") {
  const ModelDesc m = model();
  const auto spec = parse_grouping("size:65536");
  const auto choice = sim::choose_grouping(m, cluster(), *spec);
  const JobGrouping job = job_grouping(grouping_plan("size:65536", choice, 4, 4, 3),
                                       uint32_t(m.tensors.size()));
  REQUIRE(job.candidates.size() == 1);
  CHECK(job.candidates[0].name == spec->text());
  CHECK(job.candidates[0].grouping == static_grouping(m, *spec));
  CHECK(job.search.empty());
}

TEST_CASE("a plan that does not fit this worker's model is refused, naming why",
          "[worker][grouping]") {
  const ModelDesc m = model();
  const auto choice = sim::choose_grouping(m, cluster(), *parse_grouping("size:65536"));
  wire::GroupingPlan plan = grouping_plan("size:65536", choice, 4, 0, 3);
  REQUIRE(plan.candidates(0).starts_size() > 1);
  // A worker whose model has fewer tensors than worker 0's.
  CHECK_THROWS_WITH(job_grouping(plan, plan.candidates(0).starts(1)),
                    Catch::Contains("starts must ascend below"));
  wire::GroupingPlan bad_spec = plan;
  bad_spec.set_spec("size:lots");
  CHECK_THROWS_WITH(job_grouping(bad_spec, uint32_t(m.tensors.size())),
                    Catch::Contains("spec 'size:lots'"));
}
