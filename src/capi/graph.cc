// Operator graphs through the C ABI: building by arrays, reading and writing JSON, queries and
// statistics. Arrays, JSON and the model zoo all end in the same alpa::Graph.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "capi/graph_attr_words.h"
#include "capi/handles.h"
#include "core/ir/graph_json.h"
#include "core/ir/graph_stats.h"
#include "core/util/json_util.h"
#include "import/hlo/hlo_import.h"

// The ALPA_* constants are the C++ enum values.
static_assert(ALPA_DTYPE_F32 == static_cast<int32_t>(alpa::DType::kF32));
static_assert(ALPA_DTYPE_F16 == static_cast<int32_t>(alpa::DType::kF16));
static_assert(ALPA_DTYPE_BF16 == static_cast<int32_t>(alpa::DType::kBF16));
static_assert(ALPA_DTYPE_F64 == static_cast<int32_t>(alpa::DType::kF64));
static_assert(ALPA_DTYPE_S8 == static_cast<int32_t>(alpa::DType::kS8));
static_assert(ALPA_DTYPE_S32 == static_cast<int32_t>(alpa::DType::kS32));
static_assert(ALPA_DTYPE_S64 == static_cast<int32_t>(alpa::DType::kS64));
static_assert(ALPA_DTYPE_PRED == static_cast<int32_t>(alpa::DType::kPred));
static_assert(alpa::kNumDTypes == 8);
#define ALPA_CHECK_OP(c, k) static_assert(ALPA_OP_##c == static_cast<int32_t>(alpa::OpKind::k))
ALPA_CHECK_OP(PARAMETER, kParameter);
ALPA_CHECK_OP(CONSTANT, kConstant);
ALPA_CHECK_OP(IOTA, kIota);
ALPA_CHECK_OP(NEG, kNeg);
ALPA_CHECK_OP(ABS, kAbs);
ALPA_CHECK_OP(EXP, kExp);
ALPA_CHECK_OP(LOG, kLog);
ALPA_CHECK_OP(TANH, kTanh);
ALPA_CHECK_OP(SQRT, kSqrt);
ALPA_CHECK_OP(RSQRT, kRsqrt);
ALPA_CHECK_OP(GELU, kGelu);
ALPA_CHECK_OP(RELU, kRelu);
ALPA_CHECK_OP(CONVERT, kConvert);
ALPA_CHECK_OP(ADD, kAdd);
ALPA_CHECK_OP(SUB, kSub);
ALPA_CHECK_OP(MUL, kMul);
ALPA_CHECK_OP(DIV, kDiv);
ALPA_CHECK_OP(MAX, kMax);
ALPA_CHECK_OP(MIN, kMin);
ALPA_CHECK_OP(POW, kPow);
ALPA_CHECK_OP(COMPARE, kCompare);
ALPA_CHECK_OP(SELECT, kSelect);
ALPA_CHECK_OP(DOT_GENERAL, kDotGeneral);
ALPA_CHECK_OP(CONVOLUTION, kConvolution);
ALPA_CHECK_OP(BROADCAST_IN_DIM, kBroadcastInDim);
ALPA_CHECK_OP(RESHAPE, kReshape);
ALPA_CHECK_OP(TRANSPOSE, kTranspose);
ALPA_CHECK_OP(SLICE, kSlice);
ALPA_CHECK_OP(CONCATENATE, kConcatenate);
ALPA_CHECK_OP(PAD, kPad);
ALPA_CHECK_OP(REVERSE, kReverse);
ALPA_CHECK_OP(REDUCE_SUM, kReduceSum);
ALPA_CHECK_OP(REDUCE_MAX, kReduceMax);
ALPA_CHECK_OP(REDUCE_WINDOW, kReduceWindow);
ALPA_CHECK_OP(SELECT_AND_SCATTER, kSelectAndScatter);
ALPA_CHECK_OP(GATHER, kGather);
ALPA_CHECK_OP(SCATTER_ADD, kScatterAdd);
#undef ALPA_CHECK_OP
static_assert(ALPA_ROLE_ACTIVATION == static_cast<int32_t>(alpa::TensorRole::kActivation));
static_assert(ALPA_ROLE_PARAMETER == static_cast<int32_t>(alpa::TensorRole::kParameter));
static_assert(ALPA_ROLE_GRADIENT == static_cast<int32_t>(alpa::TensorRole::kGradient));
static_assert(ALPA_ROLE_OPTIMIZER_STATE == static_cast<int32_t>(alpa::TensorRole::kOptimizerState));
static_assert(ALPA_ROLE_INPUT == static_cast<int32_t>(alpa::TensorRole::kInput));
static_assert(ALPA_PHASE_FORWARD == static_cast<int32_t>(alpa::Phase::kForward));
static_assert(ALPA_PHASE_BACKWARD == static_cast<int32_t>(alpa::Phase::kBackward));
static_assert(ALPA_PHASE_UPDATE == static_cast<int32_t>(alpa::Phase::kUpdate));
static_assert(ALPA_CMP_EQ == static_cast<int32_t>(alpa::Comparison::kEq));
static_assert(ALPA_CMP_NE == static_cast<int32_t>(alpa::Comparison::kNe));
static_assert(ALPA_CMP_LT == static_cast<int32_t>(alpa::Comparison::kLt));
static_assert(ALPA_CMP_LE == static_cast<int32_t>(alpa::Comparison::kLe));
static_assert(ALPA_CMP_GT == static_cast<int32_t>(alpa::Comparison::kGt));
static_assert(ALPA_CMP_GE == static_cast<int32_t>(alpa::Comparison::kGe));
static_assert(ALPA_REDUCE_SUM == static_cast<int32_t>(alpa::ReduceKind::kSum));
static_assert(ALPA_REDUCE_MAX == static_cast<int32_t>(alpa::ReduceKind::kMax));

