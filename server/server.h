// psrt-server: one I/O thread owning a ROUTER (workers and, on server 0, every process for the
// coordinator role) and, on servers other than 0, a DEALER to the coordinator. Aggregation and the
// optimizer run in an UpdatePool. Nothing a peer sends ends the loop: a bad message gets an ERROR
// reply, a log line and a counter.
#pragma once

#include <zmq.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "compress/codec.h"
#include "core/config.h"
#include "core/control_plane.h"
#include "core/credit_link.h"
#include "core/liveness.h"
#include "core/curve.h"
#include "core/group_frames.h"
#include "core/drop_watch.h"
#include "core/socket_monitor.h"
#include "core/messenger.h"
#include "core/rate_limit.h"
#include "core/timeline.h"
#include "core/transport.h"
#include "core/wire.h"
#include "server/checkpointer.h"
#include "server/chunk_table.h"
#include "server/coordinator.h"
#include "server/optimizer.h"
#include "scheduler/push_queue.h"
#include "server/update_pool.h"

namespace psrt {

struct ServerStats {
  uint64_t pushes = 0;
  uint64_t duplicates = 0;
  uint64_t updates = 0;
  uint64_t errors = 0;
  uint64_t dropped_replies = 0;  // a peer's queue at limits.socket_hwm, or its error budget spent
  std::map<ErrorCode, uint64_t> errors_by_code;
};

class Server {
 public:
  // Chunks up to this size update in the I/O thread; larger ones in the pool.
  static constexpr uint64_t kInlineUpdateBytes = 64 << 10;
  // `shared`: a ZeroMQ context to run in (in-process tests over inproc://); null: its own.
  Server(const Config& config, uint32_t rank, zmq::context_t* shared = nullptr);
  ~Server();

  // The endpoint workers connect to (after the constructor has bound it).
  const std::string& endpoint() const { return endpoint_; }
  // Serves until the shutdown barrier is released. Throws JobError when the job aborts.
  void run();
  // From any thread (a signal's: core/stop_signals.h): the job ends at the loop's next pass, told
  // `why` as this server's failure. Once the loop is over nothing is told, and it is still true:
  // the server is ending (a signal then leaves it its grace to write its outputs).
  bool request_stop(const std::string& why);
  const ServerStats& stats() const { return stats_; }

