// The worker's side of the parameter servers. One I/O thread owns every socket: a DEALER per
// server (the one to server 0 also carries the coordinator traffic). The compute thread talks to
// it through a command queue and a Wakeup, and waits for parameters on a condition variable.
//
// Gradients go out through the PushQueue (mode, priority, byte credit); each server acknowledges
// a chunk on receipt, which releases its credit. Received parameters are written straight into
// the backend's parameter storage: a layer's values change only after this worker pushed that
// layer's gradient, and its next forward waits for them.
#pragma once

#include <zmq.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "core/control_plane.h"
#include "core/credit_link.h"
#include "core/curve.h"
#include "core/drop_watch.h"
#include "core/group_frames.h"
#include "core/messenger.h"
#include "core/model.h"
#include "core/rate_limit.h"
#include "core/sharding.h"
#include "core/timeline.h"
#include "core/transport.h"
#include "core/wire.h"
#include "scheduler/grouping.h"
#include "scheduler/push_queue.h"
#include "scheduler/sim/grad_optimizer.h"
#include "worker/encoder_checkpoint.h"
#include "worker/grad_encoder.h"
#include "worker/grouping_trials.h"
#include "worker/lent_buffers.h"
#include "worker/reply_decoder.h"
#include "worker/stage_types.h"
#include "worker/start_pacer.h"

namespace psrt {

struct ClientStats {
  uint64_t bytes_pushed = 0;
  uint64_t chunks_pushed = 0;
  uint64_t params_received = 0;
  uint64_t bytes_received = 0;  // PARAMS payload bytes (dense or encoded)
  double wait_seconds = 0;  // compute thread blocked on parameters
  uint64_t messages_sent = 0, messages_received = 0;  // every link, control plane included
};

class PsClient {
 public:
  enum class StageDir { kForward, kBackward };
  using ParamAccess = std::function<std::span<float>(uint32_t key)>;

  // `timeline` (may be null) records chunks in flight and parameter arrivals.
  // `stage`: this worker's stage of a model-parallel job (none: a whole replica).
  // `shared`: a ZeroMQ context to run in (in-process tests over inproc://); null: its own.
  PsClient(const Config& config, uint32_t rank, const ModelDesc& model, ParamAccess params,
           Timeline* timeline = nullptr, std::optional<StageRole> stage = std::nullopt,
           zmq::context_t* shared = nullptr);
  ~PsClient();
  PsClient(const PsClient&) = delete;
  PsClient& operator=(const PsClient&) = delete;

