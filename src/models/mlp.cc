// The MLP of Alpa's auto-sharding tests (REFERENCE §7): `layers` dense layers of width `hidden`
// with relu between them, on x [batch, hidden]; loss = mean squared error against y
// [batch, hidden], or softmax cross-entropy with integer labels [batch] over `hidden` classes.
#include "models/layers.h"

namespace alpa {
namespace models {

Result<Graph> BuildMlpForward(const ModelSpec& spec) {
  SpecReader r(spec);
  const int64_t layers = r.PositiveInt("layers");
  const int64_t hidden = r.PositiveInt("hidden");
  const int64_t batch = r.PositiveInt("batch");
  const bool bias = r.Bool("bias");
  const bool cross_entropy = r.String("loss") == "ce";
  const DType dtype = r.Dtype("dtype");
  if (!r.ok()) return r.status();

  GraphBuilder b;
  b.set_layer(0);
  int32_t x = Input(b, {batch, hidden}, dtype, "x");
  int32_t target = cross_entropy ? Input(b, {batch}, DType::kS32, "labels")
                                 : Input(b, {batch, hidden}, dtype, "y");
  for (int64_t i = 0; i < layers; ++i) {
    b.set_layer(static_cast<int32_t>(i + 1));
    x = Dense(b, x, hidden, bias ? Bias::kLearned : Bias::kNone, "fc" + std::to_string(i));
    if (i + 1 < layers) x = b.Unary(OpKind::kRelu, x);
  }
  b.set_layer(static_cast<int32_t>(layers + 1));
  int32_t loss = cross_entropy ? SoftmaxCrossEntropy(b, x, target) : MeanSquaredError(b, x, target);
  b.SetName(loss, "loss");
  b.AddOutput(loss);
  return std::move(b).Finish();
}

}  // namespace models
}  // namespace alpa
