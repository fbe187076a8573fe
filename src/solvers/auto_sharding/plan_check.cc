// The independent plan checker (plan_check.h). Everything here is derived from the op semantics
// in core/graph.h; nothing is taken from the strategy enumeration or the resharding planner.
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
#include "solvers/auto_sharding/plan_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "core/dtype.h"
#include "core/sharding_spec.h"
#include "core/wide_int.h"

namespace alpa {
namespace {

using MeshDimList = std::vector<int32_t>;

bool Contains(const std::vector<int32_t>& v, int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

void Erase(std::vector<int32_t>& v, int32_t x) {
  v.erase(std::remove(v.begin(), v.end(), x), v.end());
}

std::vector<int32_t> SortedUnion(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

std::string MeshDimsText(const std::vector<int32_t>& dims) {
  if (dims.size() == 1) return "mesh dim " + std::to_string(dims[0]);
  std::string s = "mesh dims {";
  for (size_t i = 0; i < dims.size(); ++i) s += (i > 0 ? "," : "") + std::to_string(dims[i]);
  return s + "}";
}

std::string Quote(const ShardingSpec& spec) { return "'" + ToString(spec) + "'"; }

Status OpError(const Graph& graph, int32_t id, const std::string& what) {
  return InvalidArgument(DescribeOp(graph, id) + ": " + what);
}

// Drops mesh dims of size 1: they change nothing about the data a device holds.
ShardingSpec Canonical(const ShardingSpec& spec, const std::vector<int64_t>& mesh) {
  ShardingSpec out;
  out.dims.resize(spec.dims.size());
  for (size_t d = 0; d < spec.dims.size(); ++d) {
    for (int32_t m : spec.dims[d]) {
      if (mesh[static_cast<size_t>(m)] > 1) out.dims[d].push_back(m);
    }
  }
  for (int32_t m : spec.partial) {
    if (mesh[static_cast<size_t>(m)] > 1) out.partial.push_back(m);
  }
  return out;
}

// A layout being derived: a spec plus the mesh dims over which a reduce_max left partial maxima
// (not sums: they can only be combined by an all-reduce / reduce-scatter with max).
struct Layout {
  ShardingSpec spec;
  std::vector<int32_t> max_pending;
};

bool UsedAnywhere(const Layout& x, int32_t m) {
  for (const MeshDimList& d : x.spec.dims) {
    if (Contains(d, m)) return true;
  }
  return Contains(x.spec.partial, m) || Contains(x.max_pending, m);
}

// "" or a complaint naming the mesh dim used for two things.
std::string DuplicateMeshDim(const Layout& x) {
  std::map<int32_t, std::string> where;
  auto use = [&](int32_t m, const std::string& what) -> std::string {
    auto [it, inserted] = where.emplace(m, what);
    if (inserted) return "";
    return "mesh dim " + std::to_string(m) + " would split two different things (" + it->second +
           " and " + what + ")";
  };
  for (size_t d = 0; d < x.spec.dims.size(); ++d) {
    for (int32_t m : x.spec.dims[d]) {
      std::string e = use(m, "result dim " + std::to_string(d));
      if (!e.empty()) return e;
    }
  }
  for (int32_t m : x.spec.partial) {
    std::string e = use(m, "a partial sum");
    if (!e.empty()) return e;
  }
  for (int32_t m : x.max_pending) {
    std::string e = use(m, "a partial maximum");
    if (!e.empty()) return e;
  }
  return "";
}

// ---- Collectives, simulated on a layout heading for `want` ----

// Where `want` puts mesh dim m: {tensor dim, position in its list}, or {-1, -1}.
std::pair<int32_t, int32_t> FindInSpec(const ShardingSpec& want, int32_t m) {
  for (size_t d = 0; d < want.dims.size(); ++d) {
    for (size_t i = 0; i < want.dims[d].size(); ++i) {
      if (want.dims[d][i] == m) return {static_cast<int32_t>(d), static_cast<int32_t>(i)};
    }
  }
  return {-1, -1};
}

// Appends m to the tensor dim where `want` has it. The mesh dims `want` lists before m on that
// dim are sliced locally first when the layout lacks them (free: every device keeps its piece,
// which is valid on partial sums too), so a reduce-scatter may land behind a free slice.
std::string PlaceAsWanted(Layout& x, const ShardingSpec& want, int32_t m) {
  const auto [d, pos] = FindInSpec(want, m);
  if (d < 0) {
    return "the reader wants no tensor dim split over mesh dim " + std::to_string(m) + " (" +
           Quote(want) + ")";
  }
  MeshDimList& cur = x.spec.dims[static_cast<size_t>(d)];
  const MeshDimList& w = want.dims[static_cast<size_t>(d)];
  if (cur.size() > static_cast<size_t>(pos) || !std::equal(cur.begin(), cur.end(), w.begin())) {
    return "tensor dim " + std::to_string(d) + " is already split as " + Quote(x.spec) +
           ", which cannot take mesh dim " + std::to_string(m) + " where " + Quote(want) +
           " has it";
  }
  for (size_t i = cur.size(); i < static_cast<size_t>(pos); ++i) {
    if (UsedAnywhere(x, w[i])) {
      return "mesh dim " + std::to_string(w[i]) + " must split tensor dim " + std::to_string(d) +
             " before mesh dim " + std::to_string(m) + ", but layout " + Quote(x.spec) +
             " uses it elsewhere";
    }
    cur.push_back(w[i]);
  }
  cur.push_back(m);
  return "";
}

// Removes the mesh dims `ms` from the minor ends of the dims holding them (any order); records
// the tensor dim each came from.
std::string RemoveFromMinorEnds(Layout& x, std::vector<int32_t> ms,
                                std::map<int32_t, int32_t>& from) {
  while (!ms.empty()) {
    bool progress = false;
    for (size_t i = 0; i < ms.size() && !progress; ++i) {
      for (size_t d = 0; d < x.spec.dims.size(); ++d) {
        MeshDimList& list = x.spec.dims[d];
        if (!list.empty() && list.back() == ms[i]) {
          list.pop_back();
          from[ms[i]] = static_cast<int32_t>(d);
          ms.erase(ms.begin() + static_cast<std::ptrdiff_t>(i));
          progress = true;
          break;
        }
      }
    }
    if (!progress) {
      return "no tensor dim of " + Quote(x.spec) + " is split over mesh dim " +
             std::to_string(ms[0]) + " at its minor end";
    }
  }
  return "";
}

// Sorts mesh dims by where `want` puts them (tensor dim, then major to minor); ones it lacks
// go last (and are reported by PlaceAsWanted).
void SortByWantedPosition(std::vector<int32_t>& ms, const ShardingSpec& want) {
  std::stable_sort(ms.begin(), ms.end(), [&](int32_t a, int32_t b) {
    auto pa = FindInSpec(want, a), pb = FindInSpec(want, b);
    if (pa.first < 0) pa.first = static_cast<int32_t>(want.dims.size());
    if (pb.first < 0) pb.first = static_cast<int32_t>(want.dims.size());
    return pa < pb;
  });
}

std::string TakeFromPartial(Layout& x, int32_t m) {
  if (Contains(x.spec.partial, m)) {
    Erase(x.spec.partial, m);
    return "";
  }
  if (Contains(x.max_pending, m)) {
    Erase(x.max_pending, m);
    return "";
  }
  return "the tensor " + Quote(x.spec) + " is not a partial sum over mesh dim " + std::to_string(m);
}

// Applies one collective (its mesh dims of size 1 dropped) to `x`; "" or what is wrong.
std::string ApplyCollective(Layout& x, const PlannedCollective& c, const ShardingSpec& want,
                            const std::vector<int64_t>& mesh) {
  std::vector<int32_t> ms;
  for (int32_t m : c.mesh_dims) {
    if (mesh[static_cast<size_t>(m)] > 1) ms.push_back(m);
  }
  std::map<int32_t, int32_t> from;
  switch (c.kind) {
    case CollectiveKind::kAllReduce:
      for (int32_t m : ms) {
        std::string e = TakeFromPartial(x, m);
        if (!e.empty()) return e;
      }
      return "";
    case CollectiveKind::kReduceScatter:
      for (int32_t m : ms) {
        std::string e = TakeFromPartial(x, m);
        if (!e.empty()) return e;
      }
      SortByWantedPosition(ms, want);
      for (int32_t m : ms) {
        std::string e = PlaceAsWanted(x, want, m);
        if (!e.empty()) return e;
      }
      return "";
    case CollectiveKind::kAllGather:
      return RemoveFromMinorEnds(x, ms, from);
    case CollectiveKind::kAllToAll: {
      std::string e = RemoveFromMinorEnds(x, ms, from);
      if (!e.empty()) return e;
      SortByWantedPosition(ms, want);
      for (int32_t m : ms) {
        e = PlaceAsWanted(x, want, m);
        if (!e.empty()) return e;
        if (FindInSpec(want, m).first == from[m]) {
          return "it leaves mesh dim " + std::to_string(m) + " on tensor dim " +
                 std::to_string(from[m]);
        }
      }
      return "";
    }
    case CollectiveKind::kSendRecv:
      break;
  }
  return "send-recv is not an intra-op collective";
}

// What remains between `have` and `want` must be local: each tensor dim's mesh dims a prefix of
// the wanted ones (the rest is a free slice), and partial dims only where wanted (extra wanted
// partial dims are a zero fill).
std::string LocalDifference(const ShardingSpec& have, const ShardingSpec& want) {
  for (size_t d = 0; d < have.dims.size(); ++d) {
    const MeshDimList& h = have.dims[d];
    const MeshDimList& w = want.dims[d];
    if (h.size() > w.size() || !std::equal(h.begin(), h.end(), w.begin())) {
      return "it is laid out " + Quote(have) + " but read as " + Quote(want) + ": tensor dim " +
             std::to_string(d) + " needs communication that is not listed";
    }
  }
  for (int32_t m : have.partial) {
    if (!Contains(want.partial, m)) {
      return "it is laid out " + Quote(have) + " but read as " + Quote(want) +
             ": it is still a partial sum over mesh dim " + std::to_string(m) +
             " (no all-reduce / reduce-scatter over it is listed)";
    }
  }
  return "";
}

// ---- Per-kind derivation of the result layout from the operand layouts ----

// Everything an op rule reads.
struct OpView {
  const Graph& graph;
  int32_t id;
  const Op& op;
  const std::vector<ShardingSpec>& in;  // canonical operand specs
  const ShardingSpec& claimed;          // canonical result spec
  const Dims& shape(size_t k) const { return graph.op(op.operands[k]).shape; }
};

std::string PartialText(const ShardingSpec& s) { return MeshDimsText(s.partial); }

std::string NotLinear(const OpView& v, size_t k) {
  return "operand " + std::to_string(k) + " is a partial sum over " + PartialText(v.in[k]) +
         ", and " + OpKindName(v.op.kind) + " is not linear in it";
}

std::string DeriveElementwise(const OpView& v, Layout& out) {
  for (size_t k = 1; k < v.in.size(); ++k) {
    if (v.in[k].dims != v.in[0].dims) {
      ShardingSpec a = v.in[k], b = v.in[0];
      a.partial.clear();
      b.partial.clear();
      return "operand " + std::to_string(k) + " is split as " + Quote(a) + " but operand 0 as " +
             Quote(b) + "; an elementwise op reads all operands alike";
    }
  }
  out.spec.dims = v.in[0].dims;
  std::vector<size_t> partial_ops;
  for (size_t k = 0; k < v.in.size(); ++k) {
    if (!v.in[k].partial.empty()) partial_ops.push_back(k);
  }
  if (partial_ops.empty()) return "";
  const size_t first = partial_ops[0];
  switch (v.op.kind) {
    case OpKind::kAdd:
    case OpKind::kSub:
      for (size_t k = 0; k < v.in.size(); ++k) {
        if (v.in[k].partial != v.in[first].partial) {
          return "operand " + std::to_string(first) + " is a partial sum over " +
                 PartialText(v.in[first]) + " but operand " + std::to_string(k) + " is " +
                 (v.in[k].partial.empty() ? "not" : "one over " + PartialText(v.in[k])) +
                 "; add / sub of partial sums needs every operand partial over the same mesh "
                 "dims";
        }
      }
      break;
    case OpKind::kNeg:
      break;
    case OpKind::kConvert:
      if (!IsFloating(v.op.dtype)) {
        return "operand 0 is a partial sum over " + PartialText(v.in[0]) + ", and convert to " +
               DTypeName(v.op.dtype) + " is not linear";
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
        return "the divisor is a partial sum over " + PartialText(v.in[1]) +
               "; only the numerator of div may be one";
      }
      break;
    case OpKind::kSelect:
      if (!v.in[0].partial.empty()) return NotLinear(v, 0);
      if (v.in[1].partial != v.in[2].partial) {
        return "select's branches are partial sums over different mesh dims (" + Quote(v.in[1]) +
               " and " + Quote(v.in[2]) + ")";
      }
      break;
    default:
      return NotLinear(v, first);
  }
  out.spec.partial = v.in[first].partial;
  return "";
}

// Partial sums through a bilinear op (dot_general, convolution): a mesh dim partial in exactly
// one operand stays partial; in both it is an error (the product of sums is not the sum of
// products).
std::string BilinearPartial(const OpView& v, std::vector<int32_t>& partial) {
  for (int32_t m : v.in[0].partial) {
    if (Contains(v.in[1].partial, m)) {
      return "both operands are partial sums over mesh dim " + std::to_string(m);
    }
  }
  partial = SortedUnion(SortedUnion(partial, v.in[0].partial), v.in[1].partial);
  return "";
}

std::string DeriveDot(const OpView& v, Layout& out) {
  const DotDims& dd = v.op.attrs.dot;
  const ShardingSpec& l = v.in[0];
  const ShardingSpec& r = v.in[1];
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
  return BilinearPartial(v, out.spec.partial);
}

std::string DeriveConvolution(const OpView& v, Layout& out) {
  const ShardingSpec& x = v.in[0];
  const ShardingSpec& k = v.in[1];
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
  if (!x.dims[1].empty() && v.op.attrs.feature_group_count != 1) {
    // A channel split that respects the groups could be valid, but it needs the group
    // structure of both C and O; strict here, as no strategy of Alpa's splits them.
    return "a grouped convolution (feature_group_count " +
           std::to_string(v.op.attrs.feature_group_count) + ") with split input channels";
  }
  out.spec.dims.assign(x.rank(), {});
  out.spec.dims[0] = x.dims[0];
  out.spec.dims[1] = k.dims[0];
  out.spec.partial = x.dims[1];
  std::sort(out.spec.partial.begin(), out.spec.partial.end());
  return BilinearPartial(v, out.spec.partial);
}

std::string DeriveBroadcast(const OpView& v, Layout& out) {
  const Dims& xs = v.shape(0);
  // New and size-1-expanded dims: whatever the result claims (any device can make any slice of
  // data that is constant along the dim).
  out.spec.dims = v.claimed.dims;
  for (size_t i = 0; i < xs.size(); ++i) {
    const size_t od = static_cast<size_t>(v.op.attrs.dims[i]);
    if (xs[i] == v.op.shape[od]) {
      out.spec.dims[od] = v.in[0].dims[i];
    } else if (!v.in[0].dims[i].empty()) {
      return "operand dim " + std::to_string(i) + " is size 1 yet split";
    }
  }
  out.spec.partial = v.in[0].partial;
  return "";
}

std::string DeriveReshape(const OpView& v, Layout& out) {
  const Dims& xs = v.shape(0);
  const Dims& ys = v.op.shape;
  out.spec.dims.assign(ys.size(), {});
  out.spec.partial = v.in[0].partial;
  int64_t x_prefix = 1;
  for (size_t a = 0; a < xs.size(); x_prefix *= xs[a], ++a) {
    if (v.in[0].dims[a].empty()) continue;
    // The output dim starting at the same flat offset; a split of input dim a into n chunks is
    // a split of that dim into n chunks (sizes agree: both are total / n).
    int64_t y_prefix = 1;
    size_t b = 0;
    while (b < ys.size() && (y_prefix < x_prefix || ys[b] == 1)) y_prefix *= ys[b++];
    if (b == ys.size() || y_prefix != x_prefix) {
      return "operand dim " + std::to_string(a) + " is split (" + Quote(v.in[0]) +
             ") but is not the major dim of a run of dims with equal element counts in " +
             ShapeString(xs) + " -> " + ShapeString(ys);
    }
    out.spec.dims[b] = v.in[0].dims[a];
  }
  return "";
}

std::string DeriveTranspose(const OpView& v, Layout& out) {
  for (int64_t p : v.op.attrs.dims) out.spec.dims.push_back(v.in[0].dims[static_cast<size_t>(p)]);
  out.spec.partial = v.in[0].partial;
  return "";
}

// Dims a data-movement or window op touches (they must stay unsplit).
std::vector<bool> TouchedDims(const OpView& v) {
  const Op& op = v.op;
  const Dims& xs = v.shape(0);
  std::vector<bool> t(xs.size(), false);
  auto at = [](const std::vector<int64_t>& vec, size_t d, int64_t dflt) {
    return d < vec.size() ? vec[d] : dflt;
  };
  for (size_t d = 0; d < xs.size(); ++d) {
    switch (op.kind) {
      case OpKind::kSlice:
        t[d] = at(op.attrs.starts, d, 0) != 0 || at(op.attrs.limits, d, xs[d]) != xs[d] ||
               at(op.attrs.strides, d, 1) != 1;
        break;
      case OpKind::kPad:
        t[d] = at(op.attrs.padding_lo, d, 0) != 0 || at(op.attrs.padding_hi, d, 0) != 0 ||
               at(op.attrs.padding_interior, d, 0) != 0;
        break;
      case OpKind::kReverse:
        t[d] = std::find(op.attrs.dims.begin(), op.attrs.dims.end(), static_cast<int64_t>(d)) !=
               op.attrs.dims.end();
        break;
      case OpKind::kConcatenate:
        t[d] = static_cast<int64_t>(d) == op.attrs.axis;
        break;
      default:  // reduce_window, select_and_scatter
        t[d] = at(op.attrs.window, d, 1) != 1 || at(op.attrs.strides, d, 1) != 1 ||
               at(op.attrs.padding_lo, d, 0) != 0 || at(op.attrs.padding_hi, d, 0) != 0;
        break;
    }
  }
  return t;
}

std::string DeriveWindowLike(const OpView& v, Layout& out) {
  const std::vector<bool> touched = TouchedDims(v);
  for (size_t k = 0; k < v.in.size(); ++k) {
    for (size_t d = 0; d < touched.size(); ++d) {
      if (touched[d] && !v.in[k].dims[d].empty()) {
        return "operand " + std::to_string(k) + " (" + Quote(v.in[k]) + ") is split on dim " +
               std::to_string(d) + ", which " + OpKindName(v.op.kind) +
               " moves data along; it must be unsplit";
      }
    }
    if (v.in[k].dims != v.in[0].dims) {
      return "operand " + std::to_string(k) + " is split as " + Quote(v.in[k]) +
             " but operand 0 as " + Quote(v.in[0]);
    }
  }
  out.spec.dims = v.in[0].dims;
  switch (v.op.kind) {
    case OpKind::kSlice:
    case OpKind::kReverse:
      out.spec.partial = v.in[0].partial;
      return "";
    case OpKind::kConcatenate:
      for (size_t k = 1; k < v.in.size(); ++k) {
        if (v.in[k].partial != v.in[0].partial) {
          return "operands 0 and " + std::to_string(k) +
                 " are partial sums over different mesh dims; concatenate needs them alike";
        }
      }
      out.spec.partial = v.in[0].partial;
      return "";
    case OpKind::kPad:
      if (!v.in[0].partial.empty() && v.op.attrs.value != 0.0) {
        return "operand 0 is a partial sum over " + PartialText(v.in[0]) +
               ", and pad with a non-zero value is not linear";
      }
      out.spec.partial = v.in[0].partial;
      return "";
    case OpKind::kReduceWindow:
      if (!v.in[0].partial.empty() && v.op.attrs.reduce != ReduceKind::kSum) return NotLinear(v, 0);
      out.spec.partial = v.in[0].partial;
      return "";
    default:  // select_and_scatter: linear in the scattered source only
      if (!v.in[0].partial.empty()) return NotLinear(v, 0);
      out.spec.partial = v.in[1].partial;
      return "";
  }
}

std::string DeriveReduce(const OpView& v, Layout& out) {
  const ShardingSpec& x = v.in[0];
  const std::vector<int64_t>& reduced = v.op.attrs.dims;
  std::vector<int32_t> split_reduced;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (std::find(reduced.begin(), reduced.end(), static_cast<int64_t>(d)) != reduced.end()) {
      split_reduced.insert(split_reduced.end(), x.dims[d].begin(), x.dims[d].end());
    } else {
      out.spec.dims.push_back(x.dims[d]);
    }
  }
  std::sort(split_reduced.begin(), split_reduced.end());
  if (v.op.kind == OpKind::kReduceSum) {
    out.spec.partial = SortedUnion(x.partial, split_reduced);
    return "";
  }
  if (!x.partial.empty()) return NotLinear(v, 0);
  out.max_pending = split_reduced;
  return "";
}

std::string DeriveGather(const OpView& v, Layout& out) {
  const ShardingSpec& table = v.in[0];
  const ShardingSpec& idx = v.in[1];
  if (!idx.partial.empty()) return NotLinear(v, 1);
  const size_t axis = static_cast<size_t>(v.op.attrs.axis);
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

std::string DeriveScatterAdd(const OpView& v, Layout& out) {
  const ShardingSpec& base = v.in[0];
  const ShardingSpec& idx = v.in[1];
  const ShardingSpec& upd = v.in[2];
  if (!idx.partial.empty()) return NotLinear(v, 1);
  const size_t axis = static_cast<size_t>(v.op.attrs.axis);
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

std::string DeriveResult(const OpView& v, Layout& out) {
  const OpKind kind = v.op.kind;
  if (v.op.operands.empty()) {  // parameter (or a source op that is not free): any layout
    out.spec = v.claimed;
    return "";
  }
  if (IsElementwiseUnary(kind) || IsElementwiseBinary(kind) || kind == OpKind::kSelect) {
    return DeriveElementwise(v, out);
  }
  switch (kind) {
    case OpKind::kDotGeneral:
      return DeriveDot(v, out);
    case OpKind::kConvolution:
      return DeriveConvolution(v, out);
    case OpKind::kBroadcastInDim:
      return DeriveBroadcast(v, out);
    case OpKind::kReshape:
      return DeriveReshape(v, out);
    case OpKind::kTranspose:
      return DeriveTranspose(v, out);
    case OpKind::kSlice:
    case OpKind::kPad:
    case OpKind::kReverse:
    case OpKind::kConcatenate:
    case OpKind::kReduceWindow:
    case OpKind::kSelectAndScatter:
      return DeriveWindowLike(v, out);
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
      return DeriveReduce(v, out);
    case OpKind::kGather:
      return DeriveGather(v, out);
    case OpKind::kScatterAdd:
      return DeriveScatterAdd(v, out);
    default:
      return std::string("the checker has no layout rule for ") + OpKindName(kind);
  }
}

// ---- The checker ----

bool IsPlanStatus(SolveStatus s) {
  return s == SolveStatus::kOptimal || s == SolveStatus::kFeasible || s == SolveStatus::kCancelled;
}

class PlanChecker {
 public:
  PlanChecker(const Graph& graph, const std::vector<int64_t>& mesh, const AutoShardResult& result)
      : graph_(graph), mesh_(mesh), result_(result) {}

  Status CheckStructure();
  Status CheckSpecs();
  Status CheckOps();
  Status CheckEdges();
  Status CheckObjective();

 private:
  const OpSharding& sharding(int32_t id) const { return result_.ops[static_cast<size_t>(id)]; }
  bool Materialized(int32_t id) const { return !sharding(id).free && !sharding(id).fused; }
  std::string EdgeName(int32_t producer, int32_t consumer, size_t k) const {
    return "edge " + DescribeOp(graph_, producer) + " -> operand " + std::to_string(k) + " of " +
           DescribeOp(graph_, consumer);
  }

  const Graph& graph_;
  const std::vector<int64_t>& mesh_;
  const AutoShardResult& result_;
  // Resharding collectives per (tensor, consumer, operand), in list order; inside-op ones per op.
  std::map<std::tuple<int32_t, int32_t, int32_t>, std::vector<size_t>> edge_collectives_;
  std::map<int32_t, std::vector<size_t>> op_collectives_;
};

Status PlanChecker::CheckStructure() {
  if (mesh_.empty()) return InvalidArgument("the mesh shape is empty");
  for (int64_t n : mesh_) {
    if (n < 1) return InvalidArgument("mesh shape has a dim of size " + std::to_string(n));
  }
  if (!result_.mesh_shape.empty() &&
      !std::equal(result_.mesh_shape.begin(), result_.mesh_shape.end(), mesh_.begin(),
                  mesh_.end())) {
    return InvalidArgument("the result was solved on another mesh shape than the one given");
  }
  if (!IsPlanStatus(result_.status)) {
    return InvalidArgument(std::string("the result holds no plan (status ") +
                           SolveStatusName(result_.status) + ")");
  }
  if (result_.ops.size() != graph_.ops.size()) {
    return InvalidArgument("the result has " + std::to_string(result_.ops.size()) +
                           " op shardings for a graph of " + std::to_string(graph_.size()) +
                           " ops");
  }
  for (int32_t id = 0; id < graph_.size(); ++id) {
    const OpSharding& s = sharding(id);
    const Op& op = graph_.op(id);
    if (s.free && s.fused) return OpError(graph_, id, "marked both free and fused");
    if (s.fused && op.kind != OpKind::kBroadcastInDim) {
      return OpError(graph_, id, "marked fused, but only broadcast_in_dim ops are fused");
    }
    if (s.free) {
      for (int32_t x : op.operands) {
        int32_t src = x;
        while (sharding(src).fused) src = graph_.op(src).operands[0];
        if (!sharding(src).free) {
          return OpError(graph_, id,
                         "marked free (made locally in any layout) but reads " +
                             DescribeOp(graph_, src) + ", which is not free");
        }
      }
    }
  }
  const int32_t ndim = static_cast<int32_t>(mesh_.size());
  for (size_t i = 0; i < result_.collectives.size(); ++i) {
    const PlannedCollective& c = result_.collectives[i];
    const std::string name = "collective " + std::to_string(i) + " (" + CollectiveName(c.kind) +
                             (c.description.empty() ? "" : ", " + c.description) + ")";
    if (c.kind == CollectiveKind::kSendRecv) {
      return InvalidArgument(name + ": send-recv inside a mesh");
    }
    if (c.mesh_dims.empty()) return InvalidArgument(name + ": no mesh dims");
    for (size_t j = 0; j < c.mesh_dims.size(); ++j) {
      if (c.mesh_dims[j] < 0 || c.mesh_dims[j] >= ndim) {
        return InvalidArgument(name + ": mesh dim " + std::to_string(c.mesh_dims[j]) +
                               " out of range for a " + std::to_string(ndim) + "-D mesh");
      }
      for (size_t j2 = 0; j2 < j; ++j2) {
        if (c.mesh_dims[j2] == c.mesh_dims[j]) return InvalidArgument(name + ": a mesh dim twice");
      }
    }
    if (!std::isfinite(c.cost)) return InvalidArgument(name + ": cost is not finite");
    if (c.tensor < 0 || c.tensor >= graph_.size() || c.consumer < -1 ||
        c.consumer >= graph_.size() || (c.consumer == -1 && c.inside_op)) {
      return InvalidArgument(name + ": tensor or consumer op out of range");
    }
    if (c.consumer == -1) {  // lays the tensor out for all its readers
      if (c.operand != -1 || !sharding(c.tensor).reader_layout) {
        return InvalidArgument(name + ": shared by the readers of " + DescribeOp(graph_, c.tensor) +
                               ", which has no reader layout (or names an operand)");
      }
      edge_collectives_[{c.tensor, -1, -1}].push_back(i);
      continue;
    }
    if (c.inside_op) {
      if (c.consumer != c.tensor) {
        return InvalidArgument(name + ": inside an op, but its consumer " +
                               DescribeOp(graph_, c.consumer) + " is not its tensor " +
                               DescribeOp(graph_, c.tensor));
      }
      if (!Materialized(c.tensor)) {
        return OpError(graph_, c.tensor, name + " is inside an op that is free or fused");
      }
      op_collectives_[c.tensor].push_back(i);
    } else {
      const size_t n = graph_.op(c.consumer).operands.size();
      if (c.operand < 0 || static_cast<size_t>(c.operand) >= n) {
        return InvalidArgument(name + ": operand " + std::to_string(c.operand) + " of " +
                               DescribeOp(graph_, c.consumer) + " does not exist");
      }
      edge_collectives_[{c.tensor, c.consumer, c.operand}].push_back(i);
    }
  }
  return Status::Ok();
}

Status PlanChecker::CheckSpecs() {
  for (int32_t id = 0; id < graph_.size(); ++id) {
    if (!Materialized(id)) continue;
    const OpSharding& s = sharding(id);
    const Op& op = graph_.op(id);
    Status st = ValidateShardingSpec(s.result, op.shape, mesh_);
    if (!st.ok()) return OpError(graph_, id, "invalid result spec: " + st.message());
    if (s.operands.size() != op.operands.size()) {
      return OpError(graph_, id,
                     "has " + std::to_string(s.operands.size()) + " operand specs for " +
                         std::to_string(op.operands.size()) + " operands");
    }
    for (size_t k = 0; k < op.operands.size(); ++k) {
      st = ValidateShardingSpec(s.operands[k], graph_.op(op.operands[k]).shape, mesh_);
      if (!st.ok()) {
        return OpError(graph_, id,
                       "invalid spec for operand " + std::to_string(k) + ": " + st.message());
      }
    }
  }
  return Status::Ok();
}

Status PlanChecker::CheckOps() {
  for (int32_t id = 0; id < graph_.size(); ++id) {
    if (!Materialized(id)) continue;
    const OpSharding& s = sharding(id);
    const Op& op = graph_.op(id);
    std::vector<ShardingSpec> in;
    for (const ShardingSpec& spec : s.operands) in.push_back(Canonical(spec, mesh_));
    const ShardingSpec claimed = Canonical(s.result, mesh_);
    const OpView view{graph_, id, op, in, claimed};
    Layout got;
    std::string e = DeriveResult(view, got);
    if (e.empty()) e = DuplicateMeshDim(got);
    if (!e.empty()) return OpError(graph_, id, e);

    auto it = op_collectives_.find(id);
    if (it != op_collectives_.end()) {
      for (size_t i : it->second) {
        const PlannedCollective& c = result_.collectives[i];
        e = ApplyCollective(got, c, claimed, mesh_);
        if (!e.empty()) {
          return OpError(graph_, id,
                         std::string("its in-op ") + CollectiveName(c.kind) + " over " +
                             MeshDimsText(c.mesh_dims) + " (collective " + std::to_string(i) +
                             ") does not apply: " + e);
        }
      }
    }
    if (!got.max_pending.empty()) {
      return OpError(graph_, id,
                     "the reduced dims are split over " + MeshDimsText(got.max_pending) +
                         ", which needs an in-op all-reduce (max) over them; none is listed");
    }
    if (got.spec == claimed) continue;
    std::vector<int32_t> missing;
    for (int32_t m : got.spec.partial) {
      if (!Contains(claimed.partial, m)) missing.push_back(m);
    }
    bool partial_subset = true;
    for (int32_t m : claimed.partial) {
      partial_subset = partial_subset && Contains(got.spec.partial, m);
    }
    if (got.spec.dims == claimed.dims && partial_subset && !missing.empty()) {
      return OpError(
          graph_, id,
          "its local result is a partial sum over " + MeshDimsText(missing) +
              " (split contracting, reduced or table dims, or a partial operand), but the plan "
              "claims " +
              Quote(s.result) + " and lists no in-op all-reduce over " + MeshDimsText(missing));
    }
    std::string ins;
    for (size_t k = 0; k < s.operands.size(); ++k) {
      ins += (k > 0 ? ", " : "") + Quote(s.operands[k]);
    }
    return OpError(graph_, id,
                   "the plan claims result spec " + Quote(s.result) + ", but from operand specs " +
                       ins + " (and its in-op collectives) it computes " + Quote(got.spec));
  }
  return Status::Ok();
}

Status PlanChecker::CheckEdges() {
  std::vector<bool> used(result_.collectives.size(), false);
  for (int32_t id = 0; id < graph_.size(); ++id) {
    if (!Materialized(id)) continue;
    const Op& op = graph_.op(id);
    for (size_t k = 0; k < op.operands.size(); ++k) {
      int32_t src = op.operands[k];
      ShardingSpec want = Canonical(sharding(id).operands[k], mesh_);
      // Through fused broadcasts: the wanted layout maps back onto the broadcast's operand.
      while (sharding(src).fused) {
        const Op& b = graph_.op(src);
        const Dims& xs = graph_.op(b.operands[0]).shape;
        ShardingSpec back;
        back.dims.assign(xs.size(), {});
        back.partial = want.partial;
        for (size_t i = 0; i < xs.size(); ++i) {
          const size_t od = static_cast<size_t>(b.attrs.dims[i]);
          if (xs[i] == b.shape[od]) back.dims[i] = want.dims[od];
        }
        want = std::move(back);
        src = b.operands[0];
      }
      if (sharding(src).free) continue;
      Layout have;
      have.spec = Canonical(sharding(src).result, mesh_);
      if (sharding(src).reader_layout) {
        // Every reader reads the reader layout: check the shared resharding into it, then go on
        // from there.
        const ShardingSpec layout = Canonical(*sharding(src).reader_layout, mesh_);
        auto shared = edge_collectives_.find({src, -1, -1});
        if (shared != edge_collectives_.end()) {
          for (size_t i : shared->second) {
            used[i] = true;
            const PlannedCollective& c = result_.collectives[i];
            std::string e = ApplyCollective(have, c, layout, mesh_);
            if (!e.empty()) {
              return InvalidArgument("reader layout of " + DescribeOp(graph_, src) + ": its " +
                                     CollectiveName(c.kind) + " over " + MeshDimsText(c.mesh_dims) +
                                     " (collective " + std::to_string(i) +
                                     ") does not apply: " + e);
            }
          }
        }
        std::string e = LocalDifference(have.spec, layout);
        if (!e.empty()) {
          return InvalidArgument("reader layout of " + DescribeOp(graph_, src) + ": " + e);
        }
        have = Layout();
        have.spec = layout;
      }
      auto it = edge_collectives_.find({src, id, static_cast<int32_t>(k)});
      if (it != edge_collectives_.end()) {
        for (size_t i : it->second) {
          used[i] = true;
          const PlannedCollective& c = result_.collectives[i];
          std::string e = ApplyCollective(have, c, want, mesh_);
          if (!e.empty()) {
            return InvalidArgument(EdgeName(src, id, k) + ": its " + CollectiveName(c.kind) +
                                   " over " + MeshDimsText(c.mesh_dims) + " (collective " +
                                   std::to_string(i) + ") does not apply: " + e);
          }
        }
      }
      std::string e = LocalDifference(have.spec, want);
      if (!e.empty()) {
        return InvalidArgument(
            EdgeName(src, id, k) + ": after its " +
            std::to_string(it == edge_collectives_.end() ? 0 : it->second.size()) +
            " collective(s) " + e);
      }
    }
  }
  for (size_t i = 0; i < result_.collectives.size(); ++i) {
    const PlannedCollective& c = result_.collectives[i];
    if (c.inside_op || used[i]) continue;
    if (c.consumer < 0) {
      return InvalidArgument("collective " + std::to_string(i) + " lays out " +
                             DescribeOp(graph_, c.tensor) + " for readers it does not have");
    }
    return InvalidArgument("collective " + std::to_string(i) + " (" + CollectiveName(c.kind) +
                           ") moves " + DescribeOp(graph_, c.tensor) + " into operand " +
                           std::to_string(c.operand) + " of " + DescribeOp(graph_, c.consumer) +
                           ", which is not an edge between materialized ops of the plan");
  }
  return Status::Ok();
}

Status PlanChecker::CheckObjective() {
  long double sum = 0;
  for (int32_t id = 0; id < graph_.size(); ++id) {
    const OpSharding& s = sharding(id);
    if (!std::isfinite(s.compute_cost) || !std::isfinite(s.communication_cost)) {
      return OpError(graph_, id, "its cost is not finite");
    }
    sum +=
        static_cast<long double>(s.compute_cost) + static_cast<long double>(s.communication_cost);
  }
  for (const PlannedCollective& c : result_.collectives) {
    if (!c.inside_op) sum += static_cast<long double>(c.cost);
  }
  const long double obj = result_.objective;
  const long double tol = 1e-6L * std::max(std::fabs(sum), std::fabs(obj)) + 1e-15L;
  if (!(std::fabs(sum - obj) <= tol)) {
    return InvalidArgument("objective " + std::to_string(static_cast<double>(obj)) +
                           " differs from the recomputed compute + communication + resharding "
                           "cost " +
                           std::to_string(static_cast<double>(sum)));
  }
  return Status::Ok();
}

}  // namespace

Result<PlanMemory> RecomputePlanMemory(const Graph& graph, const std::vector<int64_t>& mesh_shape,
                                       const AutoShardResult& result) {
  const int32_t n = graph.size();
  if (result.ops.size() != graph.ops.size()) {
    return InvalidArgument("the result has " + std::to_string(result.ops.size()) +
                           " op shardings for a graph of " + std::to_string(n) + " ops");
  }
  auto sharding = [&](int32_t id) -> const OpSharding& {
    return result.ops[static_cast<size_t>(id)];
  };
  auto materialized = [&](int32_t id) { return !sharding(id).free && !sharding(id).fused; };
  auto real_producer = [&](int32_t id) {
    while (sharding(id).fused && !graph.op(id).operands.empty()) id = graph.op(id).operands[0];
    return id;
  };
  const int64_t steps = static_cast<int64_t>(result.schedule.size());
  std::vector<int64_t> pos(static_cast<size_t>(n), -1);
  for (int64_t t = 0; t < steps; ++t) {
    const int32_t id = result.schedule[static_cast<size_t>(t)];
    if (id < 0 || id >= n) {
      return InvalidArgument("schedule position " + std::to_string(t) + " holds op " +
                             std::to_string(id) + ", out of range");
    }
    if (pos[static_cast<size_t>(id)] >= 0) {
      return InvalidArgument("the schedule runs " + DescribeOp(graph, id) + " twice");
    }
    pos[static_cast<size_t>(id)] = t;
  }
  std::vector<int64_t> start(static_cast<size_t>(n), 0), end(static_cast<size_t>(n), 0);
  for (int32_t id = 0; id < n; ++id) {
    if (!materialized(id)) continue;
    const int64_t p = pos[static_cast<size_t>(id)];
    if (p < 0) return InvalidArgument(DescribeOp(graph, id) + " is not in the schedule");
    start[static_cast<size_t>(id)] = graph.op(id).kind == OpKind::kParameter ? 0 : p;
    end[static_cast<size_t>(id)] = p;
  }
  // Per producer: its last reader (position, op) and the last position of any other reader, to
  // tell whether an update may overwrite its parameter in place.
  std::vector<std::pair<int64_t, int32_t>> last_reader(static_cast<size_t>(n), {-1, -1});
  std::vector<int64_t> other_last(static_cast<size_t>(n), -1);
  for (int32_t id = 0; id < n; ++id) {
    if (!materialized(id)) continue;
    const int64_t p = pos[static_cast<size_t>(id)];
    for (int32_t x : graph.op(id).operands) {
      const int32_t src = real_producer(x);
      if (!materialized(src)) continue;
      if (pos[static_cast<size_t>(src)] >= p) {
        return InvalidArgument("the schedule runs " + DescribeOp(graph, id) +
                               " before its operand " + DescribeOp(graph, src));
      }
      end[static_cast<size_t>(src)] = std::max(end[static_cast<size_t>(src)], p);
      auto& best = last_reader[static_cast<size_t>(src)];
      if (best.second == id) continue;
      if (p > best.first) {
        other_last[static_cast<size_t>(src)] = best.first;
        best = {p, id};
      } else {
        other_last[static_cast<size_t>(src)] = std::max(other_last[static_cast<size_t>(src)], p);
      }
    }
  }
  std::vector<bool> to_end(static_cast<size_t>(n), false);
  for (int32_t o : graph.outputs) to_end[static_cast<size_t>(real_producer(o))] = true;
  std::vector<int64_t> bytes(static_cast<size_t>(n), 0);
  for (int32_t id = 0; id < n; ++id) {
    if (!materialized(id)) continue;
    const Op& op = graph.op(id);
    const ShardingSpec& spec = sharding(id).result;
    Status st = ValidateShardingSpec(spec, op.shape, mesh_shape);
    if (!st.ok()) return InvalidArgument(DescribeOp(graph, id) + ": " + st.message());
    bytes[static_cast<size_t>(id)] = TensorBytes(op) / ShardCount(spec, mesh_shape);
  }
  PlanMemory memory;
  std::vector<bool> donated(static_cast<size_t>(n), false);
  std::vector<Int128> delta(static_cast<size_t>(steps) + 1, 0);
  for (int32_t id = 0; id < n; ++id) {
    if (!materialized(id)) continue;
    const Op& op = graph.op(id);
    int64_t b = bytes[static_cast<size_t>(id)];
    if (op.alias_of >= 0 && op.alias_of < n && materialized(op.alias_of)) {
      // Donation: the update writes into its parameter's buffer (no bytes of its own) when the
      // parameter has no reader after it, its shard fits that buffer, and no other update took
      // the buffer first. Otherwise it needs its own buffer, as any other value.
      const size_t a = static_cast<size_t>(op.alias_of);
      const auto& best = last_reader[a];
      const int64_t later = best.second == id ? other_last[a] : best.first;
      const int64_t p = pos[static_cast<size_t>(id)];
      std::string why;
      if (later > p) {
        why = DescribeOp(graph, id) + " (position " + std::to_string(p) + ") cannot update " +
              DescribeOp(graph, op.alias_of) + " in place: it is still read at position " +
              std::to_string(later);
      } else if (b > bytes[a]) {
        why = DescribeOp(graph, id) + " cannot update " + DescribeOp(graph, op.alias_of) +
              " in place: its shard is larger than the parameter's";
      } else if (donated[a]) {
        why = DescribeOp(graph, id) + " cannot update " + DescribeOp(graph, op.alias_of) +
              " in place: another update already does";
      }
      if (why.empty()) {
        donated[a] = true;
        b = 0;
      } else {
        memory.copied_updates.push_back(why);
      }
    }
    if (op.kind == OpKind::kParameter || op.alias_of >= 0 || to_end[static_cast<size_t>(id)]) {
      end[static_cast<size_t>(id)] = steps - 1;
    }
    delta[static_cast<size_t>(start[static_cast<size_t>(id)])] += b;
    delta[static_cast<size_t>(end[static_cast<size_t>(id)]) + 1] -= b;
  }
  Int128 live = 0, peak = 0;
  for (int64_t t = 0; t < steps; ++t) {
    live += delta[static_cast<size_t>(t)];
    if (live > static_cast<Int128>(std::numeric_limits<int64_t>::max())) {
      return InvalidArgument("memory at schedule position " + std::to_string(t) +
                             " overflows int64");
    }
    memory.usage.push_back(static_cast<int64_t>(live));
    if (live > peak) {
      peak = live;
      memory.peak_time = t;
    }
  }
  memory.peak_bytes = static_cast<int64_t>(peak);
  return memory;
}

Status CheckShardingPlan(const Graph& graph, const std::vector<int64_t>& mesh_shape,
                         const AutoShardResult& result,
                         std::optional<int64_t> memory_budget_bytes) {
  ALPA_RETURN_IF_ERROR(ValidateGraph(graph));
  PlanChecker checker(graph, mesh_shape, result);
  ALPA_RETURN_IF_ERROR(checker.CheckStructure());
  ALPA_RETURN_IF_ERROR(checker.CheckSpecs());
  ALPA_RETURN_IF_ERROR(checker.CheckOps());
  ALPA_RETURN_IF_ERROR(checker.CheckEdges());

  Result<PlanMemory> memory = RecomputePlanMemory(graph, mesh_shape, result);
  if (!memory.ok()) return memory.status();
  const PlanMemory& m = memory.value();
  if (m.peak_bytes != result.peak_memory_bytes) {
    return InvalidArgument(
        "peak memory " + std::to_string(result.peak_memory_bytes) +
        " bytes per device, but the schedule gives " + std::to_string(m.peak_bytes) +
        " (first reached at position " + std::to_string(m.peak_time) + ")" +
        (m.copied_updates.empty()
             ? std::string()
             : "; " + std::to_string(m.copied_updates.size()) +
                   " update(s) need their own buffer, e.g. " + m.copied_updates[0]));
  }
  if (!m.usage.empty()) {
    // Ties allowed: the claimed time may be any position where the usage reaches the peak.
    const int64_t t = result.peak_memory_time;
    if (t < 0 || t >= static_cast<int64_t>(m.usage.size()) ||
        m.usage[static_cast<size_t>(t)] != m.peak_bytes) {
      return InvalidArgument("peak memory time " + std::to_string(t) +
                             " is not a peak of the schedule (" +
                             (t >= 0 && t < static_cast<int64_t>(m.usage.size())
                                  ? std::to_string(m.usage[static_cast<size_t>(t)]) + " bytes there"
                                  : std::string("out of range")) +
                             ", peak " + std::to_string(m.peak_bytes) + " first at " +
                             std::to_string(m.peak_time) + ")");
    }
  }
  if (memory_budget_bytes.has_value() && m.peak_bytes > *memory_budget_bytes) {
    return InvalidArgument("peak memory " + std::to_string(m.peak_bytes) +
                           " bytes per device exceeds the budget of " +
                           std::to_string(*memory_budget_bytes) + " (at schedule position " +
                           std::to_string(m.peak_time) + ")");
  }
  return checker.CheckObjective();
}

}  // namespace alpa