  // Registers, receives the membership, initialises the servers (worker 0), passes the start
  // barrier and asks for the first parameters. Throws JobError on timeout or abort.
  void start();
  // Before start(): the job's iteration count. GradOptimizer's online trials
  // (scheduler.grouping_trials) run only where they take at most half of the iterations left.
  void plan_iterations(uint64_t total) { total_iterations_ = total; }
  // The iteration from which the grouping no longer changes: 0 without trials, kTrialsRunning
  // while they run. Thread-safe.
  static constexpr uint64_t kTrialsRunning = UINT64_MAX;
  uint64_t grouping_final_from() const { return grouping_final_from_.load(); }
  // The iteration training starts at: 0, or the checkpoint's when the servers resumed one.
  uint64_t start_iteration() const;
  // At the top of iteration `iteration` (and after the last): the worker's own checkpoint of its
  // compression state, when this is a checkpoint iteration (EncoderCheckpointer).
  void checkpoint(uint64_t iteration) { encoder_ckpt_.maybe_write(iteration, encoder_); }
  // Blocks until every chunk of `layer`'s tensors holds the values for `iteration`.
  void wait_layer(uint32_t layer, uint64_t iteration);
  void wait_all(uint64_t iteration);
  // Hands a tensor's gradient for `iteration` to the scheduler; the caller may reuse it (it is
  // copied, or with a codec compressed before this returns).
  void push(uint32_t key, uint64_t iteration, std::span<const float> grad);
  // The same without a copy: the buffer is shared with the transport until sent.
  void push(uint32_t key, uint64_t iteration, std::shared_ptr<const std::vector<float>> grad);
  // push() without a copy of the caller's buffer (codec none; a codec encodes it at once and
  // nothing is lent): it must not change until reclaim() of its key has returned.
  void lend(uint32_t key, uint64_t iteration, std::span<const float> grad);
  // Blocks until the transport no longer reads the buffers lent for `keys` (worker/lent_buffers.h;
  // synchronous training never waits here). Throws JobError when the client failed meanwhile.
  void reclaim(std::span<const uint32_t> keys);
  std::size_t lent_buffers() const { return lent_.lent(); }
  // Whether push_device() can be used: see GradEncoder::encodes_on_device().
  bool encodes_on_device() const { return encoder_.encodes_on_device(); }
  // push() for a gradient in device memory (the whole tensor, on the current CUDA device, made
  // on the default stream): compressed chunk by chunk on the device, no host copy of it is made;
  // it is no longer read when this returns. Throws JobError unless encodes_on_device().
  void push_device(uint32_t key, uint64_t iteration, const float* device_grad);
  // push_device() of several tensors at once (a layer's weight and bias: grads[j] is keys[j]'s):
  // every chunk of them compressed in one device batch, then queued tensor by tensor in keys'
  // order, as that many push_device() calls would.
  void push_device(std::span<const uint32_t> keys, uint64_t iteration,
                   std::span<const float* const> device_grads);
  // Model parallelism: hands a micro-batch's activations (kForward, with its labels) to the next
  // stage or its activation gradients (kBackward) to the previous one; the buffers are shared with
  // the transport until sent (zero-copy), under byte credit (scheduler.credit_bytes).
  // `eval_batches` > 0: batch `micro_batch` of the evaluation pass after `iteration` iterations
  // (forward only; StageLayout::evaluates_after says when a pass is due).
  void send_stage(StageDir dir, uint64_t iteration, uint32_t micro_batch, uint32_t samples,
                  std::shared_ptr<const std::vector<float>> values,
                  std::shared_ptr<const std::vector<int32_t>> labels = nullptr,
                  uint32_t eval_batches = 0);
  // Blocks until the previous stage's activations (kForward) or the next stage's gradients
  // (kBackward) of that micro-batch are in; they come in schedule order and were checked.
  StageMessage wait_stage(StageDir dir, uint64_t iteration, uint32_t micro_batch);
  // The same for batch `batch` of the evaluation pass after `done` iterations (from the previous
  // stage; its eval_batches says how many the pass has).
  StageMessage wait_eval(uint64_t done, uint32_t batch);
  // Passes the shutdown barrier; the servers exit when every worker has.
  void finish();
  // This worker fails for a cause of its own (compute, data; not the job's): the I/O thread tells
  // the coordinator why before it closes, so the job ends at once naming it. Thread-safe. When
  // the client had failed or finished already nothing is told, and it is still true: the worker
  // is ending (a signal then leaves it its grace to write its outputs).
  bool abandon(const std::string& why);

  const ShardMap& shards() const { return shards_; }
  ClientStats stats() const;
  bool failed() const;  // the job ended, or this worker abandoned it (thread-safe)
  // This worker's Prometheus metrics (off unless metrics.port is set); thread-safe.
  Metrics& metrics() { return metrics_; }

 private:
  struct Command {
    uint32_t key;
    uint64_t iteration;
    // The fp32 gradient, sent as it is: codec none only (null when there are payloads). `values`
    // points into memory `grad` keeps alive: a copy, or the caller's lent buffer (lend()).
    std::shared_ptr<const void> grad;
    std::chrono::steady_clock::time_point enqueued;
    // Compressed payloads, one per chunk of the tensor in shard-map order; empty for codec none.
    std::vector<std::shared_ptr<const std::vector<uint8_t>>> payloads;
    uint32_t unsent = 0;  // chunks not yet on the wire; at 0 the command is dropped (send_push)
    const float* values = nullptr;
  };

