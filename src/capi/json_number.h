// The one number writer of the JSON the C ABI builds itself (solutions, graph statistics).
#pragma once

#include <nlohmann/json.hpp>

namespace alpa::capi {

// A number for JSON under json_util::AppendNumber's rule (core/util/json_util.h): an integral
// value below 2^63 in magnitude is written as that exact integer, any other as the shortest
// double that reads back the same. It takes long double because the statistics it writes (FLOP
// counts, cost sums) are long double sums whose integral values exceed 2^53: rounding them to
// double first would print a different integer. Non-finite values (no objective, no bound)
// become null.
nlohmann::json JsonNumber(long double value);

}  // namespace alpa::capi
