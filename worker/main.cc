// psrt-worker: trains one model replica; pushes gradients, receives parameters.
#include <cblas.h>
#include <spdlog/spdlog.h>

#include <sys/resource.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>

#include "config/daemon_main.h"
#include "core/abort_notice.h"
#include "core/stop_signals.h"
#include "engine/blas_room.h"
#include "worker/backend.h"
#include "worker/layer_timing.h"
#include "worker/ps_client.h"
#include "worker/stage_trainer.h"
#include "worker/trainer.h"

namespace {

// Every {rank} in `path` (only the first was replaced: "dp{rank}{rank}.bin" gave "dp0{rank}.bin").
std::string with_rank(std::string path, int rank) {
  const std::string r = std::to_string(rank);
  for (auto pos = path.find("{rank}"); pos != std::string::npos; pos = path.find("{rank}", pos)) {
    path.replace(pos, 6, r);
    pos += r.size();
  }
  return path;
}

// Machine-readable, for benchmark drivers (worker 0).
void print_result(const psrt::Config& config, const psrt::TrainResult& result,
                  const psrt::ClientStats& stats) {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);  // ru_maxrss: the peak resident memory, in KiB on Linux
  std::printf("PSRT_RESULT iterations=%llu seconds=%.3f ms_per_iteration=%.3f mode=%s "
              "received_bytes=%llu peak_rss_mib=%.1f\n",
              (unsigned long long)result.iterations, result.seconds,
              result.steady_ms_per_iteration, psrt::mode_name(config.scheduler.mode),
              (unsigned long long)stats.bytes_received, double(usage.ru_maxrss) / 1024.0);
  std::fflush(stdout);
}

// job.dump_params: a file that cannot be written (a full disk) is reported at once, and fails
// the worker only at the end, after the evaluation and the shutdown barrier: the servers and the
// other workers finish as usual and the accuracy is still printed. Returns the error.
std::optional<std::string> dump_or_report(const std::function<void()>& write) {
  try {
    write();
    return std::nullopt;
  } catch (const psrt::JobError& e) {
    spdlog::error("{}", e.what());
    return std::string(e.what());
  }
}

// Runs `work` with `client` open: a failure of this worker's own (a device, memory, a diverged
// loss; not one the job told it of, which abandon() leaves alone) is told to the job through the
// client before it goes on up (PsClient::abandon), so that the others stop at once, naming it,
// instead of finding this worker silent after cluster.peer_timeout_s. A failure of another kind
// than psrt's own (JobError; ConfigError, exit 2) goes on as a JobError: the job knows, and
// daemon_main does not tell it again over a connection of its own.
void telling_the_job(psrt::PsClient& client, const std::function<void()>& work) {
  try {
    work();
  } catch (const std::exception& e) {
    const std::string why =
        dynamic_cast<const std::bad_alloc*>(&e) ? psrt::failure_reason(e) : e.what();
    client.abandon(why);
    if (dynamic_cast<const psrt::JobError*>(&e) || dynamic_cast<const psrt::ConfigError*>(&e)) {
      throw;
    }
    throw psrt::JobError(why);
  }
}

// SIGTERM, SIGINT, SIGHUP while `client` is open: the job is told which worker stopped, and
// why (core/stop_signals.h); the others end at once instead of after cluster.peer_timeout_s.
std::unique_ptr<psrt::StopSignals::Target> stop_signals(psrt::StopSignals& signals,
                                                        psrt::PsClient& client) {
  return std::make_unique<psrt::StopSignals::Target>(
      signals, [&client](const std::string& sig) { return client.abandon("stopped by " + sig); });
}

// Writes the timeline as the scope ends, normally or by an exception, before the worker's stop
// target (declared before it) goes: a stop signal then leaves the worker its grace. Written by
// the timeline's destructor, after the target, a signal killed the worker mid-write.
struct FlushAtEnd {
  psrt::Timeline& timeline;
  ~FlushAtEnd() { timeline.flush(); }
};

// placement.mode model | hybrid: this worker runs one stage of a replica.
void run_stage(const psrt::Config& config, uint32_t rank, const std::string& dump,
               psrt::StopSignals& signals) {
  psrt::StageWorker stage(config, rank);
  psrt::Timeline timeline(config.timeline, "worker-" + std::to_string(rank), 1000 + int(rank));
  psrt::PsClient client(config, rank, stage.desc(), [&](uint32_t key) { return stage.param(key); },
                        &timeline, stage.role());
  const auto stop = stop_signals(signals, client);
  const FlushAtEnd flush_timeline{timeline};
  std::optional<std::string> dump_error;
  telling_the_job(client, [&] {
    const auto result = stage.train(client, &timeline);
    const auto stats = client.stats();
    spdlog::info("{} iterations in {:.1f} s; pushed {:.1f} MiB; waited {:.1f} s", result.iterations,
                 result.seconds, double(stats.bytes_pushed) / (1 << 20), stats.wait_seconds);
    if (rank == 0) print_result(config, result, stats);
    if (stage.holds_loss() && stage.role().replica == 0) {
      std::printf("PSRT_LOSS iteration=%llu loss=%.6f\n", (unsigned long long)result.iterations,
                  result.last_loss);
      std::fflush(stdout);
    }
    if (!dump.empty()) dump_error = dump_or_report([&] { stage.dump_params(dump); });
    if (result.test_accuracy) {  // the last stage of replica 0
      std::printf("test accuracy: %.4f\n", *result.test_accuracy);
      std::fflush(stdout);
    }
    client.finish();
  });
  if (dump_error) throw psrt::JobError(*dump_error);
}