  // I/O thread (ps_client_io.cc)
  void io_loop();
  // The handlers of the link to server `server` (server 0's also carries the control plane).
  void register_server(std::size_t server);
  ControlPlane::Events control_events();
  void on_server_error(std::size_t server, const wire::Header& h);
  void on_membership(const wire::Membership& m, const wire::StageMap& stages);
  void on_release(const std::string& barrier);  // BARRIER_RELEASE
  void on_ack(std::size_t server, uint64_t seq);  // a push or INIT: by ACK or in PARAMS
  // Acknowledges the PARAMS received since the last call: one ACK per server (Header.acks).
  void flush_reply_acks();
  // ps_client_push.cc: grouping, the push path and the parameters' return
  // Worker 0, before it registers: the job's grouping (worker/grouping_plan.h) into `reg`.
  void search_grouping(wire::Register& reg);
  void plan_groups(const wire::Membership& m);  // worker 0's grouping and its message plan
  void on_params(std::size_t server, const wire::Header& h, std::vector<zmq::message_t>& p);
  // The chunk a PARAMS member names, where `server` may send it for `iteration` (the one this
  // worker takes next); null, logged, where not.
  const ChunkDesc* params_target(std::size_t server, uint32_t key, uint64_t offset,
                                 uint64_t length, uint64_t iteration);
  // Writes one chunk's values (dense or an encoded change); false after fail().
  bool apply_params(const ChunkDesc& c, wire::Codec codec, uint64_t iteration,
                    std::span<const uint8_t> bytes);
  std::span<const uint8_t> payload_of(uint32_t chunk) const;  // of the pending gradient
  zmq::message_t payload_frame(uint32_t chunk) const;
  // Worker 0's INIT of every chunk it holds, and the first PULLs, paced (start_pacer.h).
  void send_init();
  void send_init(const ChunkDesc& c);
  void send_pull(const ChunkDesc& c);
  std::vector<std::deque<uint32_t>> held_chunks() const;  // chunk ids by server
  std::size_t start_window() const;
  void send_barrier(const std::string& name);
  // ps_client_send.cc: the scheduler's units onto the wire, alone, grouped or batched
  void pump();
  struct PushBatch {  // small chunks for one server, gathered by pump (scheduler.batch_bytes)
    std::vector<uint32_t> chunks;
    uint64_t bytes = 0;
    uint32_t priority = UINT32_MAX;
    uint64_t iteration = 0;
  };
  void send_batches();
  void send_batch(PushBatch& b);
  void send_push(const std::vector<uint32_t>& chunks, uint32_t priority, uint64_t bytes,
                 bool batch);
  void take_commands();
  std::chrono::steady_clock::time_point tick(std::chrono::steady_clock::time_point now);
  void check_progress(std::chrono::steady_clock::time_point now);
  void send_heartbeats();
  // The first chunk the compute thread waits for (nullptr: none); under mu_.
  const ChunkDesc* waited_chunk() const;
  void fail(const std::string& why);
  // fail(), after telling the coordinator why, so that the job ends naming the cause.
  // `refusal`: the job's own settings are the cause (the worker exits 2, as at start).
  void report(const std::string& why, bool refusal = false);
  // The coordinator refused this process (rank taken, another job): a configuration error.
  void refused(const std::string& why);
  bool send_to(std::size_t server, const wire::Header& h, std::vector<zmq::message_t> payload = {});
  // Fills `h` (reset_header, then the chunk's fields and the next push seq); returns it.
  wire::Header& tensor_header(wire::Header& h, wire::MsgType type, const ChunkDesc& c,
                              uint64_t iteration);
  // Outgoing headers reused for every PUSH and every reply ACK (I/O thread).
  wire::Header push_out_, ack_out_;
  GroupFrames group_frames_;                         // builds group pushes (reused)
  std::vector<PushBatch> batches_;                   // by server
  uint64_t batch_bytes_ = 0;                         // scheduler.batch_bytes
  std::vector<std::span<const uint8_t>> member_bytes_;  // a group reply's members (reused)

