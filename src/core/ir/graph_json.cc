// Reading the JSON graph format (core/ir/graph_json.h); the writer is graph_json_writer.cc.
#include "core/ir/graph_json.h"

#include <limits>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ir/graph_json_internal.h"
#include "core/util/bounded_input.h"
#include "core/util/json_document.h"
#include "core/util/json_util.h"

namespace alpa {
namespace graph_json_internal {

const std::vector<int64_t>* ListAttr(const OpAttrs& a, const std::string& name) {
  if (name == "dims") return &a.dims;
  if (name == "lhs_batch") return &a.dot.lhs_batch;
  if (name == "rhs_batch") return &a.dot.rhs_batch;
  if (name == "lhs_contracting") return &a.dot.lhs_contracting;
  if (name == "rhs_contracting") return &a.dot.rhs_contracting;
  if (name == "starts") return &a.starts;
  if (name == "limits") return &a.limits;
  if (name == "strides") return &a.strides;
  if (name == "window") return &a.window;
  if (name == "padding_lo") return &a.padding_lo;
  if (name == "padding_hi") return &a.padding_hi;
  if (name == "padding_interior") return &a.padding_interior;
  if (name == "lhs_dilation") return &a.lhs_dilation;
  if (name == "rhs_dilation") return &a.rhs_dilation;
  return nullptr;
}

std::vector<int64_t>* ListAttr(OpAttrs& a, const std::string& name) {
  return const_cast<std::vector<int64_t>*>(ListAttr(static_cast<const OpAttrs&>(a), name));
}

}  // namespace graph_json_internal

namespace {

using graph_json_internal::kFormatName;
using graph_json_internal::kFormatVersion;
using graph_json_internal::ListAttr;
using Json = nlohmann::json;

// A graph nests four levels deep (top, ops, op, attrs, list); anything far deeper is rejected
// before parsing so that nothing downstream recurses without bound.
constexpr int kMaxJsonDepth = 64;

// "op 12 'x' (add): ..." (how ValidateGraph names ops) -> "graph.ops[12] 'x' (add): ...".
Status WithJsonPath(const Status& s) {
  const std::string& m = s.message();
  size_t i = 3;
  if (m.compare(0, 3, "op ") != 0) return s;
  while (i < m.size() && m[i] >= '0' && m[i] <= '9') ++i;
  if (i == 3) return s;
  return Status(s.code(), "graph.ops[" + m.substr(3, i - 3) + "]" + m.substr(i));
}

// Reads one op's fields; `where` names the op in messages ("graph.ops[3] 'w1'").
class OpReader {
 public:
  OpReader(const Json& j, std::string where) : j_(j), where_(std::move(where)) {}

  Status Error(const std::string& field, const std::string& what) const {
    return ParseError(where_ + ": " + (field.empty() ? "" : field + ": ") + what);
  }

