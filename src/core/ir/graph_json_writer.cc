// Writing the JSON graph format (core/ir/graph_json.h); the reader is graph_json.cc.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <string>
#include <vector>

#include "core/ir/graph_json.h"
#include "core/ir/graph_json_internal.h"
#include "core/util/json_util.h"

namespace alpa {
namespace {

using graph_json_internal::kFormatName;
using graph_json_internal::kFormatVersion;
using graph_json_internal::kListAttrs;
using graph_json_internal::ListAttr;
using json_util::AppendInt;
using json_util::AppendString;

// The attributes a kind reads (graph.h); the writer always writes these, even at defaults.
bool KindUses(OpKind kind, const std::string& attr) {
  auto any = [&](std::initializer_list<const char*> names) {
    for (const char* n : names) {
      if (attr == n) return true;
    }
    return false;
  };
  switch (kind) {
    case OpKind::kConstant:
      return attr == "value";
    case OpKind::kIota:
    case OpKind::kConcatenate:
    case OpKind::kGather:
    case OpKind::kScatterAdd:
      return attr == "axis";
    case OpKind::kCompare:
      return attr == "comparison";
    case OpKind::kDotGeneral:
      return any({"lhs_batch", "rhs_batch", "lhs_contracting", "rhs_contracting"});
    case OpKind::kConvolution:
      return any({"strides", "padding_lo", "padding_hi", "lhs_dilation", "rhs_dilation",
                  "feature_group_count"});
    case OpKind::kBroadcastInDim:
    case OpKind::kTranspose:
    case OpKind::kReverse:
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
      return attr == "dims";
    case OpKind::kSlice:
      return any({"starts", "limits", "strides"});
    case OpKind::kPad:
      return any({"value", "padding_lo", "padding_hi", "padding_interior"});
    case OpKind::kReduceWindow:
      return any({"reduce", "window", "strides", "padding_lo", "padding_hi"});
    case OpKind::kSelectAndScatter:
      return any({"window", "strides", "padding_lo", "padding_hi"});
    default:
      return false;
  }
}

const char* ReduceName(ReduceKind r) { return r == ReduceKind::kMax ? "max" : "sum"; }

// Shortest text that reads back as the same double; non-finite values as strings.
void AppendDouble(double x, std::string* out) {
  if (std::isnan(x)) {
    *out += "\"nan\"";
  } else if (std::isinf(x)) {
    *out += x > 0 ? "\"inf\"" : "\"-inf\"";
  } else if (x == 0 && std::signbit(x)) {
    *out += "-0.0";  // "-0" would read back as the integer 0
  } else {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof(buf), x);
    out->append(buf, r.ptr);
  }
}

void AppendInts(const std::vector<int64_t>& v, std::string* out) {
  *out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) *out += ", ";
    AppendInt(v[i], out);
  }
  *out += ']';
}

void AppendAttrs(const Op& op, std::string* out) {
  const OpAttrs defaults = DefaultAttrs(op.kind);
  const OpAttrs& attrs = op.attrs;
  std::string body;
  auto key = [&](const char* name) {
    body += body.empty() ? "\"" : ", \"";
    body += name;
    body += "\": ";
  };
  // Kind's own attributes always; any other one only when it differs from its default, so
  // that stray values survive a round trip too.
  auto wanted = [&](const char* name, bool differs) { return KindUses(op.kind, name) || differs; };
  if (wanted("axis", attrs.axis != defaults.axis)) {
    key("axis");
    AppendInt(attrs.axis, &body);
  }
  if (wanted("value", !(attrs.value == defaults.value &&
                        std::signbit(attrs.value) == std::signbit(defaults.value)))) {
    key("value");
    AppendDouble(attrs.value, &body);
  }
  if (wanted("comparison", attrs.comparison != defaults.comparison)) {
    key("comparison");
    AppendString(ComparisonName(attrs.comparison), &body);
  }
  if (wanted("reduce", attrs.reduce != defaults.reduce)) {
    key("reduce");
    AppendString(ReduceName(attrs.reduce), &body);
  }
  if (wanted("feature_group_count", attrs.feature_group_count != defaults.feature_group_count)) {
    key("feature_group_count");
    AppendInt(attrs.feature_group_count, &body);
  }
  for (const char* name : kListAttrs) {
    const std::vector<int64_t>& v = *ListAttr(attrs, name);
    if (wanted(name, v != *ListAttr(defaults, name))) {
      key(name);
      AppendInts(v, &body);
    }
  }
  if (!body.empty()) *out += ", \"attrs\": {" + body + "}";
}

void AppendOp(const Op& op, int32_t id, std::string* out) {
  *out += "{\"id\": ";
  AppendInt(id, out);
  *out += ", \"kind\": ";
  AppendString(OpKindName(op.kind), out);
  if (!op.name.empty()) {
    *out += ", \"name\": ";
    AppendString(op.name, out);
  }
  if (!op.source.empty()) {
    *out += ", \"source\": ";
    AppendString(op.source, out);
  }
  if (!op.operands.empty()) {
    *out += ", \"operands\": [";
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (i) *out += ", ";
      AppendInt(op.operands[i], out);
    }
    *out += ']';
  }
  *out += ", \"dtype\": ";
  AppendString(DTypeName(op.dtype), out);
  *out += ", \"shape\": ";
  AppendInts(op.shape, out);
  *out += ", \"role\": ";
  AppendString(TensorRoleName(op.role), out);
  *out += ", \"phase\": ";
  AppendString(PhaseName(op.phase), out);
  *out += ", \"layer\": ";
  AppendInt(op.layer, out);
  if (op.alias_of != -1) {
    *out += ", \"alias_of\": ";
    AppendInt(op.alias_of, out);
  }
  if (op.stop_gradient) *out += ", \"stop_gradient\": true";
  AppendAttrs(op, out);
  *out += '}';
}

}  // namespace

Result<std::string> WriteGraphJson(const Graph& graph) {
  ALPA_RETURN_IF_ERROR(ValidateGraph(graph));
  try {
    std::string out = "{\"format\": \"";
    out += kFormatName;
    out += "\", \"version\": ";
    AppendInt(kFormatVersion, &out);
    out += ",\n \"ops\": [";
    for (int32_t id = 0; id < graph.size(); ++id) {
      out += id ? ",\n  " : "\n  ";
      AppendOp(graph.op(id), id, &out);
    }
    out += graph.ops.empty() ? "],\n" : "\n ],\n";
    out += " \"outputs\": [";
    for (size_t i = 0; i < graph.outputs.size(); ++i) {
      if (i) out += ", ";
      AppendInt(graph.outputs[i], &out);
    }
    out += "]}\n";
    return out;
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, "out of memory while writing the graph");
  }
}

}  // namespace alpa