namespace {

using alpa::capi::Fail;
using alpa::capi::Guard;

int32_t CheckBuilding(const alpa_graph* graph, alpa_error** err) {
  if (graph == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "graph is NULL");
  if (graph->finalized) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "graph is finalized and can no longer change");
  }
  return ALPA_OK;
}

// CheckBuilding, and op `op` exists.
int32_t CheckBuildingOp(const alpa_graph* graph, int32_t op, alpa_error** err) {
  if (int32_t s = CheckBuilding(graph, err)) return s;
  if (op < 0 || op >= graph->graph.size()) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                "op " + std::to_string(op) + " does not exist (the graph has " +
                    std::to_string(graph->graph.size()) + " ops)");
  }
  return ALPA_OK;
}

int32_t CheckFinalized(const alpa_graph* graph, alpa_error** err) {
  if (graph == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "graph is NULL");
  if (!graph->finalized) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                "graph is not finalized: call alpa_graph_finalize first");
  }
  return ALPA_OK;
}

const alpa::Op* FindOp(const alpa_graph* graph, int32_t op) {
  if (graph == nullptr || op < 0 || op >= graph->graph.size()) return nullptr;
  return &graph->graph.op(op);
}

template <typename T>
int64_t CopyOut(const std::vector<T>& v, T* out, int64_t capacity) {
  return alpa::capi::FillArray(out, capacity, static_cast<int64_t>(v.size()),
                               [&v](int64_t i) { return v[static_cast<size_t>(i)]; });
}

// Checks one offsets array (count + 1 non-decreasing entries >= 0, data present when the
// ranges are not all empty) and returns the range of op i through begin/end.
struct Ranges {
  const int64_t* offsets;
  size_t begin(size_t i) const { return offsets ? static_cast<size_t>(offsets[i]) : 0; }
  size_t end(size_t i) const { return offsets ? static_cast<size_t>(offsets[i + 1]) : 0; }
};

int32_t CheckRanges(int64_t count, const int64_t* offsets, const void* data, const char* what,
                    alpa_error** err) {
  if (offsets == nullptr) return ALPA_OK;
  for (int64_t i = 0; i <= count; ++i) {
    if (offsets[i] < 0 || (i > 0 && offsets[i] < offsets[i - 1])) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  std::string(what) + "_offsets[" + std::to_string(i) + "] = " +
                      std::to_string(offsets[i]) + " is negative or smaller than the entry before");
    }
  }
  if (offsets[count] > offsets[0] && data == nullptr) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                std::string(what) + " is NULL but its offsets give non-empty ranges");
  }
  return ALPA_OK;
}

// "op 7 'fc1' (dot_general)" for an op being added (not yet in the graph).
std::string Describe(const alpa::Op& op, int64_t id, const char* kind_name) {
  std::string s = "op " + std::to_string(id);
  if (!op.name.empty()) s += " '" + op.name + "'";
  return kind_name ? s + " (" + kind_name + ")" : s;
}