  // stage links (ps_client_stage.cc), I/O thread
  struct StageOut {
    wire::Header header;
    std::shared_ptr<const std::vector<float>> values;
    std::shared_ptr<const std::vector<int32_t>> labels;
  };
  struct StageLink {  // one direction of sends: its queue and credit
    explicit StageLink(uint64_t credit_bytes = 0) : credit(credit_bytes) {}
    std::deque<StageOut> queue;
    CreditLink credit;  // in arrival order, under scheduler.credit_bytes
    // The next message expected from the peer on this link.
    uint64_t next_iteration = 0;
    uint32_t next_micro = 0;
    // An evaluation pass in progress (forward link): its batch count and next batch; the
    // iteration count of the last pass received whole (or where training started).
    uint32_t eval_batches = 0, next_eval = 0;
    uint64_t evaluated_at = 0;
  };
  void bind_stage();
  void connect_stage(const wire::StageMap& map, uint64_t first_iteration);
  // The handlers of the link that delivers `data_dir` traffic (kForward: from the previous stage).
  void register_stage(StageDir data_dir, Messenger::LinkId link);
  // Whether a message on the stage port comes from the previous stage (its registered identity);
  // a stranger is logged and ignored. The DEALER to the next stage has only that peer.
  bool stage_neighbour(StageDir data_dir, const std::string& identity);
  void on_stage_ack(StageDir dir, const wire::Header& h);
  // A neighbour's message that fails its checks: an ERROR to it, and the job ends naming it.
  void stage_malformed(StageDir data_dir, const wire::Header* h, const WireError& err);
  // The check of an ACTIVATION / ACTIVATION_GRAD: empty when it is the one expected.
  std::string check_stage(StageDir dir, const wire::Header& h,
                          const std::vector<zmq::message_t>& payload) const;
  // The schedule part of that check, for training messages and for evaluation batches.
  std::string check_order(StageDir dir, const wire::Header& h) const;
  std::string check_eval_order(StageDir dir, const wire::Header& h) const;
  bool eval_due(const StageLink& link) const;  // the forward link's next message is an eval batch
  StageMessage wait_inbox(std::map<std::pair<uint64_t, uint32_t>, StageMessage>& inbox,
                          std::pair<uint64_t, uint32_t> key, std::string what);
  void take_stage(StageDir dir, const wire::Header& h, std::vector<zmq::message_t>& payload);
  void pump_stage(StageDir dir);
  // Sends toward the next stage (kForward) or the previous one (kBackward).
  bool send_stage_frame(StageDir dir, const wire::Header& h,
                        std::vector<zmq::message_t> payload = {});
  std::string stage_peer(StageDir dir) const;  // "worker 3 (stage 1)"
  uint32_t stage_peer_rank(StageDir dir) const;

  // compute thread side
  template <typename Pred>
  void wait_for(Pred pred);
  void check_key(uint32_t key, std::optional<std::size_t> elements) const;
  // A command whose payloads are encode(chunk) for each chunk of the tensor.
  template <typename Encode>
  Command compressed(uint32_t key, uint64_t iteration, Encode encode);
  void enqueue(Command cmd);
  bool layer_ready(uint32_t layer, uint64_t iteration) const;
  // Under mu_: whether the wait for parameters in progress covers chunk `c`, and how many of the
  // chunks it covers are below its iteration.
  bool waited_for(const ChunkDesc& c) const;
  std::size_t count_missing() const;
  // Whether this worker initialises the servers' copy of the tensors it holds: worker 0, or
  // with model parallelism each stage of replica 0.
  bool initialises() const { return stage_ ? stage_->replica == 0 : rank_ == 0; }

  Config config_;
  uint32_t rank_;
  Sender self_;
  ModelDesc model_;
  ParamAccess params_;
  Timeline* timeline_;
  std::vector<uint32_t> priority_;  // by tensor key
  GradEncoder encoder_;             // compute thread only
  EncoderCheckpointer encoder_ckpt_;
  std::vector<uint64_t> encoder_checkpoints_;  // --resume: iterations of this worker's files
  ReplyDecoder replies_;            // I/O thread (stateless)
  Metrics metrics_;

  std::optional<CurveKeys> curve_;  // security.curve
  std::string identity_;            // this process's routing id on every connection