// The model as PsClient plans with it: worker 0 of a native job whose grouping needs layer times
// measures them (worker 0 alone chooses the job's grouping: worker/grouping_plan.h).
psrt::ModelDesc timed_desc(const psrt::Config& config, uint32_t rank, psrt::Backend& backend) {
  psrt::ModelDesc desc = backend.desc();
  const auto spec = psrt::parse_grouping(config.scheduler.grouping);
  if (rank != 0 || !spec || !psrt::grouping_needs_layer_times(*spec, desc)) return desc;
  if (config.model.backend != "native") {
    spdlog::warn("scheduler.grouping {}: the {} backend's layer times are not measured; the search "
                 "assumes every gradient is ready when backward starts",
                 config.scheduler.grouping, config.model.backend);
    return desc;
  }
  psrt::measure_layer_times(backend, desc, 3);
  double fwd = 0, bwd = 0;
  for (const auto& l : desc.layers) {
    fwd += l.forward_ms;
    bwd += l.backward_ms;
  }
  spdlog::info("layer times for the grouping search, measured: forward {:.2f} ms, backward {:.2f} "
               "ms per iteration (fastest of 2 passes)",
               fwd, bwd);
  return desc;
}

// A whole replica (data parallelism).
void run_replica(const psrt::Config& job_config, uint32_t rank, int arg_rank,
                 psrt::StopSignals& signals) {
  auto backend = psrt::make_backend(job_config, rank);
  // job.epochs resolved over this worker's data: the count it registers (every worker's must
  // agree: the coordinator refuses one that differs instead of stranding the rest).
  psrt::Config config = job_config;
  config.job.iterations = int64_t(psrt::planned_iterations(job_config, *backend));
  psrt::Timeline timeline(config.timeline, "worker-" + std::to_string(rank), 1000 + int(rank));
  psrt::PsClient client(config, rank, timed_desc(config, rank, *backend),
                        [&](uint32_t key) { return backend->param(key); }, &timeline);
  const auto stop = stop_signals(signals, client);
  const FlushAtEnd flush_timeline{timeline};
  std::optional<std::string> dump_error;
  telling_the_job(client, [&] {
    const auto result = psrt::train(config, rank, *backend, client, &timeline);
    const auto stats = client.stats();
    spdlog::info(
        "{} iterations in {:.1f} s; pushed {:.1f} MiB; received {:.1f} MiB of "
        "parameters; waited {:.1f} s for them",
        result.iterations, result.seconds, double(stats.bytes_pushed) / (1 << 20),
        double(stats.bytes_received) / (1 << 20), stats.wait_seconds);
    if (rank == 0) print_result(config, result, stats);
    if (!config.job.dump_params.empty()) {
      dump_error = dump_or_report(
          [&] { psrt::dump_params(with_rank(config.job.dump_params, arg_rank), *backend); });
    }
    if (rank == 0 && config.job.evaluate) {
      // The job may end meanwhile (another process failed or was stopped): the pass stops, and
      // client.finish() below says why.
      if (auto acc = backend->evaluate([&] { return client.failed(); })) {
        std::printf("test accuracy: %.4f\n", *acc);
        std::fflush(stdout);
      }
    }
    client.finish();
  });
  if (dump_error) throw psrt::JobError(*dump_error);
}

}  // namespace

int main(int argc, char** argv) {
  return psrt::daemon_main(argc, argv, "worker", [](const psrt::Config& config,
                                                    const psrt::DaemonArgs& args) {
    openblas_set_num_threads(config.job.blas_threads);
    if (config.model.backend == "native") {  // this thread and OpenBLAS's own
      const std::string no_room = psrt::engine::take_blas_buffers(config.job.blas_threads);
      if (!no_room.empty()) throw psrt::ConfigError(no_room);
    }
    const auto rank = static_cast<uint32_t>(args.rank);
    if (config.placement.split()) {
      run_stage(config, rank,
                config.job.dump_params.empty() ? std::string()
                                               : with_rank(config.job.dump_params, args.rank),
                *args.stop);
      return;
    }
    run_replica(config, rank, args.rank, *args.stop);
  });
}
