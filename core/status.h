// Status values for expected failures, and the exception type for configuration and start-up
// errors. Peer input never throws past the I/O loop: it becomes a Status and an error reply.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace psrt {

// A failure the caller is expected to handle: bad input from a peer or a file. [[nodiscard]]: a
// Status that is dropped is a failure nobody handles; `(void)` says so where that is meant.
class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string message) { return Status(std::move(message)); }

  bool is_ok() const { return !message_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

// A value or the Status that says why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT

  bool is_ok() const { return value_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

// Returns the Status of `expr` from the enclosing function (returning Status or Result<T>) when
// it is an error.
#define PSRT_RETURN_IF_ERROR(expr)                  \
  do {                                              \
    ::psrt::Status psrt_status_ = (expr);           \
    if (!psrt_status_) return psrt_status_;         \
  } while (false)

// Configuration or start-up error: the daemon prints one line and exits with code 2.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A run-time failure that ends the job (a lost peer, an aborted job): exit code 1.
class JobError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace psrt
