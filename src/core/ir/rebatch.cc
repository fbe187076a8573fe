#include "core/ir/rebatch.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace alpa {
namespace {

// An op's batch state while tracing: a dim >= 0, or one of these.
constexpr int32_t kNoBatch = -1;  // independent of the batch
constexpr int32_t kPending = -2;  // a constant, iota or broadcast that may yet be sized by it

int32_t IndexOf(const std::vector<int64_t>& values, int64_t value) {
  auto it = std::find(values.begin(), values.end(), value);
  return it == values.end() ? -1 : static_cast<int32_t>(it - values.begin());
}

// One forward pass over the graph gives each op its batch state from its operands'. A pending
// operand that meets a batched one is resolved backward (`Resolve`) and recorded in `hints_`;
// the passes repeat until no hint is added, since ops between the pending op and the one that
// resolved it were traced without it.
class BatchTracer {
 public:
  BatchTracer(const Graph& graph, int32_t batch_dim)
      : graph_(graph),
        batch_dim_(batch_dim),
        hints_(static_cast<size_t>(graph.size()), kNoBatch),
        states_(static_cast<size_t>(graph.size()), kNoBatch) {}

  Result<BatchAnalysis> Run();

 private:
  Status Pass();
  Status TraceOp(int32_t id);
  Status TraceParameter(int32_t id);
  Status TraceElementwise(int32_t id);
  Status TraceBroadcast(int32_t id);
  Status TraceReshape(int32_t id);
  Status TraceDot(int32_t id);
  Status TraceReduce(int32_t id);
  Status TraceConcatenate(int32_t id);
  Status TraceGather(int32_t id);
  Status TraceScatterAdd(int32_t id);
  Status TraceConvolution(int32_t id);
  // slice, pad, reverse, reduce_window, select_and_scatter: the batch dim untouched by the op.
  Status TraceDimPreserving(int32_t id);
  Status Resolve(int32_t id, int32_t dim, int32_t user);
  Status CheckResult() const;
  void FindMeanDivisors(BatchAnalysis& analysis) const;

  int32_t State(int32_t id) const { return states_[static_cast<size_t>(id)]; }
  int32_t Operand(int32_t id, size_t k) const { return graph_.op(id).operands[k]; }
  int32_t OperandState(int32_t id, size_t k) const { return State(Operand(id, k)); }
  void Set(int32_t id, int32_t state) { states_[static_cast<size_t>(id)] = state; }
  Status Fail(int32_t id, const std::string& why) const {
    return InvalidGraph("rebatch: " + DescribeOp(graph_, id) + ": " + why);
  }
  std::string Dim(int32_t dim) const { return "dim " + std::to_string(dim); }

