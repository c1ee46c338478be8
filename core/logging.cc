#include "core/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <google/protobuf/stubs/logging.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

namespace psrt {

namespace {
void protobuf_log(google::protobuf::LogLevel level, const char* file, int line,
                  const std::string& message) {
  if (level >= google::protobuf::LOGLEVEL_FATAL) {
    spdlog::critical("libprotobuf {}:{}: {}", file, line, message);
  } else {
    spdlog::debug("libprotobuf {}:{}: {}", file, line, message);
  }
}
}  // namespace

void route_protobuf_logs() { google::protobuf::SetLogHandler(&protobuf_log); }

void init_logging(const std::string& role, int rank, const std::string& level) {
  auto logger = spdlog::stderr_color_mt(role + std::to_string(rank));
  // Under psrt-launch every line already carries the role and rank.
  const char* launched = std::getenv("PSRT_LAUNCHED");
  const std::string who =
      launched && *launched ? "" : "[" + role + " " + std::to_string(rank) + "] ";
  logger->set_pattern("%H:%M:%S.%e %^%L%$ " + who + "%v");
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  route_protobuf_logs();
}

}  // namespace psrt
