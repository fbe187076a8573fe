// alpa_plan_launch_config: a manual or baseline plan as a Megatron-LM or DeepSpeed launch
// configuration (models/launch_config.h), from the plan's configuration, cluster and zoo spec.
#include <string>

#include "capi/handles.h"
#include "models/launch_config.h"
#include "models/model_zoo.h"

extern "C" {

ALPA_API int32_t alpa_plan_launch_config(alpa_buffer** out, const alpa_plan* plan,
                                         int32_t framework, alpa_error** err) {
  using alpa::capi::Fail;
  return alpa::capi::Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = nullptr;
    if (plan == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "plan is NULL");
    if (framework != ALPA_LAUNCH_MEGATRON && framework != ALPA_LAUNCH_DEEPSPEED) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "framework must be ALPA_LAUNCH_MEGATRON (0) or ALPA_LAUNCH_DEEPSPEED (1) (got " +
                      std::to_string(framework) + ")");
    }
    if (!plan->manual_spec) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "plan: a launch configuration needs a plan of alpa_model_plan_manual or "
                  "alpa_model_plan_baseline (data, tensor and pipeline degrees)");
    }
    // Manual and baseline plans are always of a zoo spec (alpa_model_plan_manual's model_spec).
    alpa::Result<alpa::ModelSpec> model = alpa::ParseModelSpec(plan->model);
    if (!model.ok()) return Fail(err, model.status());
    alpa::Result<std::string> text =
        alpa::LaunchConfig(framework == ALPA_LAUNCH_MEGATRON ? alpa::LaunchFramework::kMegatron
                                                             : alpa::LaunchFramework::kDeepSpeed,
                           *plan->manual_spec, plan->cluster, &model.value());
    if (!text.ok()) return Fail(err, text.status());
    *out = alpa::capi::MakeBuffer(std::move(text).value());
    if (*out == nullptr) return Fail(err, ALPA_ERR_OUT_OF_MEMORY, "out of memory");
    return ALPA_OK;
  });
}

}  // extern "C"
