// LookThroughQkv and LookThroughOutput (attention_views.h): each input's reshape and slice, each
// output's transpose, reshape and pad, and the sum of the pads, O's transpose and reshape, dO's
// transpose and reshape, followed dim by dim to the buffer the kernels then read or write.
#include "exec/cuda/attention_views.h"

#include <algorithm>
#include <vector>

#include "exec/cuda/strided_index.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace cuda {
namespace {

// The dims of `shape` larger than 1, in order.
std::vector<int64_t> WideDims(const Dims& shape) {
  std::vector<int64_t> wide;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] > 1) wide.push_back(static_cast<int64_t>(d));
  }
  return wide;
}

// Where a view's dims sit, as dims of its buffer (-1: a label of extent 1, or absent).
struct DimView {
  int32_t buffer = -1;
  int64_t offset = 0;
  int64_t dim[4] = {-1, -1, -1, -1};
};

// The dims behind operand x's strides in buffer shape `shape`: for each label, the dim of size
// above 1 whose row-major stride it is (a label of extent 1 has none: its index is always 0).
DimView DimsOf(const AttentionOperand& x, const Dims& shape) {
  DimView v;
  v.buffer = x.buffer;
  v.offset = x.offset;
  const std::vector<int64_t> stride = DenseStrides(shape);
  for (int k = 0; k < 4; ++k) {
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] > 1 && x.stride[k] != 0 && stride[d] == x.stride[k])
        v.dim[k] = static_cast<int64_t>(d);
    }
  }
  return v;
}

AttentionOperand OperandOfDims(const DimView& v, const Dims& shape) {
  AttentionOperand x;
  x.buffer = v.buffer;
  x.offset = v.offset;
  const std::vector<int64_t> stride = DenseStrides(shape);
  for (int k = 0; k < 4; ++k)
    x.stride[k] = v.dim[k] < 0 ? 0 : stride[static_cast<size_t>(v.dim[k])];
  return x;
}

// Moves v's dims through a reshape that only adds or drops dims of size 1 (from -> to): the
// k-th wide dim of `from` is the k-th of `to`. False for any other reshape.
bool ThroughUnitReshape(const Dims& from, const Dims& to, DimView& v) {
  const std::vector<int64_t> a = WideDims(from), b = WideDims(to);
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (from[static_cast<size_t>(a[k])] != to[static_cast<size_t>(b[k])]) return false;
  }
  for (int64_t& d : v.dim) {
    if (d < 0) continue;
    const auto at = std::find(a.begin(), a.end(), d);
    d = b[static_cast<size_t>(at - a.begin())];
  }
  return true;
}

// An input of the region (its writer a reshape of a slice of X, both read by the region alone)
// seen in X; `added` gets the slice and the reshape. False leaves x as it was.
bool InputThroughSlice(const Matcher& m, const std::vector<int32_t>& members, AttentionOperand* x,
                       std::vector<int32_t>* added) {
  auto only_members = [&](int32_t b) {
    for (int32_t r : m.readers(b)) {
      if (!std::binary_search(members.begin(), members.end(), r)) return false;
    }
    return true;
  };
  int32_t reshape_at = -1, slice_at = -1;
  if (m.Producer(x->buffer, OpKind::kReshape, &reshape_at) == nullptr || !only_members(x->buffer))
    return false;
  const int32_t sliced = m.at(reshape_at).in[0];
  const Op* slice = m.Producer(sliced, OpKind::kSlice, &slice_at);
  if (slice == nullptr || m.readers(sliced).size() != 1) return false;
  for (int64_t s : slice->attrs.strides) {
    if (s != 1) return false;
  }
  const int32_t whole = m.at(slice_at).in[0];
  const Dims& whole_shape = m.shape(whole);
  if (slice->attrs.starts.size() != whole_shape.size()) return false;
  DimView v = DimsOf(*x, m.shape(x->buffer));
  if (!ThroughUnitReshape(m.shape(x->buffer), m.shape(sliced), v)) return false;
  // The slice keeps every dim's index (a box of X): the same dims, shifted by its starts.
  const std::vector<int64_t> stride = DenseStrides(whole_shape);
  v.buffer = whole;
  for (size_t d = 0; d < whole_shape.size(); ++d) v.offset += slice->attrs.starts[d] * stride[d];
  *x = OperandOfDims(v, whole_shape);
  added->insert(added->end(), {reshape_at, slice_at});
  return true;
}

