#include "core/control_plane.h"

#include "core/status.h"

namespace psrt {

ControlPlane::ControlPlane(Messenger& messenger, Messenger::LinkId link, Sender self,
                           const ClusterConfig& cluster, std::size_t max_string_bytes,
                           Events events)
    : messenger_(messenger),
      link_(link),
      self_(std::move(self)),
      cluster_(cluster),
      max_string_bytes_(max_string_bytes),
      events_(std::move(events)),
      liveness_(cluster, Clock::now()) {
  messenger_.expect_sender(link_, wire::SERVER, 0);
  messenger_.admit(link_, [this](Inbound&) {
    liveness_.heard_coordinator(Clock::now());
    return true;
  });
  messenger_.on_bad(link_, [this](const std::string&, const wire::Header& h, const WireError& e) {
    on_bad(h, e);
  });
  messenger_.on(link_, wire::HEARTBEAT, [this](Inbound& m) {
    if (events_.coordinator_heartbeat) events_.coordinator_heartbeat(m.header);
  });
  messenger_.on(link_, wire::MEMBERSHIP, [this](Inbound& m) {
    events_.membership(m.header.membership(), m.header.stage_map());
  });
  messenger_.on(link_, wire::BARRIER_RELEASE,
                [this](Inbound& m) { events_.released(m.header.barrier().name()); });
  messenger_.on(link_, wire::ABORT, [this](Inbound& m) {
    events_.failed("job aborted by the coordinator: " +
                   printable(m.header.error().message(), max_string_bytes_));
  });
  messenger_.on(link_, wire::ERROR, [this](Inbound& m) { on_error(m.header); });
}

std::string ControlPlane::who() const { return peer_name(self_.role, self_.rank); }

void ControlPlane::on_bad(const wire::Header& h, const WireError& err) {
  // The one bad message that is the coordinator's own verdict: this process has the wrong job id.
  if (err.code == ErrorCode::kWrongJob && h.type() == wire::ERROR &&
      h.error().code() == uint32_t(ErrorCode::kWrongJob)) {
    events_.refused("the coordinator at " + cluster_.coordinator +
                    " serves another job: check job.id");
    return;
  }
  // The coordinator (whatever listens at its address) speaks another protocol: every message
  // was dropped, and the process ended blaming silence ("nothing answered there").
  if (err.code == ErrorCode::kVersion) {
    events_.refused("the coordinator at " + cluster_.coordinator + " speaks another protocol: " +
                    err.message + "; every process of a job must run the same psrt release");
    return;
  }
  messenger_.metrics().error(error_code_name(err.code));
  messenger_.log().warn("bad message", "ignored a bad message from " +
                                           messenger_.name(link_) + ": " + err.message);
}

void ControlPlane::on_error(const wire::Header& h) {
  if (h.error().about() == wire::REGISTER) {
    events_.refused("the coordinator refused to register " + who() + ": " +
                    printable(h.error().message(), 1024));
    return;
  }
  if (events_.error) {
    events_.error(h);
    return;
  }
  events_.failed("the coordinator refused " + who() + "'s " +
                 wire::MsgType_Name(h.error().about()) + ": " +
                 printable(h.error().message(), 1024));
}

bool ControlPlane::send(const wire::Header& h, std::vector<zmq::message_t> payload) {
  return messenger_.send(link_, nullptr, h, std::move(payload));
}

void ControlPlane::register_with(const wire::Register& reg, const wire::StageInfo* stage) {
  wire::Header h = make_header(self_, wire::REGISTER);
  *h.mutable_register_() = reg;
  if (stage) *h.mutable_stage() = *stage;
  // Sent, it would be dropped by the coordinator's socket, and this process would wait unheard.
  if (const std::string why = oversize_header(
          h, std::to_string(reg.tensors_size()) + " tensors with their names");
      !why.empty()) {
    throw ConfigError("model: " + why + ": a model of fewer tensors (merge small ones)");
  }
  send(h);
}

void ControlPlane::arrive(const std::string& barrier) {
  wire::Header h = make_header(self_, wire::BARRIER);
  h.mutable_barrier()->set_name(barrier);
  send(h);
}

void ControlPlane::heartbeat(uint32_t waits_for_server_plus_one, bool keep_checkpoints) {
  wire::Header h = make_header(self_, wire::HEARTBEAT);
  if (waits_for_server_plus_one > 0) h.set_waits_for_server(waits_for_server_plus_one);
  if (keep_checkpoints) h.set_keep_checkpoints(true);
  send(h);
}

void ControlPlane::give_up(const std::string& why) {
  wire::Header h = make_header(self_, wire::ABORT);
  h.mutable_error()->set_message(why);
  send(h);
  events_.failed(why);
}

ControlPlane::Clock::time_point ControlPlane::tick(Clock::time_point now, bool membership,
                                                   bool started) {
  if (liveness_.gap(now) && events_.resumed) events_.resumed(now);
  if (liveness_.heartbeat_due(now)) events_.heartbeat(now);
  if (const auto verdict = liveness_.check(now, membership, started)) {
    switch (verdict->kind) {
      case Liveness::Verdict::kUnreachable: events_.refused(verdict->message); break;
      case Liveness::Verdict::kLostCoordinator:
        messenger_.metrics().lost_peer();
        give_up(verdict->message);
        break;
      case Liveness::Verdict::kStartTimeout: give_up(verdict->message); break;
    }
  }
  return liveness_.next_heartbeat();
}

}  // namespace psrt
