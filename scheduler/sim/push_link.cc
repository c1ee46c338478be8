#include "scheduler/sim/push_link.h"

#include <algorithm>
#include <limits>

#include "scheduler/schedule_policy.h"

namespace psrt::sim {

namespace {

struct Piece {
  double ready;
  uint32_t priority;
  std::size_t seq;  // ready order, then the item's index: FIFO's order
  std::size_t item;
  uint64_t bytes;
};

// Sends pieces one at a time on the uplink: when it is free, the next piece is the first ready
// one in FIFO order or, when `by_priority`, the ready one of the highest priority. Each piece's
// reply follows it over the downlink. Returns per item when its last reply landed.
std::vector<double> send(std::vector<Piece> pieces, bool by_priority, std::size_t items,
                         const PushLink& link) {
  std::vector<double> back(items, 0);
  auto ms = [&](uint64_t b) { return static_cast<double>(b) / link.bytes_per_s * 1e3; };
  std::sort(pieces.begin(), pieces.end(),
            [](const Piece& a, const Piece& b) { return a.seq < b.seq; });
  std::vector<bool> sent(pieces.size(), false);
  double up_free = 0, down_free = 0;
  for (std::size_t done = 0; done < pieces.size(); ++done) {
    std::size_t pick = pieces.size();
    double earliest = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      if (!sent[i]) earliest = std::min(earliest, pieces[i].ready);
    }
    const double t = std::max(up_free, earliest);
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      if (sent[i] || pieces[i].ready > t) continue;
      if (pick == pieces.size()) pick = i;
      if (!by_priority) break;
      if (pieces[i].priority < pieces[pick].priority) pick = i;
    }
    sent[pick] = true;
    const Piece& p = pieces[pick];
    up_free = t + ms(p.bytes);
    const double arrived = up_free + link.latency_ms;  // at the server, aggregated at once
    down_free = std::max(down_free, arrived) + ms(p.bytes);
    back[p.item] = std::max(back[p.item], down_free + link.latency_ms);
  }
  return back;
}

}  // namespace

std::vector<double> push_and_return(const std::vector<PushItem>& items, Mode mode,
                                    const PushLink& link) {
  std::vector<std::size_t> order(items.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return items[a].ready_ms < items[b].ready_ms;
  });
  double all_ready = 0;
  for (const auto& it : items) all_ready = std::max(all_ready, it.ready_ms);
  const SchedulePolicy policy(mode);
  const bool chunked = policy.chunked();
  const bool held = policy.holds_until_backward_done();
  std::vector<Piece> pieces;
  for (std::size_t rank = 0; rank < order.size(); ++rank) {
    const std::size_t i = order[rank];
    // bigdl: nothing leaves before the whole backward is done, then parameter order.
    const double ready = held ? all_ready : items[i].ready_ms;
    const std::size_t seq = held ? items[i].priority : rank;
    uint64_t left = items[i].bytes;
    do {
      const uint64_t b = chunked ? std::min<uint64_t>(left, link.chunk_bytes) : left;
      pieces.push_back({ready, items[i].priority, seq * 1000003 + pieces.size(), i, b});
      left -= b;
    } while (left > 0);
  }
  // bigdl's order is fixed above (all ready at once, seq = priority).
  const bool by_priority = policy.by_priority() && !held;
  return send(std::move(pieces), by_priority, items.size(), link);
}

}  // namespace psrt::sim
