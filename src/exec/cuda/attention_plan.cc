// PlanAttention: indexes the program's buffers (writer, readers, kFree), then from every
// dot_general that could be Q K^T matches the forward (the score chain, the causal mask, the
// softmax, P V) and the backward that reads its P, E and L, checks the region's storage and
// shape against the kernels, and places its kernels where their inputs are live.
#include "exec/cuda/attention_plan.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>

#include "exec/cuda/kernel_math.h"
#include "exec/cuda/op_rounding.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace cuda {
namespace {

// What a dim of a region's buffer stands for.
enum class Label : int8_t { kBatch0, kBatch1, kQuery, kKey, kHead, kUnknown };
using Labels = std::vector<Label>;

struct ProgramIndex {
  std::vector<int32_t> writer;                // per buffer: its one writing kRun, else -1
  std::vector<std::vector<int32_t>> readers;  // per buffer: reading instructions (no kFree)
  std::vector<int32_t> write_count;           // per buffer
  std::vector<int32_t> last_write;            // per buffer: its last writing instruction, or -1
  std::vector<int32_t> free_at;               // per buffer: its kFree, or -1
};

ProgramIndex IndexProgram(const DeviceProgram& program) {
  ProgramIndex x;
  const size_t buffers = program.buffers.size();
  x.writer.assign(buffers, -1);
  x.readers.assign(buffers, {});
  x.write_count.assign(buffers, 0);
  x.last_write.assign(buffers, -1);
  x.free_at.assign(buffers, -1);
  for (size_t i = 0; i < program.code.size(); ++i) {
    const Instruction& in = program.code[i];
    const int32_t at = static_cast<int32_t>(i);
    if (in.kind == InstructionKind::kFree) {
      x.free_at[static_cast<size_t>(in.in[0])] = at;
      continue;
    }
    for (int32_t b : in.in) {
      std::vector<int32_t>& r = x.readers[static_cast<size_t>(b)];
      if (r.empty() || r.back() != at) r.push_back(at);
    }
    if (in.out < 0) continue;
    ++x.write_count[static_cast<size_t>(in.out)];
    x.last_write[static_cast<size_t>(in.out)] = at;
    x.writer[static_cast<size_t>(in.out)] = in.kind == InstructionKind::kRun ? at : -1;
  }
  for (size_t b = 0; b < buffers; ++b) {
    if (x.write_count[b] != 1 || program.buffers[b].persistent) x.writer[b] = -1;
  }
  return x;
}

// Walks the program's instructions as the attention's ops: each accessor answers "no" (-1, a
// null op) for anything that is not a rounded kRun with one writer.
class Matcher {
 public:
  Matcher(const DeviceProgram& program, const std::vector<DType>& storage)
      : program_(program), storage_(storage), index_(IndexProgram(program)) {}

  const DeviceProgram& program() const { return program_; }
  const ProgramIndex& index() const { return index_; }
  DType storage(int32_t b) const { return storage_[static_cast<size_t>(b)]; }
  const Dims& shape(int32_t b) const { return program_.buffers[static_cast<size_t>(b)].shape; }
  const Instruction& at(int32_t i) const { return program_.code[static_cast<size_t>(i)]; }
  const std::vector<int32_t>& readers(int32_t b) const {
    return index_.readers[static_cast<size_t>(b)];
  }

  // The op of the instruction writing buffer b, when it is a rounded kRun of `kind`.
  const Op* Producer(int32_t b, OpKind kind, int32_t* instruction = nullptr) const {
    if (b < 0) return nullptr;
    const int32_t w = index_.writer[static_cast<size_t>(b)];
    if (w < 0) return nullptr;
    const Op* op = RunOf(w, kind);
    if (op != nullptr && instruction != nullptr) *instruction = w;
    return op;
  }
  // The op of instruction i, when it is a rounded kRun of `kind`.
  const Op* RunOf(int32_t i, OpKind kind) const {
    const Instruction& in = at(i);
    if (in.kind != InstructionKind::kRun || !in.round || in.out < 0) return nullptr;
    const Op& op = LocalOpOf(program_, in);
    return op.kind == kind ? &op : nullptr;
  }
  // The only reader of buffer b, when b has one and it is a rounded kRun of `kind`; -1 else.
  int32_t OnlyReader(int32_t b, OpKind kind) const {
    const std::vector<int32_t>& r = readers(b);
    if (r.size() != 1 || RunOf(r[0], kind) == nullptr) return -1;
    return r[0];
  }
  // The stored value of a constant buffer (as the op's storage holds it), or nullopt-like NaN.
  bool ConstantValue(int32_t b, float* value) const {
    int32_t w = -1;
    const Op* op = Producer(b, OpKind::kConstant, &w);
    if (op == nullptr) return false;
    const OutputRounding rounding = ForStorage(RoundingFor(*op, true), storage(b));
    unsigned char element[8] = {};
    StoreElement(element, storage(b), 0, FinishValue(op->attrs.value, rounding));
    *value = LoadFloat(element, storage(b), 0);
    return true;
  }

