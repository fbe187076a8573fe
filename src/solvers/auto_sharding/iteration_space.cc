// Iteration spaces per op kind (see iteration_space.h).
#include "solvers/auto_sharding/iteration_space.h"

#include <algorithm>
#include <numeric>

namespace alpa {

int32_t IterationSpace::AddLoop(LoopKind kind, int64_t size) {
  kinds.push_back(kind);
  sizes.push_back({size});
  return num_loops() - 1;
}

bool IterationSpace::Divides(int32_t loop, int64_t pieces) const {
  if (loop < 0 || loop >= num_loops() || pieces < 1) return false;
  for (int64_t size : sizes[static_cast<size_t>(loop)]) {
    if (size % pieces != 0) return false;
  }
  return true;
}

namespace {

// A space whose loops are the result dims, every operand mapped identically (elementwise ops).
IterationSpace ResultLoops(const Op& op, size_t num_operands) {
  IterationSpace s;
  for (int64_t size : op.shape) s.result_dims.push_back(s.AddLoop(LoopKind::kParallel, size));
  s.operand_dims.assign(num_operands, s.result_dims);
  return s;
}

// Every dim of `dims` (a dim list of the result, also true of each operand) becomes -1.
void Unsplittable(IterationSpace& s, const std::vector<size_t>& dims) {
  for (size_t d : dims) {
    s.result_dims[d] = -1;
    for (auto& operand : s.operand_dims) operand[d] = -1;
  }
}

// Dims of an op touched by per-dim window / padding attributes (nonzero padding, window or
// stride other than 1).
std::vector<size_t> TouchedDims(const OpAttrs& a, size_t rank) {
  std::vector<size_t> touched;
  auto at = [](const std::vector<int64_t>& v, size_t d, int64_t dflt) {
    return d < v.size() ? v[d] : dflt;
  };
  for (size_t d = 0; d < rank; ++d) {
    if (at(a.window, d, 1) != 1 || at(a.strides, d, 1) != 1 || at(a.padding_lo, d, 0) != 0 ||
        at(a.padding_hi, d, 0) != 0 || at(a.padding_interior, d, 0) != 0) {
      touched.push_back(d);
    }
  }
  return touched;
}

IterationSpace DotSpace(const Graph& g, const Op& op) {
  const DotDims& dd = op.attrs.dot;
  const Dims& lhs = g.op(op.operands[0]).shape;
  const Dims& rhs = g.op(op.operands[1]).shape;
  IterationSpace space;
  space.operand_dims = {std::vector<int32_t>(lhs.size(), -1), std::vector<int32_t>(rhs.size(), -1)};
  auto is_in = [](const std::vector<int64_t>& v, size_t d) {
    return std::find(v.begin(), v.end(), static_cast<int64_t>(d)) != v.end();
  };
  for (size_t i = 0; i < dd.lhs_batch.size(); ++i) {
    int32_t loop = space.AddLoop(LoopKind::kParallel, lhs[static_cast<size_t>(dd.lhs_batch[i])]);
    space.operand_dims[0][static_cast<size_t>(dd.lhs_batch[i])] = loop;
    space.operand_dims[1][static_cast<size_t>(dd.rhs_batch[i])] = loop;
    space.result_dims.push_back(loop);
  }
  for (size_t d = 0; d < lhs.size(); ++d) {
    if (is_in(dd.lhs_batch, d) || is_in(dd.lhs_contracting, d)) continue;
    int32_t loop = space.AddLoop(LoopKind::kParallel, lhs[d]);
    space.operand_dims[0][d] = loop;
    space.result_dims.push_back(loop);
  }
  for (size_t d = 0; d < rhs.size(); ++d) {
    if (is_in(dd.rhs_batch, d) || is_in(dd.rhs_contracting, d)) continue;
    int32_t loop = space.AddLoop(LoopKind::kParallel, rhs[d]);
    space.operand_dims[1][d] = loop;
    space.result_dims.push_back(loop);
  }
  for (size_t i = 0; i < dd.lhs_contracting.size(); ++i) {
    int32_t loop =
        space.AddLoop(LoopKind::kSumReduced, lhs[static_cast<size_t>(dd.lhs_contracting[i])]);
    space.operand_dims[0][static_cast<size_t>(dd.lhs_contracting[i])] = loop;
    space.operand_dims[1][static_cast<size_t>(dd.rhs_contracting[i])] = loop;
  }
  return space;
}

IterationSpace ConvolutionSpace(const Graph& g, const Op& op) {
  const Dims& x = g.op(op.operands[0]).shape;
  const Dims& k = g.op(op.operands[1]).shape;
  IterationSpace s;
  s.result_dims.assign(op.shape.size(), -1);
  s.operand_dims = {std::vector<int32_t>(x.size(), -1), std::vector<int32_t>(k.size(), -1)};
  int32_t batch = s.AddLoop(LoopKind::kParallel, x[0]);
  s.operand_dims[0][0] = batch;
  s.result_dims[0] = batch;
  if (op.attrs.feature_group_count == 1) {  // grouped convolutions split the batch only
    int32_t out = s.AddLoop(LoopKind::kParallel, k[0]);
    s.operand_dims[1][0] = out;
    s.result_dims[1] = out;
    int32_t in = s.AddLoop(LoopKind::kSumReduced, x[1]);
    s.operand_dims[0][1] = in;
    s.operand_dims[1][1] = in;
  }
  return s;
}

// Reshape: runs of input and output dims with equal element counts (size-1 dims on their own).
IterationSpace ReshapeSpace(const Dims& in, const Op& op) {
  const Dims& out = op.shape;
  IterationSpace space;
  space.result_dims.assign(out.size(), -1);
  space.operand_dims = {std::vector<int32_t>(in.size(), -1)};
  size_t i = 0, o = 0;
  while (i < in.size() && o < out.size()) {
    if (in[i] == 1) {
      ++i;
      continue;
    }
    if (out[o] == 1) {
      ++o;
      continue;
    }
    const size_t i0 = i, o0 = o;
    int64_t pi = in[i++], po = out[o++];
    while (pi != po) {
      if (pi < po) {
        if (i >= in.size()) return space;  // cannot happen for a valid reshape
        pi *= in[i++];
      } else {
        if (o >= out.size()) return space;
        po *= out[o++];
      }
    }
    int32_t loop = space.AddLoop(LoopKind::kParallel, in[i0]);
    space.sizes[static_cast<size_t>(loop)].push_back(out[o0]);
    space.operand_dims[0][i0] = loop;
    space.result_dims[o0] = loop;
  }
  return space;
}

IterationSpace ReduceSpace(const Graph& g, const Op& op, LoopKind reduced_kind) {
  const Dims& x = g.op(op.operands[0]).shape;
  IterationSpace s;
  s.operand_dims = {std::vector<int32_t>(x.size(), -1)};
  for (size_t d = 0; d < x.size(); ++d) {
    const bool reduced = std::find(op.attrs.dims.begin(), op.attrs.dims.end(),
                                   static_cast<int64_t>(d)) != op.attrs.dims.end();
    int32_t loop = s.AddLoop(reduced ? reduced_kind : LoopKind::kParallel, x[d]);
    s.operand_dims[0][d] = loop;
    if (!reduced) s.result_dims.push_back(loop);
  }
  return s;
}

IterationSpace GatherSpace(const Graph& g, const Op& op) {
  const Dims& x = g.op(op.operands[0]).shape;
  const Dims& y = g.op(op.operands[1]).shape;
  const size_t axis = static_cast<size_t>(op.attrs.axis);
  IterationSpace space;
  space.result_dims.assign(op.shape.size(), -1);
  space.operand_dims = {std::vector<int32_t>(x.size(), -1), std::vector<int32_t>(y.size(), -1)};
  for (size_t d = 0; d < x.size(); ++d) {
    if (d == axis) {
      // Vocabulary-parallel lookup: each device holds a slice of the table, looks up the
      // indices that fall in it and contributes zeros for the others.
      space.operand_dims[0][d] = space.AddLoop(LoopKind::kSumReduced, x[d]);
      continue;
    }
    int32_t loop = space.AddLoop(LoopKind::kParallel, x[d]);
    space.operand_dims[0][d] = loop;
    space.result_dims[d < axis ? d : d - 1 + y.size()] = loop;
  }
  for (size_t d = 0; d < y.size(); ++d) {
    int32_t loop = space.AddLoop(LoopKind::kParallel, y[d]);
    space.operand_dims[1][d] = loop;
    space.result_dims[axis + d] = loop;
  }
  space.linear_operand = {true, false};
  return space;
}

IterationSpace ScatterAddSpace(const Graph& g, const Op& op) {
  const Dims& x = g.op(op.operands[0]).shape;
  const Dims& y = g.op(op.operands[1]).shape;
  const Dims& z = g.op(op.operands[2]).shape;
  const size_t axis = static_cast<size_t>(op.attrs.axis);
  IterationSpace space;
  space.operand_dims = {std::vector<int32_t>(x.size(), -1), std::vector<int32_t>(y.size(), -1),
                        std::vector<int32_t>(z.size(), -1)};
  for (size_t d = 0; d < x.size(); ++d) {
    int32_t loop = space.AddLoop(LoopKind::kParallel, x[d]);
    space.operand_dims[0][d] = loop;
    space.result_dims.push_back(loop);
    if (d != axis) space.operand_dims[2][d < axis ? d : d - 1 + y.size()] = loop;
  }
  // Splitting the updates: each device scatters its share into its own addend of the base.
  for (size_t d = 0; d < y.size(); ++d) {
    int32_t loop = space.AddLoop(LoopKind::kSumReduced, y[d]);
    space.operand_dims[1][d] = loop;
    space.operand_dims[2][axis + d] = loop;
  }
  space.linear_operand = {true, false, true};
  space.partial_all_operands = false;
  space.partial_with_reduced = {true, false, false};
  return space;
}

}  // namespace

Result<IterationSpace> OpIterationSpace(const Graph& graph, int32_t id) {
  if (id < 0 || id >= graph.size()) {
    return InvalidArgument("op " + std::to_string(id) + " does not exist");
  }
  const Op& op = graph.op(id);
  const size_t n = op.operands.size();
  IterationSpace space;
  switch (op.kind) {
    case OpKind::kParameter:
    case OpKind::kConstant:
    case OpKind::kIota:
      space = ResultLoops(op, 0);
      break;
    case OpKind::kDotGeneral:
      space = DotSpace(graph, op);
      space.linear_operand = {true, true};
      break;
    case OpKind::kConvolution:
      space = ConvolutionSpace(graph, op);
      space.linear_operand = {true, true};
      break;
    case OpKind::kBroadcastInDim: {
      space = ResultLoops(op, 0);
      const Dims& x = graph.op(op.operands[0]).shape;
      std::vector<int32_t> dims(x.size(), -1);
      for (size_t i = 0; i < x.size(); ++i) {
        const size_t to = static_cast<size_t>(op.attrs.dims[i]);
        if (x[i] == op.shape[to]) dims[i] = space.result_dims[to];
      }
      space.operand_dims = {dims};
      space.linear_operand = {true};
      break;
    }
    case OpKind::kReshape:
      space = ReshapeSpace(graph.op(op.operands[0]).shape, op);
      space.linear_operand = {true};
      break;
    case OpKind::kTranspose: {
      space = ResultLoops(op, 0);
      std::vector<int32_t> dims(op.shape.size(), -1);
      for (size_t i = 0; i < op.shape.size(); ++i) {
        dims[static_cast<size_t>(op.attrs.dims[i])] = space.result_dims[i];
      }
      space.operand_dims = {dims};
      space.linear_operand = {true};
      break;
    }
    case OpKind::kSlice: {
      space = ResultLoops(op, 1);
      const Dims& x = graph.op(op.operands[0]).shape;
      std::vector<size_t> cut;
      for (size_t d = 0; d < x.size(); ++d) {
        if (op.attrs.starts[d] != 0 || op.attrs.limits[d] != x[d] ||
            (d < op.attrs.strides.size() && op.attrs.strides[d] != 1)) {
          cut.push_back(d);
        }
      }
      Unsplittable(space, cut);
      space.linear_operand = {true};
      break;
    }
    case OpKind::kPad:
      space = ResultLoops(op, 1);
      Unsplittable(space, TouchedDims(op.attrs, op.shape.size()));
      space.linear_operand = {op.attrs.value == 0.0};
      break;
    case OpKind::kConcatenate:
      space = ResultLoops(op, n);
      Unsplittable(space, {static_cast<size_t>(op.attrs.axis)});
      space.linear_operand.assign(n, true);
      space.partial_all_operands = true;
      break;
    case OpKind::kReverse: {
      space = ResultLoops(op, 1);
      std::vector<size_t> dims;
      for (int64_t d : op.attrs.dims) dims.push_back(static_cast<size_t>(d));
      Unsplittable(space, dims);
      space.linear_operand = {true};
      break;
    }
    case OpKind::kReduceSum:
      space = ReduceSpace(graph, op, LoopKind::kSumReduced);
      space.linear_operand = {true};
      break;
    case OpKind::kReduceMax:
      space = ReduceSpace(graph, op, LoopKind::kMaxReduced);
      break;
    case OpKind::kReduceWindow:
      space = ResultLoops(op, 1);
      Unsplittable(space, TouchedDims(op.attrs, op.shape.size()));
      space.linear_operand = {op.attrs.reduce == ReduceKind::kSum};
      break;
    case OpKind::kSelectAndScatter:
      space = ResultLoops(op, 2);
      // y has the window op's output shape: only untouched dims line up with x's.
      Unsplittable(space, TouchedDims(op.attrs, op.shape.size()));
      break;
    case OpKind::kGather:
      space = GatherSpace(graph, op);
      break;
    case OpKind::kScatterAdd:
      space = ScatterAddSpace(graph, op);
      break;
    default:
      if (IsElementwise(op.kind)) {
        space = ResultLoops(op, n);
        if (op.kind == OpKind::kAdd || op.kind == OpKind::kSub) {
          space.linear_operand.assign(n, true);
          space.partial_all_operands = true;
        } else if (op.kind == OpKind::kNeg || op.kind == OpKind::kConvert) {
          space.linear_operand = {true};
        } else if (op.kind == OpKind::kMul) {
          space.linear_operand = {true, true};
        } else if (op.kind == OpKind::kDiv) {
          space.linear_operand = {true, false};
        }
        break;
      }
      return InvalidArgument(DescribeOp(graph, id) + ": no iteration space for this kind");
  }
  space.linear_operand.resize(n, false);
  space.partial_with_reduced.resize(n, false);
  return space;
}

}  // namespace alpa
