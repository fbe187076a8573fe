// The backward driver: one reverse topological sweep over the ops that lie on a path from a
// `wrt` op to the loss, applying each op's VJP rule and summing cotangents with add.
#include <string>
#include <vector>

#include "core/autodiff/autodiff.h"

namespace alpa {

Result<std::vector<int32_t>> AppendBackward(GraphBuilder& builder, int32_t loss,
                                            const std::vector<int32_t>& wrt) {
  if (!builder.ok()) return builder.status();
  const int32_t n = builder.graph().size();
  if (loss < 0 || loss >= n) {
    return InvalidArgument("AppendBackward: loss op " + std::to_string(loss) +
                           " does not exist (the graph has " + std::to_string(n) + " ops)");
  }
  {
    const Op& l = builder.op(loss);
    if (!l.shape.empty() || !IsFloating(l.dtype)) {
      return InvalidArgument("AppendBackward: the loss " + DescribeOp(builder.graph(), loss) +
                             " must be a floating-point scalar, but is " + DTypeName(l.dtype) +
                             ShapeString(l.shape));
    }
  }
  std::vector<bool> is_wrt(static_cast<size_t>(n), false);
  for (size_t i = 0; i < wrt.size(); ++i) {
    int32_t w = wrt[i];
    if (w < 0 || w >= n) {
      return InvalidArgument("AppendBackward: wrt[" + std::to_string(i) + "] = op " +
                             std::to_string(w) + " does not exist");
    }
    if (!IsFloating(builder.dtype(w))) {
      return InvalidArgument("AppendBackward: wrt[" + std::to_string(i) +
                             "] = " + DescribeOp(builder.graph(), w) + " has dtype " +
                             DTypeName(builder.dtype(w)) + ", which has no gradient");
    }
    is_wrt[static_cast<size_t>(w)] = true;
  }

  // active = floating, depends on some wrt op, and the loss depends on it. Only these ops
  // receive cotangents, so e.g. data inputs and masks cost nothing. An op marked stop_gradient
  // depends on nothing (a constant to autodiff).
  std::vector<bool> depends(static_cast<size_t>(n), false);
  for (int32_t i = 0; i <= loss; ++i) {
    const Op& op = builder.op(i);
    bool d = is_wrt[static_cast<size_t>(i)];
    for (int32_t o : op.operands) d = d || depends[static_cast<size_t>(o)];
    depends[static_cast<size_t>(i)] = d && IsFloating(op.dtype) && !op.stop_gradient;
  }
  std::vector<bool> active(static_cast<size_t>(n), false);
  active[static_cast<size_t>(loss)] = depends[static_cast<size_t>(loss)];
  for (int32_t i = loss; i >= 0; --i) {
    if (!active[static_cast<size_t>(i)]) continue;
    for (int32_t o : builder.op(i).operands) {
      if (depends[static_cast<size_t>(o)]) active[static_cast<size_t>(o)] = true;
    }
  }

  const Phase saved_phase = builder.phase();
  const int32_t saved_layer = builder.layer();
  builder.set_phase(Phase::kBackward);
  std::vector<int32_t> cotangent(static_cast<size_t>(n), -1);
  Status status;
  if (active[static_cast<size_t>(loss)]) {
    builder.set_layer(builder.op(loss).layer);
    cotangent[static_cast<size_t>(loss)] = builder.ScalarLike(1.0, loss);
  }
  for (int32_t i = loss; i >= 0 && status.ok() && builder.ok(); --i) {
    int32_t g = cotangent[static_cast<size_t>(i)];
    if (!active[static_cast<size_t>(i)] || g < 0) continue;
    const std::vector<int32_t> operands = builder.op(i).operands;
    std::vector<bool> needed(operands.size());
    bool any = false;
    for (size_t j = 0; j < operands.size(); ++j) {
      needed[j] = active[static_cast<size_t>(operands[j])];
      any = any || needed[j];
    }
    if (!any) continue;
    builder.set_layer(builder.op(i).layer);
    Result<std::vector<int32_t>> r = AppendVjp(builder, i, g, needed);
    if (!r.ok()) {
      status = r.status();
      break;
    }
    for (size_t j = 0; j < operands.size(); ++j) {
      int32_t c = r.value()[j];
      if (c < 0) continue;
      int32_t& acc = cotangent[static_cast<size_t>(operands[j])];
      acc = acc < 0 ? c : builder.Add(acc, c);
    }
  }

  std::vector<int32_t> grads;
  if (status.ok() && builder.ok()) {
    for (int32_t w : wrt) {
      int32_t g = cotangent[static_cast<size_t>(w)];
      if (g < 0) {
        // The loss does not depend on w.
        builder.set_layer(builder.op(w).layer);
        g = builder.ScalarLike(0.0, w);
        cotangent[static_cast<size_t>(w)] = g;
      }
      builder.SetRole(g, TensorRole::kGradient);
      if (builder.ok() && builder.op(g).name.empty() && !builder.op(w).name.empty()) {
        builder.SetName(g, builder.op(w).name + ".grad");
      }
      grads.push_back(g);
    }
  }
  builder.set_phase(saved_phase);
  builder.set_layer(saved_layer);
  if (!status.ok()) return status;
  if (!builder.ok()) return builder.status();
  return grads;
}

namespace {

// The checks that make `forward` a forward graph BuildTrainingGraph can extend: a loss output, no
// backward or update op yet (a training graph made twice would differentiate its own update),
// and at least one trainable parameter. The loss's dtype and shape are AppendBackward's checks.
Status CheckForwardGraph(const Graph& forward, const std::vector<int32_t>& parameters) {
  if (forward.outputs.empty()) {
    return InvalidArgument(
        "BuildTrainingGraph: the forward graph has no outputs (outputs[0] "
        "must be the scalar loss)");
  }
  for (int32_t i = 0; i < forward.size(); ++i) {
    const Phase phase = forward.op(i).phase;
    if (phase != Phase::kForward) {
      return InvalidArgument("BuildTrainingGraph: the graph already has a " +
                             std::string(PhaseName(phase)) + " phase (" + DescribeOp(forward, i) +
                             "); give the forward graph alone (loss as outputs[0])");
    }
  }
  if (parameters.empty()) {
    return InvalidArgument(
        "BuildTrainingGraph: the forward graph has no parameter op with role parameter, so there "
        "is nothing to train (mark the weights' parameter ops with role parameter)");
  }
  return Status::Ok();
}

}  // namespace

Result<Graph> BuildTrainingGraph(Graph forward, const OptimizerConfig& config) {
  ALPA_RETURN_IF_ERROR(ValidateGraph(forward));
  std::vector<int32_t> parameters;
  for (int32_t i = 0; i < forward.size(); ++i) {
    const Op& op = forward.op(i);
    if (op.kind == OpKind::kParameter && op.role == TensorRole::kParameter) parameters.push_back(i);
  }
  ALPA_RETURN_IF_ERROR(CheckForwardGraph(forward, parameters));
  const int32_t loss = forward.outputs[0];
  GraphBuilder builder(std::move(forward));
  Result<std::vector<int32_t>> grads = AppendBackward(builder, loss, parameters);
  if (!grads.ok()) return grads.status();
  ALPA_RETURN_IF_ERROR(AppendOptimizer(builder, parameters, grads.value(), config));
  return std::move(builder).Finish();
}

}  // namespace alpa
