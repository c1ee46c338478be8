#include "core/config_placement.h"

#include "core/config_limits.h"
#include "core/endpoint_form.h"
#include "core/plan_yaml.h"
#include "core/status.h"

namespace psrt {

const std::vector<std::string>& placer_choices() {
  static const std::vector<std::string> kNames = {
      "netplacer", "single",      "even",        "torchgpipe", "pipedream",
      "baechi-metf", "baechi-msct", "metis-like", "annealing",  "exhaustive"};
  return kNames;
}

PlacementConfig parse_placement(const YamlReader& r,
                                const std::function<std::string(const std::string&)>& resolve) {
  PlacementConfig p;
  p.plan = r.get_string("plan", "");
  if (!p.plan.empty() && p.plan != "auto") p.plan = resolve(p.plan);
  p.placer = r.get_choice("placer", p.placer, placer_choices());
  p.address = r.get_string("address", "");
  if (!p.address.empty()) {
    if (const std::string why = connect_endpoint_problem(p.address); !why.empty())
      r.fail("address", why + " (a running psrt-placer)");
  }
  p.micro_batches = static_cast<uint32_t>(r.get_int("micro_batches", 1, 1, 4096));
  p.mode = r.get_choice("mode", "data", {"data", "model", "hybrid"});
  p.partitions = static_cast<uint32_t>(r.get_int("partitions", 1, 1, kMaxWorkers));
  if (r.has("devices")) {
    p.devices = read_devices(r);
  } else {
    for (const char* key : {"link", "server_link", "link_pairs"}) {
      if (r.has(key)) r.fail(key, "needs placement.devices");
    }
    if (p.plan == "auto") r.fail("devices", "is required when placement.plan is auto");
  }
  r.reject_unknown();
  return p;
}

// The combinations of placement.mode, partitions, micro_batches and the rest that can run.
void check_split(const Config& c, const YamlReader& r) {
  const PlacementConfig& p = c.placement;
  if (!p.split()) {
    if (p.partitions != 1)
      r.fail("partitions", "must be 1 with placement.mode data (or set mode model or hybrid)");
    return;
  }
  if (p.partitions < 2) r.fail("partitions", "must be at least 2 with placement.mode " + p.mode);
  const auto workers = uint32_t(c.cluster.workers);
  if (p.mode == "model" && workers != p.partitions) {
    r.fail("partitions", std::to_string(p.partitions) + " stages need cluster.workers = " +
                             std::to_string(p.partitions) + " in mode model, not " +
                             std::to_string(workers) + " (mode hybrid runs several replicas)");
  }
  if (p.mode == "hybrid" && (workers % p.partitions != 0 || workers / p.partitions < 2)) {
    r.fail("partitions", "mode hybrid needs cluster.workers (" + std::to_string(workers) +
                             ") = replicas x " + std::to_string(p.partitions) +
                             " with at least 2 replicas");
  }
  if (c.job.iterations <= 0) {
    throw ConfigError(c.source + ": job.iterations: must be set with placement.mode " + p.mode +
                      " (only the first stage reads the data, so no stage counts epochs)");
  }
  if (c.scheduler.grouping != "none") {
    throw ConfigError(c.source + ": scheduler.grouping: " + c.scheduler.grouping +
                      " with placement.mode " + p.mode +
                      ": stages push their tensors ungrouped (grouping of a stage's own tensors "
                      "is not built yet); use grouping none");
  }
  // The stages hold other parameters: one path for all kept one stage's.
  if (!c.job.dump_params.empty() && c.job.dump_params.find("{rank}") == std::string::npos) {
    throw ConfigError(c.source + ": job.dump_params: '" + c.job.dump_params +
                      "' has no {rank}, but each stage of a split model holds other parameters "
                      "and one file would keep one stage's: add {rank} to the path");
  }
  if (int64_t(p.micro_batches) > c.job.batch_size) {
    r.fail("micro_batches",
           std::to_string(p.micro_batches) + " micro-batches need job.batch_size >= " +
               std::to_string(p.micro_batches) + ", not " + std::to_string(c.job.batch_size));
  }
}

}  // namespace psrt
