// The plan checker's layout rules per op kind (plan_check_internal.h). Everything here is
// derived from the op semantics in core/ir/graph.h; nothing is taken from the strategy enumeration.
//
// Layout rules per op kind (after dropping size-1 mesh dims). "Equal" means the same mesh-dim
// list on that tensor dim; P(x) is the set of mesh dims over which x is a partial sum.
//   elementwise, select, convert: every operand laid out like operand 0; the result too.
//       Partial sums pass only through ops linear in them: add / sub with every operand partial
//       over the same mesh dims; neg; convert to a floating dtype; mul with exactly one partial
//       operand; div with only the numerator partial; select with an unpartial predicate and
//       both branches partial over the same mesh dims (select is linear in (x, y) jointly: a
//       sum of selects is the select of the sums). Any other partial operand is an error.
//   dot_general: batch dims split identically on both sides and as on the result, free dims as
//       on the result, contracting pairs split identically; the result is partial over the
//       contracting pairs' mesh dims and over a mesh dim where exactly one operand is partial
//       (bilinear); a mesh dim may split only one thing.
//   convolution: N as the result's N, the kernel's O as the result's O, input channels split
//       identically on x and the kernel (partial result over them; not with feature groups),
//       spatial dims unsplit everywhere; partial operands as dot_general.
//   reduce_sum: reduced dims removed, their mesh dims become partial; P passes.
//   reduce_max: reduced dims' mesh dims hold partial maxima that need an in-op all-reduce (or
//       reduce-scatter); a partial-sum operand is an error (max is not linear).
//   transpose: permuted; reshape: a split may only sit on a dim whose preceding dims hold the
//       same element count on both sides (the major dim of a run of equal element counts), and
//       moves to the first non-unit output dim with that preceding count; P passes.
//   broadcast_in_dim (not fused): kept dims as the operand's; new and size-1-expanded dims may be
//       split at will (every device can make any slice of data constant along the dim); P passes.
//   slice, pad, reverse, concatenate, reduce_window, select_and_scatter: the dims they touch are
//       unsplit on every operand, the other dims equal. P passes slice, reverse, concatenate
//       (all operands alike), pad only with a zero pad value, reduce_window only for sum, and
//       select_and_scatter only through the scattered source (never the window input).
//   gather: table dims other than the axis as on the result, index dims as on the result; a
//       split table axis makes the result partial (each device returns zeros for rows it lacks);
//       table P passes, partial indices are an error.
//   scatter_add: base laid out as the result; updates laid out as the base on the base's other
//       dims and as the indices on the index dims; the base axis's mesh dims may not split the
//       indices or updates (a device needs every update landing in its rows); splitting index
//       dims makes the updates' contribution partial over those mesh dims, so the base must be
//       partial over exactly those mesh dims and the updates' own partial ones.
//   parameter (and any non-free op without operands): any valid spec.
// In-op collectives then act on the derived result in list order, exactly as on an edge.
//
// Where the rules are permissive, it is because the plan computes the right values anyway:
//   - mesh dims of size 1 are dropped everywhere (a split into one piece, a sum of one addend);
//   - select passes partial sums through both branches at once (linear in them jointly);
//   - a non-fused broadcast may split its new dims freely (a local slice of constant data);
//   - on an edge, a reduce-scatter or all-to-all may land behind mesh dims the reader wants
//     before it on that tensor dim: those are sliced locally first (slicing commutes with sums);
//   - a split gather table assumes in-range indices (as Megatron's vocab-parallel embedding
//     does): a clamped out-of-range index would read zeros instead of the edge row.
// Where they are strict, a plan that might be valid is rejected rather than a wrong one
// accepted: mul / dot with both operands partial (even over different mesh dims), a grouped
// convolution with split input channels, any split of a dim a window / slice / pad / reverse /
// concatenate touches, a reshape split that is not on the major dim of its run, and a result
// spec split further than its operands give (an op does not slice its own result).
#include <algorithm>
#include <string>

#include "core/util/dtype.h"
#include "core/util/wide_int.h"
#include "solvers/auto_sharding/plan_check_internal.h"

