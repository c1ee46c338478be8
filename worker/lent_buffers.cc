#include "worker/lent_buffers.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace psrt {

LentBuffers::LentBuffers(std::size_t keys) : state_(std::make_shared<State>()) {
  state_->out.assign(keys, 0);
}

std::shared_ptr<const void> LentBuffers::lend(uint32_t key, const void* data) {
  {
    std::lock_guard lock(state_->mu);
    if (key >= state_->out.size()) {
      throw std::invalid_argument("lend: tensor " + std::to_string(key) + " is not in the model");
    }
    ++state_->out[key];
  }
  // The deleter runs where the last frame is released (ZeroMQ's I/O thread, or the client's):
  // it takes only this book's lock.
  return std::shared_ptr<const void>(data, [state = state_, key](const void*) {
    std::lock_guard lock(state->mu);
    --state->out[key];
    state->cv.notify_all();
  });
}

bool LentBuffers::reclaim(std::span<const uint32_t> keys) {
  std::unique_lock lock(state_->mu);
  const auto free = [&] {
    return std::all_of(keys.begin(), keys.end(),
                       [&](uint32_t k) { return k >= state_->out.size() || state_->out[k] == 0; });
  };
  state_->cv.wait(lock, [&] { return state_->abandoned || free(); });
  return free();
}

void LentBuffers::abandon() {
  std::lock_guard lock(state_->mu);
  state_->abandoned = true;
  state_->cv.notify_all();
}

std::size_t LentBuffers::lent() const {
  std::lock_guard lock(state_->mu);
  return std::size_t(std::count_if(state_->out.begin(), state_->out.end(),
                                   [](uint32_t n) { return n > 0; }));
}

}  // namespace psrt