// Where v's dims (of buffer *b) sit in the result of a transpose that is *b's one reader:
// moves *b and v there and adds the transpose; false (nothing moved) without such a reader.
bool ThroughTransposeReader(const Matcher& m, int32_t* b, DimView& v, std::vector<int32_t>* added) {
  const int32_t transpose_at = m.OnlyReader(*b, OpKind::kTranspose);
  if (transpose_at < 0) return false;
  const Op* t = m.RunOf(transpose_at, OpKind::kTranspose);
  DimView moved = v;
  for (int64_t& d : moved.dim) {  // result dim j is operand dim perm[j]
    if (d < 0) continue;
    const auto at = std::find(t->attrs.dims.begin(), t->attrs.dims.end(), d);
    if (at == t->attrs.dims.end()) return false;
    d = at - t->attrs.dims.begin();
  }
  v = moved;
  added->push_back(transpose_at);
  *b = m.at(transpose_at).out;
  return true;
}

// The zero pad of an output (through a transpose and a unit reshape, each its one reader): the
// view of the pad's result, and the instructions on the way.
bool OutputThroughPad(const Matcher& m, AttentionOperand* x, int32_t* pad_at,
                      std::vector<int32_t>* added) {
  DimView v = DimsOf(*x, m.shape(x->buffer));
  int32_t b = x->buffer;
  ThroughTransposeReader(m, &b, v, added);
  const int32_t reshape_at = m.OnlyReader(b, OpKind::kReshape);
  if (reshape_at >= 0) {
    if (!ThroughUnitReshape(m.shape(b), m.shape(m.at(reshape_at).out), v)) return false;
    added->push_back(reshape_at);
    b = m.at(reshape_at).out;
  }
  *pad_at = m.OnlyReader(b, OpKind::kPad);
  if (*pad_at < 0) return false;
  const Op* pad = m.RunOf(*pad_at, OpKind::kPad);
  const Dims& padded = m.shape(m.at(*pad_at).out);
  if (pad->attrs.value != 0.0 || pad->attrs.padding_lo.size() != padded.size()) return false;
  for (size_t d = 0; d < padded.size(); ++d) {
    if (pad->attrs.padding_lo[d] < 0 || pad->attrs.padding_hi[d] < 0) return false;
    if (!pad->attrs.padding_interior.empty() && pad->attrs.padding_interior[d] != 0) return false;
  }
  const std::vector<int64_t> stride = DenseStrides(padded);
  v.buffer = m.at(*pad_at).out;
  v.offset = 0;
  for (size_t d = 0; d < padded.size(); ++d) v.offset += pad->attrs.padding_lo[d] * stride[d];
  *x = OperandOfDims(v, padded);
  added->push_back(*pad_at);
  return true;
}

// The sum of the three pads (adds read once each, in any nesting): its root's buffer, with the
// adds in `added`. The pads' boxes must tile the sum's buffer (disjoint, every element once).
int32_t SumOfPads(const Matcher& m, const int32_t (&pads)[3], std::vector<int32_t>* added) {
  std::vector<int32_t> values = {m.at(pads[0]).out, m.at(pads[1]).out, m.at(pads[2]).out};
  std::vector<int32_t> adds;
  // Joins two values whose one reader is the same add, until one is left.
  while (values.size() > 1) {
    bool joined = false;
    for (size_t a = 0; a < values.size() && !joined; ++a) {
      const int32_t first = values[a];
      const int32_t add_at = m.OnlyReader(first, OpKind::kAdd);
      if (add_at < 0) return -1;
      const int32_t other = OtherOperand(m, add_at, first);
      if (std::find(values.begin(), values.end(), other) == values.end()) continue;
      if (m.readers(other).size() != 1) return -1;
      values.erase(std::remove_if(values.begin(), values.end(),
                                  [&](int32_t x) { return x == first || x == other; }),
                   values.end());
      values.push_back(m.at(add_at).out);
      adds.push_back(add_at);
      joined = true;
    }
    if (!joined) return -1;
  }
  // The boxes: every pad's unpadded box, disjoint, covering the sum.
  const Dims& sum = m.shape(values[0]);
  int64_t covered = 0;
  std::vector<std::vector<int64_t>> lo, hi;
  for (int32_t at : pads) {
    const Op* pad = m.RunOf(at, OpKind::kPad);
    const Dims& inner = m.shape(m.at(at).in[0]);
    if (m.shape(m.at(at).out) != sum) return -1;
    std::vector<int64_t> l(sum.size()), h(sum.size());
    for (size_t d = 0; d < sum.size(); ++d) {
      l[d] = pad->attrs.padding_lo[d];
      h[d] = l[d] + inner[d];
    }
    for (size_t k = 0; k < lo.size(); ++k) {
      bool overlap = true;
      for (size_t d = 0; d < sum.size(); ++d)
        overlap = overlap && l[d] < hi[k][d] && lo[k][d] < h[d];
      if (overlap) return -1;
    }
    lo.push_back(l);
    hi.push_back(h);
    covered += ElementCountOf(inner);
  }
  if (covered != ElementCountOf(sum)) return -1;
  added->insert(added->end(), adds.begin(), adds.end());
  return values[0];
}

