// Shared pieces of the problem readers and writers (problem_io*.cc), also used by the cluster
// and graph JSON code; not part of any API.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/sharding_problem.h"
#include "core/status.h"

namespace alpa::io_internal {

using Json = nlohmann::json;

// Why a JSON value could not be converted.
enum class Conversion { kOk, kNotNumber, kNotInteger, kOutOfRange, kNotFinite };
// "expected a number", "expected an integer", ...
const char* ConversionMessage(Conversion c);

// Any JSON number as a double (nlohmann rejects overflowing literals such as 1e400 at parse
// time, so the result is finite for parsed input).
Conversion ToDouble(const Json& j, double* out);
// A JSON number with an integral value in [lo, hi] (floats such as 1e3 count when integral).
Conversion ToInt64(const Json& j, int64_t lo, int64_t hi, int64_t* out);

// An integral value in int64, floats rounded down (a fractional memory limit means its floor).
Conversion FloorToInt64(const Json& j, int64_t* out);

// kParse error "<format>: <path>: <what>".
Status ErrorAt(std::string_view format, const std::string& path, const std::string& what);
// path + "[i]".
std::string Index(const std::string& path, size_t i);

// Looks up `key` in the object `obj` (at `path`); nullptr when absent (or null and `null_ok`).
// A missing required field, or `obj` not being an object, is a kParse error.
Status FindField(std::string_view format, const Json& obj, const std::string& path, const char* key,
                 bool required, const Json** out);

// Appends a number to `out`, formatted so that it reads back as the same double: an integer
// when the value is integral and below 2^63 in magnitude, else the shortest round-trip form.
// Non-finite values (never produced by the readers) are written as +-DBL_MAX: still forbidden
// (or hugely negative), and valid JSON.
void AppendNumber(double x, std::string* out);
void AppendInt(int64_t x, std::string* out);
// A JSON string literal (invalid UTF-8 is replaced, so the output is always valid JSON).
void AppendString(const std::string& s, std::string* out);

// Format-specific halves, selected by problem_io.cc. The readers do not call ValidateProblem.
Result<ShardingProblem> IopddlFromJson(const Json& root);
Result<ShardingProblem> AlpaFromJson(const Json& root);
Result<std::string> WriteIopddl(const ShardingProblem& problem);
Result<std::string> WriteAlpa(const ShardingProblem& problem);

}  // namespace alpa::io_internal
