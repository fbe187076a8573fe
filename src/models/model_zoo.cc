// BuildModel: spec -> forward graph of its family -> training step (autodiff + optimizer).
#include "models/model_zoo.h"

#include "models/layers.h"

namespace alpa {

Result<Graph> BuildForwardModel(const ModelSpec& spec) {
  if (spec.family == "mlp") return models::BuildMlpForward(spec);
  if (spec.family == "gpt") return models::BuildGptForward(spec);
  if (spec.family == "bert") return models::BuildBertForward(spec);
  if (spec.family == "moe") return models::BuildMoeForward(spec);
  if (spec.family == "wresnet") return models::BuildWideResNetForward(spec);
  if (spec.family == "llama") return models::BuildLlamaForward(spec);
  return InvalidArgument("unknown model family \"" + spec.family + "\" (try `alpa models`)");
}

Result<OptimizerConfig> ModelOptimizerConfig(const ModelSpec& spec) {
  models::SpecReader r(spec);
  OptimizerConfig config;
  const std::string kind = r.String("optimizer");
  if (kind == "sgd") {
    config.kind = OptimizerKind::kSgd;
  } else if (kind == "momentum") {
    config.kind = OptimizerKind::kMomentum;
  } else if (kind == "adam") {
    config.kind = OptimizerKind::kAdam;
  } else if (r.ok()) {
    r.Fail("optimizer must be one of: sgd momentum adam (got \"" + kind + "\")");
  }
  config.learning_rate = r.PositiveFloat("lr");
  config.epsilon = r.PositiveFloat("adam_eps");
  config.master_weights = r.Bool("master_weights");
  if (!r.ok()) return r.status();
  return config;
}

Result<Graph> BuildModel(const ModelSpec& spec) {
  Result<OptimizerConfig> config = ModelOptimizerConfig(spec);
  if (!config.ok()) return config.status();
  models::SpecReader r(spec);
  const bool training = r.Bool("training");
  if (!r.ok()) return r.status();
  Result<Graph> forward = BuildForwardModel(spec);
  if (!forward.ok() || !training) return forward;
  return BuildTrainingGraph(std::move(forward).value(), config.value());
}

Result<Graph> BuildModel(const std::string& spec) {
  Result<ModelSpec> parsed = ParseModelSpec(spec);
  if (!parsed.ok()) return parsed.status();
  return BuildModel(parsed.value());
}

}  // namespace alpa