 private:
  const DeviceProgram& program_;
  const std::vector<DType>& storage_;
  ProgramIndex index_;
};

// The dims of `rank` not named in `a` or `b`, ascending.
std::vector<int64_t> FreeDims(size_t rank, const std::vector<int64_t>& a,
                              const std::vector<int64_t>& b) {
  std::vector<int64_t> free;
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d) {
    if (std::find(a.begin(), a.end(), d) == a.end() && std::find(b.begin(), b.end(), d) == b.end())
      free.push_back(d);
  }
  return free;
}

// A dot_general's operands and dims seen from one side: `mine` is operand `side` (0 lhs).
struct DotSide {
  int32_t mine = -1, other = -1;
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
  s->mine = buffer;
  s->other = in.in[lhs ? 1 : 0];
  s->my_batch = lhs ? d.lhs_batch : d.rhs_batch;
  s->other_batch = lhs ? d.rhs_batch : d.lhs_batch;
  s->my_contracting = lhs ? d.lhs_contracting : d.rhs_contracting;
  s->other_contracting = lhs ? d.rhs_contracting : d.lhs_contracting;
  s->my_free = FreeDims(m.shape(buffer).size(), s->my_batch, s->my_contracting);
  s->other_free = FreeDims(m.shape(s->other).size(), s->other_batch, s->other_contracting);
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
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) stride[d - 1] = stride[d] * shape[d];
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

// The one operand of binary instruction i that is not `x`, or -1 when neither or both are x.
int32_t OtherOperand(const Matcher& m, int32_t i, int32_t x) {
  const std::vector<int32_t>& in = m.at(i).in;
  if (in.size() != 2 || in[0] == in[1]) return -1;
  if (in[0] == x) return in[1];
  if (in[1] == x) return in[0];
  return -1;
}

// Whether instruction i reduces `x` (labels) over its key dim alone.
bool ReducesKeys(const Matcher& m, int32_t i, OpKind kind, int32_t x, const Labels& labels) {
  const Op* op = m.RunOf(i, kind);
  return op != nullptr && m.at(i).in.size() == 1 && m.at(i).in[0] == x &&
         op->attrs.dims == std::vector<int64_t>{DimOf(labels, Label::kKey)};
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
  const std::vector<int32_t>& r = m.readers(x);
  if (r.size() == 1 && m.RunOf(r[0], OpKind::kMul) != nullptr) {
    const int32_t c = OtherOperand(m, r[0], x);
    if (c < 0 || !m.ConstantValue(c, &f.region.shape.scale)) return false;
    f.scaled = true;
    f.members.push_back(r[0]);
    f.support.push_back(m.index().writer[static_cast<size_t>(c)]);
    x = m.at(r[0]).out;
  }
  // select(causal, S, fill).
  const std::vector<int32_t>& r2 = m.readers(x);
  if (r2.size() == 1 && m.RunOf(r2[0], OpKind::kSelect) != nullptr) {
    const Instruction& sel = m.at(r2[0]);
    float fill = 0.0f;
    if (sel.in.size() != 3 || sel.in[1] != x || !m.ConstantValue(sel.in[2], &fill) ||
        !(fill <= -1000.0f) || !IsCausalMask(m, sel.in[0], f.s, &f.support)) {
      return false;
    }
    f.region.shape.causal = true;
    f.members.push_back(r2[0]);
    f.support.push_back(m.index().writer[static_cast<size_t>(sel.in[2])]);
    x = sel.out;
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
  std::vector<int32_t> outputs;  // the dV, dQ and dK products
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
  b.outputs.push_back(i);
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
    b.outputs.push_back(i);
  }
  return found_q && found_k;
}

