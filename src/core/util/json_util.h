// Small pieces shared by the JSON readers (problems, graphs, clusters); not part of any API.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/util/status.h"

namespace alpa {

// Rejects text whose arrays and objects nest deeper than `max_depth`, before it is parsed, so
// that nothing downstream (parser stacks, recursive visitors of the DOM) can be driven into deep
// recursion. Brackets inside strings do not count; the text need not be valid JSON.
// kParse "<what>: JSON nesting deeper than <max_depth> levels at byte <offset>".
Status CheckJsonNesting(std::string_view bytes, int max_depth, std::string_view what);

// An nlohmann exception's message without its "[json.exception.parse_error.101] " prefix.
std::string JsonErrorMessage(const char* what);

// Conversions, error paths and writers shared by every JSON reader and writer of the library
// (problems, graphs, clusters, plans): the one place numbers are read and written.
namespace json_util {

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

// Whether a reader must find a field.
enum class Presence { kOptional, kRequired };

// Looks up `key` in the object `obj` (at `path`); nullptr when absent (or null and `null_ok`).
// A missing required field, or `obj` not being an object, is a kParse error.
Status FindField(std::string_view format, const Json& obj, const std::string& path, const char* key,
                 Presence presence, const Json** out);

// Appends a number to `out`, formatted so that it reads back as the same double: an integer
// when the value is integral and below 2^63 in magnitude, else the shortest round-trip form.
// Non-finite values (never produced by the readers) are written as +-DBL_MAX: still forbidden
// (or hugely negative), and valid JSON.
void AppendNumber(double x, std::string* out);
void AppendInt(int64_t x, std::string* out);
// The same rule for JSON built as an nlohmann document: an integral value below 2^63 in
// magnitude becomes that exact integer, any other the double nearest to it (nlohmann writes the
// shortest form that reads back the same). It takes long double because sums such as FLOP counts
// and cost totals are long double and their integral values exceed 2^53: rounding to double first
// would print a different integer. Non-finite values (no objective, no bound) become null.
Json NumberValue(long double x);
// A JSON string literal (invalid UTF-8 is replaced, so the output is always valid JSON).
void AppendString(const std::string& s, std::string* out);

}  // namespace json_util

}  // namespace alpa
