// VJP rules of dot_general and convolution: both cotangents are contractions of the same kind,
// with transposes back to the operand's layout.
#include <algorithm>

#include "core/autodiff/vjp_rules.h"

namespace alpa {
namespace vjp {
namespace {

// Dims of a rank-`rank` operand that are neither batch nor contracting, in order.
Dims FreeDims(int64_t rank, const Dims& batch, const Dims& contracting) {
  Dims free;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), d) == contracting.end()) {
      free.push_back(d);
    }
  }
  return free;
}

// Position of v among the sorted entries of `list` (v is one of them).
int64_t RankIn(const Dims& list, int64_t v) {
  return std::count_if(list.begin(), list.end(), [v](int64_t e) { return e < v; });
}

bool IsIdentity(const Dims& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// Cotangent of one side (`self`) of a dot_general: contract g's dims of the other side's free
// dims with `other`'s free dims, batch with batch. The result is [batch, self free, self
// contracting ordered like other's contracting dims sorted]; transpose it to self's layout.
int32_t DotSide(GraphBuilder& b, int32_t g, int32_t other, int64_t self_rank,
                const Dims& self_batch, const Dims& self_contracting, const Dims& other_batch,
                const Dims& other_contracting, int64_t g_other_free_start) {
  int64_t nb = static_cast<int64_t>(self_batch.size());
  Dims self_free = FreeDims(self_rank, self_batch, self_contracting);
  Dims other_free = FreeDims(b.rank(other), other_batch, other_contracting);
  DotDims e;
  e.lhs_batch = Iota(nb);
  e.rhs_batch = other_batch;
  e.lhs_contracting = Iota(static_cast<int64_t>(other_free.size()), g_other_free_start);
  e.rhs_contracting = other_free;
  int32_t r = b.DotGeneral(g, other, e);
  // perm[d] = the result dim holding self's dim d.
  Dims perm(static_cast<size_t>(self_rank));
  for (size_t i = 0; i < self_batch.size(); ++i) {
    perm[static_cast<size_t>(self_batch[i])] = static_cast<int64_t>(i);
  }
  for (size_t j = 0; j < self_free.size(); ++j) {
    perm[static_cast<size_t>(self_free[j])] = nb + static_cast<int64_t>(j);
  }
  int64_t base = nb + static_cast<int64_t>(self_free.size());
  for (size_t k = 0; k < self_contracting.size(); ++k) {
    perm[static_cast<size_t>(self_contracting[k])] =
        base + RankIn(other_contracting, other_contracting[k]);
  }
  return IsIdentity(perm) ? r : b.Transpose(r, perm);
}

}  // namespace

Status VjpDotGeneral(const VjpArgs& a, std::vector<int32_t>& out) {
  GraphBuilder& b = *a.b;
  const DotDims& d = a.op.attrs.dot;
  int32_t x = a.op.operands[0], y = a.op.operands[1];
  int64_t nb = static_cast<int64_t>(d.lhs_batch.size());
  int64_t x_free = static_cast<int64_t>(FreeDims(b.rank(x), d.lhs_batch, d.lhs_contracting).size());
  // g = [batch, x free, y free].
  if (a.needed[0]) {
    out[0] = DotSide(b, a.g, y, b.rank(x), d.lhs_batch, d.lhs_contracting, d.rhs_batch,
                     d.rhs_contracting, nb + x_free);
  }
  if (a.needed[1]) {
    out[1] = DotSide(b, a.g, x, b.rank(y), d.rhs_batch, d.rhs_contracting, d.lhs_batch,
                     d.lhs_contracting, nb);
  }
  return Status::Ok();
}

