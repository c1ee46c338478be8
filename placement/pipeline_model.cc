#include "placement/pipeline_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "scheduler/schedule_policy.h"

namespace psrt::placement {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Send {
  uint32_t to;       // receiving stage
  uint32_t channel;  // sending stage * stages + receiving stage (one per device pair in use)
  double ms, latency;
  double src;  // after the sending stage's start of the micro-batch, when it is ready
  double dst;  // after the receiving stage's start, when it is needed
};

struct Item {  // a layer with parameters
  double bwd_through;  // its last backward ends this long after the stage's last backward starts
  double fwd_before;   // its forward starts this long after the stage's forward starts
  uint64_t bytes;
  uint32_t key;        // push priority (its first tensor's key)
};

}  // namespace

struct PipelineModel::Layout {
  std::vector<uint32_t> device;           // per stage
  std::vector<double> fwd, bwd;           // per stage, one micro-batch
  std::vector<std::vector<Send>> out_f;   // per stage, by src
  std::vector<std::vector<Send>> out_b;   // per stage, by src
  std::vector<std::vector<Item>> items;   // per stage, by position
  double push_ms_per_byte = 0;
};

PipelineModel::PipelineModel(const Problem& problem)
    : problem_(problem), order_(topological_order(problem.model, problem.model.name)),
      micro_(problem.setup.micro_batches) {
  const auto& m = problem.model;
  const std::size_t n = order_.size();
  pos_.assign(n, 0);
  for (std::size_t p = 0; p < n; ++p) pos_[order_[p]] = static_cast<uint32_t>(p);
  consumers_.assign(n, {});
  param_bytes_.assign(n, 0);
  for (std::size_t p = 0; p < n; ++p) {
    const auto& l = m.layers[order_[p]];
    for (uint32_t u : l.inputs) consumers_[pos_[u]].push_back(static_cast<uint32_t>(p));
    for (uint32_t key : l.tensors) param_bytes_[order_[p]] += 4 * m.tensors[key].num_elements;
  }
  for (const auto& d : problem.devices.devices) {
    scale_.push_back(compute_scale(m, d) / static_cast<double>(micro_));
  }
  act_bytes_per_element_ = 4.0 * static_cast<double>(problem.setup.micro_batch_size());
}

// Stages, their sums and offsets, the transfers and the parameter items of one plan; false when
// a transfer would go from a later stage to an earlier one.
bool PipelineModel::build(const std::vector<uint32_t>& dev, Layout& out) const {
  const auto& m = problem_.model;
  const auto& devs = problem_.devices;
  const std::size_t n = order_.size(), k = devs.devices.size();
  std::vector<uint32_t> stage_of(k, UINT32_MAX);
  for (uint32_t l : order_) {
    if (stage_of[dev[l]] == UINT32_MAX) {
      stage_of[dev[l]] = static_cast<uint32_t>(out.device.size());
      out.device.push_back(dev[l]);
    }
  }
  const std::size_t s_count = out.device.size();
  out.fwd.assign(s_count, 0);
  out.bwd.assign(s_count, 0);
  out.out_f.assign(s_count, {});
  out.out_b.assign(s_count, {});
  out.items.assign(s_count, {});
  std::vector<double> fwd_before(n), bwd_through(n), bwd_before(n);
  for (uint32_t l : order_) {
    const uint32_t s = stage_of[dev[l]];
    fwd_before[l] = out.fwd[s];
    out.fwd[s] += m.layers[l].forward_ms * scale_[dev[l]];
  }
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    const uint32_t l = *it, s = stage_of[dev[l]];
    bwd_before[l] = out.bwd[s];
    out.bwd[s] += m.layers[l].backward_ms * scale_[dev[l]];
    bwd_through[l] = out.bwd[s];
  }
  // One channel per ordered pair of the stages' devices.
  const auto channel = [&](uint32_t from, uint32_t to) {
    return static_cast<uint32_t>(stage_of[from] * s_count + stage_of[to]);
  };
  std::vector<uint32_t> seen;
  for (std::size_t p = 0; p < n; ++p) {
    const uint32_t u = order_[p], a = dev[u];
    seen.clear();
    for (uint32_t q : consumers_[p]) {  // ascending: the first on each device reads it first
      const uint32_t v = order_[q], e = dev[v];
      if (e == a || std::find(seen.begin(), seen.end(), e) != seen.end()) continue;
      seen.push_back(e);
      if (stage_of[e] < stage_of[a]) return false;
      const double bytes =
          act_bytes_per_element_ * static_cast<double>(m.layers[u].activation_elements);
      const Link& there = devs.between(a, e);
      const Link& back = devs.between(e, a);
      out.out_f[stage_of[a]].push_back({stage_of[e], channel(a, e),
                                        bytes / there.bytes_per_s * 1e3, there.latency_ms,
                                        fwd_before[u] + m.layers[u].forward_ms * scale_[a],
                                        fwd_before[v]});
      out.out_b[stage_of[e]].push_back({stage_of[a], channel(e, a),
                                        bytes / back.bytes_per_s * 1e3, back.latency_ms,
                                        bwd_through[v], bwd_before[u]});
    }
    if (param_bytes_[u] > 0) {
      out.items[stage_of[a]].push_back(
          {bwd_through[u], fwd_before[u], param_bytes_[u], m.layers[u].tensors.front()});
    }
  }
  for (auto& sends : out.out_b) {
    std::stable_sort(sends.begin(), sends.end(),
                     [](const Send& x, const Send& y) { return x.src < y.src; });
  }
  const auto& opt = problem_.options;
  const double share =
      std::min(1.0, double(opt.servers) / (double(opt.replicas) * double(s_count)));
  out.push_ms_per_byte = 1e3 / (devs.server_link.bytes_per_s * share);
  return true;
}

