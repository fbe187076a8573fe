// Typed field access for the plan JSON reader (plan_json_read.h); not part of any API. Every
// error names the element by its JSON path ("stages[1].pieces[0].executable.sharding.ops[3]"):
// kParse "plan JSON: <path>: <what>" for a missing field or a wrong type, kInvalidArgument
// for a value out of its range.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster/sharding_spec.h"
#include "core/util/status.h"

namespace alpa::plan_json_fields {

using Json = nlohmann::json;

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

Status Malformed(const std::string& path, const std::string& what);  // kParse
Status Invalid(const std::string& path, const std::string& what);    // kInvalidArgument

// path + "." + key (key alone at the top), path + "[i]".
std::string Join(const std::string& path, const char* key);
std::string At(const std::string& path, size_t i);

// The field `key` of the object `obj` at `path`; missing, or `obj` not an object: kParse.
Status Field(const Json& obj, const std::string& path, const char* key, const Json** out);
Status ObjectField(const Json& obj, const std::string& path, const char* key, const Json** out);
Status ArrayField(const Json& obj, const std::string& path, const char* key, const Json** out);

Status IntValue(const Json& j, const std::string& path, int64_t lo, int64_t hi, int64_t* out);
Status Int(const Json& obj, const std::string& path, const char* key, int64_t lo, int64_t hi,
           int64_t* out);
Status Int32(const Json& obj, const std::string& path, const char* key, int64_t lo, int64_t hi,
             int32_t* out);
Status Double(const Json& obj, const std::string& path, const char* key, double* out);
Status Bool(const Json& obj, const std::string& path, const char* key, bool* out);
Status String(const Json& obj, const std::string& path, const char* key, std::string* out);

// An array of integers, each in [lo, hi].
Status Int64List(const Json& obj, const std::string& path, const char* key, int64_t lo, int64_t hi,
                 std::vector<int64_t>* out);
Status Int32List(const Json& obj, const std::string& path, const char* key, int64_t lo, int64_t hi,
                 std::vector<int32_t>* out);

// A sharding spec in ToString's notation (sharding_spec.h): kParse when it does not parse.
Status SpecValue(const Json& j, const std::string& path, ShardingSpec* out);
Status Spec(const Json& obj, const std::string& path, const char* key, ShardingSpec* out);

}  // namespace alpa::plan_json_fields