// Per spatial dim i of x [N, C, S..], kernel [O, C/G, K..], g [N, O, T..], with the padded,
// dilated input size P = dil(S, ld) + lo + hi:
//   input:  dxp[q] = sum_{t,k: t s + k rd = q} g[t] w[k] is a stride-1 convolution of g dilated by
//           s (lhs_dilation) with the reversed kernel (rhs_dilation rd), padded by dil(K, rd) - 1
//           low and P - dil(T, s) high so it yields all P positions; the kernel's feature roles
//           swap per group. Then undo the forward padding (pad back negative, slice positive)
//           and the lhs dilation (strided slice).
//   kernel: dw[o, c, k] = sum_{n,t} xp[n, c, t s + k rd] g[n, o, t] is a convolution of x with
//           batch and feature swapped ([C, N, S]) by g as kernel ([O, N, T]), stride rd,
//           rhs_dilation s, x's own padding and lhs_dilation; sliced to K when stride leaves
//           slack. Feature groups: one such convolution per group on channel slices.
Status VjpConvolution(const VjpArgs& a, std::vector<int32_t>& out) {
  GraphBuilder& b = *a.b;
  const OpAttrs& at = a.op.attrs;
  int32_t x = a.op.operands[0], w = a.op.operands[1], g = a.g;
  const Dims xs = b.shape(x), ws = b.shape(w), gs = b.shape(g);
  size_t k = xs.size() - 2;
  if (HasZeroElements(xs) || HasZeroElements(ws) || HasZeroElements(gs)) {
    if (a.needed[0]) out[0] = b.Constant(0.0, xs, b.dtype(x));
    if (a.needed[1]) out[1] = b.Constant(0.0, ws, b.dtype(w));
    return Status::Ok();
  }
  int64_t groups = at.feature_group_count;
  int64_t c = xs[1], o = ws[0], cg = ws[1], og = o / groups;
  Dims spatial = Iota(static_cast<int64_t>(k), 2);
  Dims swap01 = {1, 0};
  swap01.insert(swap01.end(), spatial.begin(), spatial.end());
  Dims padded(k), dilated_x(k);
  for (size_t i = 0; i < k; ++i) {
    dilated_x[i] = DilatedSize(xs[i + 2], at.lhs_dilation[i]);
    padded[i] = dilated_x[i] + at.padding_lo[i] + at.padding_hi[i];
  }

  if (a.needed[0]) {
    // Kernel [O, Cg, K] -> [G, Og, Cg, K] -> [G, Cg, Og, K] -> [C, Og, K], reversed spatially.
    Dims split = {groups, og, cg};
    split.insert(split.end(), ws.begin() + 2, ws.end());
    Dims perm = {0, 2, 1};
    for (size_t i = 0; i < k; ++i) perm.push_back(static_cast<int64_t>(i) + 3);
    Dims merged = {c, og};
    merged.insert(merged.end(), ws.begin() + 2, ws.end());
    int32_t wt = groups == 1 ? b.Transpose(w, swap01)
                             : b.Reshape(b.Transpose(b.Reshape(w, split), perm), merged);
    wt = b.Reverse(wt, spatial);
    Dims ones(k, 1), lo(k), hi(k);
    for (size_t i = 0; i < k; ++i) {
      lo[i] = DilatedSize(ws[i + 2], at.rhs_dilation[i]) - 1;
      hi[i] = padded[i] - DilatedSize(gs[i + 2], at.strides[i]);
    }
    int32_t dxp = b.Convolution(g, wt, ones, lo, hi, at.strides, at.rhs_dilation, groups);
    // Undo cropping by negative padding, then take x's positions out of the dilated input.
    Dims zero2 = {0, 0}, crop_lo = zero2, crop_hi = zero2;
    Dims starts = zero2, limits = {xs[0], c}, strides = {1, 1};
    bool crop = false, slice = false;
    for (size_t i = 0; i < k; ++i) {
      crop_lo.push_back(std::max<int64_t>(-at.padding_lo[i], 0));
      crop_hi.push_back(std::max<int64_t>(-at.padding_hi[i], 0));
      crop = crop || crop_lo.back() > 0 || crop_hi.back() > 0;
      starts.push_back(std::max<int64_t>(at.padding_lo[i], 0));
      limits.push_back(starts.back() + dilated_x[i]);
      strides.push_back(at.lhs_dilation[i]);
      slice = slice || at.padding_lo[i] > 0 || at.padding_hi[i] > 0 || at.lhs_dilation[i] > 1;
    }
    if (crop) dxp = b.Pad(dxp, 0.0, crop_lo, crop_hi);
    out[0] = slice ? b.Slice(dxp, starts, limits, strides) : dxp;
  }

  if (a.needed[1]) {
    std::vector<int32_t> parts;
    for (int64_t gi = 0; gi < groups; ++gi) {
      int32_t xg = x, gg = g;
      if (groups > 1) {
        Dims x_lo(xs.size(), 0), x_hi = xs, g_lo(gs.size(), 0), g_hi = gs;
        x_lo[1] = gi * cg;
        x_hi[1] = (gi + 1) * cg;
        g_lo[1] = gi * og;
        g_hi[1] = (gi + 1) * og;
        xg = b.Slice(x, x_lo, x_hi);
        gg = b.Slice(g, g_lo, g_hi);
      }
      int32_t r = b.Convolution(b.Transpose(xg, swap01), b.Transpose(gg, swap01), at.rhs_dilation,
                                at.padding_lo, at.padding_hi, at.lhs_dilation, at.strides,
                                1);  // [Cg, Og, K']
      if (!b.ok()) return Status::Ok();
      Dims rs = b.shape(r);
      Dims want = {rs[0], rs[1]};
      want.insert(want.end(), ws.begin() + 2, ws.end());
      if (rs != want) r = b.Slice(r, Dims(rs.size(), 0), want);
      parts.push_back(b.Transpose(r, swap01));
    }
    out[1] = parts.size() == 1 ? parts[0] : b.Concatenate(parts, 0);
  }
  return Status::Ok();
}

}  // namespace vjp
}  // namespace alpa
