// The typed YAML configuration: defaults, errors that name the key and the value, --set overrides,
// and relative paths resolved against the config file's folder.
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/job_config.h"
#include "core/config.h"
#include "core/status.h"
#include "tests/core/config_test_util.h"

using namespace psrt;
using psrt::test::error_of;

namespace {

std::string make_temp_dir() {
  std::string templ = "/tmp/psrt-config-test-XXXXXX";
  REQUIRE(::mkdtemp(templ.data()) != nullptr);
  return templ;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  REQUIRE(out.good());
}

}  // namespace

TEST_CASE("an empty file gives the documented defaults", "[config]") {
  const Config c = parse_config("", "empty.yaml");
  CHECK(c.source == "empty.yaml");
  CHECK(c.cluster.servers == 1);
  CHECK(c.cluster.workers == 1);
  CHECK(c.cluster.coordinator == "tcp://127.0.0.1:0");
  CHECK(c.cluster.bind_host == "127.0.0.1");
  CHECK(c.cluster.start_timeout_s == 60);
  CHECK(c.cluster.heartbeat_s == 0.5);
  CHECK(c.cluster.peer_timeout_s == 10);
  CHECK(c.cluster.server_threads == 1);
  CHECK(c.job.id == "psrt");
  CHECK(c.job.iterations == 0);
  CHECK(c.job.epochs == 1);
  CHECK(c.job.batch_size == 64);
  CHECK(c.job.seed == 1);
  CHECK(c.job.evaluate);
  CHECK(c.job.dump_params.empty());
  CHECK(c.model.backend == "native");
  CHECK(c.model.device == ModelConfig::kDeviceAuto);
  CHECK(c.model.arch == "mlp");
  CHECK(c.model.hidden == std::vector<int>{256, 128});
  CHECK(c.data.dataset == "fashion-mnist");
  CHECK(c.optimizer.type == "sgd");
  CHECK(c.optimizer.lr == 0.05);
  CHECK(c.optimizer.momentum == 0.9);
  CHECK(c.optimizer.weight_decay == 0);
  CHECK(c.scheduler.mode == Mode::kFifo);
  CHECK(c.scheduler.chunk_bytes == 1u << 20);
  CHECK(c.scheduler.credit_bytes == 4u << 20);
  CHECK(c.scheduler.batch_bytes == 64u << 10);
  CHECK(c.scheduler.host_cores == 0);
  CHECK(c.scheduler.grouping_trials == 4);
  CHECK(c.scheduler.grouping_trial_iterations == 5);
  CHECK(c.scheduler.priority.empty());
  CHECK(c.log_level == "info");
  CHECK(c.timeline.empty());
  // Adam's default learning rate differs from SGD's.
  CHECK(parse_config("optimizer: {type: adam}", "a.yaml").optimizer.lr == 1e-3);
}

TEST_CASE("values in the file are read into the typed structs", "[config]") {
  const Config c = parse_config(
      "cluster: {servers: 3, workers: 4, heartbeat_s: 0.2, peer_timeout_s: 1.5}\n"
      "job: {id: j1, iterations: 12, seed: 9, evaluate: false}\n"
      "model: {hidden: [10, 20, 30]}\n"
      "optimizer: {type: adam, lr: 0.01, beta2: 0.99}\n"
      "scheduler: {mode: preemptive, chunk_bytes: 8192, priority: [2, 1, 0], batch_bytes: 0,\n"
      "            host_cores: 2, grouping_trials: 0, grouping_trial_iterations: 5}\n"
      "log_level: warn\n",
      "f.yaml");
  CHECK(c.cluster.servers == 3);
  CHECK(c.cluster.workers == 4);
  CHECK(c.cluster.heartbeat_s == 0.2);
  CHECK(c.cluster.peer_timeout_s == 1.5);
  CHECK(c.job.id == "j1");
  CHECK(c.job.iterations == 12);
  CHECK(c.job.seed == 9);
  CHECK_FALSE(c.job.evaluate);
  CHECK(c.model.hidden == std::vector<int>{10, 20, 30});
  CHECK(c.optimizer.type == "adam");
  CHECK(c.optimizer.lr == 0.01);
  CHECK(c.optimizer.beta2 == 0.99);
  CHECK(c.scheduler.mode == Mode::kPreemptive);
  CHECK(c.scheduler.chunk_bytes == 8192);
  CHECK(c.scheduler.priority == std::vector<int>{2, 1, 0});
  CHECK(c.scheduler.batch_bytes == 0);
  CHECK(c.scheduler.host_cores == 2);
  CHECK(c.scheduler.grouping_trials == 0);
  CHECK(c.scheduler.grouping_trial_iterations == 5);
  CHECK(c.log_level == "warn");
}

