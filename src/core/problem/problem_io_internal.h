// Shared pieces of the problem readers and writers (problem_io*.cc); not part of any API. The
// generic JSON helpers they use live in core/util/json_util.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/problem/sharding_problem.h"
#include "core/util/json_util.h"
#include "core/util/status.h"

namespace alpa::io_internal {

using json_util::AppendInt;
using json_util::AppendNumber;
using json_util::AppendString;
using json_util::Conversion;
using json_util::ConversionMessage;
using json_util::ErrorAt;
using json_util::FindField;
using json_util::FloorToInt64;
using json_util::Index;
using json_util::Json;
using json_util::Presence;
using json_util::ToDouble;
using json_util::ToInt64;

// Format-specific halves, selected by problem_io.cc. The readers do not call ValidateProblem.
Result<ShardingProblem> IopddlFromJson(const Json& root);
Result<ShardingProblem> AlpaFromJson(const Json& root);
Result<std::string> WriteIopddl(const ShardingProblem& problem);
Result<std::string> WriteAlpa(const ShardingProblem& problem);

}  // namespace alpa::io_internal
