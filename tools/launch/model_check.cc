#include "tools/launch/model_check.h"

#include <cstdio>

#include "core/config_limits.h"
#include "core/plan_yaml.h"
#include "core/profile.h"
#include "core/status.h"
#include "core/stage_layout.h"
#include "engine/memory_estimate.h"
#include "engine/net_spec.h"
#include "scheduler/sim/calibration.h"

namespace psrt::launch {

namespace {

// A plan is made for one batch size and micro-batch count; its memory and time predictions hold
// for those only. The runtime takes the job's.
void warn_if_plan_differs(const Config& config, const ModelDesc& model) {
  const Plan plan = load_plan(config.placement.plan, model);
  const uint64_t batch = uint64_t(config.job.batch_size);
  const uint32_t micro = config.placement.micro_batches;
  if (plan.setup.batch_size == batch && plan.setup.micro_batches == micro) return;
  std::fprintf(stderr,
               "psrt-launch: warning: %s was made for batch %u in %u micro-batches, this job "
               "runs batch %llu in %u (job.batch_size, placement.micro_batches): its memory and "
               "time predictions do not hold\n",
               config.placement.plan.c_str(), plan.setup.batch_size, plan.setup.micro_batches,
               (unsigned long long)batch, micro);
}

}  // namespace

void check_model(const Config& config, bool read_files) {
  if (!read_files && config.placement.plan == "auto") {
    throw ConfigError(
        "placement.plan: auto is resolved by psrt-launch running the job on this machine; "
        "daemons started on a cluster need a plan file (psrt-place --config JOB --out "
        "plan.yaml, then placement.plan: plan.yaml)");
  }
  if (config.model.backend == "replay" && config.job.iterations == 0) {  // each worker refused
    throw ConfigError("job.iterations: must be set for the replay backend (it has no epochs)");
  }
  if (read_files && !config.scheduler.calibration.empty()) {  // read by worker 0 at start
    try {
      (void)sim::load_calibration(config.scheduler.calibration);
    } catch (const std::exception& e) {
      throw ConfigError(std::string("scheduler.calibration: ") + e.what());
    }
  }
  if (!read_files && config.model.backend == "replay") return;
  const ModelDesc model = config.model.backend == "replay"
                              ? load_profile(config.model.profile, config.model.scale)
                              : engine::describe_network(engine::net_spec(config));
  if (model.tensors.empty()) {  // the coordinator refused it only once every server was up
    throw ConfigError("model: " + model.name + " has no parameters to train (" +
                      (config.model.backend == "replay" ? "model.profile" : "model.layers") + ")");
  }
  // Every worker of this launch runs on this machine: together they must fit it (each worker
  // checks its own share only).
  if (read_files && config.model.backend == "replay" && !config.placement.split()) {
    if (const std::string why = replay_memory_problem(
            config.model.profile, model.total_elements(), config.cluster.workers, memory_cap());
        !why.empty()) {
      throw ConfigError(why);
    }
  }
  if (read_files && config.model.backend == "native" && !config.placement.split()) {
    const engine::NetMemory memory = engine::net_memory(model, engine::net_spec(config));
    if (const std::string why = engine::memory_problem(memory, config.job.batch_size,
                                                       config.job.evaluates(),
                                                       engine::kMostEvalBatch,
                                                       config.cluster.workers, memory_cap());
        !why.empty()) {
      throw ConfigError(why);
    }
  }
  // A worker refused it only once the servers had started.
  if (!config.scheduler.priority.empty() &&
      config.scheduler.priority.size() != model.tensors.size()) {
    throw ConfigError("scheduler.priority: lists " +
                      std::to_string(config.scheduler.priority.size()) + " priorities, " +
                      model.name + " has " + std::to_string(model.tensors.size()) + " tensors");
  }
  Config laid_out = config;
  // plan: auto is made after this; without read_files the plan file is not read either.
  if (laid_out.placement.plan == "auto" || !read_files) laid_out.placement.plan.clear();
  (void)stage_layout(laid_out, model);
  if (!laid_out.placement.plan.empty() && laid_out.placement.split()) {
    warn_if_plan_differs(laid_out, model);
  }
}

}  // namespace psrt::launch
