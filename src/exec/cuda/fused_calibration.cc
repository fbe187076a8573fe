// FusedCalibrationCases: each case a program of buffers and instructions whose local ops are
// built as the lowering builds them (placeholder parameters, then the op), fused by PlanFusion.
#include "exec/cuda/fused_calibration.h"

#include <utility>

#include "core/ir/graph_builder.h"
#include "core/util/dtype.h"
#include "exec/cuda/storage_policy.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace cuda {
namespace {

// Builds one case's program.
class CaseBuilder {
 public:
  // A persistent input buffer (kept alive: the kernel's reads are all the case moves).
  int32_t Input(const Dims& shape) { return AddBuffer(shape, true); }

  // Runs the op `make` builds over placeholders of the operands' shapes; returns its buffer.
  template <typename Make>
  int32_t Run(const std::vector<int32_t>& operands, Make make) {
    GraphBuilder b;
    std::vector<int32_t> params;
    for (int32_t x : operands) {
      params.push_back(b.Parameter(program_.buffers[static_cast<size_t>(x)].shape, DType::kBF16,
                                   TensorRole::kActivation, "x" + std::to_string(params.size())));
    }
    const int32_t op = make(b, params);
    b.AddOutput(op);
    Result<Graph> local = std::move(b).Finish();
    if (!local.ok()) {
      error_ = local.status();
      return -1;
    }
    const Dims shape = local.value().op(op).shape;
    program_.local_ops.push_back(std::move(local).value());
    Instruction in;
    in.kind = InstructionKind::kRun;
    in.in = operands;
    in.local_op = static_cast<int32_t>(program_.local_ops.size()) - 1;
    in.out = AddBuffer(shape, false);
    program_.code.push_back(std::move(in));
    return program_.code.back().out;
  }

  // The case: the program's one fused group and its bytes.
  Result<FusedCalibrationCase> Finish(std::string name) {
    if (!error_.ok()) return error_;
    FusedCalibrationCase c;
    c.name = std::move(name);
    const FusionPlan plan = PlanFusion(program_, StorageDTypes(program_));
    if (plan.groups.size() != 1 ||
        plan.groups[0].root != static_cast<int32_t>(program_.code.size()) - 1 ||
        !plan.groups[0].stores.empty()) {
      return InternalError("calibration case \"" + c.name + "\": the runner fuses its " +
                           std::to_string(program_.code.size()) + " ops into " +
                           std::to_string(plan.groups.size()) +
                           " kernels, not one ending in the last with one result");
    }
    c.group = plan.groups[0];
    const std::vector<DType> storage = StorageDTypes(program_);
    for (int32_t b : c.group.inputs) c.bytes += BytesOf(b, storage);
    c.bytes += BytesOf(c.group.out, storage);
    c.program = std::move(program_);
    return c;
  }

 private:
  int32_t AddBuffer(const Dims& shape, bool persistent) {
    program_.buffers.push_back(
        {"b" + std::to_string(program_.buffers.size()), shape, DType::kBF16, persistent, -1});
    return static_cast<int32_t>(program_.buffers.size()) - 1;
  }
  int64_t BytesOf(int32_t b, const std::vector<DType>& storage) const {
    return ElementCountOf(program_.buffers[static_cast<size_t>(b)].shape) *
           DTypeBytes(storage[static_cast<size_t>(b)]);
  }

  DeviceProgram program_;
  Status error_ = Status::Ok();
};

std::string Size(int64_t rows, int64_t row) {
  return " bf16 [" + std::to_string(rows) + " x " + std::to_string(row) + "]";
}

Result<FusedCalibrationCase> SoftmaxPass(int64_t rows, int64_t row) {
  CaseBuilder c;
  const int32_t x = c.Input({rows, row});
  const int32_t m = c.Input({rows});
  const int32_t scale = c.Run({}, [&](GraphBuilder& b, const std::vector<int32_t>&) {
    return b.Constant(0.125, {rows, row}, DType::kBF16);
  });
  const int32_t scaled = c.Run(
      {x, scale}, [](GraphBuilder& b, const std::vector<int32_t>& p) { return b.Mul(p[0], p[1]); });
  const int32_t wide = c.Run({m}, [&](GraphBuilder& b, const std::vector<int32_t>& p) {
    return b.BroadcastInDim(p[0], {rows, row}, {0});
  });
  const int32_t shifted = c.Run({scaled, wide}, [](GraphBuilder& b, const std::vector<int32_t>& p) {
    return b.Sub(p[0], p[1]);
  });
  c.Run({shifted},
        [](GraphBuilder& b, const std::vector<int32_t>& p) { return b.Unary(OpKind::kExp, p[0]); });
  return c.Finish("fused exp(x * c - broadcast(m))" + Size(rows, row));
}

Result<FusedCalibrationCase> RowSums(int64_t rows, int64_t row) {
  CaseBuilder c;
  const int32_t x = c.Input({rows, row});
  const int32_t m = c.Input({rows});
  const int32_t wide = c.Run({m}, [&](GraphBuilder& b, const std::vector<int32_t>& p) {
    return b.BroadcastInDim(p[0], {rows, row}, {0});
  });
  const int32_t shifted = c.Run(
      {x, wide}, [](GraphBuilder& b, const std::vector<int32_t>& p) { return b.Sub(p[0], p[1]); });
  const int32_t e = c.Run({shifted}, [](GraphBuilder& b, const std::vector<int32_t>& p) {
    return b.Unary(OpKind::kExp, p[0]);
  });
  c.Run({e}, [](GraphBuilder& b, const std::vector<int32_t>& p) { return b.ReduceSum(p[0], {1}); });
  return c.Finish("fused row sums of exp(x - broadcast(m))" + Size(rows, row));
}

Result<FusedCalibrationCase> ResidualAdd(int64_t rows, int64_t row) {
  CaseBuilder c;
  const int32_t x = c.Input({rows, row});
  const int32_t y = c.Input({rows, row});
  c.Run({x, y}, [](GraphBuilder& b, const std::vector<int32_t>& p) { return b.Add(p[0], p[1]); });
  return c.Finish("generated x + y" + Size(rows, row));
}

}  // namespace

Result<std::vector<FusedCalibrationCase>> FusedCalibrationCases(int64_t rows, int64_t row) {
  if (rows < kMinFusedRowReductions || row <= 0 || row > kMaxFusedRowLength || row % 8 != 0 ||
      rows > (int64_t{1} << 31) / row) {
    return InvalidArgument("fused calibration cases: " + std::to_string(rows) + " rows of " +
                           std::to_string(row) + " elements (need at least " +
                           std::to_string(kMinFusedRowReductions) +
                           " rows of a multiple of 8 up to " + std::to_string(kMaxFusedRowLength) +
                           " elements, at most 2^31 in all)");
  }
  std::vector<FusedCalibrationCase> cases;
  for (auto make : {SoftmaxPass, RowSums, ResidualAdd}) {
    Result<FusedCalibrationCase> c = make(rows, row);
    if (!c.ok()) return c.status();
    cases.push_back(std::move(c).value());
  }
  return cases;
}

}  // namespace cuda
}  // namespace alpa
