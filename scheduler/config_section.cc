#include "scheduler/config_section.h"

#include <string>

#include "core/grouping_spec.h"
#include "core/sharding.h"

namespace psrt {

void parse_scheduler_section(const YamlReader& sch, const ConfigPath& in_base,
                             SchedulerConfig& c) {
  const std::string mode = sch.get_choice("mode", "fifo", mode_names());
  c.mode = *parse_mode(mode);
  c.chunk_bytes = static_cast<uint64_t>(
      sch.get_int("chunk_bytes", int64_t(c.chunk_bytes), 4096, kMaxConfigInt));
  if (c.chunk_bytes % 4 != 0) {
    sch.fail("chunk_bytes",
             std::to_string(c.chunk_bytes) + " is not a multiple of 4 (whole floats)");
  }
  c.credit_bytes = static_cast<uint64_t>(
      sch.get_int("credit_bytes", int64_t(c.credit_bytes), 1, kMaxConfigInt));
  for (auto p : sch.get_int_list("priority", 0, 1 << 30)) c.priority.push_back(int(p));
  c.grouping = sch.get_string("grouping", c.grouping);
  std::string grouping_error;
  if (!parse_grouping(c.grouping, &grouping_error)) sch.fail("grouping", grouping_error);
  c.calibration = in_base(sch.get_string("calibration", ""));
  c.batch_bytes = static_cast<uint64_t>(
      sch.get_int("batch_bytes", int64_t(c.batch_bytes), 0, int64_t(kMaxGroupBytes)));
  c.link_bytes_per_s = sch.get_double("link_bytes_per_s", c.link_bytes_per_s, 1e3, 1e13);
  c.host_cores = static_cast<uint32_t>(sch.get_int("host_cores", c.host_cores, 0, kMaxHostCores));
  c.grouping_trials =
      static_cast<uint32_t>(sch.get_int("grouping_trials", c.grouping_trials, 0, 8));
  c.grouping_trial_iterations = static_cast<uint32_t>(
      sch.get_int("grouping_trial_iterations", c.grouping_trial_iterations, 1, 100));
  sch.reject_unknown();
}

}  // namespace psrt