TEST_CASE("a bad configuration is a ConfigError naming the key and the value", "[config]") {
  SECTION("unknown key") {
    const auto e = error_of("cluster: {servers: 2, bogus_key: 17}");
    CHECK_THAT(e, Catch::Contains("job.yaml"));
    CHECK_THAT(e, Catch::Contains("cluster.bogus_key"));
    CHECK_THAT(e, Catch::Contains("unknown"));
    CHECK_THAT(e, Catch::Contains("17"));  // the value, as DESIGN.md asks of every error
  }
  SECTION("unknown top-level key") {
    CHECK_THAT(error_of("optimiser: {lr: 0.1}"), Catch::Contains("optimiser"));
  }
  SECTION("wrong type") {
    const auto e = error_of("cluster: {workers: three}");
    CHECK_THAT(e, Catch::Contains("cluster.workers") && Catch::Contains("three"));
    const auto d = error_of("optimizer: {lr: fast}");
    CHECK_THAT(d, Catch::Contains("optimizer.lr") && Catch::Contains("fast"));
    const auto b = error_of("job: {evaluate: maybe}");
    CHECK_THAT(b, Catch::Contains("job.evaluate") && Catch::Contains("maybe"));
  }
  SECTION("out of range") {
    const auto e = error_of("cluster: {servers: 0}");
    CHECK_THAT(e, Catch::Contains("cluster.servers") && Catch::Contains("0") &&
                      Catch::Contains("range"));
    const auto d = error_of("optimizer: {momentum: 1.5}");
    CHECK_THAT(d, Catch::Contains("optimizer.momentum") && Catch::Contains("1.5"));
    const auto n = error_of("job: {batch_size: -4}");
    CHECK_THAT(n, Catch::Contains("job.batch_size") && Catch::Contains("-4"));
  }
  SECTION("bad choice") {
    const auto e = error_of("optimizer: {type: rmsprop}");
    CHECK_THAT(e, Catch::Contains("optimizer.type") && Catch::Contains("rmsprop") &&
                      Catch::Contains("sgd") && Catch::Contains("adam"));
    CHECK_THAT(error_of("scheduler: {batch_bytes: 4194304}"),
               Catch::Contains("scheduler.batch_bytes") && Catch::Contains("4194304"));
    CHECK_THAT(error_of("scheduler: {host_cores: 5000}"),
               Catch::Contains("scheduler.host_cores") && Catch::Contains("5000"));
    CHECK_THAT(error_of("scheduler: {host_cores: -1}"), Catch::Contains("scheduler.host_cores"));
    CHECK_THAT(error_of("scheduler: {grouping_trials: 9}"),
               Catch::Contains("scheduler.grouping_trials") && Catch::Contains("9"));
    CHECK_THAT(error_of("scheduler: {grouping_trial_iterations: 0}"),
               Catch::Contains("scheduler.grouping_trial_iterations"));
    const auto m = error_of("scheduler: {mode: lifo}");
    CHECK_THAT(m, Catch::Contains("scheduler.mode") && Catch::Contains("lifo") &&
                      Catch::Contains("preemptive"));
    const auto b = error_of("model: {backend: tpu}");
    CHECK_THAT(b, Catch::Contains("model.backend") && Catch::Contains("tpu") &&
                      Catch::Contains("native") && Catch::Contains("gpu"));
  }
}

