// What a network's test-set passes count: rows of logits whose predicted class (the first
// largest logit) is the row's label. Shared by Network, StageNet and their GPU twins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace psrt::engine {

// `rows` rows of `k` logits each, `labels` one per row. A row holding a NaN or an infinity (a
// model that diverged in its last updates) predicts nothing: std::domain_error, naming how many
// rows did. Taken as a guess (max_element over NaN picks class 0), such a model was reported at
// 1 / classes accuracy, and the job exited 0.
int64_t count_correct(const float* logits, const int32_t* labels, std::size_t rows, std::size_t k);

// Thrown by an evaluation whose `cancelled` says so between batches: the job ended meanwhile (a
// vgg-small test pass went on for seconds after the job was over, and printed its accuracy).
struct EvaluationCancelled : std::runtime_error {
  EvaluationCancelled() : std::runtime_error("evaluation cancelled: the job ended") {}
};

}  // namespace psrt::engine
