// A data-parallel worker holds its parameters and their gradients, and little else: a gradient
// is sent from where backward wrote it (PsClient::lend), not from a copy. Before, each push was
// copied and the copy kept until the next iteration's push of the tensor replaced it, so a worker
// peaked near four times its parameters' bytes (parameters, gradients, two iterations of copies).
#include <catch2/catch.hpp>

#include <regex>
#include <string>

#include "tests/common/idx_files.h"
#include "tests/integration/proc_util.h"

using namespace psrt;
using namespace psrt::test;

namespace {

// An MLP 144-4096-4096-4 on 12x12 images: 17.4 million parameters, 66.4 MiB of fp32.
constexpr double kParamMib =
    (144.0 * 4096 + 4096 + 4096.0 * 4096 + 4096 + 4096.0 * 4 + 4) * 4 / (1024.0 * 1024.0);

double peak_rss_mib(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("peak_rss_mib=([0-9.]+)"))) return -1;
  return std::stod(m[1]);
}

}  // namespace

TEST_CASE("A data-parallel worker peaks near its parameters and gradients, not four copies",
          "[integration][memory]") {
  const std::string dir = temp_dir("workermem");
  write_quadrant_split(dir, "train", 256, 1);
  write_quadrant_split(dir, "t10k", 64, 2);
  write_file(dir + "/job.yaml",
             "job: {id: workermem, iterations: 4, batch_size: 16, seed: 1, log_every: 0, "
             "evaluate: false}\n"
             "cluster: {servers: 1, workers: 1}\n"
             "model: {hidden: [4096, 4096]}\n"
             "data: {dataset: idx, path: " +
                 dir +
                 ", image_rows: 12, image_cols: 12, classes: 4}\n"
                 "optimizer: {type: sgd, lr: 0.01}\n");
  Proc launch("launch", {bin("psrt-launch"), dir + "/job.yaml"});
  const auto rc = launch.wait_exit(180);
  INFO(launch.output());
  REQUIRE(rc == std::optional<int>(0));
  const double peak = peak_rss_mib(launch.output());
  INFO("worker 0's peak " << peak << " MiB; parameters " << kParamMib << " MiB");
  REQUIRE(peak > 2 * kParamMib);  // it did hold the parameters and gradients
  // Parameters and gradients, plus the process (libraries, ZeroMQ, the data: about 40 MiB
  // here) and the parameters arriving as ZeroMQ frames: well under a third copy.
  CHECK(peak < 2.5 * kParamMib + 40);
}
