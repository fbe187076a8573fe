// Optimizer updates as ops. Each new value of a parameter or of an optimizer state is an op
// aliased (Op::alias_of) to the parameter op it replaces after the step, and a graph output.
//
// Formulas (w the parameter or its f32 master copy, g the gradient converted to w's dtype):
//   SGD:       w' = w - lr g
//   momentum:  v' = mu v + g;  w' = w - lr v'                  (PyTorch's form, no dampening)
//   Adam:      t' = t + 1  (t: one shared f32 scalar state "optimizer.step", fed 0 initially)
//              m' = b1 m + (1 - b1) g;  v' = b2 v + (1 - b2) g^2
//              w' = w - lr (m' / (1 - b1^t')) / (sqrt(v' / (1 - b2^t')) + eps)
// With master weights, a half-precision parameter p gets an f32 state "<p>.master" (fed p's
// value initially): the update runs on it in f32 and p' = convert(master', p's dtype).
#include <string>
#include <vector>

#include "core/autodiff/optimizer.h"

namespace alpa {
namespace {

struct Updater {
  GraphBuilder& b;
  const OptimizerConfig& config;

  // A new optimizer-state parameter like `like` (shape), of dtype `dtype`.
  int32_t State(const Dims& shape, DType dtype, const std::string& name) {
    return b.Parameter(shape, dtype, TensorRole::kOptimizerState, name);
  }

  // Marks `value` as the new value of parameter op `target` and lists it as an output.
  void Replace(int32_t value, int32_t target) {
    b.SetAlias(value, target);
    if (b.ok() && b.op(value).name.empty()) b.SetName(value, b.op(target).name + ".next");
    b.AddOutput(value);
  }

