// The simulator's callbacks: a move-only void() callable that keeps callables of up to kInline
// bytes in itself. std::function keeps only 16 bytes inline, so nearly every event the simulator
// schedules (its lambdas capture the simulation, peers and a batch of chunks) cost a heap
// allocation and a free. Larger callables still work, on the heap.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace psrt::sim {

class Action {
 public:
  static constexpr std::size_t kInline = 48;

  Action() = default;
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Action>>>
  Action(F&& f) {  // NOLINT(google-explicit-constructor): converts like std::function
    using T = std::decay_t<F>;
    if constexpr (fits<T>()) {
      new (buf_) T(std::forward<F>(f));
      ops_ = &kInlineOps<T>;
    } else {
      new (buf_) T*(new T(std::forward<F>(f)));
      ops_ = &kHeapOps<T>;
    }
  }
  Action(Action&& other) noexcept { take(other); }
  Action& operator=(Action&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  Action(const Action&) = delete;
  Action& operator=(const Action&) = delete;
  ~Action() { reset(); }

  explicit operator bool() const { return ops_ != nullptr; }
  void operator()() { ops_->call(buf_); }

 private:
  struct Ops {
    void (*call)(void*);
    void (*move)(void* from, void* to);  // constructs at `to`, destroys at `from`
    void (*destroy)(void*);
  };
  template <typename T>
  static constexpr bool fits() {
    return sizeof(T) <= kInline && alignof(T) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<T>;
  }
  template <typename T>
  static constexpr Ops kInlineOps{
      [](void* p) { (*std::launder(static_cast<T*>(p)))(); },
      [](void* from, void* to) {
        T* f = std::launder(static_cast<T*>(from));
        new (to) T(std::move(*f));
        f->~T();
      },
      [](void* p) { std::launder(static_cast<T*>(p))->~T(); }};
  template <typename T>
  static constexpr Ops kHeapOps{
      [](void* p) { (**std::launder(static_cast<T**>(p)))(); },
      [](void* from, void* to) { new (to) T*(*std::launder(static_cast<T**>(from))); },
      [](void* p) { delete *std::launder(static_cast<T**>(p)); }};

  void take(Action& other) {
    ops_ = other.ops_;
    if (ops_) ops_->move(other.buf_, buf_);
    other.ops_ = nullptr;
  }
  void reset() {
    if (ops_) ops_->destroy(buf_);
    ops_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char buf_[kInline];
  const Ops* ops_ = nullptr;
};

}  // namespace psrt::sim
