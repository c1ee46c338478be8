// PsClient, model parallelism: the links between the stages of one replica. Stage s binds a
// ROUTER that stage s-1 connects a DEALER to; activations (with the micro-batch's labels) go
// forward over that connection and their gradients come back over it. Every message is checked
// like any other (decode_header), then against the schedule: from the neighbour itself, the
// micro-batch expected next (GPipe: forward 0 .. M-1, backward M-1 .. 0; between iterations,
// on replica 0, the batches of a test-set pass when StageLayout::evaluates_after says one is due),
// its sizes. A message
// that fails gets an ERROR reply and ends the job naming the sender and what was wrong. Sends go
// out under byte credit (scheduler.credit_bytes), released by the receiver's ACK.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstring>

#include "core/endpoints.h"
#include "worker/ps_client.h"

namespace psrt {

namespace {
using SteadyClock = std::chrono::steady_clock;
const char* dir_name(bool forward) {
  return forward ? "activations" : "activation gradients";
}
}  // namespace

uint32_t PsClient::stage_peer_rank(StageDir dir) const {
  const uint32_t s = stage_->stage;
  return stage_->layout.worker(stage_->replica, dir == StageDir::kForward ? s + 1 : s - 1);
}

std::string PsClient::stage_peer(StageDir dir) const {
  const uint32_t s = dir == StageDir::kForward ? stage_->stage + 1 : stage_->stage - 1;
  return "worker " + std::to_string(stage_peer_rank(dir)) + " (stage " + std::to_string(s) +
         " of replica " + std::to_string(stage_->replica) + ")";
}

namespace {
// The largest frame a stage link carries toward this process: a micro-batch of `width` floats.
int64_t stage_frame_limit(const StageLayout& l, std::size_t width) {
  return int64_t(uint64_t(l.max_micro_rows()) * width * sizeof(float) + 4096);
}
}  // namespace

void PsClient::bind_stage() {
  if (stage_->stage == 0) return;
  stage_in_ = messenger_.add_router("the previous stage");
  zmq::socket_t& in = messenger_.socket(*stage_in_);
  in.set(zmq::sockopt::maxmsgsize, stage_frame_limit(stage_->layout, stage_->in_width));
  stage_address_ =
      listen_as_peer(in, config_.cluster, "worker " + std::to_string(rank_)).advertised;
  register_stage(StageDir::kForward, *stage_in_);
  spdlog::info("stage {}: the previous stage connects to {}", stage_->stage, stage_address_);
}

void PsClient::connect_stage(const wire::StageMap& map, uint64_t first) {
  links_[int(StageDir::kForward)] = StageLink(config_.scheduler.credit_bytes);
  links_[int(StageDir::kBackward)] = StageLink(config_.scheduler.credit_bytes);
  links_[int(StageDir::kForward)].next_iteration = first;
  links_[int(StageDir::kForward)].evaluated_at = first;  // no pass before the first iteration
  links_[int(StageDir::kBackward)].next_iteration = first;
  links_[int(StageDir::kBackward)].next_micro = stage_->layout.micro_batches - 1;
  // The previous stage's connection, as it registered: the stage port takes nobody else's.
  if (stage_->stage > 0) {
    prev_identity_ = map.workers(int(stage_peer_rank(StageDir::kBackward))).identity();
    if (prev_identity_.empty()) {
      report("the membership names no identity for " + stage_peer(StageDir::kBackward));
      return;
    }
  }
  if (stage_->stage + 1 == stage_->layout.stages) return;
  const uint32_t next = stage_peer_rank(StageDir::kForward);
  const std::string& address = map.workers(int(next)).address();
  // inproc:// only in an in-process job (tests), where every endpoint is one.
  if (address.rfind("tcp://", 0) != 0 &&
      !(is_inproc(config_.cluster.coordinator) && is_inproc(address))) {
    report("the membership gives " + stage_peer(StageDir::kForward) + " no tcp:// address");
    return;
  }
  stage_out_ = messenger_.add_dealer("the next stage", identity_);
  zmq::socket_t& out = messenger_.socket(*stage_out_);
  out.set(zmq::sockopt::maxmsgsize, stage_frame_limit(stage_->layout, stage_->out_width));
  out.connect(address);
  register_stage(StageDir::kBackward, *stage_out_);
  messenger_.on_drop(*stage_out_, [this] {
    drops_.dropped(stage_peer(StageDir::kForward), SteadyClock::now());
  });
}

void PsClient::send_stage(StageDir dir, uint64_t iteration, uint32_t micro_batch, uint32_t samples,
                          std::shared_ptr<const std::vector<float>> values,
                          std::shared_ptr<const std::vector<int32_t>> labels,
                          uint32_t eval_batches) {
  StageOut out;
  out.header =
      make_header(self_, dir == StageDir::kForward ? wire::ACTIVATION : wire::ACTIVATION_GRAD);
  out.header.set_iteration(iteration);
  out.header.set_micro_batch(micro_batch);
  out.header.set_samples(samples);
  out.header.set_num_elements(values->size());
  out.header.set_codec(wire::CODEC_NONE);
  out.header.set_eval_batches(eval_batches);
  out.header.set_payload_bytes(values->size() * sizeof(float) +
                               (labels ? labels->size() * sizeof(int32_t) : 0));
  out.values = std::move(values);
  out.labels = std::move(labels);
  {
    std::lock_guard lock(mu_);
    if (error_) throw JobError(*error_);
    stage_commands_.push_back(std::move(out));
  }
  messenger_.wakeup().notify();
}

void PsClient::pump_stage(StageDir dir) {
  if (!stage_) return;
  {
    std::lock_guard lock(mu_);
    for (auto& out : stage_commands_) {
      const bool fwd = out.header.type() == wire::ACTIVATION;
      links_[int(fwd ? StageDir::kForward : StageDir::kBackward)].queue.push_back(std::move(out));
    }
    stage_commands_.clear();
  }
  StageLink& link = links_[int(dir)];
  // Gradients go back to the previous stage's connection (known from the membership).
  if (dir == StageDir::kBackward && prev_identity_.empty()) return;
  while (!link.queue.empty()) {
    StageOut& out = link.queue.front();
    const uint64_t bytes = out.header.payload_bytes();
    if (!link.credit.allows(bytes)) return;
    out.header.set_seq(link.credit.next_seq());
    std::vector<zmq::message_t> payload;
    payload.push_back(
        shared_frame(out.values, out.values->data(), out.values->size() * sizeof(float)));
    if (out.labels) {
      payload.push_back(
          shared_frame(out.labels, out.labels->data(), out.labels->size() * sizeof(int32_t)));
    }
    if (!send_stage_frame(dir, out.header, std::move(payload))) {
      report("cannot send " + std::string(dir_name(dir == StageDir::kForward)) + " to " +
             stage_peer(dir) + ": it is gone or does not read");
      return;
    }
    link.credit.sent(out.header.seq(), {bytes, 0, {}, SteadyClock::now()});
    link.queue.pop_front();
  }
}

bool PsClient::send_stage_frame(StageDir dir, const wire::Header& h,
                                std::vector<zmq::message_t> payload) {
  if (dir == StageDir::kForward)
    return messenger_.send(*stage_out_, nullptr, h, std::move(payload));
  return messenger_.send(*stage_in_, &prev_identity_, h, std::move(payload));
}

bool PsClient::eval_due(const StageLink& link) const {
  return stage_->replica == 0 && link.next_micro == 0 &&
         link.evaluated_at != link.next_iteration &&
         stage_->layout.evaluates_after(link.next_iteration);
}

std::string PsClient::check_order(StageDir dir, const wire::Header& h) const {
  const StageLink& link = links_[int(dir)];
  const std::string got = "got iteration " + std::to_string(h.iteration()) + " micro-batch " +
                          std::to_string(h.micro_batch());
  if (dir == StageDir::kForward && eval_due(link)) {
    return "expected evaluation batch " + std::to_string(link.next_eval) +
           " of the test-set pass after iteration " + std::to_string(link.next_iteration) +
           " (job.evaluate / job.eval_every), " + got;
  }
  if (h.iteration() != link.next_iteration || h.micro_batch() != link.next_micro) {
    return "expected iteration " + std::to_string(link.next_iteration) + " micro-batch " +
           std::to_string(link.next_micro) + ", " + got;
  }
  return {};
}

std::string PsClient::check_eval_order(StageDir dir, const wire::Header& h) const {
  const StageLink& link = links_[int(dir)];
  const std::string got = "got evaluation batch " + std::to_string(h.micro_batch()) + " of " +
                          std::to_string(h.eval_batches()) + " after iteration " +
                          std::to_string(h.iteration());
  if (dir != StageDir::kForward) return "evaluation batches travel forward only; " + got;
  if (!eval_due(link) || h.iteration() != link.next_iteration) {
    return "no test-set pass is due: expected iteration " + std::to_string(link.next_iteration) +
           " micro-batch " + std::to_string(link.next_micro) + ", " + got;
  }
  const bool starts = link.eval_batches == 0;
  if (starts ? h.micro_batch() != 0
             : h.eval_batches() != link.eval_batches || h.micro_batch() != link.next_eval) {
    return "expected evaluation batch " + std::to_string(link.next_eval) +
           (starts ? std::string() : " of " + std::to_string(link.eval_batches)) + ", " + got;
  }
  const uint32_t most = stage_->layout.max_micro_rows();
  if (h.samples() < 1 || h.samples() > most) {
    return "an evaluation batch has 1 to " + std::to_string(most) + " samples; " + got + " of " +
           std::to_string(h.samples());
  }
  return {};
}

std::string PsClient::check_stage(StageDir dir, const wire::Header& h,
                                  const std::vector<zmq::message_t>& payload) const {
  const bool fwd = dir == StageDir::kForward;
  const bool eval = h.eval_batches() > 0;
  if (std::string why = eval ? check_eval_order(dir, h) : check_order(dir, h); !why.empty()) {
    return why;
  }
  const std::string what = eval ? "evaluation batch " : "micro-batch ";
  const uint64_t rows = eval ? h.samples() : stage_->layout.micro_rows(h.micro_batch());
  const uint64_t width = fwd ? stage_->in_width : stage_->out_width;
  if (h.samples() != rows || h.num_elements() != rows * width || h.codec() != wire::CODEC_NONE) {
    return what + std::to_string(h.micro_batch()) + " has " + std::to_string(rows) +
           " samples of " + std::to_string(width) + " floats (uncompressed); the header says " +
           std::to_string(h.samples()) + " samples, " + std::to_string(h.num_elements()) +
           " elements, codec " + std::to_string(h.codec());
  }
  if (payload.size() != (fwd ? 2u : 1u) || payload[0].size() != rows * width * sizeof(float) ||
      (fwd && payload[1].size() != rows * sizeof(int32_t))) {
    return "expected " + std::string(fwd ? "2 frames (values, labels)" : "1 frame") + " of " +
           std::to_string(rows * width * sizeof(float)) +
           (fwd ? " and " + std::to_string(rows * 4) : "") + " bytes, got " +
           std::to_string(payload.size()) + " frames";
  }
  if (fwd) {
    for (uint64_t i = 0; i < rows; ++i) {
      int32_t label = 0;
      std::memcpy(&label, static_cast<const char*>(payload[1].data()) + i * 4, 4);
      if (label < 0 || label >= stage_->classes) {
        return "label " + std::to_string(label) + " of sample " + std::to_string(i) +
               " is not in [0, " + std::to_string(stage_->classes) + ")";
      }
    }
  }
  return {};
}

void PsClient::take_stage(StageDir dir, const wire::Header& h,
                          std::vector<zmq::message_t>& payload) {
  StageLink& link = links_[int(dir)];
  const bool fwd = dir == StageDir::kForward;
  const bool eval = h.eval_batches() > 0;
  if (eval) {
    link.eval_batches = h.eval_batches();
    if (++link.next_eval == link.eval_batches) {  // the pass is whole
      link.evaluated_at = link.next_iteration;
      link.eval_batches = 0;
      link.next_eval = 0;
    }
  } else if (fwd) {
    if (++link.next_micro == stage_->layout.micro_batches) {
      link.next_micro = 0;
      ++link.next_iteration;
    }
  } else if (link.next_micro-- == 0) {
    link.next_micro = stage_->layout.micro_batches - 1;
    ++link.next_iteration;
  }
  wire::Header ack = make_header(self_, wire::STAGE_ACK);
  ack.set_iteration(h.iteration());
  ack.set_micro_batch(h.micro_batch());
  ack.set_seq(h.seq());
  ack.set_num_elements(h.payload_bytes());  // bytes acknowledged, for the sender's credit
  // The acknowledgement travels against the data: back to whoever sent it.
  send_stage_frame(fwd ? StageDir::kBackward : StageDir::kForward, ack);
  StageMessage msg;
  msg.iteration = h.iteration();
  msg.micro_batch = h.micro_batch();
  msg.samples = h.samples();
  msg.eval_batches = h.eval_batches();
  msg.values = std::move(payload[0]);
  if (fwd) msg.labels = std::move(payload[1]);
  std::lock_guard lock(mu_);
  (eval ? eval_inbox_ : stage_inbox_[int(dir)])[{h.iteration(), h.micro_batch()}] = std::move(msg);
  cv_.notify_all();
}

// data_dir: the traffic the link delivers (kForward: the ROUTER, from the previous stage).
void PsClient::register_stage(StageDir data_dir, Messenger::LinkId link) {
  const bool from_prev = data_dir == StageDir::kForward;
  const StageDir back = from_prev ? StageDir::kBackward : StageDir::kForward;  // toward the peer
  messenger_.on_bad(link, [this, data_dir](const std::string& identity, const wire::Header&,
                                           const WireError& err) {
    if (stage_neighbour(data_dir, identity)) stage_malformed(data_dir, nullptr, err);
  });
  messenger_.admit(link, [this, data_dir, back](Inbound& m) {
    if (!stage_neighbour(data_dir, m.identity)) return false;
    const uint32_t peer = stage_peer_rank(back);
    if (m.header.role() == wire::WORKER && m.header.rank() == peer) return true;
    stage_malformed(data_dir, &m.header, {ErrorCode::kNotRegistered,
                                          "claims to be " +
                                              peer_name(m.header.role(), m.header.rank())});
    return false;
  });
  messenger_.on(link, wire::STAGE_ACK, [this, back](Inbound& m) { on_stage_ack(back, m.header); });
  messenger_.on(link, wire::ERROR, [this, back](Inbound& m) {
    const wire::Header& h = m.header;
    metrics_.error("refused_by_stage");
    report(stage_peer(back) + " rejected " + wire::MsgType_Name(h.error().about()) +
           " of iteration " + std::to_string(h.iteration()) + ": " +
           printable(h.error().message(), 1024));
  });
  messenger_.on(link, from_prev ? wire::ACTIVATION : wire::ACTIVATION_GRAD,
                [this, data_dir](Inbound& m) {
                  if (std::string why = check_stage(data_dir, m.header, m.payload); !why.empty()) {
                    stage_malformed(data_dir, &m.header, {ErrorCode::kBadSize, why});
                  } else {
                    take_stage(data_dir, m.header, m.payload);
                  }
                });
  messenger_.otherwise(link, [this, data_dir, back](Inbound& m) {
    stage_malformed(data_dir, &m.header,
                    {ErrorCode::kUnexpected, std::string(wire::MsgType_Name(m.header.type())) +
                                                 " is not what " + stage_peer(back) +
                                                 " sends on this link"});
  });
}

bool PsClient::stage_neighbour(StageDir data_dir, const std::string& identity) {
  if (data_dir != StageDir::kForward) return true;  // a DEALER: only the next stage is there
  const StageDir back = StageDir::kBackward;
  // The identity the previous stage registered with (the membership's stage map); before the
  // membership nothing is expected there.
  if (!prev_identity_.empty() && identity == prev_identity_) return true;
  // A stranger on the stage port: refused, and the job goes on.
  metrics_.error("stage_stranger");
  log_.warn("stage stranger", "ignored a message from " + printable(identity) +
                                  " on the stage port: only " + stage_peer(back) + " sends there");
  return false;
}

void PsClient::on_stage_ack(StageDir dir, const wire::Header& h) {
  const auto sent = links_[int(dir)].credit.acked(h.seq());
  if (!sent || !timeline_) return;
  char args[96];
  std::snprintf(args, sizeof args, "{\"bytes\":%llu,\"to\":%u}",
                (unsigned long long)sent->bytes, stage_peer_rank(dir));
  const bool fwd = dir == StageDir::kForward;
  // Each direction numbers its own messages: the trace's flow ids keep them apart.
  timeline_->flight(fwd ? "activation" : "activation grad",
                    "it " + std::to_string(h.iteration()) + " mb " +
                        std::to_string(h.micro_batch()),
                    2 * h.seq() + (fwd ? 0 : 1), sent->sent, SteadyClock::now(), args);
}

void PsClient::stage_malformed(StageDir data_dir, const wire::Header* h, const WireError& err) {
  // From the neighbour, and wrong: tell it, and end the job naming it.
  const StageDir back = data_dir == StageDir::kForward ? StageDir::kBackward : StageDir::kForward;
  metrics_.error(error_code_name(err.code));
  wire::Header e = make_header(self_, wire::ERROR);
  e.mutable_error()->set_code(uint32_t(err.code));
  e.mutable_error()->set_message(err.message);
  if (h) {
    e.mutable_error()->set_about(h->type());
    e.set_iteration(h->iteration());
    e.set_seq(h->seq());
  }
  send_stage_frame(back, e);
  report("worker " + std::to_string(rank_) + " got a malformed " +
         (h ? std::string(wire::MsgType_Name(h->type())) : std::string("message")) + " from " +
         stage_peer(back) + ": " + err.message);
}

}  // namespace psrt
