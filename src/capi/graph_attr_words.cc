// Per-kind layouts of the C ABI's int64 attribute words (see alpa.h at ALPA_OP_*).
#include "capi/graph_attr_words.h"

#include "core/ir/graph_json.h"

namespace alpa::capi {
namespace {

// Reads words front to back; every read is bounds-checked and the first failure is kept.
class WordReader {
 public:
  WordReader(const int64_t* words, size_t count) : words_(words), count_(count) {}

  int64_t Next() {
    if (pos_ >= count_) {
      short_ = true;
      return 0;
    }
    return words_[pos_++];
  }
  // A length word followed by nothing: it must fit what is left.
  size_t Length() {
    const int64_t n = Next();
    if (n < 0 || static_cast<uint64_t>(n) > count_ - pos_) {
      bad_length_ = true;
      return 0;
    }
    return static_cast<size_t>(n);
  }
  std::vector<int64_t> List(size_t n) {
    std::vector<int64_t> v;
    if (n > count_ - pos_) {
      short_ = true;
      return v;
    }
    v.assign(words_ + pos_, words_ + pos_ + n);
    pos_ += n;
    return v;
  }
  std::vector<int64_t> Rest() { return List(count_ - pos_); }

  Status Finish(const char* layout) const {
    if (short_ || bad_length_ || pos_ != count_) {
      return InvalidGraph("attrs: " + std::to_string(count_) + " word(s) do not match the layout " +
                          layout);
    }
    return Status::Ok();
  }

 private:
  const int64_t* words_;
  size_t count_;
  size_t pos_ = 0;
  bool short_ = false;
  bool bad_length_ = false;
};

void Append(std::vector<int64_t>& out, const std::vector<int64_t>& v) {
  out.insert(out.end(), v.begin(), v.end());
}

}  // namespace

std::vector<int64_t> EncodeAttrWords(OpKind kind, const OpAttrs& a) {
  std::vector<int64_t> w;
  switch (kind) {
    case OpKind::kIota:
    case OpKind::kConcatenate:
    case OpKind::kGather:
    case OpKind::kScatterAdd:
      w.push_back(a.axis);
      break;
    case OpKind::kCompare:
      w.push_back(static_cast<int64_t>(a.comparison));
      break;
    case OpKind::kDotGeneral:
      w.push_back(static_cast<int64_t>(a.dot.lhs_batch.size()));
      Append(w, a.dot.lhs_batch);
      Append(w, a.dot.rhs_batch);
      w.push_back(static_cast<int64_t>(a.dot.lhs_contracting.size()));
      Append(w, a.dot.lhs_contracting);
      Append(w, a.dot.rhs_contracting);
      break;
    case OpKind::kConvolution:
      w.push_back(static_cast<int64_t>(a.strides.size()));
      for (const auto* v :
           {&a.strides, &a.padding_lo, &a.padding_hi, &a.lhs_dilation, &a.rhs_dilation}) {
        Append(w, *v);
      }
      w.push_back(a.feature_group_count);
      break;
    case OpKind::kBroadcastInDim:
    case OpKind::kTranspose:
    case OpKind::kReverse:
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
      w = a.dims;
      break;
    case OpKind::kSlice:
      w.push_back(static_cast<int64_t>(a.starts.size()));
      for (const auto* v : {&a.starts, &a.limits, &a.strides}) Append(w, *v);
      break;
    case OpKind::kPad:
      w.push_back(static_cast<int64_t>(a.padding_lo.size()));
      for (const auto* v : {&a.padding_lo, &a.padding_hi, &a.padding_interior}) Append(w, *v);
      break;
    case OpKind::kReduceWindow:
      w.push_back(static_cast<int64_t>(a.reduce));
      [[fallthrough]];
    case OpKind::kSelectAndScatter:
      w.push_back(static_cast<int64_t>(a.window.size()));
      for (const auto* v : {&a.window, &a.strides, &a.padding_lo, &a.padding_hi}) Append(w, *v);
      break;
    default:
      break;
  }
  return w;
}

Status DecodeAttrWords(OpKind kind, const int64_t* words, size_t count, double value,
                       OpAttrs* attrs) {
  OpAttrs a = DefaultAttrs(kind);
  WordReader r(words, count);
  const char* layout = "[]";
  switch (kind) {
    case OpKind::kConstant:
      a.value = value;
      break;
    case OpKind::kIota:
    case OpKind::kConcatenate:
    case OpKind::kGather:
    case OpKind::kScatterAdd:
      layout = "[axis]";
      a.axis = r.Next();
      break;
    case OpKind::kCompare: {
      layout = "[comparison]";
      const int64_t c = r.Next();
      if (c < 0 || c > static_cast<int64_t>(Comparison::kGe)) {
        return InvalidGraph("attrs: unknown comparison " + std::to_string(c));
      }
      a.comparison = static_cast<Comparison>(c);
      break;
    }
    case OpKind::kDotGeneral: {
      layout = "[nb, lhs_batch[nb], rhs_batch[nb], nc, lhs_contracting[nc], rhs_contracting[nc]]";
      size_t nb = r.Length();
      a.dot.lhs_batch = r.List(nb);
      a.dot.rhs_batch = r.List(nb);
      size_t nc = r.Length();
      a.dot.lhs_contracting = r.List(nc);
      a.dot.rhs_contracting = r.List(nc);
      break;
    }
    case OpKind::kConvolution: {
      layout =
          "[k, strides[k], padding_lo[k], padding_hi[k], lhs_dilation[k], rhs_dilation[k], "
          "feature_group_count]";
      size_t k = r.Length();
      for (auto* v : {&a.strides, &a.padding_lo, &a.padding_hi, &a.lhs_dilation, &a.rhs_dilation}) {
        *v = r.List(k);
      }
      a.feature_group_count = r.Next();
      break;
    }
    case OpKind::kBroadcastInDim:
    case OpKind::kTranspose:
    case OpKind::kReverse:
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
      layout = "[dims...]";
      a.dims = r.Rest();
      break;
    case OpKind::kSlice: {
      layout = "[r, starts[r], limits[r], strides[r]]";
      size_t n = r.Length();
      for (auto* v : {&a.starts, &a.limits, &a.strides}) *v = r.List(n);
      break;
    }
    case OpKind::kPad: {
      layout = "[r, padding_lo[r], padding_hi[r], padding_interior[r]]";
      a.value = value;
      size_t n = r.Length();
      for (auto* v : {&a.padding_lo, &a.padding_hi, &a.padding_interior}) *v = r.List(n);
      break;
    }
    case OpKind::kReduceWindow:
    case OpKind::kSelectAndScatter: {
      layout = "[r, window[r], strides[r], padding_lo[r], padding_hi[r]]";
      if (kind == OpKind::kReduceWindow) {
        layout = "[reduce, r, window[r], strides[r], padding_lo[r], padding_hi[r]]";
        const int64_t red = r.Next();
        if (red != 0 && red != 1) {
          return InvalidGraph("attrs: unknown reduction " + std::to_string(red) +
                              " (ALPA_REDUCE_SUM or ALPA_REDUCE_MAX)");
        }
        a.reduce = static_cast<ReduceKind>(red);
      }
      size_t n = r.Length();
      for (auto* v : {&a.window, &a.strides, &a.padding_lo, &a.padding_hi}) *v = r.List(n);
      break;
    }
    default:
      break;
  }
  ALPA_RETURN_IF_ERROR(r.Finish(layout));
  *attrs = std::move(a);
  return Status::Ok();
}

}  // namespace alpa::capi