TEST_CASE("a bad device, list element or pair of values, or no YAML, is a ConfigError",
          "[config]") {
  SECTION("a negative device index") {
    CHECK_THAT(error_of("model: {backend: gpu, device: -1}"),
               Catch::Contains("model.device") && Catch::Contains("-1"));
    CHECK_THAT(error_of("model: {backend: gpu, device: first}"),
               Catch::Contains("model.device") && Catch::Contains("first"));
    CHECK(parse_config("model: {backend: gpu, device: 3}", "t.yaml").model.device == 3);
    CHECK(parse_config("model: {backend: gpu, device: auto}", "t.yaml").model.device ==
          ModelConfig::kDeviceAuto);
  }
  SECTION("a list element of the wrong type") {
    CHECK_THAT(error_of("model: {hidden: [64, x]}"), Catch::Contains("model.hidden[1]"));
  }
  SECTION("contradicting values") {
    CHECK_THAT(error_of("cluster: {heartbeat_s: 1, peer_timeout_s: 1.5}"),
               Catch::Contains("cluster.peer_timeout_s"));
    CHECK_THAT(error_of("model: {backend: replay}"), Catch::Contains("model.profile"));
    CHECK_THAT(error_of("cluster: {coordinator: 'udp://x:1'}"),
               Catch::Contains("cluster.coordinator") && Catch::Contains("udp://x:1"));
    CHECK_THAT(error_of("compression: {replies: compressed}"),
               Catch::Contains("compression.replies") && Catch::Contains("codec"));
    CHECK_THAT(error_of("compression: {codec: laco, replies: sparse}"),
               Catch::Contains("compression.replies") && Catch::Contains("sparse"));
    CHECK(parse_config("compression: {codec: laco, replies: compressed}", "j").compression
              .compress_replies);
    CHECK_FALSE(parse_config("compression: {codec: laco, replies: dense}", "j").compression
                    .compress_replies);
    CHECK_FALSE(parse_config("compression: {codec: topk}", "j").compression.compress_replies);
  }
  SECTION("not YAML, or not a mapping") {
    CHECK_THAT(error_of("cluster: {servers: [1"), Catch::Contains("job.yaml"));
    CHECK_THAT(error_of("- 1\n- 2\n"), Catch::Contains("mapping"));
    CHECK_THAT(error_of("cluster: 5"), Catch::Contains("cluster"));
  }
}

TEST_CASE("set overrides (--set) a key adds one and takes YAML values", "[config]") {
  const std::string yaml = "cluster: {servers: 2, workers: 2}\nmodel: {hidden: [256]}\n";
  const Config c = parse_config(yaml, "job.yaml",
                                {"cluster.workers=5", "model.hidden=[64,32]", "optimizer.lr=0.25",
                                 "job.id=from-cli", "scheduler.mode=bigdl"});
  CHECK(c.cluster.servers == 2);
  CHECK(c.cluster.workers == 5);
  CHECK(c.model.hidden == std::vector<int>{64, 32});
  CHECK(c.optimizer.lr == 0.25);
  CHECK(c.job.id == "from-cli");
  CHECK(c.scheduler.mode == Mode::kBigdl);
  // The later --set wins.
  CHECK(parse_config("", "j", {"job.seed=3", "job.seed=4"}).job.seed == 4);
  // An endpoint with colons survives as a value.
  CHECK(parse_config("", "j", {"cluster.coordinator=tcp://10.0.0.1:7000"}).cluster.coordinator ==
        "tcp://10.0.0.1:7000");

  SECTION("a --set value is checked like a value in the file") {
    const auto e = error_of("", {"cluster.workers=many"});
    CHECK_THAT(e, Catch::Contains("cluster.workers") && Catch::Contains("many"));
    CHECK_THAT(error_of("", {"cluster.bogus=1"}), Catch::Contains("cluster.bogus"));
  }
  SECTION("a --set without '=' is refused") {
    CHECK_THAT(error_of("", {"cluster.workers"}), Catch::Contains("cluster.workers"));
    CHECK_THROWS_AS(parse_config("", "j", {"=3"}), ConfigError);
  }
  SECTION("a --set through a scalar is refused") {
    CHECK_THAT(error_of("log_level: info", {"log_level.x=1"}), Catch::Contains("log_level"));
  }
}