// Builds and type-checks op i of a batch, appending it to `graph` (a scratch copy).
int32_t AddOneOp(alpa::Graph& graph, size_t i, const int32_t* kinds, const int32_t* dtypes,
                 const int32_t* roles, const int32_t* phases, const int32_t* layers,
                 Ranges operand_ranges, const int32_t* operands, Ranges shape_ranges,
                 const int64_t* shape_dims, Ranges attr_ranges, const int64_t* attrs,
                 const double* values, const char* const* names, alpa_error** err) {
  const int64_t id = graph.size();
  alpa::Op op;
  if (names != nullptr && names[i] != nullptr) op.name = names[i];
  if (!alpa::IsValidOpKind(kinds[i])) {
    return Fail(err, ALPA_ERR_INVALID_GRAPH,
                Describe(op, id, nullptr) + ": unknown op kind " + std::to_string(kinds[i]));
  }
  op.kind = static_cast<alpa::OpKind>(kinds[i]);
  const std::string where = Describe(op, id, alpa::OpKindName(op.kind));
  auto bad = [&](const std::string& what) {
    return Fail(err, ALPA_ERR_INVALID_GRAPH, where + ": " + what);
  };
  const int32_t dtype = dtypes ? dtypes[i] : -1;
  if (dtype != -1 && !alpa::IsValidDType(dtype)) {
    return bad("unknown dtype " + std::to_string(dtype));
  }
  if (dtype == -1 && alpa::DTypeIsGiven(op.kind)) return bad("needs a dtype (got -1)");
  if (dtype != -1) op.dtype = static_cast<alpa::DType>(dtype);
  const int32_t role = roles ? roles[i] : ALPA_ROLE_ACTIVATION;
  const int32_t phase = phases ? phases[i] : ALPA_PHASE_FORWARD;
  if (role < ALPA_ROLE_ACTIVATION || role > ALPA_ROLE_INPUT) {
    return bad("unknown role " + std::to_string(role));
  }
  if (phase < ALPA_PHASE_FORWARD || phase > ALPA_PHASE_UPDATE) {
    return bad("unknown phase " + std::to_string(phase));
  }
  op.role = static_cast<alpa::TensorRole>(role);
  op.phase = static_cast<alpa::Phase>(phase);
  op.layer = layers ? layers[i] : 0;
  if (op.layer < -1) return bad("layer " + std::to_string(op.layer) + " is below -1");
  if (operand_ranges.end(i) > operand_ranges.begin(i)) {
    op.operands.assign(operands + operand_ranges.begin(i), operands + operand_ranges.end(i));
  }
  for (size_t k = 0; k < op.operands.size(); ++k) {
    if (op.operands[k] < 0 || op.operands[k] >= id) {
      return bad("operand " + std::to_string(k) + " refers to op " +
                 std::to_string(op.operands[k]) + ", which is not defined before it (" +
                 std::to_string(id) + " ops so far)");
    }
  }
  std::vector<int64_t> shape;
  if (shape_ranges.end(i) > shape_ranges.begin(i)) {
    shape.assign(shape_dims + shape_ranges.begin(i), shape_dims + shape_ranges.end(i));
  }
  const bool shape_given = alpa::ShapeIsGiven(op.kind);
  if (shape_given) op.shape = shape;
  const size_t attr_begin = attr_ranges.begin(i);
  alpa::Status s = alpa::capi::DecodeAttrWords(op.kind, attrs ? attrs + attr_begin : nullptr,
                                               attr_ranges.end(i) - attr_begin,
                                               values ? values[i] : 0.0, &op.attrs);
  if (!s.ok()) return bad(s.message());
  alpa::Op inferred = op;
  s = alpa::InferOpType(graph, static_cast<int32_t>(id), inferred);
  if (!s.ok()) return Fail(err, s);
  if (!shape_given && !shape.empty() && shape != inferred.shape) {
    return bad("given shape " + alpa::ShapeString(shape) + " differs from the inferred " +
               alpa::ShapeString(inferred.shape));
  }
  if (dtype != -1 && op.dtype != inferred.dtype) {
    return bad(std::string("given dtype ") + alpa::DTypeName(op.dtype) +
               " differs from the inferred " + alpa::DTypeName(inferred.dtype));
  }
  graph.ops.push_back(std::move(inferred));
  return ALPA_OK;
}