namespace {

struct PushResult {
  double gate = -kInf;  // the next forward's start, as the parameters' returns allow
  double end = 0;       // the last value back
};

// Priority modes: gradients are released in reverse forward order, so each later release has a
// higher priority and preempts what is being sent, at the end of the piece in flight (when that
// piece is the previous release's, whose grid of pieces is known: a release during it starts when
// it ends). In release order, item i finishes at the end of the busy period its own bytes open:
// r_i + w_i when the next release comes after that; else the next item's busy period (ending at
// C_{i+1}) goes first and i's remaining bytes follow, preempted again by any release inside them.
// Returns per item (in `items` order) when its last byte is up.
template <typename Ms, typename Piece>
std::vector<double> priority_finish(const std::vector<Item>& items, double last_backward, Ms ms,
                                    Piece piece) {
  const std::size_t k = items.size();
  std::vector<std::size_t> by_release(k);
  std::iota(by_release.begin(), by_release.end(), 0);
  std::stable_sort(by_release.begin(), by_release.end(), [&](std::size_t a, std::size_t b) {
    return items[a].bwd_through < items[b].bwd_through ||
           (items[a].bwd_through == items[b].bwd_through && items[a].key > items[b].key);
  });
  std::vector<double> start(k), w(k), done(k), up(k);
  double piece_end = -kInf;  // the end of the piece that blocked the last release
  for (std::size_t i = 0; i < k; ++i) {
    const Item& it = items[by_release[i]];
    w[i] = ms(it.bytes);
    start[i] = last_backward + it.bwd_through;
    if (i == 0) continue;
    const double p = piece(items[by_release[i - 1]].bytes);
    if (start[i] < piece_end) {
      start[i] = piece_end;
    } else if (start[i] < start[i - 1] + w[i - 1] && p > 0) {
      piece_end = std::min(start[i - 1] + std::ceil((start[i] - start[i - 1]) / p) * p,
                           start[i - 1] + w[i - 1]);
      start[i] = piece_end;
    }
  }
  std::vector<std::size_t> next(k);  // the first release after i's busy period
  for (std::size_t i = k; i-- > 0;) {
    double at = start[i], rest = w[i];
    std::size_t j = i + 1;
    while (j < k && start[j] < at + rest) {
      rest -= start[j] - at;
      at = done[j];
      j = next[j];
    }
    done[i] = at + rest;
    next[i] = j;
    up[by_release[i]] = done[i];
  }
  return up;
}

// One stage's push and the values' return, given when its last backward started (closed form of
// a single link with release times; see the header).
PushResult push(const std::vector<Item>& items, double last_backward, Mode mode, uint64_t chunk,
                double ms_per_byte, double latency) {
  PushResult r;
  if (items.empty()) return r;
  const SchedulePolicy policy(mode);
  const bool chunked = policy.chunked();
  const auto ms = [&](uint64_t b) { return static_cast<double>(b) * ms_per_byte; };
  const auto piece = [&](uint64_t b) {
    return chunked ? ms(std::min(b, chunk)) : ms(b);
  };
  std::vector<double> up(items.size());
  double t1 = -kInf;  // the last release
  for (const auto& it : items) t1 = std::max(t1, last_backward + it.bwd_through);
  std::vector<std::size_t> by_key(items.size());
  std::iota(by_key.begin(), by_key.end(), 0);
  std::stable_sort(by_key.begin(), by_key.end(),
                   [&](std::size_t a, std::size_t b) { return items[a].key < items[b].key; });
  if (policy.holds_until_backward_done()) {
    double at = t1;
    for (std::size_t i : by_key) up[i] = at += ms(items[i].bytes);
  } else if (!policy.by_priority()) {
    double at = 0;
    for (std::size_t i = items.size(); i-- > 0;) {  // in the order they became ready
      at = std::max(at, last_backward + items[i].bwd_through) + ms(items[i].bytes);
      up[i] = at;
    }
  } else {
    up = priority_finish(items, last_backward, ms, piece);
  }
  // The values come back on the downlink in the order they went up, each item's last piece
  // after its last byte is up (and after the piece before it came back).
  std::vector<std::size_t> by_up(items.size());
  std::iota(by_up.begin(), by_up.end(), 0);
  std::stable_sort(by_up.begin(), by_up.end(),
                   [&](std::size_t a, std::size_t b) { return up[a] < up[b]; });
  double down = -kInf;
  for (std::size_t i : by_up) {
    down = std::max(down, up[i] + latency) + piece(items[i].bytes);
    const double back = down + latency;
    r.end = std::max(r.end, back);
    r.gate = std::max(r.gate, back - items[i].fwd_before);
  }
  return r;
}

}  // namespace