  // A scalar f32 `s` as a tensor of `like`'s shape and dtype.
  int32_t Spread(int32_t s, int32_t like) {
    if (b.dtype(like) != b.dtype(s)) s = b.Convert(s, b.dtype(like));
    return b.BroadcastInDim(s, b.shape(like), {});
  }
};

std::string ParamName(const GraphBuilder& b, int32_t p) {
  const std::string& n = b.op(p).name;
  return n.empty() ? "param" + std::to_string(p) : n;
}

}  // namespace

Status AppendOptimizer(GraphBuilder& builder, const std::vector<int32_t>& parameters,
                       const std::vector<int32_t>& gradients, const OptimizerConfig& config) {
  if (!builder.ok()) return builder.status();
  if (parameters.size() != gradients.size()) {
    return InvalidArgument("AppendOptimizer: " + std::to_string(parameters.size()) +
                           " parameters but " + std::to_string(gradients.size()) + " gradients");
  }
  const int32_t n = builder.graph().size();
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (size_t i = 0; i < parameters.size(); ++i) {
    int32_t p = parameters[i], g = gradients[i];
    if (p < 0 || p >= n || g < 0 || g >= n) {
      return InvalidArgument("AppendOptimizer: pair " + std::to_string(i) + " (parameter " +
                             std::to_string(p) + ", gradient " + std::to_string(g) +
                             ") refers to a missing op");
    }
    const Op& po = builder.op(p);
    if (po.kind != OpKind::kParameter || !IsFloating(po.dtype)) {
      return InvalidArgument("AppendOptimizer: " + DescribeOp(builder.graph(), p) +
                             " is not a floating-point parameter op");
    }
    if (seen[static_cast<size_t>(p)]) {
      return InvalidArgument("AppendOptimizer: " + DescribeOp(builder.graph(), p) +
                             " is listed twice");
    }
    seen[static_cast<size_t>(p)] = true;
    if (builder.shape(g) != po.shape || !IsFloating(builder.dtype(g))) {
      return InvalidArgument("AppendOptimizer: gradient " + DescribeOp(builder.graph(), g) +
                             " of type " + DTypeName(builder.dtype(g)) +
                             ShapeString(builder.shape(g)) + " does not fit " +
                             DescribeOp(builder.graph(), p) + " " + ShapeString(po.shape));
    }
  }
  if (config.kind != OptimizerKind::kSgd && config.kind != OptimizerKind::kMomentum &&
      config.kind != OptimizerKind::kAdam) {
    return InvalidArgument("AppendOptimizer: unknown optimizer kind " +
                           std::to_string(static_cast<int32_t>(config.kind)));
  }

  const Phase saved_phase = builder.phase();
  const int32_t saved_layer = builder.layer();
  builder.set_phase(Phase::kUpdate);
  Updater u{builder, config};

  // Adam's shared step counter and bias corrections: scalars used by every layer, so layer -1.
  int32_t correction1 = -1, correction2 = -1;
  if (config.kind == OptimizerKind::kAdam && !parameters.empty()) {
    builder.set_layer(-1);
    int32_t step = u.State({}, DType::kF32, "optimizer.step");
    int32_t next = builder.Add(step, builder.ScalarLike(1.0, step));
    u.Replace(next, step);
    auto correction = [&](double beta) {
      int32_t power = builder.Binary(OpKind::kPow, builder.ScalarLike(beta, next), next);
      return builder.Sub(builder.ScalarLike(1.0, next), power);
    };
    correction1 = correction(config.beta1);
    correction2 = correction(config.beta2);
  }

  for (size_t i = 0; i < parameters.size() && builder.ok(); ++i) {
    const int32_t p = parameters[i];
    const std::string name = ParamName(builder, p);
    const DType pdtype = builder.dtype(p);
    builder.set_layer(builder.op(p).layer);
    const bool master = config.master_weights && (pdtype == DType::kF16 || pdtype == DType::kBF16);
    int32_t w = p;
    if (master) w = u.State(builder.shape(p), DType::kF32, name + ".master");
    int32_t g = gradients[i];
    if (builder.ok() && builder.dtype(g) != builder.dtype(w)) {
      g = builder.Convert(g, builder.dtype(w));
    }
    // A failed state or convert (e.g. a master copy past 2^63 bytes) leaves -1 ids: stop here
    // with the builder's error, which names the op.
    if (!builder.ok()) break;
    const Dims shape = builder.shape(w);
    const DType dtype = builder.dtype(w);

    int32_t step = g;  // the direction that lr scales
    switch (config.kind) {
      case OptimizerKind::kSgd:
        break;
      case OptimizerKind::kMomentum: {
        int32_t v = u.State(shape, dtype, name + ".momentum");
        int32_t v_next = builder.Add(builder.Scale(v, config.momentum), g);
        u.Replace(v_next, v);
        step = v_next;
        break;
      }
      case OptimizerKind::kAdam: {
        int32_t m = u.State(shape, dtype, name + ".m");
        int32_t v = u.State(shape, dtype, name + ".v");
        int32_t m_next =
            builder.Add(builder.Scale(m, config.beta1), builder.Scale(g, 1.0 - config.beta1));
        int32_t v_next = builder.Add(builder.Scale(v, config.beta2),
                                     builder.Scale(builder.Mul(g, g), 1.0 - config.beta2));
        u.Replace(m_next, m);
        u.Replace(v_next, v);
        int32_t m_hat = builder.Div(m_next, u.Spread(correction1, m_next));
        int32_t v_hat = builder.Div(v_next, u.Spread(correction2, v_next));
        int32_t denom = builder.Add(builder.Unary(OpKind::kSqrt, v_hat),
                                    builder.ScalarLike(config.epsilon, v_hat));
        step = builder.Div(m_hat, denom);
        break;
      }
    }
    int32_t w_next = builder.Sub(w, builder.Scale(step, config.learning_rate));
    if (master) {
      u.Replace(w_next, w);
      w_next = builder.Convert(w_next, pdtype);
    }
    u.Replace(w_next, p);
  }
  builder.set_phase(saved_phase);
  builder.set_layer(saved_layer);
  return builder.status();
}

}  // namespace alpa