  Status Int(const Json& v, const std::string& field, int64_t lo, int64_t hi, int64_t* out) const {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(hi)) return Error(field, "number out of range");
      *out = static_cast<int64_t>(u);
      return Status::Ok();
    }
    if (!v.is_number_integer()) {
      return Error(field, std::string("expected an integer, found ") +
                              (v.is_number() ? "a fraction" : v.type_name()));
    }
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) return Error(field, "number out of range");
    *out = x;
    return Status::Ok();
  }

  Status Int32(const Json& v, const std::string& field, int32_t* out) const {
    int64_t x = 0;
    ALPA_RETURN_IF_ERROR(Int(v, field, std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max(), &x));
    *out = static_cast<int32_t>(x);
    return Status::Ok();
  }

  Status Ints(const Json& v, const std::string& field, std::vector<int64_t>* out) const {
    if (!v.is_array())
      return Error(field, std::string("expected an array, found ") + v.type_name());
    out->clear();
    out->reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      int64_t x = 0;
      ALPA_RETURN_IF_ERROR(Int(v[i], field + "[" + std::to_string(i) + "]",
                               std::numeric_limits<int64_t>::min(),
                               std::numeric_limits<int64_t>::max(), &x));
      out->push_back(x);
    }
    return Status::Ok();
  }

  Status String(const Json& v, const std::string& field, std::string* out) const {
    if (!v.is_string())
      return Error(field, std::string("expected a string, found ") + v.type_name());
    *out = v.get<std::string>();
    return Status::Ok();
  }

  Status Double(const Json& v, const std::string& field, double* out) const {
    if (v.is_number()) {
      *out = v.get<double>();
      return Status::Ok();
    }
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      if (s == "inf") *out = std::numeric_limits<double>::infinity();
      if (s == "-inf") *out = -std::numeric_limits<double>::infinity();
      if (s == "nan") *out = std::numeric_limits<double>::quiet_NaN();
      if (s == "inf" || s == "-inf" || s == "nan") return Status::Ok();
    }
    return Error(field, "expected a number or one of \"inf\", \"-inf\", \"nan\"");
  }

  // Parses a named enum through `parse` (a ParseX function of graph.h / dtype.h).
  template <typename T, typename Parse>
  Status Enum(const Json& v, const std::string& field, Parse parse, T* out) const {
    std::string s;
    ALPA_RETURN_IF_ERROR(String(v, field, &s));
    Result<T> r = parse(s);
    if (!r.ok()) return Error(field, r.status().message());
    *out = r.value();
    return Status::Ok();
  }

  Status Attrs(const Json& v, Op& op) const {
    if (!v.is_object()) {
      return Error("attrs", std::string("expected an object, found ") + v.type_name());
    }
    OpAttrs& attrs = op.attrs;
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string& k = it.key();
      const std::string field = "attrs." + k;
      const Json& x = it.value();
      if (std::vector<int64_t>* list = ListAttr(attrs, k)) {
        ALPA_RETURN_IF_ERROR(Ints(x, field, list));
      } else if (k == "axis") {
        ALPA_RETURN_IF_ERROR(Int(x, field, std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max(), &attrs.axis));
      } else if (k == "feature_group_count") {
        ALPA_RETURN_IF_ERROR(Int(x, field, std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max(), &attrs.feature_group_count));
      } else if (k == "value") {
        ALPA_RETURN_IF_ERROR(Double(x, field, &attrs.value));
      } else if (k == "comparison") {
        ALPA_RETURN_IF_ERROR(Enum(x, field, ParseComparison, &attrs.comparison));
      } else if (k == "reduce") {
        std::string s;
        ALPA_RETURN_IF_ERROR(String(x, field, &s));
        if (s != "sum" && s != "max") {
          return Error(field, "unknown reduction \"" + s + "\" (expected sum, max)");
        }
        attrs.reduce = s == "max" ? ReduceKind::kMax : ReduceKind::kSum;
      } else {
        return Error(field, "unknown attribute");
      }
    }
    return Status::Ok();
  }

  // Fills op; *has_shape / *has_dtype tell whether the JSON gave them.
  Status Read(Op& op, int32_t index, bool* has_shape, bool* has_dtype) const {
    if (!j_.is_object())
      return Error("", std::string("expected an object, found ") + j_.type_name());
    const auto kind = j_.find("kind");
    if (kind == j_.end()) return Error("", "missing field \"kind\"");
    ALPA_RETURN_IF_ERROR(Enum(*kind, "kind", ParseOpKind, &op.kind));
    op.attrs = DefaultAttrs(op.kind);
    *has_shape = *has_dtype = false;
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      const std::string& k = it.key();
      const Json& value = it.value();
      if (k == "kind" || k == "name") {
        continue;  // read first / by the caller
      } else if (k == "source") {
        if (!value.is_string())
          return Error(k, std::string("expected a string, found ") + value.type_name());
        op.source = value.get<std::string>();
      } else if (k == "id") {
        int64_t id = 0;
        ALPA_RETURN_IF_ERROR(Int(value, k, std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max(), &id));
        if (id != index) {
          return Error(k, "is " + std::to_string(id) + ", but the op is at index " +
                              std::to_string(index) + " (ids are positions in \"ops\")");
        }
      } else if (k == "operands") {
        if (!value.is_array())
          return Error(k, std::string("expected an array, found ") + value.type_name());
        op.operands.resize(value.size());
        for (size_t i = 0; i < value.size(); ++i) {
          ALPA_RETURN_IF_ERROR(Int32(value[i], k + "[" + std::to_string(i) + "]", &op.operands[i]));
        }
      } else if (k == "dtype") {
        ALPA_RETURN_IF_ERROR(Enum(value, k, ParseDType, &op.dtype));
        *has_dtype = true;
      } else if (k == "shape") {
        ALPA_RETURN_IF_ERROR(Ints(value, k, &op.shape));
        *has_shape = true;
      } else if (k == "role") {
        ALPA_RETURN_IF_ERROR(Enum(value, k, ParseTensorRole, &op.role));
      } else if (k == "phase") {
        ALPA_RETURN_IF_ERROR(Enum(value, k, ParsePhase, &op.phase));
      } else if (k == "layer") {
        ALPA_RETURN_IF_ERROR(Int32(value, k, &op.layer));
      } else if (k == "alias_of") {
        ALPA_RETURN_IF_ERROR(Int32(value, k, &op.alias_of));
      } else if (k == "stop_gradient") {
        if (!value.is_boolean()) {
          return Error(k, std::string("expected true or false, found ") + value.type_name());
        }
        op.stop_gradient = value.get<bool>();
      } else if (k == "attrs") {
        ALPA_RETURN_IF_ERROR(Attrs(value, op));
      } else {
        return Error(k, "unknown field");
      }
    }
    if (ShapeIsGiven(op.kind) && !*has_shape) {
      return Error(
          "", std::string("missing field \"shape\" (required for ") + OpKindName(op.kind) + ")");
    }
    if (DTypeIsGiven(op.kind) && !*has_dtype) {
      return Error(
          "", std::string("missing field \"dtype\" (required for ") + OpKindName(op.kind) + ")");
    }
    return Status::Ok();
  }

 private:
  const Json& j_;
  std::string where_;
};