  LogLimiter log_;
  // I/O thread only (built by the constructor before the thread starts)
  Messenger messenger_;                   // sockets, poll loop, wake-up
  DropWatch drops_;  // the links to the servers and the next stage
  std::optional<std::string> lost_send_;  // a message dropped at a full queue (I/O thread)
  std::vector<Messenger::LinkId> servers_;  // by server rank
  std::optional<ControlPlane> control_;   // on the link to server 0
  ShardMap shards_;
  PushQueue queue_;
  Grouping grouping_;  // worker 0's (scheduler.grouping), from the membership
  MessagePlan plan_;   // PushUnit::chunk is an index into plan_.messages()
  std::vector<uint32_t> group_taken_;     // per group: tensors handed over this iteration
  std::vector<uint32_t> group_priority_;  // per group: its most urgent member's
  // horovod:BYTES:MS: Horovod's cycle timer. A complete group waits for the next tick of a timer
  // running from plan_groups() (release_due_groups, from tick()); 0: groups leave at once.
  double release_cycle_ms_ = 0;
  std::chrono::steady_clock::time_point cycle_epoch_{};
  std::vector<std::pair<std::chrono::steady_clock::time_point, uint32_t>> held_groups_;
  void queue_group(uint32_t g);
  void use_grouping(const Grouping& g);  // at start, or between iterations (nothing left to send)
  // GradOptimizer's online trials (worker/grouping_trials.h): the candidates in trial order.
  std::vector<sim::NamedGrouping> trial_groupings_;
  std::optional<GroupingTrials> trials_;
  std::optional<uint64_t> trial_iteration_;  // the last iteration whose first gradient came
  uint64_t total_iterations_ = 0;            // set before start()
  std::atomic<uint64_t> grouping_final_from_{0};
  // Once decided, the job's choice: worker 0's, on its pushes (announce_*) and the servers'
  // replies (announced_*); every worker switches to it at the first gradient of choice_due_.
  std::optional<uint64_t> choice_due_;
  uint32_t announce_choice_ = 0, announced_choice_ = 0;  // 1 + candidate; 0: none
  uint64_t announce_from_ = 0, announced_from_ = 0;
  void time_trials(const Command& cmd);  // at each command, before it is taken
  void take_choice(uint64_t iteration);  // at choice_due_: worker 0's choice put in force
  bool nothing_left_to_send() const;     // no group or unit of this worker's waits
  // Queues the held groups whose tick has come; returns the next tick any still waits for.
  std::optional<std::chrono::steady_clock::time_point> release_due_groups(
      std::chrono::steady_clock::time_point now);
  CreditLink pushes_;  // seq and unacked tensor messages; queue_ keeps the window
  struct PendingAcks {  // PARAMS from one server not yet acknowledged
    std::vector<uint64_t> seqs;
    const ChunkDesc* first = nullptr;  // the first one's chunk names the ACK
    uint64_t iteration = 0;
  };
  std::vector<PendingAcks> reply_acks_;  // by server
  // By key: the gradient being sent, until its last chunk is in a frame (the frames share it).
  std::map<uint32_t, Command> pending_;
  LentBuffers lent_{model_.tensors.size()};  // the gradients lent by lend()
  StartPacer start_;  // worker 0's INITs, then every worker's first PULLs
  bool shutdown_sent_ = false;

  // model parallelism: fixed after the constructor, except where noted
  std::optional<StageRole> stage_;
  std::vector<uint8_t> held_;  // by tensor key: this worker pushes it and receives its values
  std::optional<Messenger::LinkId> stage_in_;   // ROUTER: the previous stage connects
  std::optional<Messenger::LinkId> stage_out_;  // DEALER to the next stage
  std::string stage_address_;
  std::string prev_identity_;   // I/O thread: the previous stage's, from the membership
  StageLink links_[2];          // I/O thread; by StageDir of what is sent
  std::deque<StageOut> stage_commands_;  // under mu_
  // Received and checked, under mu_: by direction, keyed (iteration, micro-batch).
  std::map<std::pair<uint64_t, uint32_t>, StageMessage> stage_inbox_[2];
  std::map<std::pair<uint64_t, uint32_t>, StageMessage> eval_inbox_;  // under mu_
  std::string waiting_stage_;  // under mu_: what the compute thread waits for from a stage

  // shared, under mu_
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Command> commands_;
  bool want_shutdown_ = false;
  bool have_membership_ = false;
  bool started_ = false;
  bool finished_ = false;
  std::optional<std::string> error_;
  std::optional<std::string> abandoned_;  // abandon()'s, until the I/O thread reports it
  bool refused_ = false;  // error_ is a refusal: start() throws ConfigError
  // What the compute thread waits for (cluster.progress_timeout_s): since when, and which layer
  // (-1: every layer) of which iteration; unset when it does not wait for parameters.
  std::optional<std::chrono::steady_clock::time_point> waiting_since_;
  int64_t waiting_layer_ = -1;
  uint64_t waiting_iteration_ = 0;
  std::size_t missing_ = 0;  // chunks of that wait that are not in yet
  std::vector<int64_t> version_;  // by chunk id; -1: none yet
  uint64_t start_iteration_ = 0;
  ClientStats stats_;

  std::thread io_;
};

}  // namespace psrt
