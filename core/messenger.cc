#include "core/messenger.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace psrt {

namespace {
// Messages read from one socket per pass: bounded, so that timers and completions stay
// responsive under a flood.
constexpr int kBatch = 256;
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

void Messenger::on_bad(LinkId link, BadHandler handler) { links_.at(link).bad = std::move(handler); }

void Messenger::admit(LinkId link, Admit check) { links_.at(link).admits.push_back(std::move(check)); }

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

bool Messenger::send(LinkId link, const std::string* identity, const wire::Header& h,
                     std::vector<zmq::message_t> payload, bool* full) {
  metrics_.message(Metrics::Dir::kSent, metrics_kind(h.type()), payload_size(payload));
  bool at_hwm = false;
  Link& l = links_.at(link);
  if (send_envelope(l.socket, identity, h, std::move(payload), &at_hwm)) {
    sent_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (full) *full = at_hwm;
  const std::string to = identity ? printable(*identity) : l.name;
  if (at_hwm) {
    log_.warn("full queue", std::string(wire::MsgType_Name(h.type())) + " to " + to +
                                " dropped: it does not read, its queue is at limits.socket_hwm");
  } else {
    spdlog::debug("{} to {} dropped: peer not connected", wire::MsgType_Name(h.type()), to);
  }
  return false;
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
  for (int i = 0; i < kBatch && !loop.done() && recv_envelope(link.socket, env_, link.router); ++i) {
    dispatch(link, env_);
  }
}

void Messenger::run(const Loop& loop) {
  std::vector<zmq::pollitem_t> items;
  while (!loop.done()) {
    const auto now = Clock::now();
    log_.flush(now);
    const Clock::time_point next = loop.tick(now);
    if (loop.done()) break;
    items.clear();
    items.push_back({nullptr, wakeup_.fd(), ZMQ_POLLIN, 0});
    for (auto& w : watched_) {
      items.push_back({w.socket ? w.socket->handle() : nullptr, w.fd, ZMQ_POLLIN, 0});
    }
    const std::size_t first_link = items.size();
    for (auto& l : links_) items.push_back({l.socket.handle(), 0, ZMQ_POLLIN, 0});
    const auto wait = std::max(Clock::duration::zero(), next - Clock::now());
    zmq::poll(items.data(), items.size(),
              std::chrono::duration_cast<std::chrono::milliseconds>(wait) +
                  std::chrono::milliseconds(1));
    if (items[0].revents & ZMQ_POLLIN) {
      wakeup_.drain();
      if (loop.woken) loop.woken();
    }
    for (std::size_t i = 0; i < watched_.size(); ++i) {
      if (items[1 + i].revents & ZMQ_POLLIN) watched_[i].ready();
    }
    // Links added by a handler during this pass are polled from the next one.
    const std::size_t polled = items.size() - first_link;
    for (std::size_t i = 0; i < polled && !loop.done(); ++i) {
      if (items[first_link + i].revents & ZMQ_POLLIN) read(links_[i], loop);
    }
    if (loop.passed && !loop.done()) loop.passed();
  }
}

void Messenger::close() {
  links_.clear();
  watched_.clear();
}

}  // namespace psrt