 private:
  // control plane (server_control.cc)
  void on_control(const std::string& identity, PeerId from, const wire::Header& h);
  void register_handlers();  // on the router
  void watch_listener();     // listener_events_
  ControlPlane::Events member_events();  // servers other than 0: the coordinator's answers
  void on_membership(const wire::Membership& m, const wire::StageMap& stages);
  void arrive(const std::string& barrier);
  void release(const std::string& barrier);
  // To every registered process, or only to those of role `only`.
  void broadcast(const wire::Header& h, wire::Role only = wire::ROLE_UNSPECIFIED);
  // Once per loop pass; returns when the loop must run next.
  Clock::time_point tick(Clock::time_point now);
  Clock::time_point coordinator_tick(Clock::time_point now);  // server 0
  // Server 0: tells everyone and throws. Others: tell the coordinator, so that it ends the job
  // naming the cause, and throw.
  [[noreturn]] void abort_job(const std::string& why);
  // abort_job for what the job's own files or settings cause (a checkpoint of another model
  // layout): the others end as for abort_job, this server exits 2, a refusal, as at start.
  [[noreturn]] void refuse_job(const std::string& why);
  // Whether the message on the router comes from the process registered as `from` over this
  // connection; else replies with the error.
  bool admitted(const std::string& identity, PeerId from, const wire::Header& h);
  // server_latecomers.cc: server 0's side of admitted(); and once the job has ended before every
  // process registered, for up to kLatecomerWindow (and not past the start's deadline,
  // cluster.start_timeout_s), each process still to come has its first message answered with the
  // ABORT and its reason.
  bool coordinator_admits(const std::string& identity, PeerId from, const wire::Header& h);
  // Short: the port stays taken meanwhile (a job relaunched on a fixed port waits for it).
  static constexpr std::chrono::seconds kLatecomerWindow{10};
  void tell_latecomers(const std::string& why);
  void tell_latecomer(const std::string& identity, PeerId from);
  std::optional<std::string> aborted_;  // why the job ended, while latecomers are told
  std::set<PeerId> told_;
  // server_keep.cc. A checkpoint one server could not write: every process keeps all its
  // checkpoints from then on, so that the newest one they all have is not pruned by
  // checkpoint.keep where the writes went on. A server tells server 0; server 0 tells everyone,
  // at once and on each heartbeat after.
  void check_checkpoint_failures();  // once per loop pass
  void keep_checkpoints(const std::string& cause);  // server 0
  void on_keep_checkpoints();  // a server other than 0, told by server 0
  bool keep_told_ = false;     // this server's failure was told
  bool keeping_ = false;       // every process keeps its checkpoints (known here)
  // cluster.progress_timeout_s: names whom this server has been waiting for, if too long.
  void check_progress(Clock::time_point now);
  // Server 0, when the start barrier is overdue: " (worker 0 waits for server 1 at ADDR: ...)"
  // for the workers whose heartbeats say whom their start waits for; empty if none say.
  std::string start_waits();
  void note_heartbeat(PeerId from, const wire::Header& h);
  double bytes_per_element() const;  // parameters and the state kept beside them
  // data plane (server_data.cc)
  // Whether a decoded message on the router comes from the process its header names, over the
  // connection it registered; else replies with the error.
  bool admit(Inbound& m);
  void on_tensor(const std::string& identity, PeerId from, const wire::Header& h,
                 std::vector<zmq::message_t>& payload);
  void on_push(const std::string& identity, PeerId from, const wire::Header& h, ChunkState& c,
               std::vector<zmq::message_t>& payload);
  // The push's checks (state, iteration, codec, payload); the frame may be replaced by an
  // aligned copy.
  // A tensor message from a worker whose stage does not hold the tensor's layer.
  static WireError not_held(PeerId from, uint32_t key) {
    return {ErrorCode::kUnexpected, describe(from) + " does not hold tensor " +
                                        std::to_string(key) + "'s layer (placement)"};
  }
  std::optional<WireError> check_push(const wire::Header& h, ChunkState& c,
                                      zmq::message_t& frame) const;
  // The ACK of push `h`, built in ack_out_ (valid until the next call).
  const wire::Header& push_ack(const wire::Header& h);
  // Counts a checked push (once per worker and iteration) and starts the update when complete.
  // `group`: the group the push came in, for this worker's reply (null: pushed alone).
  void accept_push(PeerId from, const wire::Header& h, ChunkState& c, zmq::message_t& frame,
                   ChunkGroup group = nullptr);
  // GradOptimizer's groups (server_groups.cc): every member checked before any is taken, one
  // ACK; the reply goes as one group message once every member has been updated.
  void on_group_push(const std::string& identity, PeerId from, const wire::Header& h,
                     std::vector<zmq::message_t>& payload);
  // After `c`'s update: each holder's reply, alone or in the group that holder pushed `c` in.
  void queue_update_replies(const ChunkState& c);
  // Queues `worker`'s reply to the group it pushed `c` in, once every member is updated.
  void queue_group_reply(const ChunkState& c, uint32_t worker);
  // A group push's member as a header of its own: member_header_, whose group fields
  // on_group_push has set, with the member's chunk fields.
  const wire::Header& member_header(const wire::GroupMember& m);
  // A batched push (Header.batch): its checked members, each taken as if pushed alone.
  void take_batch(const std::string& identity, PeerId from, const wire::Header& h);
  void send_group_params(uint32_t worker, const std::vector<uint32_t>& members, uint64_t seq);
  void start_update(ChunkState& c);
  // Aggregate + optimizer; runs in the pool or inline (then with io_scratch_).
  void update_chunk(ChunkState& c, UpdateScratch& scratch);
  void aggregate_and_step(ChunkState& c, UpdateScratch& scratch);  // the mean, the optimizer
  void complete_update(ChunkState& c);
  void finish_updates();
  // Replies go through a per-worker priority queue under the same byte credit as the pushes: a
  // pending lower-layer reply overtakes queued higher-layer ones.
  // `dense`: the whole values (a worker's first), else the update's compressed reply if any.
  void queue_reply(uint32_t worker, const ChunkState& c, bool dense = false);
  // Sends what `worker`'s reply queue and credit allow: now for a reply that cannot be batched
  // (scheduler.batch_bytes), else once this pass of the I/O loop is over (flush_replies), so that
  // the small replies the pass made ready go together.
  void reply_soon(uint32_t worker, bool batchable);
  void flush_replies();
  void pump_replies(uint32_t worker);
  // Sends a reply batch (scheduler.batch_bytes) taken from the queue: alone or as a group.
  void send_reply_batch(uint32_t worker, std::vector<uint32_t>& chunks, uint64_t bytes);
  // A push from `from` completes `c`, small enough to update in the I/O thread: its reply follows
  // at once and can carry its ACK (hold_ack).
  bool completes_inline(PeerId from, const ChunkState& c) const;
  void hold_ack(uint32_t worker, const wire::Header& h, const ChunkState& c);
  // The held push ACKs of `worker` that no reply carried, as one ACK.
  void send_held_acks(uint32_t worker);
  void on_reply_ack(uint32_t worker, const wire::Header& h);
  void send_params(uint32_t worker, const ChunkState& c, uint64_t seq, bool dense);
  // Moves the worker's held push acknowledgement onto a reply to it (Header.acks).
  void attach_acks(uint32_t worker, wire::Header& h);
  // compression.replies: compressed (server_replies.cc)
  void publish_initial(ChunkState& c);  // after INIT: the workers' values are the server's
  void publish_restored(ChunkState& c);  // after a checkpoint restore: its `published` values
  void encode_reply(ChunkState& c);     // after an update, in the pool or inline
  zmq::message_t reply_frame(const ChunkState& c, bool dense, wire::Header& h) const;
  void reply_error(const std::string& identity, const wire::Header* about, const WireError& e);
  void send(const std::string& identity, const wire::Header& h,
            std::vector<zmq::message_t> payload = {});