namespace alpa::plan_check {
// ---- Per-kind derivation of the result layout from the operand layouts ----

std::string PartialText(const ShardingSpec& s) { return MeshDimsText(s.partial); }

std::string NotLinear(const OpView& view, size_t k) {
  return "operand " + std::to_string(k) + " is a partial sum over " + PartialText(view.in[k]) +
         ", and " + OpKindName(view.op.kind) + " is not linear in it";
}

std::string DeriveElementwise(const OpView& view, Layout& out) {
  for (size_t k = 1; k < view.in.size(); ++k) {
    if (view.in[k].dims != view.in[0].dims) {
      ShardingSpec a = view.in[k], b = view.in[0];
      a.partial.clear();
      b.partial.clear();
      return "operand " + std::to_string(k) + " is split as " + Quote(a) + " but operand 0 as " +
             Quote(b) + "; an elementwise op reads all operands alike";
    }
  }
  out.spec.dims = view.in[0].dims;
  std::vector<size_t> partial_ops;
  for (size_t k = 0; k < view.in.size(); ++k) {
    if (!view.in[k].partial.empty()) partial_ops.push_back(k);
  }
  if (partial_ops.empty()) return "";
  const size_t first = partial_ops[0];
  switch (view.op.kind) {
    case OpKind::kAdd:
    case OpKind::kSub:
      for (size_t k = 0; k < view.in.size(); ++k) {
        if (view.in[k].partial != view.in[first].partial) {
          return "operand " + std::to_string(first) + " is a partial sum over " +
                 PartialText(view.in[first]) + " but operand " + std::to_string(k) + " is " +
                 (view.in[k].partial.empty() ? "not" : "one over " + PartialText(view.in[k])) +
                 "; add / sub of partial sums needs every operand partial over the same mesh "
                 "dims";
        }
      }
      break;
    case OpKind::kNeg:
      break;
    case OpKind::kConvert:
      if (!IsFloating(view.op.dtype)) {
        return "operand 0 is a partial sum over " + PartialText(view.in[0]) + ", and convert to " +
               DTypeName(view.op.dtype) + " is not linear";
      }
      break;
    case OpKind::kMul:
      if (partial_ops.size() > 1) {
        return "operands " + std::to_string(partial_ops[0]) + " and " +
               std::to_string(partial_ops[1]) +
               " are both partial sums; mul is linear in one operand at a time";
      }
      break;
    case OpKind::kDiv:
      if (partial_ops.size() > 1 || first != 0) {
        return "the divisor is a partial sum over " + PartialText(view.in[1]) +
               "; only the numerator of div may be one";
      }
      break;
    case OpKind::kSelect:
      if (!view.in[0].partial.empty()) return NotLinear(view, 0);
      if (view.in[1].partial != view.in[2].partial) {
        return "select's branches are partial sums over different mesh dims (" + Quote(view.in[1]) +
               " and " + Quote(view.in[2]) + ")";
      }
      break;
    default:
      return NotLinear(view, first);
  }
  out.spec.partial = view.in[first].partial;
  return "";
}

// Partial sums through a bilinear op (dot_general, convolution): a mesh dim partial in exactly
// one operand stays partial; in both it is an error (the product of sums is not the sum of
// products).
std::string BilinearPartial(const OpView& view, std::vector<int32_t>& partial) {
  for (int32_t m : view.in[0].partial) {
    if (Contains(view.in[1].partial, m)) {
      return "both operands are partial sums over mesh dim " + std::to_string(m);
    }
  }
  partial = SortedUnion(SortedUnion(partial, view.in[0].partial), view.in[1].partial);
  return "";
}

std::string DeriveDot(const OpView& view, Layout& out) {
  const DotDims& dd = view.op.attrs.dot;
  const ShardingSpec& l = view.in[0];
  const ShardingSpec& r = view.in[1];
  std::vector<bool> l_used(l.rank(), false), r_used(r.rank(), false);
  for (size_t i = 0; i < dd.lhs_batch.size(); ++i) {
    const size_t a = static_cast<size_t>(dd.lhs_batch[i]), b = static_cast<size_t>(dd.rhs_batch[i]);
    if (l.dims[a] != r.dims[b]) {
      return "batch dim pair " + std::to_string(i) + " is split differently (lhs " + Quote(l) +
             " dim " + std::to_string(a) + ", rhs " + Quote(r) + " dim " + std::to_string(b) + ")";
    }
    out.spec.dims.push_back(l.dims[a]);
    l_used[a] = r_used[b] = true;
  }
  std::vector<int32_t> contracted;
  for (size_t i = 0; i < dd.lhs_contracting.size(); ++i) {
    const size_t a = static_cast<size_t>(dd.lhs_contracting[i]);
    const size_t b = static_cast<size_t>(dd.rhs_contracting[i]);
    if (l.dims[a] != r.dims[b]) {
      return "contracting dim pair " + std::to_string(i) + " is split differently (lhs " +
             Quote(l) + " dim " + std::to_string(a) + ", rhs " + Quote(r) + " dim " +
             std::to_string(b) + ")";
    }
    contracted.insert(contracted.end(), l.dims[a].begin(), l.dims[a].end());
    l_used[a] = r_used[b] = true;
  }
  for (size_t a = 0; a < l.rank(); ++a) {
    if (!l_used[a]) out.spec.dims.push_back(l.dims[a]);
  }
  for (size_t b = 0; b < r.rank(); ++b) {
    if (!r_used[b]) out.spec.dims.push_back(r.dims[b]);
  }
  std::sort(contracted.begin(), contracted.end());
  out.spec.partial = contracted;
  return BilinearPartial(view, out.spec.partial);
}

std::string DeriveConvolution(const OpView& view, Layout& out) {
  const ShardingSpec& x = view.in[0];
  const ShardingSpec& k = view.in[1];
  for (size_t d = 2; d < x.rank(); ++d) {
    if (!x.dims[d].empty() || !k.dims[d].empty()) {
      return "spatial dim " + std::to_string(d) + " is split (input " + Quote(x) + ", kernel " +
             Quote(k) + "); a convolution window needs its neighbours";
    }
  }
  if (x.dims[1] != k.dims[1]) {
    return "the input channels are split differently on the input " + Quote(x) +
           " and the kernel " + Quote(k);
  }
  if (!x.dims[1].empty() && view.op.attrs.feature_group_count != 1) {
    // A channel split that respects the groups could be valid, but it needs the group
    // structure of both C and O; strict here, as no strategy of Alpa's splits them.
    return "a grouped convolution (feature_group_count " +
           std::to_string(view.op.attrs.feature_group_count) + ") with split input channels";
  }
  out.spec.dims.assign(x.rank(), {});
  out.spec.dims[0] = x.dims[0];
  out.spec.dims[1] = k.dims[0];
  out.spec.partial = x.dims[1];
  std::sort(out.spec.partial.begin(), out.spec.partial.end());
  return BilinearPartial(view, out.spec.partial);
}

std::string DeriveBroadcast(const OpView& view, Layout& out) {
  const Dims& xs = view.shape(0);
  // New and size-1-expanded dims: whatever the result claims (any device can make any slice of
  // data that is constant along the dim).
  out.spec.dims = view.claimed.dims;
  for (size_t i = 0; i < xs.size(); ++i) {
    const size_t od = static_cast<size_t>(view.op.attrs.dims[i]);
    if (xs[i] == view.op.shape[od]) {
      out.spec.dims[od] = view.in[0].dims[i];
    } else if (!view.in[0].dims[i].empty()) {
      return "operand dim " + std::to_string(i) + " is size 1 yet split";
    }
  }
  out.spec.partial = view.in[0].partial;
  return "";
}

std::string DeriveReshape(const OpView& view, Layout& out) {
  const Dims& xs = view.shape(0);
  const Dims& ys = view.op.shape;
  out.spec.dims.assign(ys.size(), {});
  out.spec.partial = view.in[0].partial;
  int64_t x_prefix = 1;
  for (size_t a = 0; a < xs.size(); x_prefix *= xs[a], ++a) {
    if (view.in[0].dims[a].empty()) continue;
    // The output dim starting at the same flat offset; a split of input dim a into n chunks is
    // a split of that dim into n chunks (sizes agree: both are total / n).
    int64_t y_prefix = 1;
    size_t b = 0;
    while (b < ys.size() && (y_prefix < x_prefix || ys[b] == 1)) y_prefix *= ys[b++];
    if (b == ys.size() || y_prefix != x_prefix) {
      return "operand dim " + std::to_string(a) + " is split (" + Quote(view.in[0]) +
             ") but is not the major dim of a run of dims with equal element counts in " +
             ShapeString(xs) + " -> " + ShapeString(ys);
    }
    out.spec.dims[b] = view.in[0].dims[a];
  }
  return "";
}

std::string DeriveTranspose(const OpView& view, Layout& out) {
  for (int64_t p : view.op.attrs.dims)
    out.spec.dims.push_back(view.in[0].dims[static_cast<size_t>(p)]);
  out.spec.partial = view.in[0].partial;
  return "";
}

// Dims a data-movement or window op touches (they must stay unsplit).
std::vector<bool> TouchedDims(const OpView& view) {
  const Op& op = view.op;
  const Dims& xs = view.shape(0);
  std::vector<bool> touched(xs.size(), false);
  auto at = [](const std::vector<int64_t>& vec, size_t d, int64_t dflt) {
    return d < vec.size() ? vec[d] : dflt;
  };
  for (size_t d = 0; d < xs.size(); ++d) {
    switch (op.kind) {
      case OpKind::kSlice:
        touched[d] = at(op.attrs.starts, d, 0) != 0 || at(op.attrs.limits, d, xs[d]) != xs[d] ||
                     at(op.attrs.strides, d, 1) != 1;
        break;
      case OpKind::kPad:
        touched[d] = at(op.attrs.padding_lo, d, 0) != 0 || at(op.attrs.padding_hi, d, 0) != 0 ||
                     at(op.attrs.padding_interior, d, 0) != 0;
        break;
      case OpKind::kReverse:
        touched[d] = std::find(op.attrs.dims.begin(), op.attrs.dims.end(),
                               static_cast<int64_t>(d)) != op.attrs.dims.end();
        break;
      case OpKind::kConcatenate:
        touched[d] = static_cast<int64_t>(d) == op.attrs.axis;
        break;
      default:  // reduce_window, select_and_scatter
        touched[d] = at(op.attrs.window, d, 1) != 1 || at(op.attrs.strides, d, 1) != 1 ||
                     at(op.attrs.padding_lo, d, 0) != 0 || at(op.attrs.padding_hi, d, 0) != 0;
        break;
    }
  }
  return touched;
}

std::string DeriveWindowLike(const OpView& view, Layout& out) {
  const std::vector<bool> touched = TouchedDims(view);
  for (size_t k = 0; k < view.in.size(); ++k) {
    for (size_t d = 0; d < touched.size(); ++d) {
      if (touched[d] && !view.in[k].dims[d].empty()) {
        return "operand " + std::to_string(k) + " (" + Quote(view.in[k]) + ") is split on dim " +
               std::to_string(d) + ", which " + OpKindName(view.op.kind) +
               " moves data along; it must be unsplit";
      }
    }
    if (view.in[k].dims != view.in[0].dims) {
      return "operand " + std::to_string(k) + " is split as " + Quote(view.in[k]) +
             " but operand 0 as " + Quote(view.in[0]);
    }
  }
  out.spec.dims = view.in[0].dims;
  switch (view.op.kind) {
    case OpKind::kSlice:
    case OpKind::kReverse:
      out.spec.partial = view.in[0].partial;
      return "";
    case OpKind::kConcatenate:
      for (size_t k = 1; k < view.in.size(); ++k) {
        if (view.in[k].partial != view.in[0].partial) {
          return "operands 0 and " + std::to_string(k) +
                 " are partial sums over different mesh dims; concatenate needs them alike";
        }
      }
      out.spec.partial = view.in[0].partial;
      return "";
    case OpKind::kPad:
      if (!view.in[0].partial.empty() && view.op.attrs.value != 0.0) {
        return "operand 0 is a partial sum over " + PartialText(view.in[0]) +
               ", and pad with a non-zero value is not linear";
      }
      out.spec.partial = view.in[0].partial;
      return "";
    case OpKind::kReduceWindow:
      if (!view.in[0].partial.empty() && view.op.attrs.reduce != ReduceKind::kSum)
        return NotLinear(view, 0);
      out.spec.partial = view.in[0].partial;
      return "";
    default:  // select_and_scatter: linear in the scattered source only
      if (!view.in[0].partial.empty()) return NotLinear(view, 0);
      out.spec.partial = view.in[1].partial;
      return "";
  }
}

std::string DeriveReduce(const OpView& view, Layout& out) {
  const ShardingSpec& x = view.in[0];
  const std::vector<int64_t>& reduced = view.op.attrs.dims;
  std::vector<int32_t> split_reduced;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (std::find(reduced.begin(), reduced.end(), static_cast<int64_t>(d)) != reduced.end()) {
      split_reduced.insert(split_reduced.end(), x.dims[d].begin(), x.dims[d].end());
    } else {
      out.spec.dims.push_back(x.dims[d]);
    }
  }
  std::sort(split_reduced.begin(), split_reduced.end());
  if (view.op.kind == OpKind::kReduceSum) {
    out.spec.partial = SortedUnion(x.partial, split_reduced);
    return "";
  }
  if (!x.partial.empty()) return NotLinear(view, 0);
  out.max_pending = split_reduced;
  return "";
}

