#include "worker/native_backend.h"

#include "core/config_limits.h"
#include "core/status.h"
#include "engine/init.h"
#include "engine/memory_estimate.h"
#include "engine/net_spec.h"
#include "engine/predictions.h"

namespace psrt {
namespace {

// Worker 0 evaluates (at the end, or every job.eval_every: a bad test set was found mid-run).
bool evaluates(const Config& config, uint32_t rank) {
  return rank == 0 && config.job.evaluates();
}

// build_replica once the network is known to fit this machine's memory (host activations: the
// native backend's own; the GPU backend's are on the device).
std::unique_ptr<engine::Network> build_fitting(const Config& config, uint32_t rank) {
  const engine::NetSpec spec = engine::net_spec(config);
  const ModelDesc desc = engine::describe_network(spec);  // nothing allocated
  const engine::NetMemory memory = engine::net_memory(desc, spec);
  if (const std::string why = engine::memory_problem(memory, config.job.batch_size,
                                                     evaluates(config, rank),
                                                     BatchSource::kEvalBatch, 1, memory_cap());
      !why.empty()) {
    throw ConfigError(why);
  }
  return build_replica(config, rank);
}

}  // namespace

std::unique_ptr<engine::Network> build_replica(const Config& config, uint32_t rank) {
  auto net = engine::build_network(engine::net_spec(config), config.job.seed);
  net->reseed_randomness(engine::mix_seed(config.job.seed, 0xd50b0000u + rank));
  return net;
}

NativeBackend::NativeBackend(const Config& config, uint32_t rank)
    : batch_(config.job.batch_size),
      net_(build_fitting(config, rank)),
      source_(config, rank, net_->input_size()),
      eval_batch_(engine::eval_batch({net_->desc(), net_->input_size()}, BatchSource::kEvalBatch)) {
  if (evaluates(config, rank)) source_.load_test_now();
}

void NativeBackend::begin_iteration(uint64_t iteration) {
  const int n = source_.load(iteration);
  net_->set_batch(source_.images(), source_.labels(), n);
}

std::optional<double> NativeBackend::evaluate(const std::function<bool()>& cancelled) {
  const data::Dataset& test = source_.test_set();
  try {
    return net_->evaluate(test.images.data(), test.labels.data(), test.n, eval_batch_, cancelled);
  } catch (const engine::EvaluationCancelled&) {
    return std::nullopt;
  }
}

}  // namespace psrt
