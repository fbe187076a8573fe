// Interpret / EvaluateOp: validation of the request, liveness (evaluate only what the fetches
// need, free each value after its last use) and the per-kind dispatch to src/exec/cpu/.
#include "exec/cpu/interpreter.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "exec/cpu/eval.h"

namespace alpa {
namespace {

Status Unsupported(std::string m) { return Status(StatusCode::kUnsupported, std::move(m)); }

// Checks that `t` can stand for op `id`'s value (`what` says where it came from).
Status CheckTensor(const Graph& graph, int32_t id, const HostTensor& t, const std::string& what) {
  const Op& op = graph.op(id);
  if (t.shape != op.shape) {
    return InvalidArgument(what + " for " + DescribeOp(graph, id) + " has shape " +
                           ShapeString(t.shape) + ", expected " + ShapeString(op.shape));
  }
  if (t.dtype != op.dtype) {
    return InvalidArgument(what + " for " + DescribeOp(graph, id) + " has dtype " +
                           DTypeName(t.dtype) + ", expected " + DTypeName(op.dtype));
  }
  const int64_t count = cpu::NumElements(op.shape);
  if (t.size() != count) {
    return InvalidArgument(what + " for " + DescribeOp(graph, id) + " holds " +
                           std::to_string(t.size()) + " values, its shape " +
                           ShapeString(op.shape) + " has " + std::to_string(count));
  }
  return Status::Ok();
}

Status CheckFeeds(const Graph& graph, const HostFeeds& feeds) {
  for (const auto& [id, tensor] : feeds) {
    if (id < 0 || id >= graph.size()) {
      return InvalidArgument("a feed names op " + std::to_string(id) + ", outside the graph's " +
                             std::to_string(graph.size()) + " ops");
    }
    if (graph.op(id).kind != OpKind::kParameter) {
      return InvalidArgument("a feed names " + DescribeOp(graph, id) +
                             ", which is not a parameter");
    }
    ALPA_RETURN_IF_ERROR(CheckTensor(graph, id, tensor, "the feed"));
  }
  return Status::Ok();
}

}  // namespace

HostTensor EvaluateValidatedOp(const Graph& graph, int32_t id, const cpu::Operands& in,
                               ResultRounding rounding) {
  const Op& op = graph.op(id);
  HostTensor out;
  out.shape = op.shape;
  out.dtype = op.dtype;
  out.data.assign(static_cast<size_t>(cpu::NumElements(op.shape)), 0.0);
  switch (op.kind) {
    case OpKind::kParameter:
      break;  // fed by Interpret
    case OpKind::kConstant:
      cpu::EvalConstant(op, out);
      break;
    case OpKind::kIota:
      cpu::EvalIota(op, out);
      break;
    case OpKind::kSelect:
      cpu::EvalSelect(in, out);
      break;
    case OpKind::kDotGeneral:
      cpu::EvalDotGeneral(op, in, out);
      break;
    case OpKind::kConvolution:
      cpu::EvalConvolution(op, in, out);
      break;
    case OpKind::kBroadcastInDim:
      cpu::EvalBroadcastInDim(op, in, out);
      break;
    case OpKind::kReshape:
      out.data = in[0]->data;
      break;
    case OpKind::kTranspose:
      cpu::EvalTranspose(op, in, out);
      break;
    case OpKind::kSlice:
      cpu::EvalSlice(op, in, out);
      break;
    case OpKind::kConcatenate:
      cpu::EvalConcatenate(op, in, out);
      break;
    case OpKind::kPad:
      cpu::EvalPad(op, in, out);
      break;
    case OpKind::kReverse:
      cpu::EvalReverse(op, in, out);
      break;
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
      cpu::EvalReduce(op, in, out);
      break;
    case OpKind::kReduceWindow:
      cpu::EvalReduceWindow(op, in, out);
      break;
    case OpKind::kSelectAndScatter:
      cpu::EvalSelectAndScatter(op, in, out);
      break;
    case OpKind::kGather:
      cpu::EvalGather(op, in, out);
      break;
    case OpKind::kScatterAdd:
      cpu::EvalScatterAdd(op, in, out);
      break;
    default:
      if (IsElementwiseUnary(op.kind)) {
        cpu::EvalUnary(op, in, out);
      } else if (IsElementwiseBinary(op.kind)) {
        cpu::EvalBinary(op, in, out);
      }
      break;
  }
  if (rounding == ResultRounding::kRound && !KeepsOperandValues(op.kind) &&
      out.dtype != DType::kF64) {
    for (double& v : out.data) v = RoundToDType(v, out.dtype);
  }
  return out;
}

bool KeepsOperandValues(OpKind kind) {
  switch (kind) {
    case OpKind::kBroadcastInDim:
    case OpKind::kReshape:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kConcatenate:
    case OpKind::kReverse:
    case OpKind::kSelect:
    case OpKind::kGather:
      return true;
    default:
      return false;
  }
}

Result<HostTensor> EvaluateOp(const Graph& graph, int32_t id,
                              const std::vector<const HostTensor*>& operands) {
  if (id < 0 || id >= graph.size()) {
    return InvalidArgument("EvaluateOp: op " + std::to_string(id) + " is outside the graph's " +
                           std::to_string(graph.size()) + " ops");
  }
  const Op& op = graph.op(id);
  if (op.kind == OpKind::kParameter) {
    return InvalidArgument(DescribeOp(graph, id) + " has no value to compute: feed it");
  }
  // The op's stored type must be the inferred one (the kernels index by it unchecked).
  Op checked = op;
  ALPA_RETURN_IF_ERROR(InferOpType(graph, id, checked));
  if (checked.shape != op.shape || checked.dtype != op.dtype) {
    return InvalidGraph(DescribeOp(graph, id) + " stores type " + DTypeName(op.dtype) +
                        ShapeString(op.shape) + ", its operands give " + DTypeName(checked.dtype) +
                        ShapeString(checked.shape));
  }
  if (operands.size() != op.operands.size()) {
    return InvalidArgument(DescribeOp(graph, id) + " takes " + std::to_string(op.operands.size()) +
                           " operand(s), got " + std::to_string(operands.size()));
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::string what = "operand " + std::to_string(i) + " of " + DescribeOp(graph, id);
    if (operands[i] == nullptr) return InvalidArgument(what + " is null");
    ALPA_RETURN_IF_ERROR(CheckTensor(graph, op.operands[i], *operands[i], what + ", the value"));
  }
  return EvaluateValidatedOp(graph, id, operands);
}

Result<std::vector<HostTensor>> Interpret(const Graph& graph, const HostFeeds& feeds,
                                          const std::vector<int32_t>& fetch,
                                          const InterpretOptions& options) {
  ALPA_RETURN_IF_ERROR(ValidateGraph(graph));
  const int32_t n = graph.size();
  for (size_t i = 0; i < fetch.size(); ++i) {
    if (fetch[i] < 0 || fetch[i] >= n) {
      return InvalidArgument("fetch " + std::to_string(i) + " names op " +
                             std::to_string(fetch[i]) + ", outside the graph's " +
                             std::to_string(n) + " ops");
    }
  }
  ALPA_RETURN_IF_ERROR(CheckFeeds(graph, feeds));

  // The ops the fetches depend on (operands precede users, so one backward sweep finds them).
  std::vector<char> needed(static_cast<size_t>(n), 0);
  for (int32_t id : fetch) needed[static_cast<size_t>(id)] = 1;
  long double total = 0;
  int32_t largest = -1;
  for (int32_t id = n - 1; id >= 0; --id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const Op& op = graph.op(id);
    for (int32_t o : op.operands) needed[static_cast<size_t>(o)] = 1;
    total += static_cast<long double>(cpu::NumElements(op.shape));
    if (largest < 0 || cpu::NumElements(op.shape) > cpu::NumElements(graph.op(largest).shape)) {
      largest = id;
    }
    if (op.kind == OpKind::kParameter && feeds.find(id) == feeds.end()) {
      return InvalidArgument(DescribeOp(graph, id) +
                             " is needed by the fetched values but not fed");
    }
  }
  if (options.max_total_elements > 0 &&
      total > static_cast<long double>(options.max_total_elements)) {
    char count[64];
    std::snprintf(count, sizeof(count), "%.0Lf", total);
    return Unsupported("interpreting would take " + std::string(count) +
                       " elements of results (limit " + std::to_string(options.max_total_elements) +
                       "); the largest is " + DescribeOp(graph, largest) + " of shape " +
                       ShapeString(graph.op(largest).shape));
  }

  // Last use of each value; fetched values live to the end.
  std::vector<int32_t> last_use(static_cast<size_t>(n), -1);
  for (int32_t id = 0; id < n; ++id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    for (int32_t o : graph.op(id).operands) last_use[static_cast<size_t>(o)] = id;
  }
  for (int32_t id : fetch) last_use[static_cast<size_t>(id)] = n;

  std::vector<HostTensor> values(static_cast<size_t>(n));
  cpu::Operands operands;
  InterpretStats stats;
  int64_t live = 0;
  for (int32_t id = 0; id < n; ++id) {
    if (!needed[static_cast<size_t>(id)]) continue;
    const Op& op = graph.op(id);
    HostTensor& value = values[static_cast<size_t>(id)];
    if (op.kind == OpKind::kParameter) {
      value = feeds.at(id);
      if (value.dtype != DType::kF64) {
        for (double& v : value.data) v = RoundToDType(v, value.dtype);
      }
    } else {
      operands.clear();
      for (int32_t o : op.operands) operands.push_back(&values[static_cast<size_t>(o)]);
      value = EvaluateValidatedOp(graph, id, operands);
    }
    ++stats.ops_evaluated;
    live += value.size();
    stats.peak_live_elements = std::max(stats.peak_live_elements, live);
    for (int32_t o : op.operands) {
      HostTensor& dead = values[static_cast<size_t>(o)];
      if (last_use[static_cast<size_t>(o)] == id && !dead.data.empty()) {
        live -= dead.size();
        std::vector<double>().swap(dead.data);  // release the memory, not just the size
      }
    }
  }

  std::vector<HostTensor> results;
  results.reserve(fetch.size());
  for (int32_t id : fetch) results.push_back(values[static_cast<size_t>(id)]);
  if (options.stats != nullptr) *options.stats = stats;
  return results;
}

}  // namespace alpa
