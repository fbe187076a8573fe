// PlanAttention: indexes the program's buffers (writer, readers, kFree), then from every
// dot_general that could be Q K^T matches the forward (the score chain, the causal mask, the
// softmax, P V) and the backward that reads its P, E and L, checks the region's storage and
// shape against the kernels, and places its kernels where their inputs are live.
#include "exec/cuda/attention_plan.h"

#include <algorithm>
#include <string>

#include "exec/cuda/attention_matcher.h"
#include "exec/cuda/attention_views.h"
#include "exec/cuda/contraction_body.h"
#include "exec/cuda/env_switch.h"
#include "exec/cuda/strided_index.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace cuda {
namespace {

std::vector<int32_t> Unique(std::vector<int32_t> buffers) {
  std::sort(buffers.begin(), buffers.end());
  buffers.erase(std::unique(buffers.begin(), buffers.end()), buffers.end());
  return buffers;
}

// A dot_general's operands and dims seen from one side: `mine` is operand `side` (0 lhs).
struct DotSide {
  int32_t other = -1;
  std::vector<int64_t> my_batch, other_batch, my_contracting, other_contracting;
  std::vector<int64_t> my_free, other_free;
  int side = 0;
};

bool SideOf(const Matcher& m, int32_t i, const Op& op, int32_t buffer, DotSide* s) {
  const Instruction& in = m.at(i);
  if (in.in.size() != 2) return false;
  const DotDims& d = op.attrs.dot;
  s->side = in.in[0] == buffer ? 0 : (in.in[1] == buffer ? 1 : -1);
  if (s->side < 0 || in.in[0] == in.in[1]) return false;
  const bool lhs = s->side == 0;
  s->other = in.in[lhs ? 1 : 0];
  s->my_batch = lhs ? d.lhs_batch : d.rhs_batch;
  s->other_batch = lhs ? d.rhs_batch : d.lhs_batch;
  s->my_contracting = lhs ? d.lhs_contracting : d.rhs_contracting;
  s->other_contracting = lhs ? d.rhs_contracting : d.lhs_contracting;
  s->my_free =
      FreeDimsOf(static_cast<int64_t>(m.shape(buffer).size()), s->my_batch, s->my_contracting);
  s->other_free = FreeDimsOf(static_cast<int64_t>(m.shape(s->other).size()), s->other_batch,
                             s->other_contracting);
  return true;
}

// The labels of a dot_general's result: its batch dims (the lhs's labels), the lhs's free dims,
// the rhs's free dims.
Labels DotResultLabels(const DotSide& s, const Labels& mine, const Labels& other) {
  Labels out;
  for (int64_t d : s.my_batch) out.push_back(mine[static_cast<size_t>(d)]);
  const Labels& lhs = s.side == 0 ? mine : other;
  const Labels& rhs = s.side == 0 ? other : mine;
  const std::vector<int64_t>& lhs_free = s.side == 0 ? s.my_free : s.other_free;
  const std::vector<int64_t>& rhs_free = s.side == 0 ? s.other_free : s.my_free;
  for (int64_t d : lhs_free) out.push_back(lhs[static_cast<size_t>(d)]);
  for (int64_t d : rhs_free) out.push_back(rhs[static_cast<size_t>(d)]);
  return out;
}

// Labels the other operand of a dot from the known side: paired batch and contracting dims take
// the known labels, its one free dim `free_label`. False unless it has exactly one free dim.
bool LabelOther(const DotSide& s, const Labels& mine, size_t other_rank, Label free_label,
                Labels* other) {
  if (s.other_free.size() != 1 || s.my_batch.size() != s.other_batch.size() ||
      s.my_contracting.size() != s.other_contracting.size()) {
    return false;
  }
  other->assign(other_rank, Label::kUnknown);
  for (size_t j = 0; j < s.my_batch.size(); ++j)
    (*other)[static_cast<size_t>(s.other_batch[j])] = mine[static_cast<size_t>(s.my_batch[j])];
  for (size_t j = 0; j < s.my_contracting.size(); ++j) {
    (*other)[static_cast<size_t>(s.other_contracting[j])] =
        mine[static_cast<size_t>(s.my_contracting[j])];
  }
  (*other)[static_cast<size_t>(s.other_free[0])] = free_label;
  return true;
}

// Whether a dot reading `mine` (labels known) contracts exactly the dim labelled `contracted`,
// pairs equal labels of its other operand (labels known), and keeps every batch dim.
bool Contracts(const DotSide& s, const Labels& mine, const Labels& other, Label contracted) {
  if (s.my_contracting.size() != 1 || s.other_contracting.size() != 1) return false;
  if (mine[static_cast<size_t>(s.my_contracting[0])] != contracted ||
      other[static_cast<size_t>(s.other_contracting[0])] != contracted) {
    return false;
  }
  if (s.my_batch.size() != s.other_batch.size()) return false;
  for (size_t j = 0; j < s.my_batch.size(); ++j) {
    if (mine[static_cast<size_t>(s.my_batch[j])] != other[static_cast<size_t>(s.other_batch[j])])
      return false;
  }
  return true;
}

// The dim of `labels` labelled `l`, or -1.
int64_t DimOf(const Labels& labels, Label l) {
  for (size_t d = 0; d < labels.size(); ++d) {
    if (labels[d] == l) return static_cast<int64_t>(d);
  }
  return -1;
}

// A buffer of `labels` as an AttentionOperand: the row-major stride of each label's dim (0 for
// batch 1 when there is one batch dim). False unless the labels are the four of a
// [batch..., seq, head] tensor with `seq` as its sequence label.
bool OperandOf(int32_t buffer, const Dims& shape, const Labels& labels, Label seq,
               AttentionOperand* out) {
  const Label want[4] = {Label::kBatch0, Label::kBatch1, seq, Label::kHead};
  size_t found = 0;
  const Dims stride = DenseStrides(shape);
  out->buffer = buffer;
  for (int k = 0; k < 4; ++k) {
    const int64_t d = DimOf(labels, want[k]);
    out->stride[k] = d < 0 ? 0 : stride[static_cast<size_t>(d)];
    if (d >= 0) ++found;
  }
  const bool one_batch = DimOf(labels, Label::kBatch1) < 0;
  return found == labels.size() && found == (one_batch ? 3u : 4u);
}

// Whether broadcast `b` (its result labels `labels`) is a causal mask: iota along a key dim
// compared (le) with iota along a query dim, or (ge) the other way round. `support` gets the
// mask's instructions.
bool IsCausalMask(const Matcher& m, int32_t mask, const Labels& labels,
                  std::vector<int32_t>* support) {
  int32_t ib = -1, ic = -1, i0 = -1, i1 = -1;
  const Op* bcast = m.Producer(mask, OpKind::kBroadcastInDim, &ib);
  if (bcast == nullptr || m.at(ib).in.size() != 1) return false;
  const int32_t cmp_buffer = m.at(ib).in[0];
  const Op* cmp = m.Producer(cmp_buffer, OpKind::kCompare, &ic);
  if (cmp == nullptr || m.at(ic).in.size() != 2 || m.shape(cmp_buffer).size() != 2) return false;
  const Op* a = m.Producer(m.at(ic).in[0], OpKind::kIota, &i0);
  const Op* b = m.Producer(m.at(ic).in[1], OpKind::kIota, &i1);
  // Integer positions (a float iota would round them beyond 256 in bf16).
  if (a == nullptr || b == nullptr || bcast->attrs.dims.size() != 2 || !IsInteger(a->dtype) ||
      !IsInteger(b->dtype)) {
    return false;
  }
  if (a->attrs.axis < 0 || a->attrs.axis > 1 || b->attrs.axis < 0 || b->attrs.axis > 1) {
    return false;
  }
  const Label la =
      labels[static_cast<size_t>(bcast->attrs.dims[static_cast<size_t>(a->attrs.axis)])];
  const Label lb =
      labels[static_cast<size_t>(bcast->attrs.dims[static_cast<size_t>(b->attrs.axis)])];
  const bool causal =
      (cmp->attrs.comparison == Comparison::kLe && la == Label::kKey && lb == Label::kQuery) ||
      (cmp->attrs.comparison == Comparison::kGe && la == Label::kQuery && lb == Label::kKey);
  if (!causal) return false;
  support->insert(support->end(), {ib, ic, i0, i1});
  return true;
}

// Whether instruction i broadcasts the row statistic `row` (the labels of `to` without the key
// dim) back onto labels `to`.
bool BroadcastsRow(const Matcher& m, int32_t i, int32_t row, const Labels& to) {
  const Op* op = m.RunOf(i, OpKind::kBroadcastInDim);
  if (op == nullptr || m.at(i).in.size() != 1 || m.at(i).in[0] != row) return false;
  if (m.shape(m.at(i).out).size() != to.size() || m.shape(row).size() + 1 != to.size()) {
    return false;
  }
  const int64_t key = DimOf(to, Label::kKey);
  std::vector<int64_t> want;
  for (int64_t d = 0; d < static_cast<int64_t>(to.size()); ++d) {
    if (d != key) want.push_back(d);
  }
  return key >= 0 && op->attrs.dims == want;
}

// Whether instruction i reduces `x` (labels) over its key dim alone.
bool ReducesKeys(const Matcher& m, int32_t i, OpKind kind, int32_t x, const Labels& labels) {
  const Op* op = m.RunOf(i, kind);
  return op != nullptr && m.at(i).in.size() == 1 && m.at(i).in[0] == x &&
         op->attrs.dims == std::vector<int64_t>{DimOf(labels, Label::kKey)};
}

// Whether instruction `mul_at` multiplies `x` by a constant; its stored value in `value`, its
// writer in `support`.
bool MatchScale(const Matcher& m, int32_t mul_at, int32_t x, float* value,
                std::vector<int32_t>* support) {
  const int32_t c = OtherOperand(m, mul_at, x);
  if (c < 0 || !m.ConstantValue(c, value)) return false;
  support->push_back(m.index().writer[static_cast<size_t>(c)]);
  return true;
}

// Whether instruction `select_at` is select(causal mask, x, constant) over values of `labels`;
// the constant's stored value in `fill`, the mask's and the constant's writers in `support`.
bool MatchCausalSelect(const Matcher& m, int32_t select_at, int32_t x, const Labels& labels,
                       float* fill, std::vector<int32_t>* support) {
  const Instruction& sel = m.at(select_at);
  if (sel.in.size() != 3 || sel.in[1] != x || !m.ConstantValue(sel.in[2], fill) ||
      !IsCausalMask(m, sel.in[0], labels, support)) {
    return false;
  }
  support->push_back(m.index().writer[static_cast<size_t>(sel.in[2])]);
  return true;
}

struct Forward {
  AttentionRegion region;
  Labels q, k, v, s;                        // the labels of Q, K, V and of the score-sized values
  int32_t p = -1, e = -1, l = -1, lb = -1;  // buffers the backward reads
  int32_t o_dot = -1;
  std::vector<int32_t> members;  // instructions of the forward
  std::vector<int32_t> support;  // constants and masks, dropped where only members read them
  bool scaled = false;
};

// The score product, scale and mask, from dot_general instruction i: fills f's q, k, v labels,
// shape and the buffer of the masked scores (`scores`).
bool MatchScores(const Matcher& m, int32_t i, Forward& f, int32_t* scores) {
  const Op* dot = m.RunOf(i, OpKind::kDotGeneral);
  if (dot == nullptr || m.at(i).in.size() != 2) return false;
  const Instruction& in = m.at(i);
  DotSide s;
  if (!SideOf(m, i, *dot, in.in[0], &s) || s.my_batch.empty() || s.my_batch.size() > 2) {
    return false;
  }
  if (s.my_free.size() != 1 || s.my_contracting.size() != 1) return false;
  const size_t rank = m.shape(in.in[0]).size();
  f.q.assign(rank, Label::kUnknown);
  f.q[static_cast<size_t>(s.my_batch[0])] = Label::kBatch0;
  if (s.my_batch.size() == 2) f.q[static_cast<size_t>(s.my_batch[1])] = Label::kBatch1;
  f.q[static_cast<size_t>(s.my_free[0])] = Label::kQuery;
  f.q[static_cast<size_t>(s.my_contracting[0])] = Label::kHead;
  if (!LabelOther(s, f.q, m.shape(in.in[1]).size(), Label::kKey, &f.k)) return false;
  f.s = DotResultLabels(s, f.q, f.k);
  f.region.q.buffer = in.in[0];
  f.region.k.buffer = in.in[1];
  f.members.push_back(i);
  int32_t x = in.out;
  // S *= c.
  const int32_t mul_at = m.OnlyReader(x, OpKind::kMul);
  if (mul_at >= 0) {
    if (!MatchScale(m, mul_at, x, &f.region.shape.scale, &f.support)) return false;
    f.scaled = true;
    f.members.push_back(mul_at);
    x = m.at(mul_at).out;
  }
  // select(causal, S, fill).
  const int32_t select_at = m.OnlyReader(x, OpKind::kSelect);
  if (select_at >= 0) {
    float fill = 0.0f;
    if (!MatchCausalSelect(m, select_at, x, f.s, &fill, &f.support) || !(fill <= -1000.0f)) {
      return false;
    }
    f.region.shape.causal = true;
    f.members.push_back(select_at);
    x = m.at(select_at).out;
  }
  *scores = x;
  return true;
}

// The softmax of `scores` and P V: fills f's p, e, l, lb, o and v.
bool MatchSoftmax(const Matcher& m, int32_t scores, Forward& f) {
  const std::vector<int32_t>& r = m.readers(scores);
  if (r.size() != 2) return false;
  int32_t max_at = -1, sub_at = -1;
  for (int32_t i : r) {
    if (ReducesKeys(m, i, OpKind::kReduceMax, scores, f.s)) max_at = i;
    if (m.RunOf(i, OpKind::kSub) != nullptr) sub_at = i;
  }
  if (max_at < 0 || sub_at < 0) return false;
  const int32_t max_b = m.OnlyReader(m.at(max_at).out, OpKind::kBroadcastInDim);
  if (max_b < 0 || !BroadcastsRow(m, max_b, m.at(max_at).out, f.s)) return false;
  const Instruction& sub = m.at(sub_at);
  if (sub.in.size() != 2 || sub.in[0] != scores || sub.in[1] != m.at(max_b).out) return false;
  if (m.OnlyReader(m.at(max_b).out, OpKind::kSub) != sub_at) return false;
  const int32_t exp_at = m.OnlyReader(sub.out, OpKind::kExp);
  if (exp_at < 0) return false;
  f.e = m.at(exp_at).out;
  f.members.insert(f.members.end(), {max_at, max_b, sub_at, exp_at});
  // E's forward readers: its row sum and the division.
  int32_t sum_at = -1, div_at = -1;
  for (int32_t i : m.readers(f.e)) {
    if (ReducesKeys(m, i, OpKind::kReduceSum, f.e, f.s)) sum_at = i;
    if (m.RunOf(i, OpKind::kDiv) != nullptr && m.at(i).in.size() == 2 && m.at(i).in[0] == f.e)
      div_at = i;
  }
  if (sum_at < 0 || div_at < 0) return false;
  f.l = m.at(sum_at).out;
  f.lb = m.at(div_at).in[1];
  int32_t lb_at = -1;
  if (m.Producer(f.lb, OpKind::kBroadcastInDim, &lb_at) == nullptr ||
      !BroadcastsRow(m, lb_at, f.l, f.s)) {
    return false;
  }
  f.p = m.at(div_at).out;
  f.members.insert(f.members.end(), {sum_at, lb_at, div_at});
  // O = P V: the reader of P contracting its key dim.
  for (int32_t i : m.readers(f.p)) {
    const Op* dot = m.RunOf(i, OpKind::kDotGeneral);
    DotSide s;
    if (dot == nullptr || !SideOf(m, i, *dot, f.p, &s)) continue;
    if (s.my_contracting.size() != 1 ||
        f.s[static_cast<size_t>(s.my_contracting[0])] != Label::kKey) {
      continue;
    }
    if (!LabelOther(s, f.s, m.shape(s.other).size(), Label::kHead, &f.v)) return false;
    if (!Contracts(s, f.s, f.v, Label::kKey)) return false;
    const Labels o = DotResultLabels(s, f.s, f.v);
    f.region.v.buffer = s.other;
    f.o_dot = i;
    f.members.push_back(i);
    const int32_t out = m.at(i).out;
    return OperandOf(out, m.shape(out), o, Label::kQuery, &f.region.o);
  }
  return false;
}

bool MatchForward(const Matcher& m, int32_t i, Forward& f) {
  int32_t scores = -1;
  if (!MatchScores(m, i, f, &scores) || !MatchSoftmax(m, scores, f)) return false;
  AttentionRegion& r = f.region;
  if (!OperandOf(r.q.buffer, m.shape(r.q.buffer), f.q, Label::kQuery, &r.q) ||
      !OperandOf(r.k.buffer, m.shape(r.k.buffer), f.k, Label::kKey, &r.k) ||
      !OperandOf(r.v.buffer, m.shape(r.v.buffer), f.v, Label::kKey, &r.v)) {
    return false;
  }
  const Dims& q = m.shape(r.q.buffer);
  const Dims& k = m.shape(r.k.buffer);
  auto size = [](const Dims& shape, const Labels& labels, Label l) {
    const int64_t d = DimOf(labels, l);
    return d < 0 ? int64_t{1} : shape[static_cast<size_t>(d)];
  };
  r.shape.batch = size(q, f.q, Label::kBatch0);
  r.shape.heads = size(q, f.q, Label::kBatch1);
  r.shape.q_seq = size(q, f.q, Label::kQuery);
  r.shape.k_seq = size(k, f.k, Label::kKey);
  r.shape.head_dim = size(q, f.q, Label::kHead);
  r.shape.storage = m.storage(r.q.buffer);
  // V's head dim is Q's (the kernels' one head_dim).
  if (size(m.shape(r.v.buffer), f.v, Label::kHead) != r.shape.head_dim) return false;
  r.forward_at = f.o_dot;
  return true;
}

struct Backward {
  AttentionOperand d_o, dq, dk, dv;
  std::vector<int32_t> members, support;
};

// dV = P^T dO (or dO^T P): the reader of P contracting its query dim; labels dO (`d_o`).
bool MatchValueGradient(const Matcher& m, int32_t i, const Forward& f, Labels* d_o, Backward& b) {
  const Op* dot = m.RunOf(i, OpKind::kDotGeneral);
  DotSide s;
  if (dot == nullptr || !SideOf(m, i, *dot, f.p, &s)) return false;
  if (!LabelOther(s, f.s, m.shape(s.other).size(), Label::kHead, d_o) ||
      !Contracts(s, f.s, *d_o, Label::kQuery) || s.other != b.d_o.buffer) {
    return false;
  }
  const int32_t out = m.at(i).out;
  b.members.push_back(i);
  return OperandOf(out, m.shape(out), DotResultLabels(s, f.s, *d_o), Label::kKey, &b.dv);
}

// dP = dO V^T: the product that `t` divides; fills b.d_o (its labels in `d_o`).
bool MatchProbabilityGradient(const Matcher& m, int32_t dp, const Forward& f, Labels* d_o,
                              Backward& b) {
  int32_t i = -1;
  const Op* dot = m.Producer(dp, OpKind::kDotGeneral, &i);
  DotSide s;
  if (dot == nullptr || !SideOf(m, i, *dot, f.region.v.buffer, &s)) return false;
  if (m.readers(dp).size() != 1) return false;
  // dO's free dim is the query's: the product is score-shaped with V's key dim last.
  if (!LabelOther(s, f.v, m.shape(s.other).size(), Label::kQuery, d_o) ||
      !Contracts(s, f.v, *d_o, Label::kHead) || DotResultLabels(s, f.v, *d_o) != f.s) {
    return false;
  }
  b.d_o.buffer = s.other;
  b.members.push_back(i);
  return OperandOf(s.other, m.shape(s.other), *d_o, Label::kQuery, &b.d_o);
}

// dQ = dS K and dK = dS^T Q: the two readers of the scaled score gradient `ds`.
bool MatchInputGradients(const Matcher& m, int32_t ds, const Forward& f, Backward& b) {
  const std::vector<int32_t>& r = m.readers(ds);
  if (r.size() != 2) return false;
  bool found_q = false, found_k = false;
  for (int32_t i : r) {
    const Op* dot = m.RunOf(i, OpKind::kDotGeneral);
    DotSide s;
    if (dot == nullptr || !SideOf(m, i, *dot, ds, &s)) return false;
    const int32_t out = m.at(i).out;
    if (s.other == f.region.k.buffer && !found_q && Contracts(s, f.s, f.k, Label::kKey)) {
      found_q = OperandOf(out, m.shape(out), DotResultLabels(s, f.s, f.k), Label::kQuery, &b.dq);
    } else if (s.other == f.region.q.buffer && !found_k && Contracts(s, f.s, f.q, Label::kQuery)) {
      found_k = OperandOf(out, m.shape(out), DotResultLabels(s, f.s, f.q), Label::kKey, &b.dk);
    } else {
      return false;
    }
    b.members.push_back(i);
  }
  return found_q && found_k;
}

// From dE = W * E to the products: the mask's select and the scale, as in the forward.
bool MatchScoreGradient(const Matcher& m, int32_t de, const Forward& f, Backward& b) {
  int32_t x = de;
  if (f.region.shape.causal) {
    const int32_t select_at = m.OnlyReader(x, OpKind::kSelect);
    float zero = 1.0f;
    if (select_at < 0 || !MatchCausalSelect(m, select_at, x, f.s, &zero, &b.support) ||
        zero != 0.0f) {
      return false;
    }
    b.members.push_back(select_at);
    x = m.at(select_at).out;
  }
  if (f.scaled) {
    const int32_t mul_at = m.OnlyReader(x, OpKind::kMul);
    float scale = 0.0f;
    if (mul_at < 0 || !MatchScale(m, mul_at, x, &scale, &b.support) ||
        scale != f.region.shape.scale) {
      return false;
    }
    b.members.push_back(mul_at);
    x = m.at(mul_at).out;
  }
  return MatchInputGradients(m, x, f, b);
}

// The softmax's backward: T = dP / bcast(L), U = T * P, R = sum_k -U, W = T + bcast(R),
// dE = W * E. `u_at` is the reader of P that multiplies it.
bool MatchSoftmaxGradient(const Matcher& m, int32_t u_at, const Forward& f, Labels* d_o,
                          Backward& b) {
  const int32_t t = OtherOperand(m, u_at, f.p);
  int32_t t_at = -1, lb_at = -1;
  if (t < 0 || m.Producer(t, OpKind::kDiv, &t_at) == nullptr) return false;
  const Instruction& div = m.at(t_at);
  if (div.in.size() != 2 || m.Producer(div.in[1], OpKind::kBroadcastInDim, &lb_at) == nullptr ||
      !BroadcastsRow(m, lb_at, f.l, f.s)) {
    return false;
  }
  if (!MatchProbabilityGradient(m, div.in[0], f, d_o, b)) return false;
  const int32_t neg_at = m.OnlyReader(m.at(u_at).out, OpKind::kNeg);
  if (neg_at < 0) return false;
  const int32_t sum_at = m.OnlyReader(m.at(neg_at).out, OpKind::kReduceSum);
  if (sum_at < 0 || !ReducesKeys(m, sum_at, OpKind::kReduceSum, m.at(neg_at).out, f.s)) {
    return false;
  }
  const int32_t rb_at = m.OnlyReader(m.at(sum_at).out, OpKind::kBroadcastInDim);
  if (rb_at < 0 || !BroadcastsRow(m, rb_at, m.at(sum_at).out, f.s)) return false;
  const int32_t w_at = m.OnlyReader(m.at(rb_at).out, OpKind::kAdd);
  if (w_at < 0 || OtherOperand(m, w_at, m.at(rb_at).out) != t) return false;
  // T's readers: U and W.
  const std::vector<int32_t>& tr = m.readers(t);
  if (tr.size() != 2 || std::find(tr.begin(), tr.end(), u_at) == tr.end() ||
      std::find(tr.begin(), tr.end(), w_at) == tr.end()) {
    return false;
  }
  const int32_t de_at = m.OnlyReader(m.at(w_at).out, OpKind::kMul);
  if (de_at < 0 || OtherOperand(m, de_at, m.at(w_at).out) != f.e) return false;
  b.members.insert(b.members.end(), {t_at, u_at, neg_at, sum_at, rb_at, w_at, de_at});
  // The forward's L broadcast is a member already; a second one the backward made is ours.
  if (m.at(lb_at).out != f.lb) b.members.push_back(lb_at);
  return MatchScoreGradient(m, m.at(de_at).out, f, b);
}

// The backward reading P (the dV product, the softmax gradient's U), E (dE) and L: false when
// something else reads them.
bool MatchBackward(const Matcher& m, const Forward& f, Backward& b) {
  int32_t dv_at = -1, u_at = -1;
  for (int32_t i : m.readers(f.p)) {
    if (i == f.o_dot) continue;
    if (m.RunOf(i, OpKind::kDotGeneral) != nullptr && dv_at < 0) {
      dv_at = i;
    } else if (m.RunOf(i, OpKind::kMul) != nullptr && u_at < 0) {
      u_at = i;
    } else {
      return false;
    }
  }
  if (dv_at < 0 || u_at < 0) return false;
  Labels d_o;
  if (!MatchSoftmaxGradient(m, u_at, f, &d_o, b)) return false;
  Labels d_o_again;
  return MatchValueGradient(m, dv_at, f, &d_o_again, b) && d_o_again == d_o;
}

// Whether only the forward reads P, E and L (a forward-only region).
bool ForwardOnly(const Matcher& m, const Forward& f) {
  const std::vector<int32_t>& p = m.readers(f.p);
  return p.size() == 1 && p[0] == f.o_dot && m.readers(f.e).size() == 2 &&
         m.readers(f.l).size() == 1;
}

// Adds to `members` the support instructions (constants, masks) whose results only members
// read, producers after their readers.
void AddSupport(const Matcher& m, std::vector<int32_t> support, std::vector<int32_t>& members) {
  std::sort(support.begin(), support.end());
  support.erase(std::unique(support.begin(), support.end()), support.end());
  for (size_t k = support.size(); k-- > 0;) {
    const int32_t i = support[k];
    if (i < 0) continue;
    bool only = true;
    for (int32_t r : m.readers(m.at(i).out)) {
      only = only && std::binary_search(members.begin(), members.end(), r);
    }
    if (!only) continue;
    members.insert(std::upper_bound(members.begin(), members.end(), i), i);
  }
}

// Whether every value a region computes and does not output is read by the region alone.
bool SelfContained(const Matcher& m, const AttentionRegion& r) {
  for (int32_t i : r.members) {
    const int32_t out = m.at(i).out;
    if (out == r.o.buffer || out == r.dq.buffer || out == r.dk.buffer || out == r.dv.buffer)
      continue;
    for (int32_t reader : m.readers(out)) {
      if (!std::binary_search(r.members.begin(), r.members.end(), reader)) return false;
    }
  }
  return true;
}

bool SameStorage(const Matcher& m, const AttentionRegion& r) {
  for (const AttentionOperand* x : {&r.q, &r.k, &r.v, &r.o, &r.d_o, &r.dq, &r.dk, &r.dv}) {
    if (x->buffer >= 0 && m.storage(x->buffer) != r.shape.storage) return false;
  }
  return true;
}

// Where the backward runs: the first of its members after every input is written.
int32_t BackwardPlace(const Matcher& m, const AttentionRegion& r,
                      const std::vector<int32_t>& backward_members) {
  int32_t ready = -1;
  for (int32_t b : AttentionBackwardReads(r))
    ready = std::max(ready, m.index().last_write[static_cast<size_t>(b)]);
  int32_t place = -1;
  for (int32_t i : backward_members) {
    if (i > ready && (place < 0 || i < place)) place = i;
  }
  return place;
}

// Whether the buffers the kernels read are written once, before the kernels run, and those
// they write once (by the members they replace).
bool WrittenOnce(const Matcher& m, const AttentionRegion& r) {
  const ProgramIndex& x = m.index();
  auto once_before = [&](int32_t b, int32_t at) {
    return x.write_count[static_cast<size_t>(b)] == 1 && x.last_write[static_cast<size_t>(b)] < at;
  };
  for (int32_t b : AttentionForwardReads(r)) {
    if (!once_before(b, r.forward_at)) return false;
  }
  if (x.write_count[static_cast<size_t>(r.o.buffer)] != 1) return false;
  if (!r.has_backward()) return true;
  for (int32_t b : AttentionBackwardReads(r)) {
    if (!once_before(b, r.backward_at)) return false;
  }
  for (int32_t b : AttentionWrites(r, true)) {
    if (x.write_count[static_cast<size_t>(b)] != 1) return false;
  }
  return true;
}

// The region of forward f and backward b (null: forward only): their operands and members,
// with the support instructions only they read. False when the two share an instruction.
bool AssembleRegion(const Matcher& m, const Forward& f, const Backward* b, AttentionRegion* r) {
  *r = f.region;
  std::vector<int32_t> members = f.members, support = f.support;
  if (b != nullptr) {
    members.insert(members.end(), b->members.begin(), b->members.end());
    support.insert(support.end(), b->support.begin(), b->support.end());
    r->d_o = b->d_o;
    r->dq = b->dq;
    r->dk = b->dk;
    r->dv = b->dv;
  }
  std::sort(members.begin(), members.end());
  if (std::adjacent_find(members.begin(), members.end()) != members.end()) return false;
  AddSupport(m, support, members);
  r->members = std::move(members);
  return true;
}

}  // namespace