  const Graph& graph_;
  const int32_t batch_dim_;
  int64_t batch_ = 0;
  int32_t first_input_ = -1;
  bool changed_ = false;
  std::vector<int32_t> hints_;
  std::vector<int32_t> states_;
};

Result<BatchAnalysis> BatchTracer::Run() {
  // Each pass that changes anything adds a hint to a distinct op, so size + 1 passes suffice.
  for (int32_t pass = 0; pass <= graph_.size(); ++pass) {
    changed_ = false;
    if (Status s = Pass(); !s.ok()) return s;
    if (!changed_) break;
  }
  if (first_input_ < 0) {
    return InvalidArgument("rebatch: the graph has no input parameter with a batch dim " +
                           std::to_string(batch_dim_));
  }
  for (int32_t& state : states_) {
    if (state == kPending) state = kNoBatch;  // never met the batch: independent of it
  }
  if (Status s = CheckResult(); !s.ok()) return s;
  BatchAnalysis analysis;
  analysis.batch = batch_;
  analysis.batch_dim = states_;
  FindMeanDivisors(analysis);
  return analysis;
}

Status BatchTracer::Pass() {
  for (int32_t id = 0; id < graph_.size(); ++id) {
    if (Status s = TraceOp(id); !s.ok()) return s;
  }
  return Status();
}

Status BatchTracer::TraceOp(int32_t id) {
  const OpKind kind = graph_.op(id).kind;
  if (IsElementwise(kind)) return TraceElementwise(id);
  switch (kind) {
    case OpKind::kParameter:
      return TraceParameter(id);
    case OpKind::kConstant:
    case OpKind::kIota:
      Set(id, hints_[static_cast<size_t>(id)] >= 0 ? hints_[static_cast<size_t>(id)] : kPending);
      return Status();
    case OpKind::kBroadcastInDim:
      return TraceBroadcast(id);
    case OpKind::kTranspose: {
      const int32_t s = OperandState(id, 0);
      Set(id, s >= 0 ? IndexOf(graph_.op(id).attrs.dims, s) : s);
      return Status();
    }
    case OpKind::kReshape:
      return TraceReshape(id);
    case OpKind::kDotGeneral:
      return TraceDot(id);
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
      return TraceReduce(id);
    case OpKind::kConcatenate:
      return TraceConcatenate(id);
    case OpKind::kGather:
      return TraceGather(id);
    case OpKind::kScatterAdd:
      return TraceScatterAdd(id);
    case OpKind::kConvolution:
      return TraceConvolution(id);
    default:
      return TraceDimPreserving(id);
  }
}

Status BatchTracer::TraceParameter(int32_t id) {
  const Op& op = graph_.op(id);
  if (op.role != TensorRole::kInput) {
    Set(id, kNoBatch);
    return Status();
  }
  if (static_cast<int32_t>(op.shape.size()) <= batch_dim_) {
    return Fail(id,
                "an input of shape " + ShapeString(op.shape) + " has no batch " + Dim(batch_dim_));
  }
  const int64_t size = op.shape[static_cast<size_t>(batch_dim_)];
  if (first_input_ < 0) {
    first_input_ = id;
    batch_ = size;
  } else if (size != batch_) {
    return Fail(id, "its batch " + Dim(batch_dim_) + " holds " + std::to_string(size) +
                        " examples where " + DescribeOp(graph_, first_input_) + " holds " +
                        std::to_string(batch_));
  }
  Set(id, batch_dim_);
  return Status();
}

Status BatchTracer::TraceElementwise(int32_t id) {
  const Op& op = graph_.op(id);
  int32_t dim = kNoBatch;
  bool pending = false;
  for (size_t k = 0; k < op.operands.size(); ++k) {
    const int32_t s = OperandState(id, k);
    if (s == kPending) pending = true;
    if (s < 0) continue;
    if (dim >= 0 && s != dim) {
      return Fail(id, "its operands hold the batch in " + Dim(dim) + " and " + Dim(s));
    }
    dim = s;
  }
  if (dim < 0) {
    Set(id, pending ? kPending : kNoBatch);
    return Status();
  }
  for (size_t k = 0; k < op.operands.size(); ++k) {
    if (Status s = Resolve(Operand(id, k), dim, id); !s.ok()) return s;
  }
  Set(id, dim);
  return Status();
}

Status BatchTracer::TraceBroadcast(int32_t id) {
  const int32_t s = OperandState(id, 0);
  const int32_t hint = hints_[static_cast<size_t>(id)];
  if (s >= 0) {
    Set(id, static_cast<int32_t>(graph_.op(id).attrs.dims[static_cast<size_t>(s)]));
  } else {
    Set(id, hint >= 0 ? hint : kPending);
  }
  return Status();
}

// The batch stays the outermost factor of the output dim that starts where the input's batch
// dim starts (the same count of elements before it) when that dim is a multiple of N.
Status BatchTracer::TraceReshape(int32_t id) {
  const int32_t s = OperandState(id, 0);
  if (s < 0) {
    Set(id, kNoBatch);
    return Status();
  }
  const Dims& in = graph_.op(Operand(id, 0)).shape;
  const Dims& out = graph_.op(id).shape;
  int64_t before = 1;
  for (int32_t d = 0; d < s; ++d) before *= in[static_cast<size_t>(d)];
  int64_t prefix = 1;
  for (size_t d = 0; d < out.size(); ++d) {
    if (prefix == before && out[d] % batch_ == 0 && (out[d] > 1 || batch_ == 1)) {
      Set(id, static_cast<int32_t>(d));
      return Status();
    }
    prefix *= out[d];
    if (prefix > before) break;
  }
  return Fail(id, "reshaping " + ShapeString(in) + " to " + ShapeString(out) +
                      " splits or mixes the batch (" + std::to_string(batch_) + " in " + Dim(s) +
                      ")");
}

Status BatchTracer::TraceDot(int32_t id) {
  const Op& op = graph_.op(id);
  const DotDims& dd = op.attrs.dot;
  const int32_t ls = OperandState(id, 0), rs = OperandState(id, 1);
  const int32_t nb = static_cast<int32_t>(dd.lhs_batch.size());
  // The position of dim d among an operand's free dims.
  auto free_index = [](const Dims& batch, const Dims& contracting, int32_t d) {
    int32_t index = 0;
    for (int32_t k = 0; k < d; ++k) {
      if (IndexOf(batch, k) < 0 && IndexOf(contracting, k) < 0) ++index;
    }
    return index;
  };
  const Dims& lhs_shape = graph_.op(Operand(id, 0)).shape;
  const int32_t lhs_free =
      static_cast<int32_t>(lhs_shape.size()) - nb - static_cast<int32_t>(dd.lhs_contracting.size());
  int32_t lb = ls >= 0 ? IndexOf(dd.lhs_batch, ls) : -1;
  int32_t lc = ls >= 0 ? IndexOf(dd.lhs_contracting, ls) : -1;
  int32_t rb = rs >= 0 ? IndexOf(dd.rhs_batch, rs) : -1;
  int32_t rc = rs >= 0 ? IndexOf(dd.rhs_contracting, rs) : -1;
  if (ls < 0 && rs < 0) {
    Set(id, kNoBatch);
    return Status();
  }
  // Paired dims: both sides must hold the batch there, or the other side's dim is a
  // batch-independent tensor of the batch's size.
  if (lb >= 0 || rb >= 0 || lc >= 0 || rc >= 0) {
    const bool paired = ls >= 0 && rs >= 0 && ((lb >= 0 && lb == rb) || (lc >= 0 && lc == rc));
    if (!paired) {
      return Fail(id,
                  "it pairs the batch of one operand with a dim of the other that does not "
                  "hold the batch");
    }
    Set(id, lb >= 0 ? lb : kNoBatch);  // a batch dim pair stays; a contraction sums it away
    return Status();
  }
  if (ls >= 0 && rs >= 0) return Fail(id, "both operands hold the batch in free dims");
  if (ls >= 0) {
    Set(id, nb + free_index(dd.lhs_batch, dd.lhs_contracting, ls));
  } else {
    Set(id, nb + lhs_free + free_index(dd.rhs_batch, dd.rhs_contracting, rs));
  }
  return Status();
}

Status BatchTracer::TraceReduce(int32_t id) {
  const int32_t s = OperandState(id, 0);
  if (s < 0) {
    Set(id, kNoBatch);
    return Status();
  }
  const Dims& dims = graph_.op(id).attrs.dims;
  if (IndexOf(dims, s) >= 0) {
    Set(id, kNoBatch);
    return Status();
  }
  int32_t removed_before = 0;
  for (int64_t d : dims) removed_before += d < s ? 1 : 0;
  Set(id, s - removed_before);
  return Status();
}

Status BatchTracer::TraceConcatenate(int32_t id) {
  const Op& op = graph_.op(id);
  int32_t dim = kNoBatch;
  for (size_t k = 0; k < op.operands.size(); ++k) {
    const int32_t s = OperandState(id, k);
    if (s >= 0) dim = s;
  }
  if (dim < 0) {
    Set(id, kNoBatch);
    return Status();
  }
  if (dim == op.attrs.axis) return Fail(id, "it concatenates along the batch " + Dim(dim));
  for (size_t k = 0; k < op.operands.size(); ++k) {
    if (Status s = Resolve(Operand(id, k), dim, id); !s.ok()) return s;
  }
  Set(id, dim);
  return Status();
}

// gather(x, indices) = x[:axis] ++ indices ++ x[axis+1:].
Status BatchTracer::TraceGather(int32_t id) {
  const int32_t axis = static_cast<int32_t>(graph_.op(id).attrs.axis);
  const int32_t xs = OperandState(id, 0), is = OperandState(id, 1);
  const int32_t index_rank = static_cast<int32_t>(graph_.op(Operand(id, 1)).shape.size());
  if (xs >= 0 && is >= 0) return Fail(id, "both the table and the indices hold the batch");
  if (xs == axis) return Fail(id, "it gathers along the batch " + Dim(xs));
  if (xs >= 0) {
    Set(id, xs < axis ? xs : xs - 1 + index_rank);
  } else if (is >= 0) {
    Set(id, axis + is);
  } else {
    Set(id, kNoBatch);
  }
  return Status();
}

// scatter_add(base, indices, updates), updates shaped as gather(base, indices).
Status BatchTracer::TraceScatterAdd(int32_t id) {
  const int32_t axis = static_cast<int32_t>(graph_.op(id).attrs.axis);
  const int32_t bs = OperandState(id, 0), is = OperandState(id, 1), us = OperandState(id, 2);
  const int32_t index_rank = static_cast<int32_t>(graph_.op(Operand(id, 1)).shape.size());
  if (bs < 0 && is < 0 && us < 0) {
    Set(id, kNoBatch);
    return Status();
  }
  if (bs < 0 && is >= 0 && us == axis + is) {  // the embedding gradient: summed over the batch
    Set(id, kNoBatch);
    return Status();
  }
  if (bs >= 0 && bs != axis && is < 0 && us == (bs < axis ? bs : bs - 1 + index_rank)) {
    Set(id, bs);
    return Status();
  }
  return Fail(id, "its base, indices and updates do not hold the batch in matching dims");
}

// x [N, C, S..] * kernel [O, C / groups, K..]: the batch in N (the forward and the input
// gradient) or in C of both (the kernel gradient, which contracts it away).
Status BatchTracer::TraceConvolution(int32_t id) {
  const Op& op = graph_.op(id);
  const int32_t xs = OperandState(id, 0), ks = OperandState(id, 1);
  if (xs < 0 && ks < 0) {
    Set(id, kNoBatch);
  } else if (xs == 0 && ks < 0) {
    Set(id, 0);
  } else if (xs == 1 && ks == 1 && op.attrs.feature_group_count == 1) {
    Set(id, kNoBatch);
  } else {
    return Fail(id,
                "it holds the batch outside the input's batch dim and the contracted "
                "feature dims");
  }
  return Status();
}

Status BatchTracer::TraceDimPreserving(int32_t id) {
  const Op& op = graph_.op(id);
  const int32_t s = OperandState(id, 0);
  const OpAttrs& a = op.attrs;
  if (s < 0) {
    for (size_t k = 1; k < op.operands.size(); ++k) {
      if (OperandState(id, k) >= 0) return Fail(id, "only a secondary operand holds the batch");
    }
    Set(id, kNoBatch);
    return Status();
  }
  const size_t d = static_cast<size_t>(s);
  const int64_t size = graph_.op(Operand(id, 0)).shape[d];
  auto at = [d](const Dims& v, int64_t fallback) { return d < v.size() ? v[d] : fallback; };
  bool touches = false;
  switch (op.kind) {
    case OpKind::kSlice:
      touches = at(a.starts, 0) != 0 || at(a.limits, size) != size || at(a.strides, 1) != 1;
      break;
    case OpKind::kPad:
      touches =
          at(a.padding_lo, 0) != 0 || at(a.padding_hi, 0) != 0 || at(a.padding_interior, 0) != 0;
      break;
    case OpKind::kReverse:
      touches = IndexOf(a.dims, s) >= 0;
      break;
    case OpKind::kReduceWindow:
    case OpKind::kSelectAndScatter:
      touches = at(a.window, 1) != 1 || at(a.strides, 1) != 1 || at(a.padding_lo, 0) != 0 ||
                at(a.padding_hi, 0) != 0;
      if (op.operands.size() > 1 && OperandState(id, 1) != s) {
        return Fail(id, "its operands do not hold the batch in the same dim");
      }
      break;
    default:
      return Fail(id, "rebatching does not follow the batch through this op kind");
  }
  if (touches) return Fail(id, "it slices, pads, reverses or windows across the batch " + Dim(s));
  Set(id, s);
  return Status();
}

// Makes pending op `id` hold the batch in `dim`, as `user` requires.
Status BatchTracer::Resolve(int32_t id, int32_t dim, int32_t user) {
  const int32_t s = State(id);
  if (s == dim) return Status();
  if (s >= 0) {
    return Fail(user, "it needs the batch in " + Dim(dim) + " of " + DescribeOp(graph_, id) +
                          ", which holds it in " + Dim(s));
  }
  if (s == kNoBatch) {
    return Fail(user, "it combines the batch (" + Dim(dim) + ") with " + DescribeOp(graph_, id) +
                          ", which does not depend on the batch (a weight, optimizer state or "
                          "a value computed from them)");
  }
  const Op& op = graph_.op(id);
  Set(id, dim);
  if (op.kind == OpKind::kConstant || op.kind == OpKind::kIota) {
    hints_[static_cast<size_t>(id)] = dim;
    changed_ = true;
    return Status();
  }
  if (op.kind == OpKind::kBroadcastInDim) {
    const int32_t from = IndexOf(op.attrs.dims, dim);
    if (from < 0) {
      hints_[static_cast<size_t>(id)] = dim;
      changed_ = true;
      return Status();
    }
    return Resolve(op.operands[0], from, id);
  }
  if (op.kind == OpKind::kTranspose) {
    return Resolve(op.operands[0], static_cast<int32_t>(op.attrs.dims[static_cast<size_t>(dim)]),
                   id);
  }
  for (int32_t operand : op.operands) {  // elementwise: every operand has the result's shape
    if (Status st = Resolve(operand, dim, id); !st.ok()) return st;
  }
  return Status();
}

Status BatchTracer::CheckResult() const {
  for (int32_t id = 0; id < graph_.size(); ++id) {
    const Op& op = graph_.op(id);
    const int32_t s = State(id);
    if (s >= 0 && op.shape[static_cast<size_t>(s)] % batch_ != 0) {
      return Fail(id, Dim(s) + " of " + ShapeString(op.shape) + " should hold the batch of " +
                          std::to_string(batch_) + " but is no multiple of it");
    }
    if (s >= 0 && op.alias_of >= 0) {
      return Fail(id, "it updates " + DescribeOp(graph_, op.alias_of) +
                          " with a value that depends on the batch: parameters must not");
    }
  }
  return Status();
}

// mul(sum, 1 / count) or div(sum, count), where sum (through converts) reduce_sums over the
// batch dim and count is the number of elements it sums.
void BatchTracer::FindMeanDivisors(BatchAnalysis& analysis) const {
  auto summed_count = [&](int32_t id) -> int64_t {
    while (graph_.op(id).kind == OpKind::kConvert) id = graph_.op(id).operands[0];
    const Op& op = graph_.op(id);
    if (op.kind != OpKind::kReduceSum) return 0;
    const int32_t s = State(op.operands[0]);
    if (s < 0 || IndexOf(op.attrs.dims, s) < 0) return 0;
    int64_t count = 1;
    for (int64_t d : op.attrs.dims)
      count *= graph_.op(op.operands[0]).shape[static_cast<size_t>(d)];
    return count;
  };
  auto record = [&](int32_t constant, int64_t count, bool reciprocal) {
    for (const MeanDivisor& known : analysis.mean_divisors) {
      if (known.constant == constant) return;
    }
    analysis.mean_divisors.push_back(MeanDivisor{constant, count, reciprocal});
  };
  for (int32_t id = 0; id < graph_.size(); ++id) {
    const Op& op = graph_.op(id);
    if (op.kind != OpKind::kMul && op.kind != OpKind::kDiv) continue;
    for (size_t k = 0; k < 2; ++k) {
      const int32_t constant = op.operands[k], sum = op.operands[1 - k];
      if (graph_.op(constant).kind != OpKind::kConstant) continue;
      if (op.kind == OpKind::kDiv && k != 1) continue;
      const int64_t count = summed_count(sum);
      if (count == 0) continue;
      const double value = graph_.op(constant).attrs.value;
      const double expected =
          op.kind == OpKind::kMul ? 1.0 / static_cast<double>(count) : static_cast<double>(count);
      if (value == expected) record(constant, count, op.kind == OpKind::kMul);
    }
  }
}

}  // namespace