  Config config_;
  uint32_t rank_;
  Sender self_;
  // Outgoing headers reused for every push ACK and every PARAMS (core/wire.h reset_header).
  wire::Header ack_out_, params_out_;
  // params_out_ reset for a PARAMS, with worker 0's grouping choice when there is one.
  wire::Header& params_header();
  uint32_t grouping_choice_ = 0;  // from worker 0's pushes (Header.grouping_choice); 0: none
  uint64_t grouping_from_ = 0;
  // A group push's members, checked then taken (server_groups.cc; reused, I/O thread only).
  wire::Header member_header_;
  std::vector<ChunkState*> group_members_;
  std::vector<std::span<const uint8_t>> member_bytes_;
  // A group push's members' frames, and a group reply's encoded members: apart, since a push's
  // last member can complete a group and send its reply while the push's frames are being taken.
  std::vector<zmq::message_t> member_frames_, reply_member_frames_;
  GroupFrames group_frames_;  // a group reply's frames
  LogLimiter log_;
  Metrics metrics_;
  std::optional<CurveKeys> curve_;  // security.curve
  Messenger messenger_;             // sockets, poll loop, wake-up (owns or shares the context)
  std::optional<ZapHandler> zap_;   // with curve_: admits the job's key only
  Messenger::LinkId router_;
  // The router's failed accepts, and with CURVE its failed handshakes (one monitor a socket).
  std::optional<SocketMonitor> listener_events_;
  DropWatch drops_{1.0};  // ranks > 0: the link to the coordinator (grace set in the constructor)
  std::optional<ControlPlane> control_;  // servers other than 0: the link to the coordinator
  std::string endpoint_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<compress::Codec> codec_;  // null for codec none; decode only (stateless)
  wire::Codec wire_codec_ = wire::CODEC_NONE;
  std::unique_ptr<compress::Codec> reply_codec_;  // compressed replies only; no error feedback
  std::unique_ptr<UpdatePool> pool_;
  UpdateScratch io_scratch_;  // the I/O thread's, for chunks updated inline
  std::optional<Coordinator> coordinator_;  // server 0 only
  ChunkTable chunks_;
  Checkpointer checkpointer_;
  bool resumed_ = false;  // chunks restored from a checkpoint: INIT values are ignored
  struct ReplyLink {
    explicit ReplyLink(PushQueue q) : queue(std::move(q)) {}
    PushQueue queue;
    CreditLink credit;  // seq and unacked replies; the queue keeps the window
    std::set<uint32_t> dense;  // chunks whose queued reply goes dense (answers to PULL)
    // Pushes of this worker's that completed a small chunk, while their replies are being sent:
    // the ACKs ride on the next reply (server_data.cc, on_push), or go together as one ACK.
    std::vector<uint64_t> held_acks;
    const ChunkDesc* held_about = nullptr;  // the first held push's chunk, and its iteration
    uint64_t held_iteration = 0;
    bool due = false;  // in due_replies_: pumped when the loop's pass is over
    // Queued group replies, by their first member's index.
    std::map<uint32_t, std::shared_ptr<const std::vector<uint32_t>>> groups;
  };
  std::vector<ReplyLink> replies_;  // by worker rank
  uint64_t batch_bytes_ = 0;          // scheduler.batch_bytes
  std::vector<uint32_t> due_replies_;  // workers whose replies go once this pass is over
  std::vector<uint32_t> reply_batch_;  // chunks of the batch being taken (pump_replies)
  std::vector<std::string> worker_ids_;  // each worker's registered connection identity
  // What each worker's last heartbeat said it waits for (1 + server rank; 0: nothing), and when.
  struct WorkerWait {
    uint32_t server_plus_one = 0;
    Clock::time_point at;
  };
  std::vector<WorkerWait> worker_waits_;  // by worker rank
  std::vector<ChunkState*> by_id_;
  std::vector<uint64_t> finished_ids_;  // finish_updates()'s, reused (UpdatePool::take_finished)
  bool have_membership_ = false;
  bool started_ = false;
  // The first process refused before the start for its protocol version, and why: the start
  // deadline named it as never come, not as another release.
  std::string version_refused_;
  bool done_ = false;
  std::mutex stop_mu_;  // guards the three below (request_stop)
  std::atomic<bool> stop_pending_{false};  // stop_why_ is set: tick() takes the lock only then
  std::optional<std::string> stop_why_;
  // In its job from construction on: a stop requested before run() (the window after
  // PSRT_LISTENING) is taken at the loop's first pass, where it was declined and the signal's
  // default action ended the server without a word.
  bool looping_ = true;
  bool stop_taken_ = false;  // the loop ended on request_stop's
  Liveness liveness_;                // server 0: its heartbeats and the start's deadline
  Clock::time_point last_progress_;  // an update completed, or nobody was waited for
  ServerStats stats_;
  PeerBudget error_budget_;
  Timeline timeline_;
};

}  // namespace psrt
