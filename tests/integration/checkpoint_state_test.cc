// State that a resumed run does not use is not carried on in its checkpoints: an SGD momentum
// buffer under momentum 0, the published values under dense replies. Both were written again
// unchanged and then taken up, stale, by a later run that used them (found by a helper's probe:
// the workers restarted from a model 200 iterations old; an old momentum buffer was applied).
#include <catch2/catch.hpp>

#include <string>

#include "server/checkpoint_file.h"
#include "tests/integration/checkpoint_job.h"
#include "tests/integration/proc_util.h"

using namespace psrt;
using namespace psrt::test::ckpt;

namespace {

// What server 1's checkpoint of `iteration` holds: chunks with a momentum buffer, and chunks with
// published values.
struct Held {
  int momentum = 0;
  int published = 0;
};

Held held(const std::string& dir, uint64_t iteration) {
  const auto files = list_checkpoints(dir + "/ckpt", "ckpt", 1);
  REQUIRE(files.count(iteration) == 1);
  auto s = read_checkpoint(files.at(iteration));
  REQUIRE(s);
  Held h;
  for (const auto& c : s->chunks) {
    h.momentum += !c.opt.m.empty();
    h.published += !c.published.empty();
  }
  return h;
}

int launch(const std::string& cfg, std::vector<std::string> args) {
  args.insert(args.begin(), {test::bin("psrt-launch"), cfg});
  test::Proc p("launch", args);
  const auto rc = p.wait_exit(120);
  INFO(p.output());
  REQUIRE(rc.has_value());
  return *rc;
}

}  // namespace

TEST_CASE("a resumed run drops the optimizer and reply state it does not use",
          "[integration][checkpoint]") {
  const std::string dir = test::temp_dir("ckpt-state");
  Job job = kMlp;
  job.extra = "compression: {codec: topk, density: 0.05, replies: compressed}\n";
  const std::string cfg = job_config(dir, job);
  REQUIRE(launch(cfg, {"--set", "job.iterations=10"}) == 0);
  const Held first = held(dir, 10);
  CHECK(first.momentum > 0);
  CHECK(first.published > 0);
  REQUIRE(launch(cfg, {"--resume", "--set", "job.iterations=20", "--set", "optimizer.momentum=0",
                       "--set", "compression.replies=dense"}) == 0);
  const Held second = held(dir, 20);
  CHECK(second.momentum == 0);
  CHECK(second.published == 0);
  // And the next run that uses them starts them afresh from this run's model.
  REQUIRE(launch(cfg, {"--resume", "--set", "job.iterations=30"}) == 0);
  const Held third = held(dir, 30);
  CHECK(third.momentum == first.momentum);
  CHECK(third.published == first.published);
}