Result<BatchAnalysis> AnalyzeBatch(const Graph& graph, int32_t batch_dim) {
  if (batch_dim < 0) {
    return InvalidArgument("rebatch: the batch dim " + std::to_string(batch_dim) + " is negative");
  }
  return BatchTracer(graph, batch_dim).Run();
}

Result<Graph> Rebatch(const Graph& graph, const BatchAnalysis& analysis, int64_t microbatches) {
  if (microbatches < 1 || analysis.batch % microbatches != 0) {
    return InvalidArgument("rebatch: " + std::to_string(microbatches) +
                           " microbatches do not divide the batch of " +
                           std::to_string(analysis.batch) + " examples");
  }
  if (microbatches == 1) return graph;
  Graph out;
  out.outputs = graph.outputs;
  out.ops.reserve(graph.ops.size());
  for (int32_t id = 0; id < graph.size(); ++id) {
    Op op = graph.op(id);
    const int32_t dim = analysis.batch_dim[static_cast<size_t>(id)];
    if (dim >= 0) {
      const size_t d = static_cast<size_t>(dim);
      op.shape[d] /= microbatches;
      if (op.kind == OpKind::kSlice && d < op.attrs.limits.size()) op.attrs.limits[d] = op.shape[d];
    }
    if (Status s = InferOpType(out, id, op); !s.ok()) return s;
    out.ops.push_back(std::move(op));
  }
  for (const MeanDivisor& divisor : analysis.mean_divisors) {
    const double count = static_cast<double>(divisor.count / microbatches);
    out.ops[static_cast<size_t>(divisor.constant)].attrs.value =
        divisor.reciprocal ? 1.0 / count : count;
  }
  if (Status s = ValidateGraph(out); !s.ok()) return s;
  return out;
}

}  // namespace alpa
