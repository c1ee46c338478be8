#include "worker/native_backend.h"

#include "engine/init.h"
#include "engine/net_spec.h"
#include "engine/predictions.h"

namespace psrt {

std::unique_ptr<engine::Network> build_replica(const Config& config, uint32_t rank) {
  auto net = engine::build_network(engine::net_spec(config), config.job.seed);
  net->reseed_randomness(engine::mix_seed(config.job.seed, 0xd50b0000u + rank));
  return net;
}

NativeBackend::NativeBackend(const Config& config, uint32_t rank)
    : batch_(config.job.batch_size),
      net_(build_replica(config, rank)),
      source_(config, rank, net_->input_size()) {
  // Worker 0 evaluates (at the end, or every job.eval_every: a bad test set was found mid-run).
  if (rank == 0 && (config.job.evaluate || config.job.eval_every > 0)) source_.load_test_now();
}

void NativeBackend::begin_iteration(uint64_t iteration) {
  const int n = source_.load(iteration);
  net_->set_batch(source_.images(), source_.labels(), n);
}

std::optional<double> NativeBackend::evaluate(const std::function<bool()>& cancelled) {
  const data::Dataset& test = source_.test_set();
  try {
    return net_->evaluate(test.images.data(), test.labels.data(), test.n, BatchSource::kEvalBatch,
                          cancelled);
  } catch (const engine::EvaluationCancelled&) {
    return std::nullopt;
  }
}

}  // namespace psrt