nlohmann::json StatsJson(const alpa::GraphStats& s) {
  nlohmann::json by_phase = nlohmann::json::object();
  for (const auto& [phase, flops] : s.flops_by_phase)
    by_phase[phase] = alpa::json_util::NumberValue(flops);
  return {{"ops", s.num_ops},
          {"layers", s.num_layers},
          {"parameters", s.parameter_count},
          {"flops", alpa::json_util::NumberValue(s.flops)},
          {"dot_flops", alpa::json_util::NumberValue(s.dot_flops)},
          {"conv_flops", alpa::json_util::NumberValue(s.conv_flops)},
          {"parameter_bytes", s.parameter_bytes},
          {"gradient_bytes", s.gradient_bytes},
          {"optimizer_state_bytes", s.optimizer_state_bytes},
          {"input_bytes", s.input_bytes},
          {"activation_bytes", alpa::json_util::NumberValue(s.activation_bytes)},
          {"ops_by_kind", s.ops_by_kind},
          {"ops_by_phase", s.ops_by_phase},
          {"flops_by_phase", by_phase}};
}

int32_t WrapGraph(alpa_graph** out, alpa::Result<alpa::Graph> read, alpa_error** err) {
  if (!read.ok()) return Fail(err, read.status());
  auto* handle = new alpa_graph();
  handle->graph = std::move(read).value();
  handle->finalized = true;
  *out = handle;
  return ALPA_OK;
}

}  // namespace

extern "C" {

ALPA_API int32_t alpa_graph_create(alpa_graph** out, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = new alpa_graph();
    return ALPA_OK;
  });
}

ALPA_API void alpa_graph_destroy(alpa_graph* graph) { delete graph; }

