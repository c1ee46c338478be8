#include "scheduler/sim/calibration.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "core/status.h"
#include "core/yaml_reader.h"

namespace psrt::sim {

Calibration load_calibration(const std::string& path) {
  try {
    // A FIFO blocked every reader in open() for ever, /dev/zero grew it by gigabytes.
    const std::string text =
        read_yaml_file(path, "a calibration (scheduler.calibration, --calibration)", 1 << 20);
    YAML::Node node;
    try {
      node = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw std::invalid_argument(path + ": not valid YAML: " + e.what());
    }
    const YamlReader r(node, "", path);
    // What the fit was made from: kept in the file for people, not used here.
    for (const char* info : {"made_by", "measured", "fit", "machine", "sizes"}) r.mark_used(info);
    const char* const costs[] = {"worker_message_us", "server_message_us", "server_byte_ns",
                                 "worker_byte_ns"};
    if (std::none_of(std::begin(costs), std::end(costs), [&](const char* k) { return r.has(k); })) {
      throw std::invalid_argument(path + ": empty, or not a calibration: it names none of "
                                  "worker_message_us, server_message_us, worker_byte_ns, "
                                  "server_byte_ns (leave it out for the ideal runtime)");
    }
    Calibration c;
    c.worker_message_us = r.get_double("worker_message_us", 0, 0, 1e6);
    c.server_message_us = r.get_double("server_message_us", 0, 0, 1e6);
    c.server_byte_ns = r.get_double("server_byte_ns", 0, 0, 1e6);
    c.worker_byte_ns = r.get_double("worker_byte_ns", 0, 0, 1e6);
    r.reject_unknown();
    c.source = path;
    return c;
  } catch (const ConfigError& e) {
    throw std::invalid_argument(e.what());
  }
}

}  // namespace psrt::sim
