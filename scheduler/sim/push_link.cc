#include "scheduler/sim/push_link.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>
#include <stdexcept>
#include <string>

#include "scheduler/schedule_policy.h"

namespace psrt::sim {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

struct Piece {
  double ready;
  uint32_t priority;
  std::size_t item;
  uint64_t bytes;
  uint32_t server;
};

// One device's pieces in FIFO order (readiness, then the item's own order; bigdl: all ready when
// the last is, in key order) and its mode's choice of the next one.
//
// A piece can start at max(the uplink free, its readiness, its server's downlink free). The
// pieces are in readiness order, so per server those that can start soonest are a prefix of its
// pieces not yet sent: they are "released" into a set ordered by the tie-break (FIFO: index; by
// priority: priority, then index), and a pick looks at each server's first released piece
// instead of at every piece.
class DeviceQueue {
 public:
  DeviceQueue(const std::vector<PushItem>& items, const SchedulePolicy& policy, uint32_t servers)
      : by_priority_(policy.by_priority() && !policy.holds_until_backward_done()),
        whole_(!policy.chunked()),
        servers_(servers) {
    std::vector<std::size_t> order(items.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const bool held = policy.holds_until_backward_done();
    double all_ready = 0;
    for (const auto& it : items) all_ready = std::max(all_ready, it.ready_ms);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return held ? items[a].priority < items[b].priority : items[a].ready_ms < items[b].ready_ms;
    });
    for (std::size_t i : order) {
      for (const auto& p : items[i].pieces) {
        servers_[p.server].waiting.insert(pieces_.size());
        pieces_.push_back({held ? all_ready : items[i].ready_ms, items[i].priority, i, p.bytes,
                           p.server});
      }
    }
    for (uint32_t s = 0; s < servers; ++s) {
      if (!servers_[s].waiting.empty()) active_.push_back(s);
    }
    for (const auto& it : items) back.push_back(it.ready_ms);
    sent_.assign(pieces_.size(), false);
    left_ = pieces_.size();
  }

  bool empty() const { return left_ == 0; }

  // The piece that can leave first, given when each server's link is free, and when: a
  // whole-tensor mode's next chunk of the tensor in flight; otherwise, of the pieces that could
  // start soonest, the first in FIFO order or, by priority, the most urgent. So a device whose
  // next piece's server is busy sends to another server meanwhile, as its sockets to the
  // servers do (every push mode keeps several chunks in flight under credit).
  std::size_t pick(const std::vector<double>& in_free, double& start) {
    if (continuation()) {
      const Piece& p = pieces_[last_ + 1];
      start = std::max({up_free_, p.ready, in_free[p.server]});
      return last_ + 1;
    }
    Key best{0, pieces_.size()};
    start = kNever;
    for (uint32_t s : active_) {
      Server& sv = servers_[s];
      const double link = std::max(up_free_, in_free[s]);
      release(sv, link);
      const double t = std::max(link, sv.released_ready);
      const Key& key = *sv.released.begin();
      if (t < start || (t == start && key < best)) {
        best = key;
        start = t;
      }
    }
    return best.second;
  }

  const Piece& piece(std::size_t i) const { return pieces_[i]; }

  // Piece i went on the uplink at `start` and left it at `free`.
  void take(std::size_t i, double start, double free) {
    sent_[i] = true;
    --left_;
    last_ = i;
    last_start = start;
    up_free_ = free;
    Server& sv = servers_[pieces_[i].server];
    if (sv.waiting.erase(i) == 0) sv.released.erase(key_of(i));
    if (sv.waiting.empty() && sv.released.empty()) {
      active_.erase(std::find(active_.begin(), active_.end(), pieces_[i].server));
    }
  }

  double down_free = 0, last_start = 0;
  std::vector<double> back;  // per item, when its last reply landed

 private:
  using Key = std::pair<uint64_t, std::size_t>;  // (priority or 0, index)
  struct Server {
    std::set<std::size_t> waiting;  // not sent, not released: indices, in readiness order
    std::set<Key> released;         // not sent, each able to start at max(link, released_ready)
    double released_ready = 0;      // the latest readiness released
  };

  Key key_of(std::size_t i) const { return {by_priority_ ? pieces_[i].priority : 0, i}; }