double PipelineModel::iterate(const Layout& lay) const {
  // Channels between the stages' devices only: a K x K table per estimate cost 128 MB of
  // zeroing with 4096 devices (psrt-place ran for minutes).
  const std::size_t s_count = lay.device.size();
  const auto& opt = problem_.options;
  const double latency = problem_.devices.server_link.latency_ms;
  std::vector<double> chan(s_count * s_count, 0.0), free(s_count, 0.0);
  std::vector<double> gate(s_count, -kInf), need(s_count);
  std::vector<double> last_backward(s_count);
  double ends[3] = {0, 0, 0};
  const auto send = [&](const std::vector<Send>& out, double start) {
    for (const Send& x : out) {
      double& c = chan[x.channel];
      c = std::max(c, start + x.src) + x.ms;
      need[x.to] = std::max(need[x.to], c + x.latency - x.dst);
    }
  };
  for (double& end : ends) {
    for (uint32_t m = 0; m < micro_; ++m) {  // forward, every micro-batch
      need.assign(s_count, -kInf);
      for (std::size_t s = 0; s < s_count; ++s) {
        double start = std::max(free[s], need[s]);
        if (m == 0) start = std::max(start, gate[s]);
        free[s] = start + lay.fwd[s];
        send(lay.out_f[s], start);
      }
    }
    for (uint32_t m = 0; m < micro_; ++m) {  // backward, every micro-batch
      need.assign(s_count, -kInf);
      for (std::size_t s = s_count; s-- > 0;) {
        const double start = std::max(free[s], need[s]);
        free[s] = start + lay.bwd[s];
        last_backward[s] = start;
        send(lay.out_b[s], start);
      }
    }
    end = *std::max_element(free.begin(), free.end());
    for (std::size_t s = 0; s < s_count; ++s) {
      const auto r = push(lay.items[s], last_backward[s], opt.mode, opt.chunk_bytes,
                          lay.push_ms_per_byte, latency);
      gate[s] = r.gate;
      end = std::max(end, r.end);
    }
  }
  return ends[2] - ends[1];
}

double PipelineModel::step_ms(const std::vector<uint32_t>& device_of_layer) const {
  const auto k = static_cast<uint32_t>(problem_.devices.devices.size());
  const auto use = memory_use(problem_.model, device_of_layer, k, problem_.setup);
  if (!memory_violation(use, problem_.devices).empty()) return kInf;
  Layout lay;
  if (!build(device_of_layer, lay)) return kInf;
  return iterate(lay);
}

}  // namespace psrt::placement
