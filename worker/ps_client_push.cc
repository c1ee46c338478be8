// PsClient, I/O-thread side of the data: gradients into the PushQueue and onto the wire, singly
// or in GradOptimizer's groups (scheduler/grouping.h), and parameters back into the model.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/grouping_spec.h"
#include "scheduler/sim/grad_optimizer.h"
#include "worker/grouping_plan.h"
#include "worker/ps_client.h"

namespace psrt {

namespace {

using SteadyClock = std::chrono::steady_clock;

std::vector<std::string> names_of(const std::vector<sim::NamedGrouping>& groupings) {
  std::vector<std::string> names;
  for (const auto& g : groupings) names.push_back(g.name);
  return names;
}

}  // namespace

void PsClient::search_grouping(wire::Register& reg) {
  const GroupingSpec spec = *parse_grouping(config_.scheduler.grouping);
  if (spec.kind == GroupingSpec::Kind::kNone) return;
  sim::SimConfig sc;
  sc.workers = uint32_t(config_.cluster.workers);
  sc.servers = uint32_t(config_.cluster.servers);  // the membership's (the servers check it)
  sc.bandwidth_bytes_per_s = config_.scheduler.link_bytes_per_s;
  sc.mode = config_.scheduler.mode;
  sc.chunk_bytes = config_.scheduler.chunk_bytes;
  sc.credit_bytes = config_.scheduler.credit_bytes;
  sc.batch_bytes = config_.scheduler.batch_bytes;
  sc.host_cores = config_.scheduler.host_cores;
  if (!config_.scheduler.calibration.empty()) {
    try {  // the file's own key, and a refusal (exit 2), not "scheduler.grouping" and exit 1
      sc.calibration = sim::load_calibration(config_.scheduler.calibration);
    } catch (const std::exception& e) {
      throw ConfigError(std::string("scheduler.calibration: ") + e.what());
    }
  }
  try {
    const auto choice = sim::choose_grouping(model_, sc, spec);
    *reg.mutable_grouping() = grouping_plan(config_.scheduler.grouping, choice, sc.workers,
                                            config_.scheduler.grouping_trials,
                                            config_.scheduler.grouping_trial_iterations);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("scheduler.grouping: ") + e.what());
  }
}

void PsClient::plan_groups(const wire::Membership& m) {
  const uint32_t tensors = uint32_t(model_.tensors.size());
  JobGrouping job;
  if (m.has_grouping()) {
    try {
      job = job_grouping(m.grouping(), tensors);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("worker 0's grouping plan is unusable: ") + e.what());
    }
  } else {
    job.spec = "none";
    job.candidates.push_back({"none", Grouping::singletons(tensors), 0});
  }
  const GroupingSpec spec = *parse_grouping(job.spec);
  const auto own = parse_grouping(config_.scheduler.grouping);  // "64KiB" and "65536" agree
  if (!own || own->text() != spec.text()) {
    spdlog::warn("worker 0 groups by '{}' and this worker's scheduler.grouping says '{}': worker "
                 "0's grouping is the job's (give every worker the same config)",
                 job.spec, config_.scheduler.grouping);
  }
  release_cycle_ms_ = spec.kind == GroupingSpec::Kind::kHorovod ? spec.cycle_ms : 0;
  cycle_epoch_ = SteadyClock::now();
  use_grouping(job.candidates[0].grouping);
  if (spec.kind == GroupingSpec::Kind::kNone) return;
  if (rank_ == 0) {
    spdlog::info("grouping {}{}: {} messages per iteration; {}", spec.text(),
                 job.search.empty() ? "" : " (" + job.search + ")", plan_.messages().size(),
                 grouping_.describe(model_, 1000));
  }
  if (job.candidates.size() < 2) return;
  trial_groupings_ = std::move(job.candidates);
  trials_.emplace(trial_groupings_.size(), job.trial_iterations);
  grouping_final_from_ = kTrialsRunning;
}