bool AttentionFusionEnabled() { return SwitchedOn("ALPA_CUDA_FLASH_ATTENTION"); }

std::vector<int32_t> AttentionForwardReads(const AttentionRegion& r) {
  return Unique({r.q.buffer, r.k.buffer, r.v.buffer});
}

std::vector<int32_t> AttentionBackwardReads(const AttentionRegion& r) {
  return Unique({r.q.buffer, r.k.buffer, r.v.buffer, r.o.buffer, r.d_o.buffer});
}

std::vector<int32_t> AttentionWrites(const AttentionRegion& r, bool backward) {
  if (!backward) return {r.o.buffer};
  return Unique({r.dq.buffer, r.dk.buffer, r.dv.buffer});
}

std::vector<AttentionRegion> PlanAttention(const DeviceProgram& program,
                                           const std::vector<DType>& storage,
                                           AttentionKernelFit fit) {
  const Matcher m(program, storage);
  std::vector<AttentionRegion> regions;
  std::vector<char> taken(program.code.size(), 0);
  for (size_t i = 0; i < program.code.size(); ++i) {
    if (taken[i]) continue;
    Forward f;
    if (!MatchForward(m, static_cast<int32_t>(i), f)) continue;
    Backward b;
    const bool backward = !ForwardOnly(m, f);
    if (backward && !MatchBackward(m, f, b)) continue;
    AttentionRegion r;
    if (!AssembleRegion(m, f, backward ? &b : nullptr, &r)) continue;
    LookThroughQkv(m, backward, r);
    LookThroughOutput(m, backward, r);
    if (!SelfContained(m, r)) continue;
    if (fit == AttentionKernelFit::kRequired &&
        (!SameStorage(m, r) || !AttentionUnsupportedReason(r.shape).empty())) {
      continue;
    }
    if (backward) {
      r.backward_at = BackwardPlace(m, r, b.members);
      if (r.backward_at < 0) continue;
    }
    if (!WrittenOnce(m, r)) continue;
    bool free = true;
    for (int32_t x : r.members) free = free && !taken[static_cast<size_t>(x)];
    if (!free) continue;
    for (int32_t x : r.members) taken[static_cast<size_t>(x)] = 1;
    regions.push_back(std::move(r));
  }
  return regions;
}

}  // namespace cuda
}  // namespace alpa