TEST_CASE("relative paths resolve against the config file's folder", "[config]") {
  const std::string dir = make_temp_dir();
  std::filesystem::create_directories(dir + "/profiles");
  write(dir + "/profiles/tiny.yaml", "name: tiny\n");
  std::filesystem::create_directories(dir + "/mnist");
  write(dir + "/job.yaml",
        "model: {backend: replay, profile: profiles/tiny.yaml}\ndata: {path: mnist}\n");
  const Config c = load_config(dir + "/job.yaml");
  CHECK(c.source == dir + "/job.yaml");
  CHECK(c.model.profile == dir + "/profiles/tiny.yaml");
  CHECK(c.data.path == dir + "/mnist");

  SECTION("absolute paths stay as they are") {
    write(dir + "/abs.yaml", "model: {backend: replay, profile: " + dir + "/profiles/tiny.yaml}\n");
    CHECK(load_config(dir + "/abs.yaml").model.profile == dir + "/profiles/tiny.yaml");
  }
  SECTION("--set paths resolve the same way") {
    const Config s = load_config(dir + "/job.yaml", {"model.profile=profiles/tiny.yaml"});
    CHECK(s.model.profile == dir + "/profiles/tiny.yaml");
  }
  SECTION("the config's folder wins over a same-named file in the working directory") {
    const std::string cwd_dir = make_temp_dir();
    std::filesystem::create_directories(cwd_dir + "/profiles");
    write(cwd_dir + "/profiles/tiny.yaml", "name: decoy\n");
    const auto old = std::filesystem::current_path();
    std::filesystem::current_path(cwd_dir);
    std::string got;
    try {
      got = load_config(dir + "/job.yaml").model.profile;
    } catch (...) {
      std::filesystem::current_path(old);
      throw;
    }
    std::filesystem::current_path(old);
    INFO("resolved to " << got);
    CHECK(got == dir + "/profiles/tiny.yaml");
    std::filesystem::remove_all(cwd_dir);
  }
  SECTION("a file that sets nothing is refused, where it trained the defaults") {
    for (const std::string& text : {std::string(), std::string("\n  \n"),
                                    std::string("# job: {id: x}\n---\n")}) {
      INFO("file: '" << text << "'");
      write(dir + "/blank.yaml", text);
      CHECK_THROWS_WITH(load_config(dir + "/blank.yaml"), Catch::Contains("sets nothing"));
    }
  }
  SECTION("a missing file is a ConfigError naming it") {
    try {
      (void)load_config(dir + "/nope.yaml");
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains(dir + "/nope.yaml"));
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("every example job file parses", "[config]") {
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(PSRT_SOURCE_DIR) / "examples")) {
    if (entry.path().extension() != ".yaml") continue;
    INFO(entry.path().string());
    CHECK_NOTHROW(load_config(entry.path().string()));
    ++files;
  }
  CHECK(files >= 4);
  const Config laco = load_config(std::string(PSRT_SOURCE_DIR) + "/examples/lenet5-laco.yaml");
  CHECK(laco.compression.codec == "laco");
  CHECK(laco.compression.momentum == 0.9);
  CHECK(laco.optimizer.momentum == 0);
}

TEST_CASE("keys the job would not use are refused, not ignored", "[core]") {
  CHECK_THAT(error_of("model: {arch: lenet5, hidden: [64]}\n"),
             Catch::Contains("model.hidden: is for model.arch: mlp"));
  CHECK_THAT(error_of("model: {arch: mlp, dropout: 0.3}\n"),
             Catch::Contains("model.dropout: is for model.arch: vgg-small"));
  CHECK(parse_config("model: {arch: vgg-small, dropout: 0.3}\n", "j").model.dropout == 0.3);
  CHECK_THAT(error_of("model: {arch: custom, layers: [{conv: 4}, {relu: 5}, {fc: 10}]}\n"),
             Catch::Contains("relu: takes no value"));
  CHECK(parse_config("model: {arch: custom, layers: [{conv: 4}, {relu: ~}, relu, {fc: 10}]}\n",
                     "j")
            .model.layers.size() == 4);
  // A second document after --- was dropped without a word.
  CHECK_THAT(error_of("job: {iterations: 5}\n---\njob: {iterations: 7}\n"),
             Catch::Contains("line 2 starts a second YAML document"));
  CHECK(parse_config("# a job\n---\njob: {iterations: 5}\n", "j").job.iterations == 5);
  CHECK(parse_config("job: {id: '---'}\n", "j").job.id == "---");
  // Content after a document's end (...) was dropped the same way, invalid values included.
  CHECK_THAT(error_of("job: {iterations: 5}\n...\noptimizer: {type: nosuch}\n"),
             Catch::Contains("line 3 starts a second YAML document"));
  CHECK(parse_config("---\njob: {iterations: 5}\n...\n# done\n", "j").job.iterations == 5);
}

