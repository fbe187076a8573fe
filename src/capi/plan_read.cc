// Reading an executable plan JSON through the C ABI: alpa_plan_read_json / alpa_plan_read_file
// (the plan, its cluster and its model name, as alpa_plan_to_json at detail 2 wrote them).
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "capi/handles.h"
#include "core/util/bounded_input.h"
#include "solvers/planner/plan_json_read.h"

namespace {

using alpa::capi::Fail;
using alpa::capi::Guard;

int32_t WrapPlan(alpa_plan** out, std::string_view json, const std::string& where,
                 alpa_error** err) {
  alpa::Cluster cluster;
  std::string model;
  alpa::Result<alpa::PipelinePlan> plan = alpa::ReadPipelinePlanJson(json, &cluster, &model);
  if (!plan.ok()) {
    return Fail(err, alpa::Status(plan.status().code(), where + plan.status().message()));
  }
  *out = alpa::capi::MakePlan(std::move(plan).value(), cluster, std::move(model)).release();
  return ALPA_OK;
}

}  // namespace

extern "C" {

ALPA_API int32_t alpa_plan_read_json(alpa_plan** out, const char* json, size_t length,
                                     alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || (json == nullptr && length > 0)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and json must not be NULL");
    }
    const std::string_view bytes =
        length == 0 ? std::string_view() : std::string_view(json, length);
    return WrapPlan(out, bytes, "", err);
  });
}

ALPA_API int32_t alpa_plan_read_file(alpa_plan** out, const char* path, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || path == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and path must not be NULL");
    }
    alpa::Result<std::string> bytes =
        alpa::ReadFileBytes(path, alpa::kDefaultMaxInputBytes, alpa::FileContent::kJsonOrGzip);
    if (!bytes.ok()) return Fail(err, bytes.status());
    std::string inflated;
    alpa::Result<std::string_view> text =
        alpa::DecodeJsonInput(bytes.value(), alpa::kDefaultMaxInputBytes, &inflated);
    if (!text.ok()) return Fail(err, text.status());
    return WrapPlan(out, text.value(), std::string(path) + ": ", err);
  });
}

}  // extern "C"