void PsClient::use_grouping(const Grouping& g) {
  grouping_ = g;
  plan_ = MessagePlan(shards_, grouping_, group_message_bytes(config_.scheduler.credit_bytes));
  batches_.assign(shards_.num_servers(), {});
  batch_bytes_ = config_.scheduler.batch_bytes;
  group_taken_.assign(grouping_.num_groups(), 0);
  held_groups_.clear();
  group_priority_.assign(grouping_.num_groups(), UINT32_MAX);
  for (uint32_t k = 0; k < grouping_.num_tensors(); ++k) {
    auto& p = group_priority_[grouping_.group_of(k)];
    p = std::min(p, priority_[k]);
  }
  // bigdl holds the pushes back until every message of this worker's is in: a stage pushes only
  // its own tensors (ungrouped: config.cc refuses grouping for split jobs).
  queue_.expect_tensors(stage_ ? uint32_t(stage_->keys.size()) : grouping_.num_groups());
}

// At the first gradient of each iteration while the trials run: the interval is timed, and the
// grouping changes when the trials say so and nothing of the iteration before is left to send
// (in synchronous training it never is: backward i+1 needs every parameter of iteration i).
void PsClient::time_trials(const Command& cmd) {
  if (trial_iteration_ && cmd.iteration <= *trial_iteration_) return;
  const bool first = !trial_iteration_;
  trial_iteration_ = cmd.iteration;
  if (choice_due_) {
    take_choice(cmd.iteration);
    return;
  }
  // The trials, and the iteration worker 0's choice takes to reach every worker.
  const uint64_t need = GroupingTrials::iterations(trial_groupings_.size(), trials_->rounds()) + 1;
  const uint64_t left = total_iterations_ - std::min(total_iterations_, cmd.iteration);
  if (first && left < 2 * need) {
    if (rank_ == 0) {
      spdlog::info("grouping trials skipped: they take {} iterations, more than half of the {} "
                   "left; the search's choice stands", need, left);
    }
    trials_.reset();
    grouping_final_from_ = 0;
    return;
  }
  if (first && rank_ == 0) {
    std::string names;
    for (const auto& name : names_of(trial_groupings_)) names += (names.empty() ? "" : ", ") + name;
    spdlog::info("grouping trials: {} groupings taking turns after {} untimed iterations, {} timed "
                 "iterations each, the fastest median kept: {}", trial_groupings_.size(),
                 GroupingTrials::kWarmup, trials_->rounds(), names);
  }
  const auto to = trials_->on_iteration(cmd.iteration, cmd.enqueued, nothing_left_to_send());
  if (to) use_grouping(trial_groupings_[*to].grouping);
  if (!trials_->done()) return;
  // Worker 0's choice is the job's: it goes out on this iteration's pushes, and every worker
  // has it (on a reply of this iteration) before its first gradient of the next.
  choice_due_ = cmd.iteration + 1;
  const std::string line = trials_->describe(names_of(trial_groupings_));
  if (rank_ == 0) {
    announce_choice_ = uint32_t(trials_->winner()) + 1;
    announce_from_ = *choice_due_;
    spdlog::info("grouping trials done: {}; every worker takes {} from iteration {}", line,
                 trial_groupings_[trials_->winner()].name, *choice_due_);
  } else {
    spdlog::debug("grouping trials done: {}; worker 0 chooses", line);
  }
}

bool PsClient::nothing_left_to_send() const {
  return queue_.pending_chunks() == 0 && held_groups_.empty() &&
         std::all_of(group_taken_.begin(), group_taken_.end(), [](uint32_t n) { return n == 0; });
}

void PsClient::take_choice(uint64_t iteration) {
  const uint64_t due = *choice_due_;
  choice_due_.reset();
  uint32_t k = announced_choice_;
  if (iteration != due || announced_from_ != due || k == 0 || k > trial_groupings_.size()) {
    // The servers reply to each worker as it grouped (server_groups.cc), so a worker that runs
    // another grouping than the rest is slower, never stuck: it keeps its own trials' winner.
    k = uint32_t(trials_->winner()) + 1;
    spdlog::warn("grouping trials: worker 0's choice for iteration {} did not arrive (at "
                 "iteration {}: choice {} for iteration {}); this worker keeps its own trials' "
                 "winner, {}", due, iteration, announced_choice_, announced_from_,
                 trial_groupings_[k - 1].name);
  }
  const auto& kept = trial_groupings_[k - 1];
  if (k - 1 != trials_->current()) {
    if (!nothing_left_to_send()) {  // synchronous training never gets here (time_trials)
      fail("grouping trials: iteration " + std::to_string(iteration) + " began with gradients of "
           "the one before still to send; the grouping cannot change");
      trials_.reset();
      return;
    }
    use_grouping(kept.grouping);
  }
  if (rank_ == 0) {
    spdlog::info("grouping kept: {} from iteration {}: {} messages per iteration; {}", kept.name,
                 iteration, plan_.messages().size(), grouping_.describe(model_, 1000));
  }
  grouping_final_from_ = iteration + 1;
  trials_.reset();
  trial_groupings_.clear();
}