TEST_CASE("placement section: devices, links and the plan source", "[core]") {
  const auto c = psrt::parse_config(
      "placement:\n  plan: auto\n  placer: pipedream\n  micro_batches: 4\n"
      "  devices: [{name: a, memory_gib: 2, gflops: 100}, {name: b, memory_bytes: 1000, "
      "gflops: 50}]\n  link: {bandwidth_bytes_per_s: 1e9, latency_ms: 0.5}\n",
      "job.yaml");
  CHECK(c.placement.plan == "auto");
  CHECK(c.placement.placer == "pipedream");
  CHECK(c.placement.micro_batches == 4);
  REQUIRE(c.placement.devices.devices.size() == 2);
  CHECK(c.placement.devices.devices[0].memory_bytes == 2ull << 30);
  CHECK(c.placement.devices.devices[1].gflops == 50);
  CHECK(c.placement.devices.link.latency_ms == 0.5);
  CHECK(c.placement.devices.server_link.bytes_per_s == 1e9);  // defaults to the device link
  CHECK_THROWS_WITH(psrt::parse_config("placement: {plan: auto}\n", "job.yaml"),
                    Catch::Contains("placement.devices"));
  CHECK_THROWS_WITH(
      psrt::parse_config("placement: {devices: [{name: a, memory_gib: 1}]}\n", "job.yaml"),
      Catch::Contains("placement.devices[0].gflops"));
  CHECK(psrt::parse_config("", "job.yaml").placement.plan.empty());
  // A placer address ZeroMQ cannot connect to ended psrt-place with std::terminate.
  for (const char* bad : {"127.0.0.1:5700", "tcp://127.0.0.1", "tcp://h:0", "tcp://h:*"}) {
    CHECK_THAT(error_of(std::string("placement: {address: '") + bad + "'}\n"),
               Catch::Contains("placement.address: '") && Catch::Contains("tcp://HOST:PORT"));
  }
  CHECK(parse_config("placement: {address: 'tcp://[::1]:7'}\n", "j").placement.address ==
        "tcp://[::1]:7");
  // Bounds are printed as they are: "1 is out of range [0.000000, 1.000000]" said nothing.
  CHECK_THAT(error_of("optimizer: {beta2: 1}\n"), Catch::Contains("[0, 0.99999999]"));
  CHECK_THAT(error_of("optimizer: {eps: 0}\n"), Catch::Contains("[1e-30, 1]"));
  // Optimizer keys the type does not read changed nothing, without a word.
  CHECK(parse_config("optimizer: {type: adam, momentum: 0.5}\n", "j").optimizer.unread ==
        std::vector<std::string>{"optimizer.momentum: set, but optimizer adam does not read it "
                                 "(Adam's momentum is optimizer.beta1)"});
  CHECK(parse_config("optimizer: {beta1: 0.5, eps: 1e-6}\n", "j").optimizer.unread.size() == 2);
  CHECK(parse_config("optimizer: {type: adam, beta1: 0.5}\n", "j").optimizer.unread.empty());
  // A mark below the chunks in flight is no refusal: what meets a full queue waits (held_sends.h).
  CHECK(parse_config("limits: {socket_hwm: 100}\n"
                     "scheduler: {mode: preemptive, chunk_bytes: 4096, credit_bytes: 262144}\n",
                     "j")
            .limits.socket_hwm == 100);
  // Keys of the other kind of backend: a profile without `backend: replay` trained the MLP.
  CHECK_THAT(error_of("model: {profile: p.yaml}\n"),
             Catch::Contains("model.profile") && Catch::Contains("is for model.backend: replay"));
  CHECK_THAT(error_of("model: {arch: lenet5, scale: 2}\n"), Catch::Contains("model.scale"));
  CHECK_THAT(error_of("model: {backend: replay, profile: p.yaml, hidden: [8]}\n"),
             Catch::Contains("model.hidden") && Catch::Contains("replays model.profile"));
  // A placer name outside the list trained on silently, or failed later in psrt-place.
  CHECK_THAT(error_of("placement: {placer: foo}\n"),
             Catch::Contains("placement.placer") && Catch::Contains("netplacer"));
}

TEST_CASE("split jobs are accepted on model.backend gpu, what stages cannot do is refused",
          "[core]") {
  const std::string job =
      "job: {iterations: 5, batch_size: 16}\ncluster: {workers: 4}\n"
      "model: {backend: gpu, arch: vgg-small}\n";
  const Config model = parse_config(job + "placement: {mode: hybrid, partitions: 2, "
                                          "micro_batches: 2}\n", "job.yaml");
  CHECK(model.model.backend == "gpu");
  CHECK(model.placement.split());
  CHECK(model.placement.micro_batches == 2);
  CHECK_THAT(error_of(job + "placement: {mode: model, partitions: 4}\n"
                            "scheduler: {grouping: auto}\n"),
             Catch::Contains("scheduler.grouping"));
  CHECK_THAT(error_of(job + "placement: {mode: model, partitions: 3}\n"),
             Catch::Contains("placement.partitions"));
  // Each stage holds other parameters: one dump_params path for all kept one stage's.
  const auto dumped = [](const std::string& path) {
    return "job: {iterations: 5, batch_size: 16, dump_params: '" + path + "'}\n"
           "cluster: {workers: 4}\nmodel: {backend: gpu, arch: vgg-small}\n"
           "placement: {mode: model, partitions: 4}\n";
  };
  CHECK_THAT(error_of(dumped("p.bin")), Catch::Contains("job.dump_params: 'p.bin' has no {rank}"));
  CHECK(parse_config(dumped("p-{rank}.bin"), "job.yaml").job.dump_params == "p-{rank}.bin");
}
