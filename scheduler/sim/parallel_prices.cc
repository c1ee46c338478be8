#include "scheduler/sim/parallel_prices.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "scheduler/sim/grad_optimizer.h"
#include "scheduler/sim/simulator.h"

namespace psrt::sim {

uint32_t search_threads(uint32_t wanted) {
  if (wanted > 0) return wanted;
  return std::clamp<uint32_t>(std::thread::hardware_concurrency(), 1, 8);
}

std::vector<JitteredPrice> jittered_prices(const ModelDesc& model, const SimConfig& config,
                                           const std::vector<Grouping>& groupings,
                                           uint32_t threads) {
  const std::size_t jobs = groupings.size() * kJitter.size();
  std::vector<double> ms(jobs);
  std::vector<uint64_t> events(jobs);
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::exception_ptr failure;  // the first simulation that threw, on whichever thread
  const auto work = [&] {
    try {
      for (std::size_t j = next++; j < jobs; j = next++) {
        SimConfig c = config;
        c.grouping = groupings[j / kJitter.size()];
        c.bandwidth_bytes_per_s *= kJitter[j % kJitter.size()];
        const SimResult r = simulate(model, c);
        ms[j] = r.iteration_ms;
        events[j] = r.events;
      }
    } catch (...) {  // thrown on the caller's thread below, not std::terminate on a helper's
      std::lock_guard lock(mu);
      if (!failure) failure = std::current_exception();
      next = jobs;  // the others stop after their current simulation
    }
  };
  const auto helpers = std::min<std::size_t>(search_threads(threads), jobs) - (jobs > 0 ? 1 : 0);
  std::vector<std::jthread> pool;
  for (std::size_t t = 0; t < helpers; ++t) pool.emplace_back(work);
  work();
  pool.clear();  // joins
  if (failure) std::rethrow_exception(failure);
  std::vector<JitteredPrice> prices(groupings.size());
  for (std::size_t g = 0; g < groupings.size(); ++g) {
    double sum = 0;  // in kJitter's order, as jittered_ms sums
    for (std::size_t f = 0; f < kJitter.size(); ++f) {
      sum += ms[g * kJitter.size() + f];
      prices[g].events = std::max(prices[g].events, events[g * kJitter.size() + f]);
    }
    prices[g].ms = sum / double(kJitter.size());
  }
  return prices;
}

}  // namespace psrt::sim
