// The messaging layer every psrt process runs on (DESIGN.md, "Messaging"), one per process, used
// from its I/O thread only. It owns the ZeroMQ context (or shares one it is given, so that a test
// can run a server and a worker in one process over inproc://), the sockets, the poll loop and the
// wake-up other threads use to reach it. Every message received is decoded and checked (wire.h),
// counted in the metrics and handed to the handler its socket registered for its type; what does
// not decode goes to the socket's bad-message handler. Sends never block the loop: a message that
// meets a peer's queue at the high-water mark is held and sent, in order, as room comes
// (core/held_sends.h); past what is held for one peer it is dropped, and a rate-limited log line
// says so.
//
// What rides on it: the credit links (core/credit_link.h), the member side of the control plane
// (core/control_plane.h), the coordinator's role (server/coordinator.h), the server's data plane
// and the worker's PsClient with its stage links.
#pragma once

#include <poll.h>
#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "core/held_sends.h"
#include "core/metrics.h"
#include "core/rate_limit.h"
#include "core/socket_monitor.h"
#include "core/transport.h"
#include "core/wire.h"

namespace psrt {

// A received message that decoded and passed its socket's admission check.
struct Inbound {
  const std::string& identity;  // the peer's routing identity on a ROUTER; empty on a DEALER
  const wire::Header& header;
  std::vector<zmq::message_t>& payload;
};

class Messenger {
 public:
  using Clock = std::chrono::steady_clock;
  using LinkId = std::size_t;
  using Handler = std::function<void(Inbound&)>;
  // A message whose header did not decode: the identity (empty on a DEALER), the header as far
  // as it parsed, and why.
  using BadHandler =
      std::function<void(const std::string& identity, const wire::Header&, const WireError&)>;
  // Runs after decoding, before dispatch; false drops the message (the check replied or logged).
  using Admit = std::function<bool(Inbound&)>;

  // `shared`: a context owned by the caller (in-process tests); null: one of its own.
  Messenger(std::string job_id, SocketOptions options, Metrics& metrics, LogLimiter& log,
            zmq::context_t* shared = nullptr);
  Messenger(const Messenger&) = delete;
  Messenger& operator=(const Messenger&) = delete;
  ~Messenger();

  zmq::context_t& context() { return *ctx_; }
  const SocketOptions& options() const { return options_; }
  Wakeup& wakeup() { return wakeup_; }
  Metrics& metrics() { return metrics_; }
  // Messages sent and received so far (any thread may read them).
  uint64_t messages_sent() const { return sent_.load(std::memory_order_relaxed); }
  uint64_t messages_received() const { return received_.load(std::memory_order_relaxed); }
  LogLimiter& log() { return log_; }

  // Sockets made with the job's options (high-water mark, CURVE). A ROUTER's messages carry the
  // sender's identity; `name` says who is at the other end in log lines ("server 2").
  LinkId add_router(std::string name);
  LinkId add_dealer(std::string name, const std::string& identity);
  // The raw socket, for options, bind and connect. Those may take in a peer's announcement of
  // input, so the loop checks the link before it next waits.
  zmq::socket_t& socket(LinkId link) {
    Link& l = links_.at(link);
    l.pending = true;
    return l.socket;
  }
  const std::string& name(LinkId link) const { return links_.at(link).name; }

  void on(LinkId link, wire::MsgType type, Handler handler);
  // For the types that have no handler of their own; without it they are logged and dropped.
  void otherwise(LinkId link, Handler handler);
  void on_bad(LinkId link, BadHandler handler);
  void admit(LinkId link, Admit check);
  // Messages on `link` must come from `role` `rank`: others are logged and dropped.
  void expect_sender(LinkId link, wire::Role role, uint32_t rank);
  // A socket of someone else's the loop watches too (the ZAP handler); `ready` reads it.
  void watch(zmq::socket_t& socket, std::function<void()> ready);
  // The same for a file descriptor (a signalfd).
  void watch_fd(int fd, std::function<void()> ready);

  // Calls `dropped` when a connection of `link` (a DEALER) drops once its handshake was done (or
  // a message came on it): ZeroMQ reconnects, but what was in flight on the old connection is
  // lost (core/drop_watch.h).
  void on_drop(LinkId link, std::function<void()> dropped);

  // Sends on `link` (to `identity` on a ROUTER), or holds the message while the peer's queue is
  // full. False when the peer is gone or has options().held_bytes held already (then `*full` is
  // set, if given, and a rate-limited warning names the peer).
  bool send(LinkId link, const std::string* identity, const wire::Header& h,
            std::vector<zmq::message_t> payload = {}, bool* full = nullptr);
  // Messages held for full queues, on every link.
  std::size_t held_messages() const;

  struct Loop {
    std::function<bool()> done;  // checked before every pass
    // Timers, once per pass; returns when the loop must next run even if nothing arrives.
    std::function<Clock::time_point(Clock::time_point now)> tick;
    std::function<void()> woken;  // after another thread's wakeup().notify()
    std::function<void()> passed;  // after each pass, once its messages have been handled
  };
  // Polls until `done`; handlers' exceptions end it and propagate to the caller.
  void run(const Loop& loop);
  // Closes every socket (in the thread that owns them; linger flushes what is queued).
  void close();

 private:
  struct Link {
    zmq::socket_t socket;
    int fd = -1;  // ZMQ_FD: readable when the socket's mailbox holds commands not yet taken in
    // A send, connect or a read cut short may have taken in the command that announced input,
    // leaving `fd` quiet while a message waits: the loop asks the socket before it blocks.
    bool pending = true;
    std::string name;
    bool router = false;
    std::vector<Handler> handlers;  // by message type (a handful of types: no map lookup)
    Handler fallback;
    BadHandler bad;
    std::vector<Admit> admits;
    bool heard = false;  // a message decoded on it: a connection was up
    bool up = false;     // on_drop's: the current connection finished its handshake
    HeldSends held{0};   // by peer identity ("" on a DEALER); its bound set by add()
  };
  void read(Link& link, const Loop& loop);
  // Waits for input on the links, the watched sockets and fds and the wake-up, up to `until`;
  // fills `ready_` (one flag per polled entry). Returns the number of links polled.
  std::size_t wait(Clock::time_point until);
  void dispatch(Link& link, Envelope& env);
  LinkId add(zmq::socket_t socket, std::string name, bool router);
  // Sends what the links hold, as far as room allows; whether any still waits.
  bool send_held();
  // The sends of a link's held messages.
  HeldSends::Send held_sender(Link& link);

  std::string job_id_;
  SocketOptions options_;
  Metrics& metrics_;
  LogLimiter& log_;
  std::unique_ptr<zmq::context_t> own_ctx_;
  zmq::context_t* ctx_;
  std::deque<Link> links_;  // stable addresses: handlers may add links
  struct Watched {
    zmq::socket_t* socket;  // or null, then fd
    int fd;
    std::function<void()> ready;
  };
  std::vector<Watched> watched_;
  std::deque<SocketMonitor> monitors_;  // on_drop's
  std::vector<struct pollfd> fds_;  // the wait's poll set, reused
  std::vector<char> ready_;
  Wakeup wakeup_;
  Envelope env_;
  wire::Header header_;  // reused for every message: its strings keep their storage
  std::atomic<uint64_t> sent_{0}, received_{0};
};

}  // namespace psrt