bool OperandsDefinedBefore(const Op& op, int32_t id) {
  for (int32_t o : op.operands) {
    if (o < 0 || o >= id) return false;
  }
  return true;
}

Result<Graph> FromJsonUnchecked(const Json& root) {
  if (!root.is_object()) {
    return ParseError(std::string("graph: expected an object, found ") + root.type_name());
  }
  const Json* ops = nullptr;
  const Json* outputs = nullptr;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = it.value();
    if (k == "format") {
      if (!v.is_string() || v.get_ref<const std::string&>() != kFormatName) {
        return ParseError(std::string("graph.format: expected \"") + kFormatName + "\"");
      }
    } else if (k == "version") {
      if (!v.is_number_integer() || v.get<int64_t>() != kFormatVersion) {
        return ParseError("graph.version: unsupported version " + v.dump() +
                          " (this library reads " + std::to_string(kFormatVersion) + ")");
      }
    } else if (k == "ops") {
      ops = &v;
    } else if (k == "outputs") {
      outputs = &v;
    } else {
      return ParseError("graph." + k + ": unknown field");
    }
  }
  if (ops == nullptr) return ParseError("graph: missing field \"ops\"");
  if (!ops->is_array()) {
    return ParseError(std::string("graph.ops: expected an array, found ") + ops->type_name());
  }
  if (ops->size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return ParseError("graph.ops: more than 2^31 - 1 ops");
  }
  Graph graph;
  graph.ops.resize(ops->size());
  std::vector<char> has_shape(ops->size()), has_dtype(ops->size());
  for (size_t i = 0; i < ops->size(); ++i) {
    const Json& j = (*ops)[i];
    std::string where = "graph.ops[" + std::to_string(i) + "]";
    Op& op = graph.ops[i];
    if (j.is_object()) {
      const auto name = j.find("name");
      if (name != j.end()) {
        if (!name->is_string()) {
          return ParseError(where + ": name: expected a string, found " + name->type_name());
        }
        op.name = name->get<std::string>();
        where += " '" + op.name + "'";
      }
    }
    bool shape = false, dtype = false;
    ALPA_RETURN_IF_ERROR(OpReader(j, where).Read(op, static_cast<int32_t>(i), &shape, &dtype));
    has_shape[i] = shape;
    has_dtype[i] = dtype;
  }
  if (outputs != nullptr) {
    OpReader reader(*outputs, "graph.outputs");
    if (!outputs->is_array()) return reader.Error("", "expected an array");
    graph.outputs.resize(outputs->size());
    for (size_t i = 0; i < outputs->size(); ++i) {
      ALPA_RETURN_IF_ERROR(
          reader.Int32((*outputs)[i], "[" + std::to_string(i) + "]", &graph.outputs[i]));
    }
  }
  // Types in order: inferred where the JSON left them out, checked where it gave them. A bad
  // reference stops this pass; ValidateGraph then reports it (as a cycle when it closes one).
  for (int32_t id = 0; id < graph.size(); ++id) {
    Op& op = graph.ops[static_cast<size_t>(id)];
    if (!OperandsDefinedBefore(op, id)) break;
    Op inferred = op;
    ALPA_RETURN_IF_ERROR(WithJsonPath(InferOpType(graph, id, inferred)));
    const size_t i = static_cast<size_t>(id);
    if (has_shape[i] && inferred.shape != op.shape) {
      return WithJsonPath(InvalidGraph(DescribeOp(graph, id) + ": shape " + ShapeString(op.shape) +
                                       " differs from the inferred " +
                                       ShapeString(inferred.shape)));
    }
    if (has_dtype[i] && inferred.dtype != op.dtype) {
      return WithJsonPath(InvalidGraph(DescribeOp(graph, id) + ": dtype " + DTypeName(op.dtype) +
                                       " differs from the inferred " + DTypeName(inferred.dtype)));
    }
    op.shape = std::move(inferred.shape);
    op.dtype = inferred.dtype;
  }
  ALPA_RETURN_IF_ERROR(WithJsonPath(ValidateGraph(graph)));
  return graph;
}