ALPA_API int32_t alpa_graph_add_ops(alpa_graph* graph, int64_t count, const int32_t* kinds,
                                    const int32_t* dtypes, const int32_t* roles,
                                    const int32_t* phases, const int32_t* layers,
                                    const int64_t* operand_offsets, const int32_t* operands,
                                    const int64_t* shape_offsets, const int64_t* shape_dims,
                                    const int64_t* attr_offsets, const int64_t* attrs,
                                    const double* values, const char* const* names,
                                    alpa_error** err) {
  return Guard(err, [&] {
    if (int32_t s = CheckBuilding(graph, err)) return s;
    if (count < 0) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "op count is negative (" + std::to_string(count) + ")");
    }
    if (count == 0) return ALPA_OK;
    if (kinds == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "kinds is NULL");
    if (static_cast<int64_t>(graph->graph.ops.size()) + count >
        std::numeric_limits<int32_t>::max()) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "too many ops (op ids are int32)");
    }
    if (int32_t s = CheckRanges(count, operand_offsets, operands, "operand", err)) return s;
    if (int32_t s = CheckRanges(count, shape_offsets, shape_dims, "shape", err)) return s;
    if (int32_t s = CheckRanges(count, attr_offsets, attrs, "attr", err)) return s;
    // Ops go into a scratch copy first, so that a failure adds nothing.
    alpa::Graph scratch;
    scratch.ops = graph->graph.ops;
    for (size_t i = 0; i < static_cast<size_t>(count); ++i) {
      if (int32_t s = AddOneOp(scratch, i, kinds, dtypes, roles, phases, layers,
                               Ranges{operand_offsets}, operands, Ranges{shape_offsets}, shape_dims,
                               Ranges{attr_offsets}, attrs, values, names, err)) {
        return s;
      }
    }
    graph->graph.ops = std::move(scratch.ops);
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_graph_set_alias(alpa_graph* graph, int32_t op, int32_t parameter,
                                      alpa_error** err) {
  return Guard(err, [&] {
    if (int32_t s = CheckBuildingOp(graph, op, err)) return s;
    alpa::Graph& g = graph->graph;
    if (parameter != -1) {
      if (parameter < 0 || parameter >= g.size() ||
          g.op(parameter).kind != alpa::OpKind::kParameter) {
        return Fail(err, ALPA_ERR_INVALID_GRAPH,
                    alpa::DescribeOp(g, op) + ": alias_of " + std::to_string(parameter) +
                        " is not a parameter op");
      }
      const alpa::Op& target = g.op(parameter);
      if (target.shape != g.op(op).shape || target.dtype != g.op(op).dtype) {
        return Fail(err, ALPA_ERR_INVALID_GRAPH,
                    alpa::DescribeOp(g, op) + ": aliases " + alpa::DescribeOp(g, parameter) +
                        " of a different type (" + alpa::DTypeName(target.dtype) +
                        alpa::ShapeString(target.shape) + ")");
      }
    }
    for (int32_t other = 0; parameter != -1 && other < g.size(); ++other) {
      if (other != op && g.op(other).alias_of == parameter) {
        return Fail(err, ALPA_ERR_INVALID_GRAPH,
                    alpa::DescribeOp(g, op) + ": " + alpa::DescribeOp(g, parameter) +
                        " is already replaced by " + alpa::DescribeOp(g, other));
      }
    }
    g.ops[static_cast<size_t>(op)].alias_of = parameter;
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_graph_set_stop_gradient(alpa_graph* graph, int32_t op, int32_t flag,
                                              alpa_error** err) {
  return Guard(err, [&] {
    if (int32_t s = CheckBuildingOp(graph, op, err)) return s;
    alpa::Graph& g = graph->graph;
    if (flag != 0 && flag != 1) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "stop_gradient flag of " + alpa::DescribeOp(g, op) + " must be 0 or 1 (got " +
                      std::to_string(flag) + ")");
    }
    g.ops[static_cast<size_t>(op)].stop_gradient = flag == 1;
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_graph_set_outputs(alpa_graph* graph, int64_t count, const int32_t* ids,
                                        alpa_error** err) {
  return Guard(err, [&] {
    if (int32_t s = CheckBuilding(graph, err)) return s;
    if (count < 0 || (count > 0 && ids == nullptr)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "outputs: negative count or NULL ids");
    }
    for (int64_t i = 0; i < count; ++i) {
      if (ids[i] < 0 || ids[i] >= graph->graph.size()) {
        return Fail(err, ALPA_ERR_INVALID_GRAPH,
                    "output " + std::to_string(i) + " refers to op " + std::to_string(ids[i]) +
                        ", which does not exist");
      }
    }
    graph->graph.outputs.assign(ids, ids + count);
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_graph_finalize(alpa_graph* graph, alpa_error** err) {
  return Guard(err, [&] {
    if (graph == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "graph is NULL");
    if (graph->finalized) return ALPA_OK;
    if (alpa::Status s = alpa::ValidateGraph(graph->graph); !s.ok()) return Fail(err, s);
    graph->finalized = true;
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_graph_read_file(alpa_graph** out, const char* path, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || path == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and path must not be NULL");
    }
    return WrapGraph(out, alpa::ReadGraphFile(path), err);
  });
}

ALPA_API int32_t alpa_graph_read_file_with_options(alpa_graph** out, const char* path,
                                                   const alpa_solve_options* options,
                                                   alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || path == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and path must not be NULL");
    }
    const uint64_t limit =
        options == nullptr ? alpa::kDefaultMaxInputBytes : options->max_input_bytes;
    return WrapGraph(out, alpa::ReadGraphFile(path, limit), err);
  });
}

ALPA_API int32_t alpa_graph_read_buffer(alpa_graph** out, const char* data, size_t size,
                                        alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || (data == nullptr && size > 0)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and data must not be NULL");
    }
    const std::string_view bytes = size == 0 ? std::string_view() : std::string_view(data, size);
    return WrapGraph(out, alpa::ReadGraphBuffer(bytes), err);
  });
}

ALPA_API int32_t alpa_graph_read_hlo_file(alpa_graph** out, const char* path, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || path == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and path must not be NULL");
    }
    return WrapGraph(out, alpa::ReadHloFile(path), err);
  });
}

ALPA_API int32_t alpa_graph_read_hlo_buffer(alpa_graph** out, const char* text, size_t length,
                                            alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || (text == nullptr && length > 0)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and text must not be NULL");
    }
    const std::string_view bytes =
        length == 0 ? std::string_view() : std::string_view(text, length);
    return WrapGraph(out, alpa::ImportHloText(bytes), err);
  });
}

ALPA_API int32_t alpa_graph_to_json(alpa_buffer** out, const alpa_graph* graph, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    if (int32_t s = CheckFinalized(graph, err)) return s;
    alpa::Result<std::string> text = alpa::WriteGraphJson(graph->graph);
    if (!text.ok()) return Fail(err, text.status());
    *out = new alpa_buffer{std::move(text).value()};
    return ALPA_OK;
  });
}

