#include "models/planner_model.h"

#include <string>
#include <utility>

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

}  // namespace alpa