// From dE = W * E to the products: the mask's select and the scale, as in the forward.
bool MatchScoreGradient(const Matcher& m, int32_t de, const Forward& f, Backward& b) {
  int32_t x = de;
  if (f.region.shape.causal) {
    const int32_t sel_at = m.OnlyReader(x, OpKind::kSelect);
    if (sel_at < 0) return false;
    const Instruction& sel = m.at(sel_at);
    float zero = 1.0f;
    if (sel.in.size() != 3 || sel.in[1] != x || !m.ConstantValue(sel.in[2], &zero) ||
        zero != 0.0f || !IsCausalMask(m, sel.in[0], f.s, &b.support)) {
      return false;
    }
    b.members.push_back(sel_at);
    b.support.push_back(m.index().writer[static_cast<size_t>(sel.in[2])]);
    x = sel.out;
  }
  if (f.scaled) {
    const int32_t mul_at = m.OnlyReader(x, OpKind::kMul);
    if (mul_at < 0) return false;
    float scale = 0.0f;
    const int32_t c = OtherOperand(m, mul_at, x);
    if (c < 0 || !m.ConstantValue(c, &scale) || scale != f.region.shape.scale) return false;
    b.members.push_back(mul_at);
    b.support.push_back(m.index().writer[static_cast<size_t>(c)]);
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

// ---- Views through the fused QKV buffer ----

std::vector<int64_t> RowMajorStrides(const Dims& shape) {
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) stride[d - 1] = stride[d] * shape[d];
  return stride;
}

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
  const std::vector<int64_t> stride = RowMajorStrides(shape);
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
  const std::vector<int64_t> stride = RowMajorStrides(shape);
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
  const std::vector<int64_t> stride = RowMajorStrides(whole_shape);
  v.buffer = whole;
  for (size_t d = 0; d < whole_shape.size(); ++d) v.offset += slice->attrs.starts[d] * stride[d];
  *x = OperandOfDims(v, whole_shape);
  added->insert(added->end(), {reshape_at, slice_at});
  return true;
}

// The zero pad of an output (through a transpose and a unit reshape, each its one reader): the
// view of the pad's result, and the instructions on the way.
bool OutputThroughPad(const Matcher& m, AttentionOperand* x, int32_t* pad_at,
                      std::vector<int32_t>* added) {
  DimView v = DimsOf(*x, m.shape(x->buffer));
  int32_t b = x->buffer;
  const int32_t transpose_at = m.OnlyReader(b, OpKind::kTranspose);
  if (transpose_at >= 0) {
    const Op* t = m.RunOf(transpose_at, OpKind::kTranspose);
    for (int64_t& d : v.dim) {  // result dim j is operand dim perm[j]
      if (d < 0) continue;
      const auto at = std::find(t->attrs.dims.begin(), t->attrs.dims.end(), d);
      if (at == t->attrs.dims.end()) return false;
      d = at - t->attrs.dims.begin();
    }
    added->push_back(transpose_at);
    b = m.at(transpose_at).out;
  }
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
  const std::vector<int64_t> stride = RowMajorStrides(padded);
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

// Reads Q, K and V in the fused QKV buffer, and writes dQ, dK and dV into the sum of their pads,
// where the program has them so (attention_plan.h); each look-through is all or nothing.
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

}  // namespace

bool AttentionFusionEnabled() {
  const char* env = std::getenv("ALPA_CUDA_FLASH_ATTENTION");
  return env != nullptr && std::string(env) == "1";
}

namespace {

std::vector<int32_t> Unique(std::vector<int32_t> buffers) {
  std::sort(buffers.begin(), buffers.end());
  buffers.erase(std::unique(buffers.begin(), buffers.end()), buffers.end());
  return buffers;
}

}  // namespace

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
    AttentionRegion r = f.region;
    Backward b;
    const bool backward = !ForwardOnly(m, f);
    if (backward && !MatchBackward(m, f, b)) continue;
    std::vector<int32_t> members = f.members;
    members.insert(members.end(), b.members.begin(), b.members.end());
    std::sort(members.begin(), members.end());
    if (std::adjacent_find(members.begin(), members.end()) != members.end()) continue;
    std::vector<int32_t> support = f.support;
    support.insert(support.end(), b.support.begin(), b.support.end());
    AddSupport(m, support, members);
    r.members = members;
    if (backward) {
      r.d_o = b.d_o;
      r.dq = b.dq;
      r.dk = b.dk;
      r.dv = b.dv;
    }
    LookThroughQkv(m, backward, r);
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
