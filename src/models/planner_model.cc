#include "models/planner_model.h"

#include <memory>
#include <string>
#include <utility>

#include "core/ir/rebatch.h"
#include "models/model_zoo.h"

namespace alpa {

Result<PlannerModel> PlannerModelFromSpec(const std::string& spec) {
  Result<ModelSpec> parsed = ParseModelSpec(spec);
  if (!parsed.ok()) return parsed.status();
  ModelSpec ms = std::move(parsed).value();
  auto it = ms.keys.find("batch");
  if (it == ms.keys.end()) {
    return InvalidArgument("model '" + spec + "' has no batch key to split into microbatches");
  }
  PlannerModel model;
  try {
    model.global_batch = std::stoll(it->second);
  } catch (...) {
    return InvalidArgument("model '" + spec + "': batch '" + it->second + "' is not an integer");
  }
  // The layer count, when the spec has one, lets the planner refuse a model over its layer
  // limit before building a graph of that many layers.
  if (auto layers = ms.keys.find("layers"); layers != ms.keys.end()) {
    try {
      model.layers = std::stoll(layers->second);
    } catch (...) {
      model.layers = 0;  // not a count (the builder rejects it with its own message)
    }
  }
  model.build = [ms](int64_t microbatches) -> Result<Graph> {
    ModelSpec one = ms;
    const int64_t batch = std::stoll(ms.keys.at("batch"));
    if (microbatches < 1 || batch % microbatches != 0) {
      return InvalidArgument("microbatches " + std::to_string(microbatches) +
                             " does not divide the batch " + std::to_string(batch));
    }
    one.keys["batch"] = std::to_string(batch / microbatches);
    return BuildModel(one);
  };
  return model;
}

Result<PlannerModel> PlannerModelFromGraph(std::shared_ptr<const Graph> graph, int32_t batch_dim) {
  Result<BatchAnalysis> analyzed = AnalyzeBatch(*graph, batch_dim);
  if (!analyzed.ok()) return analyzed.status();
  auto analysis = std::make_shared<const BatchAnalysis>(std::move(analyzed).value());
  PlannerModel model;
  model.global_batch = analysis->batch;
  model.build = [graph, analysis](int64_t microbatches) -> Result<Graph> {
    return Rebatch(*graph, *analysis, microbatches);
  };
  return model;
}

PlannerModel FixedPlannerModel(std::shared_ptr<const Graph> graph) {
  PlannerModel model;
  model.global_batch = 0;
  model.build = [graph](int64_t) -> Result<Graph> { return *graph; };
  return model;
}

}  // namespace alpa
