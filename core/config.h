// The job configuration: one YAML file parsed once into typed, validated structs (composed by
// config/job_config.h from each module's own section parser). Every key is
// documented in docs/config.md; an unknown key or a bad value is a ConfigError that names the key,
// the value and what is allowed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/compression_config.h"
#include "core/layer_spec.h"
#include "core/mode.h"
#include "core/plan.h"

namespace psrt {

struct ClusterConfig {
  int servers = 1;
  int workers = 1;
  std::string coordinator = "tcp://127.0.0.1:0";  // server 0 binds it; port 0 = OS-chosen
  std::string bind_host = "127.0.0.1";            // other servers bind tcp://bind_host:*
  std::string advertise_host;  // what peers connect to; "": bind_host (wildcard: the host name)
  int port_min = 0;            // cluster.port_range [min, max]: servers 1.. bind a port in it
  int port_max = 0;            // (0: OS-chosen)
  double start_timeout_s = 60;    // registration and barriers give up after this
  double heartbeat_s = 0.5;       // every process tells the coordinator it is alive
  double peer_timeout_s = 10;     // a peer silent this long is lost; the job aborts
  double progress_timeout_s = 300;  // no training progress this long: the job aborts (0: off)
  int server_threads = 1;         // aggregation and optimizer pool per server
};

struct JobConfig {
  std::string id = "psrt";
  int64_t iterations = 0;  // 0: derived from epochs
  double epochs = 1;
  int batch_size = 64;     // per worker
  uint64_t seed = 1;
  int log_every = 50;
  bool evaluate = true;            // worker 0 prints the test accuracy at the end
  int eval_every = 0;  // worker 0 also evaluates every N iterations (0: only at the end)
  bool evaluates() const { return evaluate || eval_every > 0; }  // worker 0 reads the test set
  std::string dump_params;         // write final parameters to this path ({rank} is replaced)
  int blas_threads = 1;
};

struct ModelConfig {
  std::string backend = "native";  // native | gpu | replay
  // gpu: the CUDA device index this worker uses; kDeviceAuto: its local rank (rank_env.h, else
  // its rank) modulo the devices it sees
  static constexpr int kDeviceAuto = -1;
  int device = kDeviceAuto;
  std::string arch = "mlp";        // native, gpu: mlp | lenet5 | vgg-small | custom
  std::vector<int> hidden = {256, 128};
  std::vector<LayerSpec> layers;   // custom: the network, layer by layer
  double dropout = 0.5;            // native, gpu vgg-small: dropout after the first linear layer
  std::string profile;             // replay: a bench/profiles/*.yaml file
  double scale = 0;                // replay: overrides the profile's scale when > 0
};

struct DataConfig {
  std::string dataset = "fashion-mnist";
  std::string path = "/usr/share/datasets/fashion-mnist";
  int64_t train_limit = 0;  // use only the first N training images (0: all)
  int image_rows = 28, image_cols = 28;  // every image's size (the files must agree)
  int image_channels = 1;                // 1: grey (idx3 files); 3: colour (idx4)
  int classes = 10;                      // labels lie in [0, classes)
};

struct OptimizerConfig {
  std::string type = "sgd";  // sgd | adam
  double lr = 0.05;
  double lr_decay = 1.0;       // the learning rate is multiplied by this ...
  int64_t lr_decay_every = 0;  // ... every N iterations (0: never)
  double momentum = 0.9;
  double weight_decay = 0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  // Keys set in the file that this type does not read, as warnings (the workers log them).
  std::vector<std::string> unread;
};

struct SchedulerConfig {
  Mode mode = Mode::kFifo;
  uint64_t chunk_bytes = 1 << 20;
  uint64_t credit_bytes = 4 << 20;
  std::vector<int> priority;  // per tensor key; empty: forward order
  // GradOptimizer (core/grouping_spec.h): none | auto | size:BYTES | ddp:.. | horovod:.. | mgwfbp.
  std::string grouping = "none";
  std::string calibration;               // auto, mgwfbp: psrt-sim's calibration file ("" none)
  // Adaptive batching: small messages ready for the same peer at the same moment travel as one
  // (pushes of chunks up to half of it, and the server's replies), up to this many bytes; 0: off.
  uint64_t batch_bytes = 64 << 10;
  double link_bytes_per_s = 125e6;       // auto, mgwfbp: each host's link, each direction
  // auto, mgwfbp: the job's processes share this many cores (all on one machine); 0: each
  // process has a machine of its own, as on a cluster.
  uint32_t host_cores = 0;
  // auto: the search's cheapest groupings the workers try online at the start of the job (the
  // choice and its runners-up, worker/grouping_trials.h), taking turns for this many timed
  // iterations each; the fastest median is kept. 0 or 1: the search's choice stands.
  uint32_t grouping_trials = 4;
  uint32_t grouping_trial_iterations = 5;
};

// The most cores scheduler.host_cores, psrt-sim and the pipeline model accept.
constexpr uint32_t kMaxHostCores = 4096;

// Prometheus metrics (core/metrics.h). Off unless `metrics.port` is set.
struct MetricsConfig {
  int port = -1;                   // -1: off; 0: OS-chosen (logged); else the first port
  std::string host = "127.0.0.1";  // bind address (0.0.0.0: every interface)
  bool per_process_ports = true;   // process i of the job (servers, then workers) uses port + i
};

// Who may connect (docs/config.md, "Security and limits"). Off: any local process that knows the
// job id can connect, but only as a rank nobody holds (identities are bound at registration).
struct SecurityConfig {
  bool curve = false;       // ZeroMQ CURVE: every connection encrypted, only the job's key admitted
  std::string secret_file;  // the per-job secret the keys are derived from (psrt-launch makes one)
};

// Bounds on what peers can make a process queue, log or allocate.
struct LimitsConfig {
  int socket_hwm = 10000;          // messages queued per peer and direction on every socket
  int socket_buffer_bytes = 4 << 20;  // SO_SNDBUF / SO_RCVBUF of every socket; 0: the OS's
  double error_replies_per_s = 100;  // ERROR replies to one peer; more are dropped and counted
  double log_lines_per_s = 10;     // lines per kind of warning; more are summed up in one line
  uint64_t server_memory_bytes = 0;  // a server's shard cap; 0: 80% of the memory available
  int max_string_bytes = 1024;     // names, addresses and messages in protocol strings
  bool allow_non_finite = false;   // accept NaN and infinite gradient values (codec none)
};

// Model parallelism (placement/README.md; docs/config.md "Placement"): where a plan comes from
// and the devices it is made for.
struct PlacementConfig {
  // data: every worker a whole replica; model: the workers are the stages of one replica;
  // hybrid: workers = replicas x partitions (docs/config.md, "Model parallelism").
  std::string mode = "data";
  uint32_t partitions = 1;            // stages per replica
  std::string plan;                   // "": none; a plan YAML file; "auto": ask psrt-placer
  std::string placer = "netplacer";   // what `auto` asks for
  std::string address;                // auto: a running psrt-placer; empty: psrt-launch starts one
  uint32_t micro_batches = 1;
  DeviceSet devices;                  // from `devices`, `link`, `server_link`, `link_pairs`
  bool split() const { return mode != "data"; }
  uint32_t replicas(int workers) const { return uint32_t(workers) / partitions; }
};

// Server checkpoints (README "Checkpoints"); off while `dir` is empty.
struct CheckpointConfig {
  std::string dir;      // each server writes server-RANK-ITERATION.ckpt here
  int64_t every = 0;    // every N iterations (0: not by count)
  double every_s = 0;   // and/or at the first iteration after N seconds (0: not by time)
  int keep = 2;         // newest checkpoints kept per server
  bool resume = false;  // not a YAML key: the daemons' --resume
};

struct Config {
  std::string source;  // the file it came from
  ClusterConfig cluster;
  JobConfig job;
  ModelConfig model;
  DataConfig data;
  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  CompressionConfig compression;
  MetricsConfig metrics;
  SecurityConfig security;
  LimitsConfig limits;
  PlacementConfig placement;
  CheckpointConfig checkpoint;
  std::string log_level = "info";
  std::string timeline;  // Chrome trace output path prefix; empty: off
};

// Loading and composing the sections: config/job_config.h (parse_config, load_config).

}  // namespace psrt
