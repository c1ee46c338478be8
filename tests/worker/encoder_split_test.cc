// After a resume, the codec state restored must be of the tensors this worker pushes now: a job
// resumed with another split (placement.mode, partitions, a plan) carried some of it over and
// dropped the rest without a word.
#include <catch2/catch.hpp>

#include "worker/encoder_checkpoint.h"

using namespace psrt;

TEST_CASE("restored codec state of another split of the model is named", "[unit][worker]") {
  // State for exactly the tensors pushed, or none at all (a hot start): nothing to say.
  CHECK(state_split_warning({1, 1, 0, 0}, {1, 1, 0, 0}).empty());
  CHECK(state_split_warning({0, 0, 0, 0}, {1, 1, 1, 1}).empty());
  // A stage's state where the whole model is pushed now (2 stages resumed data-parallel).
  CHECK_THAT(state_split_warning({1, 1, 0, 0}, {1, 1, 1, 1}),
             Catch::Contains("another split") && Catch::Contains("2 of the tensors it pushes now "
                                                                 "restart empty"));
  // The boundary moved: tensor 2 is another stage's now.
  CHECK_THAT(state_split_warning({0, 0, 1, 1}, {0, 0, 0, 1}),
             Catch::Contains("the state of 1 it no longer pushes"));
}
