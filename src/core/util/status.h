// Status and Result<T>: expected failures inside the library, without exceptions.
// Codes mirror the ALPA_ERR_* values of include/alpa.h one to one (src/capi maps them).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace alpa {

enum class StatusCode : int32_t {
  kOk = 0,
  kInvalidArgument = 1,  // a caller's argument is wrong (null pointer, bad length, bad option)
  kInvalidProblem = 2,   // the problem / graph data is inconsistent
  kInfeasible = 3,       // no assignment meets the constraints
  kTimeout = 4,
  kCancelled = 5,
  kUnsupported = 6,
  kOutOfMemory = 7,
  kInternal = 8,
  kIo = 9,            // a file could not be opened, read or written
  kParse = 10,        // bytes are not valid JSON / not the expected format
  kInvalidGraph = 11  // the operator graph is inconsistent (the message names the op)
};

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status InvalidProblem(std::string m) {
  return Status(StatusCode::kInvalidProblem, std::move(m));
}
inline Status InvalidGraph(std::string m) {
  return Status(StatusCode::kInvalidGraph, std::move(m));
}
inline Status ParseError(std::string m) { return Status(StatusCode::kParse, std::move(m)); }
inline Status IoError(std::string m) { return Status(StatusCode::kIo, std::move(m)); }
inline Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

// A value or a non-ok Status.
template <typename T>
class Result {
 public:
  Result(T value) : data_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(data_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(data_);
  }
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace alpa

// Early-return helpers in the style of zstd's FORWARD_IF_ERROR.
#define ALPA_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::alpa::Status alpa_status_ = (expr);        \
    if (!alpa_status_.ok()) return alpa_status_; \
  } while (0)
