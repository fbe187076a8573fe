// alpa_graph_make_training: a forward graph plus an optimizer spec -> the training-step graph
// (core/autodiff's BuildTrainingGraph, the same path the model zoo takes).
#include <string>
#include <utility>

#include "capi/handles.h"
#include "core/autodiff/autodiff.h"
#include "core/autodiff/optimizer_spec.h"

using alpa::capi::Fail;
using alpa::capi::Guard;

extern "C" {

ALPA_API int32_t alpa_graph_make_training(alpa_graph** out, const alpa_graph* forward,
                                          const char* optimizer_spec, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || forward == nullptr || optimizer_spec == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "out, forward and optimizer_spec must not be NULL");
    }
    if (!forward->finalized) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "forward graph is not finalized: call alpa_graph_finalize first");
    }
    alpa::Result<alpa::OptimizerConfig> config = alpa::ParseOptimizerSpec(optimizer_spec);
    if (!config.ok()) return Fail(err, config.status());
    alpa::Result<alpa::Graph> training = alpa::BuildTrainingGraph(forward->graph, config.value());
    if (!training.ok()) return Fail(err, training.status());
    auto* handle = new alpa_graph();
    handle->graph = std::move(training).value();
    handle->finalized = true;
    *out = handle;
    return ALPA_OK;
  });
}

}  // extern "C"