std::string JsonMessage(const char* what) { return "graph: JSON: " + JsonErrorMessage(what); }

}  // namespace

bool ShapeIsGiven(OpKind kind) {
  return kind == OpKind::kParameter || kind == OpKind::kConstant || kind == OpKind::kIota ||
         kind == OpKind::kBroadcastInDim || kind == OpKind::kReshape;
}

bool DTypeIsGiven(OpKind kind) {
  return kind == OpKind::kParameter || kind == OpKind::kConstant || kind == OpKind::kIota ||
         kind == OpKind::kConvert;
}

OpAttrs DefaultAttrs(OpKind kind) {
  OpAttrs a;
  if (kind == OpKind::kSelectAndScatter) a.reduce = ReduceKind::kMax;
  return a;
}

Result<Graph> GraphFromJson(const nlohmann::json& json) {
  try {
    return FromJsonUnchecked(json);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, "out of memory while reading the graph");
  } catch (const std::exception& e) {
    return ParseError(JsonMessage(e.what()));
  }
}

Result<Graph> ReadGraphBuffer(std::string_view bytes, uint64_t max_input_bytes) {
  std::string inflated;
  Result<std::string_view> text = DecodeJsonInput(bytes, max_input_bytes, &inflated);
  if (!text.ok()) return text.status();
  ALPA_RETURN_IF_ERROR(CheckJsonNesting(text.value(), kMaxJsonDepth, "graph"));
  Result<JsonDocument> json = ParseJsonDocument(text.value(), JsonRoot::kObjectOnly);
  if (!json.ok()) {
    if (json.status().code() != StatusCode::kParse) return json.status();
    return ParseError("graph: JSON: " + json.status().message());
  }
  std::string().swap(inflated);
  return GraphFromJson(json.value().root());
}

Result<Graph> ReadGraphFile(const std::string& path, uint64_t max_input_bytes) {
  Result<std::string> bytes = ReadFileBytes(path, max_input_bytes, FileContent::kJsonOrGzip);
  Result<Graph> graph =
      bytes.ok() ? ReadGraphBuffer(bytes.value(), max_input_bytes) : Result<Graph>(bytes.status());
  // kIo and kOutOfMemory messages of ReadFileBytes already name the path.
  if (!graph.ok() && (bytes.ok() || bytes.status().code() == StatusCode::kParse)) {
    return Status(graph.status().code(), path + ": " + graph.status().message());
  }
  return graph;
}

}  // namespace alpa
