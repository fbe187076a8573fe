// Entry points of problem_io.h: bytes -> JSON -> problem, the shared JSON helpers, and the
// assignment text format. The format-specific halves live in problem_io_{iopddl,alpa}.cc.
#include "core/problem/problem_io.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <new>
#include <string>

#include "core/problem/problem_io_internal.h"
#include "core/util/bounded_input.h"
#include "core/util/json_document.h"
#include "core/util/json_util.h"

namespace alpa {

namespace {

using io_internal::Json;

// Well-formed problems nest at most four levels deep; far deeper input is rejected before
// parsing so that nothing downstream (parser stacks, recursive visitors of the DOM) can be
// driven into deep recursion or huge per-level overhead.
constexpr int kMaxJsonDepth = 256;

// nlohmann's messages start with "[json.exception.parse_error.101] ": keep the readable part.
std::string JsonMessage(const char* what) { return "json: " + JsonErrorMessage(what); }

Result<ShardingProblem> FromJsonUnchecked(const Json& json, ProblemFormat format) {
  if (format == ProblemFormat::kAuto) {
    format = ProblemFormat::kIopddl;
    if (json.is_object()) {
      const auto it = json.find("format");
      if (it != json.end()) {
        if (!it->is_string()) return ParseError("format: expected a string");
        const std::string& name = it->get_ref<const std::string&>();
        if (name == "alpa") {
          format = ProblemFormat::kAlpa;
        } else if (name != "iopddl") {
          return ParseError("format: unknown format \"" + name +
                            "\" (expected \"alpa\" or \"iopddl\")");
        }
      }
    }
  }
  Result<ShardingProblem> problem = format == ProblemFormat::kAlpa
                                        ? io_internal::AlpaFromJson(json)
                                        : io_internal::IopddlFromJson(json);
  if (!problem.ok()) return problem;
  ALPA_RETURN_IF_ERROR(ValidateProblem(problem.value()));
  return problem;
}

Status BadFormat(ProblemFormat format) {
  return InvalidArgument("unknown problem format " + std::to_string(static_cast<int32_t>(format)));
}

}  // namespace

Result<ShardingProblem> ProblemFromJson(const nlohmann::json& json, ProblemFormat format) {
  if (format != ProblemFormat::kAuto && format != ProblemFormat::kIopddl &&
      format != ProblemFormat::kAlpa) {
    return BadFormat(format);
  }
  try {
    return FromJsonUnchecked(json, format);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, "out of memory while reading the problem");
  } catch (const std::exception& e) {
    return ParseError(JsonMessage(e.what()));
  }
}

Result<ShardingProblem> ReadProblemBuffer(std::string_view bytes, ProblemFormat format,
                                          uint64_t max_input_bytes) {
  std::string inflated;
  Result<std::string_view> text = DecodeJsonInput(bytes, max_input_bytes, &inflated);
  if (!text.ok()) return text.status();
  ALPA_RETURN_IF_ERROR(CheckJsonNesting(text.value(), kMaxJsonDepth, "problem"));
  Result<JsonDocument> json = ParseJsonDocument(text.value(), JsonRoot::kObjectOnly);
  if (!json.ok()) {
    if (json.status().code() != StatusCode::kParse) return json.status();
    return ParseError("json: " + json.status().message());
  }
  std::string().swap(inflated);  // the text is no longer needed: free it before converting
  return ProblemFromJson(json.value().root(), format);
}

Result<ShardingProblem> ReadProblemFile(const std::string& path, ProblemFormat format,
                                        uint64_t max_input_bytes) {
  auto with_path = [&](const Status& status) {
    return Status(status.code(), path + ": " + status.message());
  };
  Result<std::string> bytes = ReadFileBytes(path, max_input_bytes, FileContent::kJsonOrGzip);
  if (!bytes.ok()) {
    // kIo and kOutOfMemory messages already name the path.
    if (bytes.status().code() != StatusCode::kParse) return bytes.status();
    return with_path(bytes.status());
  }
  Result<ShardingProblem> problem = ReadProblemBuffer(bytes.value(), format, max_input_bytes);
  if (!problem.ok()) return with_path(problem.status());
  return problem;
}

Result<std::string> WriteProblem(const ShardingProblem& problem, ProblemFormat format) {
  if (format != ProblemFormat::kIopddl && format != ProblemFormat::kAlpa) {
    return InvalidArgument("WriteProblem needs a concrete format (iopddl or alpa)");
  }
  ALPA_RETURN_IF_ERROR(ValidateProblem(problem));
  try {
    return format == ProblemFormat::kAlpa ? io_internal::WriteAlpa(problem)
                                          : io_internal::WriteIopddl(problem);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, "out of memory while writing the problem");
  } catch (const std::exception& e) {
    return InternalError(std::string("writing the problem failed: ") + e.what());
  }
}

Result<std::vector<int32_t>> ParseAssignment(std::string_view text) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  auto error = [&](size_t pos, const std::string& what) {
    return ParseError("assignment: " + what + " at character " + std::to_string(pos));
  };
  size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && is_space(text[i])) ++i;
  };
  std::vector<int32_t> out;
  skip();
  if (i >= text.size() || text[i] != '[') return error(i, "expected '['");
  ++i;
  skip();
  if (i < text.size() && text[i] == ']') {
    ++i;
  } else {
    while (true) {
      skip();
      const size_t start = i;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
      if (i == start) {
        return error(start,
                     "entry " + std::to_string(out.size()) + ": expected a non-negative integer");
      }
      int32_t value = 0;
      const auto r = std::from_chars(text.data() + start, text.data() + i, value);
      if (r.ec != std::errc() || r.ptr != text.data() + i) {
        return error(start, "entry " + std::to_string(out.size()) + ": " +
                                std::string(text.substr(start, i - start)) + " is out of range");
      }
      try {
        out.push_back(value);
      } catch (const std::bad_alloc&) {
        return Status(StatusCode::kOutOfMemory, "assignment: out of memory");
      }
      skip();
      if (i < text.size() && text[i] == ',') {
        ++i;
        continue;
      }
      if (i < text.size() && text[i] == ']') {
        ++i;
        break;
      }
      return error(i, "expected ',' or ']' after entry " + std::to_string(out.size() - 1));
    }
  }
  skip();
  if (i != text.size()) return error(i, "unexpected text after ']'");
  return out;
}

std::string FormatAssignment(const std::vector<int32_t>& assignment) {
  std::string out = "[";
  for (size_t i = 0; i < assignment.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(assignment[i]);
  }
  out += "]";
  return out;
}

}  // namespace alpa
