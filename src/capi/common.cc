// Errors, buffers, versions, status strings and cancel tokens of the C ABI.
#include <utility>

#include "capi/handles.h"
#include "core/util/printable_text.h"

namespace alpa::capi {

int32_t Fail(alpa_error** err, int32_t code, std::string message) {
  if (err != nullptr) {
    // A failure to allocate the error itself must not mask the code.
    try {
      // Messages quote input (specs, tokens, file bytes): escape what is not printable UTF-8
      // once here, at the boundary every message crosses.
      *err = new alpa_error{code, PrintableText(message)};
    } catch (...) {
      *err = nullptr;
    }
  }
  return code;
}

int32_t ToCode(StatusCode code) { return static_cast<int32_t>(code); }

int32_t Fail(alpa_error** err, const Status& status) {
  return Fail(err, ToCode(status.code()), status.message());
}

int32_t FailWithoutAnswer(alpa_error** err, SolveStatus status, bool has_assignment,
                          const std::string& message) {
  if (has_assignment) return ALPA_OK;
  auto fail = [&](int32_t code, const char* outcome) {
    return Fail(err, code, message.empty() ? std::string(outcome) : message);
  };
  switch (status) {
    case SolveStatus::kInfeasible:
      return fail(ALPA_ERR_INFEASIBLE, "infeasible: no assignment meets the constraints");
    case SolveStatus::kNoSolution:
      return fail(ALPA_ERR_TIMEOUT, "time limit reached before any feasible assignment");
    case SolveStatus::kCancelled:
      return fail(ALPA_ERR_CANCELLED, "cancelled before any feasible assignment");
    case SolveStatus::kInvalidInput:
      return fail(ALPA_ERR_INVALID_PROBLEM, "invalid problem");
    case SolveStatus::kOptimal:
    case SolveStatus::kFeasible:
      break;
  }
  // Optimal or feasible without an assignment: a problem of no nodes has the empty assignment.
  return ALPA_OK;
}

alpa_buffer* MakeBuffer(std::string bytes) {
  try {
    return new alpa_buffer{std::move(bytes)};
  } catch (...) {
    return nullptr;
  }
}

}  // namespace alpa::capi

// The StatusCode values are the ALPA_ERR_* values.
static_assert(static_cast<int32_t>(alpa::StatusCode::kInvalidProblem) == ALPA_ERR_INVALID_PROBLEM);
static_assert(static_cast<int32_t>(alpa::StatusCode::kParse) == ALPA_ERR_PARSE);
static_assert(static_cast<int32_t>(alpa::StatusCode::kIo) == ALPA_ERR_IO);
static_assert(static_cast<int32_t>(alpa::StatusCode::kInvalidGraph) == ALPA_ERR_INVALID_GRAPH);
static_assert(static_cast<int32_t>(alpa::SolveStatus::kNoSolution) == ALPA_SOLVE_NO_SOLUTION);
static_assert(static_cast<int32_t>(alpa::SolveStatus::kInvalidInput) == ALPA_SOLVE_INVALID_INPUT);

extern "C" {

#define ALPA_STR2(x) #x
#define ALPA_STR(x) ALPA_STR2(x)

ALPA_API const char* alpa_version_string(void) {
  return ALPA_STR(ALPA_VERSION_MAJOR) "." ALPA_STR(ALPA_VERSION_MINOR) "." ALPA_STR(
      ALPA_VERSION_PATCH);
}

ALPA_API int32_t alpa_version_number(void) { return ALPA_VERSION_NUMBER; }

ALPA_API const char* alpa_status_string(int32_t status) {
  switch (status) {
    case ALPA_OK:
      return "ok";
    case ALPA_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case ALPA_ERR_INVALID_PROBLEM:
      return "invalid problem";
    case ALPA_ERR_INFEASIBLE:
      return "infeasible";
    case ALPA_ERR_TIMEOUT:
      return "timeout";
    case ALPA_ERR_CANCELLED:
      return "cancelled";
    case ALPA_ERR_UNSUPPORTED:
      return "unsupported";
    case ALPA_ERR_OUT_OF_MEMORY:
      return "out of memory";
    case ALPA_ERR_INTERNAL:
      return "internal error";
    case ALPA_ERR_IO:
      return "i/o error";
    case ALPA_ERR_PARSE:
      return "parse error";
    case ALPA_ERR_INVALID_GRAPH:
      return "invalid graph";
    default:
      return "unknown status";
  }
}

ALPA_API int32_t alpa_error_code(const alpa_error* err) {
  return err == nullptr ? ALPA_OK : err->code;
}

ALPA_API const char* alpa_error_message(const alpa_error* err) {
  return err == nullptr ? "" : err->message.c_str();
}

ALPA_API void alpa_error_free(alpa_error* err) { delete err; }

ALPA_API const char* alpa_buffer_data(const alpa_buffer* buffer) {
  return buffer == nullptr ? "" : buffer->bytes.c_str();
}

ALPA_API size_t alpa_buffer_size(const alpa_buffer* buffer) {
  return buffer == nullptr ? 0 : buffer->bytes.size();
}

ALPA_API void alpa_buffer_free(alpa_buffer* buffer) { delete buffer; }

ALPA_API int32_t alpa_cancel_token_create(alpa_cancel_token** out, alpa_error** err) {
  return alpa::capi::Guard(err, [&] {
    if (out == nullptr) return alpa::capi::Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = new alpa_cancel_token();
    return ALPA_OK;
  });
}

ALPA_API void alpa_cancel_token_trigger(alpa_cancel_token* token) {
  if (token != nullptr) token->triggered.store(true);
}

ALPA_API void alpa_cancel_token_destroy(alpa_cancel_token* token) { delete token; }

}  // extern "C"