ALPA_API int64_t alpa_graph_op_count(const alpa_graph* graph) {
  return graph == nullptr ? 0 : static_cast<int64_t>(graph->graph.ops.size());
}

ALPA_API int32_t alpa_graph_op_kind(const alpa_graph* graph, int32_t op) {
  const alpa::Op* o = FindOp(graph, op);
  return o ? static_cast<int32_t>(o->kind) : -1;
}

ALPA_API int32_t alpa_graph_op_dtype(const alpa_graph* graph, int32_t op) {
  const alpa::Op* o = FindOp(graph, op);
  return o ? static_cast<int32_t>(o->dtype) : -1;
}

ALPA_API int32_t alpa_graph_op_role(const alpa_graph* graph, int32_t op) {
  const alpa::Op* o = FindOp(graph, op);
  return o ? static_cast<int32_t>(o->role) : -1;
}

ALPA_API int32_t alpa_graph_op_phase(const alpa_graph* graph, int32_t op) {
  const alpa::Op* o = FindOp(graph, op);
  return o ? static_cast<int32_t>(o->phase) : -1;
}

ALPA_API int32_t alpa_graph_op_layer(const alpa_graph* graph, int32_t op) {
  const alpa::Op* o = FindOp(graph, op);
  return o ? o->layer : -1;
}

ALPA_API int32_t alpa_graph_op_alias(const alpa_graph* graph, int32_t op) {
  const alpa::Op* o = FindOp(graph, op);
  return o ? o->alias_of : -1;
}

ALPA_API int32_t alpa_graph_op_stop_gradient(const alpa_graph* graph, int32_t op) {
  const alpa::Op* o = FindOp(graph, op);
  if (o == nullptr) return -1;
  return o->stop_gradient ? 1 : 0;
}

ALPA_API double alpa_graph_op_value(const alpa_graph* graph, int32_t op) {
  const alpa::Op* o = FindOp(graph, op);
  if (o == nullptr) return std::numeric_limits<double>::quiet_NaN();
  if (o->kind != alpa::OpKind::kConstant && o->kind != alpa::OpKind::kPad) return 0.0;
  return o->attrs.value;
}

ALPA_API int64_t alpa_graph_op_shape(const alpa_graph* graph, int32_t op, int64_t* out,
                                     int64_t capacity) {
  const alpa::Op* o = FindOp(graph, op);
  return o ? CopyOut(o->shape, out, capacity) : alpa::capi::kFillMisuse;
}

ALPA_API int64_t alpa_graph_op_operands(const alpa_graph* graph, int32_t op, int32_t* out,
                                        int64_t capacity) {
  const alpa::Op* o = FindOp(graph, op);
  return o ? CopyOut(o->operands, out, capacity) : alpa::capi::kFillMisuse;
}

ALPA_API int64_t alpa_graph_op_attrs(const alpa_graph* graph, int32_t op, int64_t* out,
                                     int64_t capacity) {
  const alpa::Op* o = FindOp(graph, op);
  if (o == nullptr) return alpa::capi::kFillMisuse;
  try {
    return CopyOut(alpa::capi::EncodeAttrWords(o->kind, o->attrs), out, capacity);
  } catch (...) {
    return -1;  // out of memory: a pure getter cannot report more
  }
}

ALPA_API const char* alpa_graph_op_name(const alpa_graph* graph, int32_t op) {
  const alpa::Op* o = FindOp(graph, op);
  return o ? o->name.c_str() : "";
}

ALPA_API const char* alpa_graph_op_source(const alpa_graph* graph, int32_t op) {
  const alpa::Op* o = FindOp(graph, op);
  return o ? o->source.c_str() : "";
}

ALPA_API int64_t alpa_graph_outputs(const alpa_graph* graph, int32_t* out, int64_t capacity) {
  return graph == nullptr ? alpa::capi::kFillMisuse : CopyOut(graph->graph.outputs, out, capacity);
}

ALPA_API int32_t alpa_graph_stats_to_json(alpa_buffer** out, const alpa_graph* graph,
                                          alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    if (int32_t s = CheckFinalized(graph, err)) return s;
    *out = new alpa_buffer{StatsJson(alpa::ComputeGraphStats(graph->graph)).dump()};
    return ALPA_OK;
  });
}

}  // extern "C"