// The forward's output O seen where the program puts it: through the transpose that is its one
// reader, and on through a reshape that is the transpose's one reader (a reshape keeps every
// element where it is). `added` gets both. False leaves x as it was.
bool OutputThroughTranspose(const Matcher& m, AttentionOperand* x, std::vector<int32_t>* added) {
  if (x->offset != 0) return false;
  DimView v = DimsOf(*x, m.shape(x->buffer));
  int32_t b = x->buffer;
  std::vector<int32_t> on_the_way;
  if (!ThroughTransposeReader(m, &b, v, &on_the_way)) return false;
  v.buffer = b;
  AttentionOperand seen = OperandOfDims(v, m.shape(b));
  const int32_t reshape_at = m.OnlyReader(b, OpKind::kReshape);
  if (reshape_at >= 0) {
    seen.buffer = m.at(reshape_at).out;
    on_the_way.push_back(reshape_at);
  }
  *x = seen;
  added->insert(added->end(), on_the_way.begin(), on_the_way.end());
  return true;
}

// An input of the region made by a transpose read by the region alone, seen in the transpose's
// operand, and on in the operand of a reshape that makes it and nothing else reads (a reshape
// keeps every element where it is). `added` gets both. False leaves x as it was.
bool InputThroughTranspose(const Matcher& m, const std::vector<int32_t>& members,
                           AttentionOperand* x, std::vector<int32_t>* added) {
  int32_t transpose_at = -1;
  const Op* t = m.Producer(x->buffer, OpKind::kTranspose, &transpose_at);
  if (t == nullptr || x->offset != 0) return false;
  for (int32_t r : m.readers(x->buffer)) {
    if (!std::binary_search(members.begin(), members.end(), r)) return false;
  }
  DimView v = DimsOf(*x, m.shape(x->buffer));
  for (int64_t& d : v.dim) {  // result dim j is operand dim perm[j]
    if (d < 0) continue;
    if (d >= static_cast<int64_t>(t->attrs.dims.size())) return false;
    d = t->attrs.dims[static_cast<size_t>(d)];
  }
  v.buffer = m.at(transpose_at).in[0];
  AttentionOperand seen = OperandOfDims(v, m.shape(v.buffer));
  std::vector<int32_t> on_the_way = {transpose_at};
  int32_t reshape_at = -1;
  if (m.Producer(v.buffer, OpKind::kReshape, &reshape_at) != nullptr &&
      m.readers(v.buffer).size() == 1) {
    seen.buffer = m.at(reshape_at).in[0];
    on_the_way.push_back(reshape_at);
  }
  *x = seen;
  added->insert(added->end(), on_the_way.begin(), on_the_way.end());
  return true;
}

}  // namespace

void LookThroughOutput(const Matcher& m, bool backward, AttentionRegion& r) {
  std::vector<int32_t> added;
  AttentionOperand o = r.o, d_o = r.d_o;
  const bool moved_o = OutputThroughTranspose(m, &o, &added);
  const bool moved_d_o = backward && InputThroughTranspose(m, r.members, &d_o, &added);
  if (moved_o) r.o = o;
  if (moved_d_o) r.d_o = d_o;
  r.members.insert(r.members.end(), added.begin(), added.end());
  std::sort(r.members.begin(), r.members.end());
}

void LookThroughQkv(const Matcher& m, bool backward, AttentionRegion& r) {
  std::vector<int32_t> added;
  AttentionOperand q = r.q, k = r.k, v = r.v;
  if (InputThroughSlice(m, r.members, &q, &added) && InputThroughSlice(m, r.members, &k, &added) &&
      InputThroughSlice(m, r.members, &v, &added)) {
    r.q = q;
    r.k = k;
    r.v = v;
    r.members.insert(r.members.end(), added.begin(), added.end());
    std::sort(r.members.begin(), r.members.end());
  }
  if (!backward) return;
  added.clear();
  AttentionOperand out[3] = {r.dq, r.dk, r.dv};
  int32_t pads[3] = {-1, -1, -1};
  for (int i = 0; i < 3; ++i) {
    if (!OutputThroughPad(m, &out[i], &pads[i], &added)) return;
  }
  const int32_t sum = SumOfPads(m, pads, &added);
  if (sum < 0) return;
  // Each pad's view becomes the same view of the sum (the pads' shapes equal the sum's).
  for (AttentionOperand& x : out) x.buffer = sum;
  r.dq = out[0];
  r.dk = out[1];
  r.dv = out[2];
  r.members.insert(r.members.end(), added.begin(), added.end());
  std::sort(r.members.begin(), r.members.end());
}

}  // namespace cuda
}  // namespace alpa