void PsClient::take_commands() {
  std::deque<Command> cmds;
  bool shutdown = false;
  {
    std::lock_guard lock(mu_);
    cmds.swap(commands_);
    shutdown = want_shutdown_;
  }
  for (auto& cmd : cmds) {
    if (trials_) time_trials(cmd);  // until worker 0's choice is in force
    const uint32_t key = cmd.key;
    cmd.unsent = uint32_t(shards_.tensor_chunks(key).size());
    pending_[key] = std::move(cmd);
    // A group leaves once backward has produced all of its tensors.
    const uint32_t g = grouping_.group_of(key);
    if (++group_taken_[g] < grouping_.end(g) - grouping_.begin(g)) continue;
    group_taken_[g] = 0;
    if (release_cycle_ms_ > 0) {
      const auto now = SteadyClock::now();
      const std::chrono::duration<double, std::milli> cycle(release_cycle_ms_);
      const double ticks = std::ceil((now - cycle_epoch_) / cycle);
      held_groups_.emplace_back(
          cycle_epoch_ + std::chrono::duration_cast<SteadyClock::duration>(cycle * ticks), g);
      continue;
    }
    queue_group(g);
  }
  if (shutdown && !shutdown_sent_ && queue_.idle() && held_groups_.empty()) {
    shutdown_sent_ = true;
    send_barrier("shutdown");
  }
}

void PsClient::queue_group(uint32_t g) {
  std::vector<PushUnit> units;
  for (uint32_t id : plan_.group_messages(g)) {
    PushUnit u;
    u.chunk = id;
    for (uint32_t chunk : plan_.messages()[id].chunks) u.bytes += payload_of(chunk).size();
    units.push_back(u);
  }
  queue_.add(grouping_.begin(g), group_priority_[g], std::move(units));
}

std::optional<SteadyClock::time_point> PsClient::release_due_groups(SteadyClock::time_point now) {
  std::optional<SteadyClock::time_point> next;
  std::size_t kept = 0;
  for (const auto& [at, g] : held_groups_) {  // in completion order, so backward's order
    if (at <= now) {
      queue_group(g);
    } else {
      held_groups_[kept++] = {at, g};
      next = next ? std::min(*next, at) : at;
    }
  }
  held_groups_.resize(kept);
  return next;
}

