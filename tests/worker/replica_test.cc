// Every worker's replica of the network: the same initial values, its own dropout masks.
#include <catch2/catch.hpp>

#include <algorithm>

#include "config/job_config.h"
#include "core/config.h"
#include "engine/dropout.h"
#include "worker/native_backend.h"

using namespace psrt;

TEST_CASE("replicas share initial values but not dropout masks", "[worker][backend]") {
  const Config config = parse_config("job: {seed: 3}\nmodel: {arch: vgg-small}", "job.yaml");
  auto r0 = build_replica(config, 0), r1 = build_replica(config, 1),
       again = build_replica(config, 1);
  for (const auto& t : r0->desc().tensors) {
    const auto a = r0->param(t.key), b = r1->param(t.key);
    REQUIRE(std::equal(a.begin(), a.end(), b.begin()));
  }
  std::size_t dropouts = 0;
  for (std::size_t i = 0; i < r0->desc().layers.size(); ++i) {
    const auto* d0 = dynamic_cast<const engine::Dropout*>(&r0->layer(i));
    if (d0 == nullptr) continue;
    ++dropouts;
    const auto& d1 = dynamic_cast<const engine::Dropout&>(r1->layer(i));
    const auto& d1again = dynamic_cast<const engine::Dropout&>(again->layer(i));
    CHECK(d0->seed() != d1.seed());
    CHECK(d1.seed() == d1again.seed());  // a restarted worker draws its masks again
  }
  CHECK(dropouts == 1);
}