std::string DeriveGather(const OpView& view, Layout& out) {
  const ShardingSpec& table = view.in[0];
  const ShardingSpec& idx = view.in[1];
  if (!idx.partial.empty()) return NotLinear(view, 1);
  const size_t axis = static_cast<size_t>(view.op.attrs.axis);
  for (size_t d = 0; d < axis; ++d) out.spec.dims.push_back(table.dims[d]);
  for (const MeshDimList& d : idx.dims) out.spec.dims.push_back(d);
  for (size_t d = axis + 1; d < table.rank(); ++d) out.spec.dims.push_back(table.dims[d]);
  // A split table axis: each device looks up the rows it holds and returns zeros for the others
  // (Megatron's vocab-parallel embedding), so the result is a partial sum.
  std::vector<int32_t> axis_dims = table.dims[axis];
  std::sort(axis_dims.begin(), axis_dims.end());
  out.spec.partial = SortedUnion(table.partial, axis_dims);
  return "";
}

std::string DeriveScatterAdd(const OpView& view, Layout& out) {
  const ShardingSpec& base = view.in[0];
  const ShardingSpec& idx = view.in[1];
  const ShardingSpec& upd = view.in[2];
  if (!idx.partial.empty()) return NotLinear(view, 1);
  const size_t axis = static_cast<size_t>(view.op.attrs.axis);
  const size_t ri = idx.rank();
  for (size_t d = 0; d < base.rank(); ++d) {
    if (d == axis) continue;
    const size_t u = d < axis ? d : d - 1 + ri;
    if (upd.dims[u] != base.dims[d]) {
      return "the updates (" + Quote(upd) + ") dim " + std::to_string(u) +
             " is split differently from the base (" + Quote(base) + ") dim " + std::to_string(d);
    }
  }
  std::vector<int32_t> index_split;
  for (size_t j = 0; j < ri; ++j) {
    if (upd.dims[axis + j] != idx.dims[j]) {
      return "the updates (" + Quote(upd) + ") dim " + std::to_string(axis + j) +
             " is split differently from the indices (" + Quote(idx) + ") dim " + std::to_string(j);
    }
    index_split.insert(index_split.end(), idx.dims[j].begin(), idx.dims[j].end());
  }
  for (int32_t m : base.dims[axis]) {
    if (Contains(index_split, m) || Contains(upd.partial, m)) {
      return "mesh dim " + std::to_string(m) +
             " splits the base's scatter axis and the updates; a device would miss the updates "
             "landing in its rows";
    }
  }
  std::sort(index_split.begin(), index_split.end());
  // result = base + contribution: the sum over a mesh dim counts the base once per addend, so
  // the base must be partial exactly where the contribution is.
  const std::vector<int32_t> contribution = SortedUnion(upd.partial, index_split);
  if (base.partial != contribution) {
    return "the updates contribute a partial sum over " +
           (contribution.empty() ? std::string("no mesh dim") : MeshDimsText(contribution)) +
           " (split index dims or partial updates) but the base is partial over " +
           (base.partial.empty() ? std::string("none") : MeshDimsText(base.partial)) +
           "; they must match";
  }
  out.spec.dims = base.dims;
  out.spec.partial = base.partial;
  return "";
}