void PsClient::on_params(std::size_t server, const wire::Header& h,
                         std::vector<zmq::message_t>& payload) {
  if (h.grouping_choice() > 0) {  // worker 0's choice after the grouping trials, relayed
    announced_choice_ = h.grouping_choice();
    announced_from_ = h.grouping_from();
  }
  // A group's members, or the one chunk; all are checked before any is applied.
  std::vector<const ChunkDesc*> chunks;
  const int n = std::max(1, h.members_size());
  std::vector<std::span<const uint8_t>>& bytes = member_bytes_;
  if (h.members_size() > 0) {
    member_payloads(h, payload, bytes);  // decode_header has checked the frames
  } else {
    bytes.assign(1, {});
    if (payload.size() == 1) {
      bytes[0] = {static_cast<const uint8_t*>(payload[0].data()), payload[0].size()};
    }
  }
  for (int i = 0; i < n; ++i) {
    const bool m = h.members_size() > 0;
    const ChunkDesc* c = params_target(server, m ? h.members(i).key() : h.key(),
                                       m ? h.members(i).offset() : h.offset(),
                                       m ? h.members(i).length() : h.length(), h.iteration());
    if (!c || (n == 1 && payload.size() != 1)) return;
    chunks.push_back(c);
  }
  for (int i = 0; i < n; ++i) {
    const wire::Codec codec = h.members_size() ? h.members(i).codec() : h.codec();
    if (!apply_params(*chunks[i], codec, h.iteration(), bytes[std::size_t(i)])) return;
  }
  // The pushes this reply acknowledges (the server folds a completing push's ACK into it).
  for (uint64_t seq : h.acks()) on_ack(server, seq);
  auto next_pull = [this](std::size_t, uint32_t c) { send_pull(shards_.chunks()[c]); };
  for (int i = 0; i < n; ++i) {  // answers to the first PULLs let the next go (start_pacer.h)
    start_.answered(StartPacer::Phase::kPull, server, next_pull);
  }
  // Acknowledged once per loop pass with the other replies from that server (flush_reply_acks),
  // which releases the server's reply credit toward this worker.
  PendingAcks& pending = reply_acks_.at(chunks[0]->server);
  if (pending.seqs.empty()) {
    pending.first = chunks[0];
    pending.iteration = h.iteration();
  }
  pending.seqs.push_back(h.seq());
  // The compute thread waits for a layer's (or every) chunk: woken once the last it waits for is
  // in, not by every reply (a wake-up is a context switch and a check of every chunk).
  std::lock_guard lock(mu_);
  if (!waiting_since_ || !waiting_stage_.empty() || missing_ == 0) cv_.notify_all();
}

const ChunkDesc* PsClient::params_target(std::size_t server, uint32_t key, uint64_t offset,
                                         uint64_t length, uint64_t iteration) {
  auto chunk = [&] { return "(" + std::to_string(key) + ", " + std::to_string(offset) + ")"; };
  const ChunkDesc* c = shards_.find(key, offset);
  if (!c || c->length != length) {
    log_.warn("bad message", "ignored PARAMS for an unknown chunk " + chunk());
    return nullptr;
  }
  if (c->server != server) {  // only a chunk's own server sends its values
    log_.warn("bad message", "ignored PARAMS from server " + std::to_string(server) +
                                 " for a chunk of server " + std::to_string(c->server) + " " +
                                 chunk());
    return nullptr;
  }
  // Values of iteration i answer this worker's push of i - 1 (synchronous training), the first
  // ones its PULL of the start iteration: a stale or a future iteration is a server's mistake.
  int64_t held = 0;
  uint64_t next = 0;
  {
    std::lock_guard lock(mu_);
    held = version_[c->id];
    next = held < 0 ? start_iteration_ : uint64_t(held) + 1;
  }
  if (iteration != next) {
    log_.warn("bad message", "ignored PARAMS from server " + std::to_string(server) +
                                 " of iteration " + std::to_string(iteration) + " for chunk " +
                                 chunk() + ": this worker holds iteration " +
                                 std::to_string(held) + " and takes " + std::to_string(next) +
                                 " next");
    return nullptr;
  }
  return c;
}

bool PsClient::apply_params(const ChunkDesc& c, wire::Codec codec, uint64_t iteration,
                            std::span<const uint8_t> bytes) {
  auto what = [&] {  // built only on an error
    return "PARAMS for tensor " + std::to_string(c.key) + " offset " + std::to_string(c.offset) +
           " iteration " + std::to_string(iteration);
  };
  std::span<float> dst = params_(c.key).subspan(c.offset, c.length);
  if (Status st = replies_.apply(codec, bytes, dst); !st) {
    report("server " + std::to_string(c.server) + " sent unusable " + what() + ": " + st.message());
    return false;
  }
  if (timeline_) {
    timeline_->instant(Timeline::kIo, "params", chunk_label(c.key, c.offset, int64_t(iteration)),
                       SteadyClock::now());
  }
  std::lock_guard lock(mu_);
  auto& v = version_[c.id];
  const int64_t wanted = int64_t(waiting_iteration_);
  if (waiting_since_ && v < wanted && int64_t(iteration) >= wanted && waited_for(c) &&
      missing_ > 0) {
    --missing_;
  }
  v = std::max<int64_t>(v, int64_t(iteration));
  ++stats_.params_received;
  stats_.bytes_received += bytes.size();
  return true;
}

}  // namespace psrt
