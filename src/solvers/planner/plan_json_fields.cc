// Typed field access for the plan JSON reader (plan_json_fields.h).
#include "solvers/planner/plan_json_fields.h"

#include <string_view>

#include "core/util/json_util.h"

namespace alpa::plan_json_fields {

namespace {
constexpr const char* kWhere = "plan JSON: ";
}  // namespace

Status Malformed(const std::string& path, const std::string& what) {
  return ParseError(kWhere + (path.empty() ? std::string("top") : path) + ": " + what);
}
Status Invalid(const std::string& path, const std::string& what) {
  return InvalidArgument(kWhere + path + ": " + what);
}

std::string Join(const std::string& path, const char* key) {
  return path.empty() ? std::string(key) : path + "." + key;
}
std::string At(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

Status Field(const Json& obj, const std::string& path, const char* key, const Json** out) {
  if (!obj.is_object()) return Malformed(path, "expected an object");
  const auto it = obj.find(key);
  if (it == obj.end()) return Malformed(Join(path, key), "missing");
  *out = &*it;
  return Status::Ok();
}

Status ObjectField(const Json& obj, const std::string& path, const char* key, const Json** out) {
  ALPA_RETURN_IF_ERROR(Field(obj, path, key, out));
  return (*out)->is_object() ? Status::Ok() : Malformed(Join(path, key), "expected an object");
}

Status ArrayField(const Json& obj, const std::string& path, const char* key, const Json** out) {
  ALPA_RETURN_IF_ERROR(Field(obj, path, key, out));
  return (*out)->is_array() ? Status::Ok() : Malformed(Join(path, key), "expected an array");
}

Status IntValue(const Json& j, const std::string& path, int64_t lo, int64_t hi, int64_t* out) {
  const json_util::Conversion c = json_util::ToInt64(j, lo, hi, out);
  if (c == json_util::Conversion::kOutOfRange) {
    return Invalid(path, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                             " (got " + j.dump() + ")");
  }
  if (c != json_util::Conversion::kOk) return Malformed(path, json_util::ConversionMessage(c));
  return Status::Ok();
}

Status Int(const Json& obj, const std::string& path, const char* key, int64_t lo, int64_t hi,
           int64_t* out) {
  const Json* j = nullptr;
  ALPA_RETURN_IF_ERROR(Field(obj, path, key, &j));
  return IntValue(*j, Join(path, key), lo, hi, out);
}

Status Int32(const Json& obj, const std::string& path, const char* key, int64_t lo, int64_t hi,
             int32_t* out) {
  int64_t v = 0;
  ALPA_RETURN_IF_ERROR(Int(obj, path, key, lo, hi > kInt32Max ? kInt32Max : hi, &v));
  *out = static_cast<int32_t>(v);
  return Status::Ok();
}

Status Double(const Json& obj, const std::string& path, const char* key, double* out) {
  const Json* j = nullptr;
  ALPA_RETURN_IF_ERROR(Field(obj, path, key, &j));
  const json_util::Conversion c = json_util::ToDouble(*j, out);
  if (c != json_util::Conversion::kOk) {
    return Malformed(Join(path, key), json_util::ConversionMessage(c));
  }
  return Status::Ok();
}

Status Bool(const Json& obj, const std::string& path, const char* key, bool* out) {
  const Json* j = nullptr;
  ALPA_RETURN_IF_ERROR(Field(obj, path, key, &j));
  if (!j->is_boolean()) return Malformed(Join(path, key), "expected true or false");
  *out = j->get<bool>();
  return Status::Ok();
}

Status String(const Json& obj, const std::string& path, const char* key, std::string* out) {
  const Json* j = nullptr;
  ALPA_RETURN_IF_ERROR(Field(obj, path, key, &j));
  if (!j->is_string()) return Malformed(Join(path, key), "expected a string");
  *out = j->get<std::string>();
  return Status::Ok();
}

Status Int64List(const Json& obj, const std::string& path, const char* key, int64_t lo, int64_t hi,
                 std::vector<int64_t>* out) {
  const Json* j = nullptr;
  ALPA_RETURN_IF_ERROR(ArrayField(obj, path, key, &j));
  const std::string where = Join(path, key);
  out->clear();
  out->reserve(j->size());  // bounded by the input: every element is at least one byte
  for (size_t i = 0; i < j->size(); ++i) {
    int64_t v = 0;
    ALPA_RETURN_IF_ERROR(IntValue((*j)[i], At(where, i), lo, hi, &v));
    out->push_back(v);
  }
  return Status::Ok();
}

Status Int32List(const Json& obj, const std::string& path, const char* key, int64_t lo, int64_t hi,
                 std::vector<int32_t>* out) {
  std::vector<int64_t> wide;
  ALPA_RETURN_IF_ERROR(Int64List(obj, path, key, lo < -kInt32Max ? -kInt32Max : lo,
                                 hi > kInt32Max ? kInt32Max : hi, &wide));
  out->assign(wide.begin(), wide.end());
  return Status::Ok();
}

Status SpecValue(const Json& j, const std::string& path, ShardingSpec* out) {
  if (!j.is_string()) return Malformed(path, "expected a sharding spec string");
  Result<ShardingSpec> spec = ParseShardingSpec(j.get_ref<const std::string&>());
  if (!spec.ok()) return Malformed(path, spec.status().message());
  *out = std::move(spec).value();
  return Status::Ok();
}

Status Spec(const Json& obj, const std::string& path, const char* key, ShardingSpec* out) {
  const Json* j = nullptr;
  ALPA_RETURN_IF_ERROR(Field(obj, path, key, &j));
  return SpecValue(*j, Join(path, key), out);
}

}  // namespace alpa::plan_json_fields