std::string DeriveResult(const OpView& view, Layout& out) {
  const OpKind kind = view.op.kind;
  if (view.op.operands.empty()) {  // parameter (or a source op that is not free): any layout
    out.spec = view.claimed;
    return "";
  }
  if (IsElementwise(kind)) return DeriveElementwise(view, out);
  switch (kind) {
    case OpKind::kDotGeneral:
      return DeriveDot(view, out);
    case OpKind::kConvolution:
      return DeriveConvolution(view, out);
    case OpKind::kBroadcastInDim:
      return DeriveBroadcast(view, out);
    case OpKind::kReshape:
      return DeriveReshape(view, out);
    case OpKind::kTranspose:
      return DeriveTranspose(view, out);
    case OpKind::kSlice:
    case OpKind::kPad:
    case OpKind::kReverse:
    case OpKind::kConcatenate:
    case OpKind::kReduceWindow:
    case OpKind::kSelectAndScatter:
      return DeriveWindowLike(view, out);
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
      return DeriveReduce(view, out);
    case OpKind::kGather:
      return DeriveGather(view, out);
    case OpKind::kScatterAdd:
      return DeriveScatterAdd(view, out);
    default:
      return std::string("the checker has no layout rule for ") + OpKindName(kind);
  }
}

}  // namespace alpa::plan_check
