#include "core/messenger.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <stdexcept>
#include <system_error>

namespace psrt {

namespace {
// Messages read from one socket per pass: bounded, so that timers and completions stay
// responsive under a flood.
constexpr int kBatch = 256;
// How often held messages (core/held_sends.h) are tried again while nothing else wakes the loop,
// and how long close() tries them.
constexpr std::chrono::milliseconds kHeldRetry{5};
constexpr std::chrono::milliseconds kCloseWait{1000};
// A DEALER's one peer, as HeldSends names it.
const std::string kDealerPeer;

// Asks the socket whether a message waits. This takes in every command its mailbox holds, so
// afterwards its ZMQ_FD turns readable again only when a new one arrives.
bool has_input(zmq::socket_t& socket) {
  return (socket.get(zmq::sockopt::events) & ZMQ_POLLIN) != 0;
}

int poll_timeout(std::chrono::steady_clock::duration wait) {
  if (wait <= std::chrono::steady_clock::duration::zero()) return 1;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wait).count() + 1;
  return int(std::min<int64_t>(ms, INT_MAX));
}
}  // namespace

Messenger::Messenger(std::string job_id, SocketOptions options, Metrics& metrics, LogLimiter& log,
                     zmq::context_t* shared)
    : job_id_(std::move(job_id)),
      options_(options),
      metrics_(metrics),
      log_(log),
      own_ctx_(shared ? nullptr : std::make_unique<zmq::context_t>(1)),
      ctx_(shared ? shared : own_ctx_.get()) {}

Messenger::~Messenger() { close(); }

Messenger::LinkId Messenger::add(zmq::socket_t socket, std::string name, bool router) {
  Link link;
  link.socket = std::move(socket);
  link.name = std::move(name);
  link.router = router;
  link.held = HeldSends(options_.held_bytes);
  link.fd = link.socket.get(zmq::sockopt::fd);
  links_.push_back(std::move(link));
  return links_.size() - 1;
}

Messenger::LinkId Messenger::add_router(std::string name) {
  return add(make_router(*ctx_, options_), std::move(name), true);
}

Messenger::LinkId Messenger::add_dealer(std::string name, const std::string& identity) {
  return add(make_dealer(*ctx_, identity, options_), std::move(name), false);
}

void Messenger::on(LinkId link, wire::MsgType type, Handler handler) {
  auto& handlers = links_.at(link).handlers;
  if (handlers.size() <= std::size_t(type)) handlers.resize(std::size_t(type) + 1);
  handlers[std::size_t(type)] = std::move(handler);
}

void Messenger::otherwise(LinkId link, Handler handler) {
  links_.at(link).fallback = std::move(handler);
}

void Messenger::on_bad(LinkId link, BadHandler handler) {
  links_.at(link).bad = std::move(handler);
}

void Messenger::admit(LinkId link, Admit check) {
  links_.at(link).admits.push_back(std::move(check));
}

void Messenger::expect_sender(LinkId link, wire::Role role, uint32_t rank) {
  admit(link, [this, link, role, rank](Inbound& m) {
    if (m.header.role() == role && m.header.rank() == rank) return true;
    log_.warn("bad message", "ignored a message claiming to be " +
                                 peer_name(m.header.role(), m.header.rank()) + " on the link to " +
                                 links_[link].name);
    return false;
  });
}

void Messenger::watch(zmq::socket_t& socket, std::function<void()> ready) {
  watched_.push_back({&socket, -1, std::move(ready)});
}

void Messenger::watch_fd(int fd, std::function<void()> ready) {
  watched_.push_back({nullptr, fd, std::move(ready)});
}