  // Moves the server's pieces that can start as soon as any into `released`: those ready by the
  // time its link is free, or, if none is, those ready with the first. Every released piece can
  // then start at max(link, released_ready), since links only ever become free later.
  void release(Server& sv, double link) {
    double limit = std::max(link, sv.released_ready);
    if (sv.released.empty()) limit = std::max(limit, pieces_[*sv.waiting.begin()].ready);
    while (!sv.waiting.empty() && pieces_[*sv.waiting.begin()].ready <= limit) {
      const std::size_t i = *sv.waiting.begin();
      sv.waiting.erase(sv.waiting.begin());
      sv.released.insert(key_of(i));
      sv.released_ready = std::max(sv.released_ready, pieces_[i].ready);
    }
  }

  bool continuation() const {
    return whole_ && last_ != kNone && last_ + 1 < pieces_.size() && !sent_[last_ + 1] &&
           pieces_[last_ + 1].item == pieces_[last_].item;
  }

  std::vector<Piece> pieces_;
  std::vector<bool> sent_;
  std::size_t left_ = 0;
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  std::size_t last_ = kNone;
  bool by_priority_, whole_;
  double up_free_ = 0;
  std::vector<Server> servers_;
  std::vector<uint32_t> active_;  // servers with pieces not sent
};

}  // namespace

std::vector<std::vector<double>> push_and_return(const std::vector<std::vector<PushItem>>& devices,
                                                 Mode mode, const ServerLinks& links) {
  for (const auto& items : devices) {
    for (const auto& item : items) {
      for (const auto& p : item.pieces) {
        if (p.server >= links.servers) {
          throw std::invalid_argument("push: a piece names server " + std::to_string(p.server) +
                                      " of " + std::to_string(links.servers));
        }
      }
    }
  }
  const SchedulePolicy policy(mode);
  std::vector<DeviceQueue> queues;
  for (const auto& items : devices) queues.emplace_back(items, policy, links.servers);
  std::vector<double> in_free(links.servers, 0.0), out_free(links.servers, 0.0);
  const double copies = std::max(1u, links.copies);
  HostCpu* cpu = links.cpu;
  const Calibration* cal = cpu ? &cpu->calibration() : nullptr;
  auto io = [cpu](uint32_t p, double t, double ms) { return cpu ? cpu->take(p, t, ms) : t + ms; };
  while (true) {
    DeviceQueue* q = nullptr;
    std::size_t piece = 0;
    double start = kNever;
    for (auto& candidate : queues) {
      if (candidate.empty()) continue;
      double t = 0;
      const std::size_t i = candidate.pick(in_free, t);
      if (!q || t < start) {
        q = &candidate;
        piece = i;
        start = t;
      }
    }
    if (!q) break;
    const Piece& p = q->piece(piece);
    const double ms = copies * static_cast<double>(p.bytes) / links.bytes_per_s * 1e3;
    const uint32_t d = static_cast<uint32_t>(q - queues.data());
    const uint32_t server = static_cast<uint32_t>(devices.size()) + p.server;
    // The device's I/O thread hands the piece over while the one before is on the wire.
    const double handed = io(d, std::max(p.ready, q->last_start), cal ? cal->worker_send_ms() : 0);
    const double up_start = std::max(start, handed);
    const double up_end = up_start + ms;
    in_free[p.server] = std::max(in_free[p.server], up_end);
    q->take(piece, up_start, up_end);
    // The server takes the push in and replies when its uplink and the device's downlink are
    // both free; the device takes the reply in.
    const double taken = io(server, up_end + links.latency_ms,
                            cal ? copies * cal->server_receive_ms(p.bytes) : 0);
    const double reply = io(server, taken, cal ? copies * cal->server_send_ms() : 0);
    const double down_end = std::max({reply, out_free[p.server], q->down_free}) + ms;
    out_free[p.server] = down_end;
    q->down_free = down_end;
    const double in =
        io(d, down_end + links.latency_ms, cal ? cal->worker_receive_ms(p.bytes) : 0);
    q->back[p.item] = std::max(q->back[p.item], in);
  }
  std::vector<std::vector<double>> back;
  for (auto& q : queues) back.push_back(std::move(q.back));
  return back;
}

}  // namespace psrt::sim