void Messenger::on_drop(LinkId link, std::function<void()> dropped) {
  constexpr int kEvents = SocketMonitor::kDisconnected | SocketMonitor::kConnected;
  SocketMonitor& m = monitors_.emplace_back(*ctx_, links_.at(link).socket, kEvents);
  watch(m.socket(), [this, &m, link, dropped = std::move(dropped)] {
    Link& l = links_[link];
    m.handle([&](int event, int) {
      if (event == SocketMonitor::kConnected) {
        l.up = true;
        return;
      }
      // A connection that was up (its handshake done: a failed one is no drop, it is said where
      // it fails) may have had messages in flight, whether or not a reply came on it yet (a
      // reset during the start stalled it until cluster.start_timeout_s).
      if (l.up || l.heard) dropped();
      l.up = false;
    });
  });
}

bool Messenger::send(LinkId link, const std::string* identity, const wire::Header& h,
                     std::vector<zmq::message_t> payload, bool* full) {
  metrics_.message(Metrics::Dir::kSent, metrics_kind(h.type()), payload_size(payload));
  Link& l = links_.at(link);
  l.pending = true;  // the send may take in the command that announces a reply
  const std::string& peer = identity ? *identity : kDealerPeer;
  bool at_hwm = false;
  // Behind what is held for the peer, in order. Every psrt socket takes frames up to
  // kMaxPayloadBytes (maxmsgsize): a larger header would be lost with the peer's connection.
  if (!l.held.holds(peer) &&
      try_send_envelope(l.socket, identity, h, payload, &at_hwm, kMaxPayloadBytes)) {
    sent_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  const auto to = [&] { return identity ? printable(*identity) : l.name; };
  if (l.held.holds(peer) || at_hwm) {
    if (const std::string why = oversize_header(h, "its header"); !why.empty()) {
      throw std::length_error(why);  // held behind others: never encoded yet
    }
    if (at_hwm) {
      spdlog::debug("{} to {} held: its queue is at limits.socket_hwm",
                    wire::MsgType_Name(h.type()), to());
    }
    if (l.held.hold(peer, h, payload)) return true;
    if (full) *full = true;
    log_.warn("full queue", std::string(wire::MsgType_Name(h.type())) + " to " + to() +
                                " dropped: its queue is at limits.socket_hwm and " +
                                std::to_string(options_.held_bytes >> 20) +
                                " MiB wait for it (it reads slower than this process sends, or "
                                "not at all)");
    return false;
  }
  spdlog::debug("{} to {} dropped: peer not connected", wire::MsgType_Name(h.type()), to());
  return false;
}

HeldSends::Send Messenger::held_sender(Link& link) {
  return [this, &link](const std::string& peer, const wire::Header& h,
                       std::vector<zmq::message_t>& payload, bool* full) {
    const bool sent = try_send_envelope(link.socket, link.router ? &peer : nullptr, h, payload,
                                        full);
    if (sent) sent_.fetch_add(1, std::memory_order_relaxed);
    return sent;
  };
}

bool Messenger::send_held() {
  bool left = false;
  for (auto& l : links_) {
    if (l.held.empty()) continue;
    l.pending = true;  // sending takes in the socket's commands
    l.held.flush(held_sender(l));
    left = left || !l.held.empty();
  }
  return left;
}

std::size_t Messenger::held_messages() const {
  std::size_t n = 0;
  for (const auto& l : links_) n += l.held.messages();
  return n;
}

void Messenger::dispatch(Link& link, Envelope& env) {
  received_.fetch_add(1, std::memory_order_relaxed);
  wire::Header& h = header_;
  h.Clear();
  WireError err;
  if (!decode_header(env.header, env.payload, job_id_, h, err)) {
    if (link.bad) {
      link.bad(env.identity, h, err);
    } else {
      metrics_.error(error_code_name(err.code));
      log_.warn("bad message", "ignored a bad message from " + link.name + ": " + err.message);
    }
    return;
  }
  metrics_.message(Metrics::Dir::kReceived, metrics_kind(h.type()), payload_size(env.payload));
  link.heard = true;
  Inbound m{env.identity, h, env.payload};
  for (const auto& check : link.admits) {
    if (!check(m)) return;
  }
  const auto type = std::size_t(h.type());
  if (type < link.handlers.size() && link.handlers[type]) {
    link.handlers[type](m);
  } else if (link.fallback) {
    link.fallback(m);
  } else {
    log_.warn("bad message", std::string("ignored ") + wire::MsgType_Name(h.type()) + " from " +
                                 link.name);
  }
}

void Messenger::read(Link& link, const Loop& loop) {
  for (int i = 0; i < kBatch; ++i) {
    if (loop.done()) break;
    // A failed non-blocking receive took in every command: nothing waits and ZMQ_FD is honest.
    if (!recv_envelope(link.socket, env_, link.router)) {
      link.pending = false;
      return;
    }
    dispatch(link, env_);
  }
  link.pending = true;  // cut short: more may wait
}

// zmq_poll asks every socket for ZMQ_EVENTS before and after it polls, and each ask is two
// system calls (libzmq's fork check and a zero-timeout poll of the mailbox). Here a link is asked
// only when something may have hidden its input from its ZMQ_FD (`pending`); the others wait on
// the fd alone, which turns readable when a command arrives for the socket.
std::size_t Messenger::wait(Clock::time_point until) {
  fds_.clear();
  fds_.push_back({wakeup_.fd(), POLLIN, 0});
  for (auto& w : watched_) {
    fds_.push_back({w.socket ? w.socket->get(zmq::sockopt::fd) : w.fd, POLLIN, 0});
  }
  const std::size_t first_link = fds_.size();
  for (auto& l : links_) fds_.push_back({l.fd, POLLIN, 0});
  ready_.assign(fds_.size(), 0);
  for (std::size_t i = 0; i < watched_.size(); ++i) {  // someone else's: asked every pass
    if (watched_[i].socket && has_input(*watched_[i].socket)) ready_[1 + i] = 1;
  }
  for (std::size_t i = 0; i < links_.size(); ++i) {
    if (!links_[i].pending) continue;
    if (has_input(links_[i].socket)) {
      ready_[first_link + i] = 1;
    } else {
      links_[i].pending = false;
    }
  }
  const bool now = std::find(ready_.begin(), ready_.end(), 1) != ready_.end();
  const int rc = ::poll(fds_.data(), fds_.size(), now ? 0 : poll_timeout(until - Clock::now()));
  if (rc < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "poll");
  for (std::size_t i = 0; rc > 0 && i < fds_.size(); ++i) {
    if (fds_[i].revents & (POLLIN | POLLERR | POLLHUP)) ready_[i] = 1;
  }
  return fds_.size() - first_link;
}

void Messenger::run(const Loop& loop) {
  while (!loop.done()) {
    const auto now = Clock::now();
    log_.flush(now);
    Clock::time_point next = loop.tick(now);
    if (loop.done()) break;
    // A peer taking messages makes room without a word to this loop's fds: held messages are
    // tried again each pass, and at least every kHeldRetry.
    if (send_held()) next = std::min(next, now + kHeldRetry);
    const std::size_t polled = wait(next);
    if (ready_[0]) {
      wakeup_.drain();
      if (loop.woken) loop.woken();
    }
    const std::size_t first_link = ready_.size() - polled;
    for (std::size_t i = 0; i + 1 < first_link; ++i) {
      // A readable fd of a watched socket means only that commands came: ask it.
      const auto& w = watched_[i];
      if (ready_[1 + i] && (!w.socket || has_input(*w.socket))) w.ready();
    }
    // Links added by a handler during this pass are polled from the next one.
    for (std::size_t i = 0; i < polled && !loop.done(); ++i) {
      if (ready_[first_link + i]) read(links_[i], loop);
    }
    if (loop.passed && !loop.done()) loop.passed();
  }
}

void Messenger::close() {
  // What is held gets the sockets' linger to go: the last replies of a job end it for others.
  for (const auto until = Clock::now() + kCloseWait; send_held() && Clock::now() < until;) {
    ::poll(nullptr, 0, int(kHeldRetry.count()));
  }
  watched_.clear();
  monitors_.clear();
  links_.clear();
}

}  // namespace psrt
