// dot_general. f32 / f16 / bf16 run as one strided-batched cuBLASLt matmul with f32
// accumulation (TF32 tensor cores for f32 only when ctx.allow_tf32): the operands are read in
// place when their dims already come as [batch, M, K] or [batch, K, M] (lhs) and [batch, K, N] or
// [batch, N, K] (rhs), else transposed into scratch; an operand whose storage differs from the
// other's (an f32 partial sum beside 16-bit values) is converted to f32 on the way. f64 and
// integer dtypes, and shapes cuBLASLt cannot take (a dim beyond int32, or no algorithm found),
// run on a kernel of one thread per output summing in double in the interpreter's order.
#include <cublasLt.h>

#include <cstdint>
#include <utility>

#include "exec/cuda/contraction_body.h"
#include "exec/cuda/kernel_launch.h"

namespace alpa {
namespace cuda {
namespace {

__global__ void DotKernel(DotArgs d, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    DotOutputAt(d, i);
  }
}

Status BlasStatus(cublasStatus_t s, const std::string& what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return InternalError(what + ": cuBLASLt status " + std::to_string(static_cast<int>(s)) + " (" +
                       cublasGetStatusName(s) + ")");
}

Status LaunchDotKernel(const LaunchContext& ctx, const Graph& graph, int32_t id,
                       const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                       OutputRounding rounding) {
  Result<DotArgs> args = DotArgsFor(graph, id);
  if (!args.ok()) return args.status();
  DotArgs d = args.value();
  d.lhs = operands[0].data;
  d.lhs_storage = operands[0].storage;
  d.rhs = operands[1].data;
  d.rhs_storage = operands[1].storage;
  d.out = out.data;
  d.out_storage = out.storage;
  d.rounding = rounding;
  const int64_t n = out.elements();
  if (n == 0) return Status::Ok();
  DotKernel<<<BlocksFor(n), kThreadsPerBlock, 0, ctx.stream>>>(d, n);
  return CheckLaunch(DescribeOp(graph, id));
}

cudaDataType_t BlasType(DType t) {
  switch (t) {
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

// The cuBLASLt descriptors of one matmul, destroyed with it.
struct BlasDescriptors {
  cublasLtMatmulDesc_t matmul = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  ~BlasDescriptors() {
    if (preference != nullptr) cublasLtMatmulPreferenceDestroy(preference);
    if (d != nullptr) cublasLtMatrixLayoutDestroy(d);
    if (b != nullptr) cublasLtMatrixLayoutDestroy(b);
    if (a != nullptr) cublasLtMatrixLayoutDestroy(a);
    if (matmul != nullptr) cublasLtMatmulDescDestroy(matmul);
  }
};

// A column-major layout of rows x cols with leading dimension ld, `batch` matrices `stride`
// elements apart.
Status MakeLayout(cublasLtMatrixLayout_t* layout, cudaDataType_t type, int64_t rows, int64_t cols,
                  int64_t ld, int32_t batch, int64_t stride, const std::string& what) {
  ALPA_RETURN_IF_ERROR(
      BlasStatus(cublasLtMatrixLayoutCreate(layout, type, static_cast<uint64_t>(rows),
                                            static_cast<uint64_t>(cols), ld),
                 what));
  ALPA_RETURN_IF_ERROR(
      BlasStatus(cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                  &batch, sizeof(batch)),
                 what));
  return BlasStatus(
      cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                       &stride, sizeof(stride)),
      what);
}

// The largest power of two (up to 256) that divides the address.
uint32_t AlignmentOf(const void* p) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

// The GEMM's operands as cuBLASLt reads them, and where its result goes.
struct GemmOperands {
  const void* lhs = nullptr;
  const void* rhs = nullptr;
  DType input_type = DType::kF32;  // both operands' storage
  void* result = nullptr;
  DType result_type = DType::kF32;
};

// Row-major out[b] (M x N) = lhs[b] (M x K) . rhs[b] (K x N) is column-major
// out^T (N x M) = rhs^T (N x K) . lhs^T (K x M): cuBLASLt's A is rhs and its B is lhs.
// Sets *found to false (and runs nothing) when cuBLASLt offers no algorithm.
Status RunGemm(const LaunchContext& ctx, const GemmPlan& p, const GemmOperands& g, bool* found,
               const std::string& what) {
  BlasDescriptors desc;
  const bool f32 = g.input_type == DType::kF32;
  const cublasComputeType_t compute =
      f32 && ctx.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  ALPA_RETURN_IF_ERROR(
      BlasStatus(cublasLtMatmulDescCreate(&desc.matmul, compute, CUDA_R_32F), what));
  const int32_t trans_a = p.rhs_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t trans_b = p.lhs_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  ALPA_RETURN_IF_ERROR(
      BlasStatus(cublasLtMatmulDescSetAttribute(desc.matmul, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                                sizeof(trans_a)),
                 what));
  ALPA_RETURN_IF_ERROR(
      BlasStatus(cublasLtMatmulDescSetAttribute(desc.matmul, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                                sizeof(trans_b)),
                 what));
  const cudaDataType_t in_type = BlasType(g.input_type);
  const int32_t batch = static_cast<int32_t>(p.batch);
  // A (rhs): [K, N] row-major is column-major N x K (ld N); [N, K] is K x N (ld K), transposed.
  if (p.rhs_transposed) {
    ALPA_RETURN_IF_ERROR(MakeLayout(&desc.a, in_type, p.k, p.n, p.k, batch, p.k * p.n, what));
  } else {
    ALPA_RETURN_IF_ERROR(MakeLayout(&desc.a, in_type, p.n, p.k, p.n, batch, p.k * p.n, what));
  }
  // B (lhs): [M, K] row-major is column-major K x M (ld K); [K, M] is M x K (ld M), transposed.
  if (p.lhs_transposed) {
    ALPA_RETURN_IF_ERROR(MakeLayout(&desc.b, in_type, p.m, p.k, p.m, batch, p.m * p.k, what));
  } else {
    ALPA_RETURN_IF_ERROR(MakeLayout(&desc.b, in_type, p.k, p.m, p.k, batch, p.m * p.k, what));
  }
  // D (= C, beta 0): [M, N] row-major is column-major N x M (ld N).
  ALPA_RETURN_IF_ERROR(
      MakeLayout(&desc.d, BlasType(g.result_type), p.n, p.m, p.n, batch, p.m * p.n, what));

  ALPA_RETURN_IF_ERROR(BlasStatus(cublasLtMatmulPreferenceCreate(&desc.preference), what));
  const uint64_t workspace = ctx.blas_workspace == nullptr ? 0 : ctx.blas_workspace_bytes;
  ALPA_RETURN_IF_ERROR(BlasStatus(
      cublasLtMatmulPreferenceSetAttribute(
          desc.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)),
      what));
  // Algorithms that need more alignment than the operands have are left out (cuBLASLt assumes
  // 256-byte aligned pointers unless told; a tensor may start inside a buffer).
  const std::pair<cublasLtMatmulPreferenceAttributes_t, const void*> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, g.rhs},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, g.lhs},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, g.result},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, g.result}};
  for (const auto& [attribute, pointer] : alignments) {
    const uint32_t alignment = AlignmentOf(pointer);
    ALPA_RETURN_IF_ERROR(BlasStatus(cublasLtMatmulPreferenceSetAttribute(
                                        desc.preference, attribute, &alignment, sizeof(alignment)),
                                    what));
  }
  cublasLtMatmulHeuristicResult_t heuristic{};
  int returned = 0;
  const cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(ctx.blas, desc.matmul, desc.a, desc.b, desc.d, desc.d,
                                     desc.preference, 1, &heuristic, &returned);
  // No algorithm for this combination of types, sizes and alignments (the heuristic answers
  // NOT_SUPPORTED or INVALID_VALUE, or finds none): the caller runs the kernel instead.
  if (hs == CUBLAS_STATUS_NOT_SUPPORTED || hs == CUBLAS_STATUS_INVALID_VALUE ||
      (hs == CUBLAS_STATUS_SUCCESS && returned == 0)) {
    *found = false;
    return Status::Ok();
  }
  ALPA_RETURN_IF_ERROR(BlasStatus(hs, what + " (algorithm heuristic)"));
  *found = true;
  const float alpha = 1.0f, beta = 0.0f;
  return BlasStatus(cublasLtMatmul(ctx.blas, desc.matmul, &alpha, g.rhs, desc.a, g.lhs, desc.b,
                                   &beta, g.result, desc.d, g.result, desc.d, &heuristic.algo,
                                   ctx.blas_workspace, workspace, ctx.stream),
                    what);
}

// The same GEMM on cuBLAS's cublasGemmStridedBatchedEx, for what cuBLASLt's heuristic turned
// down. Sets *found to false when cuBLAS cannot run it either.
Status RunCublasGemm(const LaunchContext& ctx, const GemmPlan& p, const GemmOperands& g,
                     bool* found, const std::string& what) {
  *found = false;
  if (ctx.gemm == nullptr) return Status::Ok();
  const bool f32 = g.input_type == DType::kF32;
  const cublasComputeType_t compute =
      f32 && ctx.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cudaDataType_t in_type = BlasType(g.input_type);
  const cublasOperation_t trans_a = p.rhs_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t trans_b = p.lhs_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t lda = p.rhs_transposed ? p.k : p.n;
  const int64_t ldb = p.lhs_transposed ? p.m : p.k;
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t s = cublasGemmStridedBatchedEx(
      ctx.gemm, trans_a, trans_b, static_cast<int>(p.n), static_cast<int>(p.m),
      static_cast<int>(p.k), &alpha, g.rhs, in_type, static_cast<int>(lda), p.k * p.n, g.lhs,
      in_type, static_cast<int>(ldb), p.m * p.k, &beta, g.result, BlasType(g.result_type),
      static_cast<int>(p.n), p.m * p.n, static_cast<int>(p.batch), compute, CUBLAS_GEMM_DEFAULT);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE) return Status::Ok();
  if (s != CUBLAS_STATUS_SUCCESS) {
    return InternalError(what + ": cublasGemmStridedBatchedEx: " + cublasGetStatusString(s));
  }
  *found = true;
  return Status::Ok();
}

}  // namespace

namespace {
thread_local const char* last_dot_path = "none";
}  // namespace

const char* LastDotGeneralPath() { return last_dot_path; }

Status LaunchDotGeneralOp(const LaunchContext& ctx, const Graph& graph, int32_t id,
                          const std::vector<DeviceTensor>& operands, const DeviceTensor& out,
                          OutputRounding rounding) {
  const Op& op = graph.op(id);
  const std::string what = DescribeOp(graph, id);
  if (out.elements() == 0) return Status::Ok();
  const GemmPlan p = PlanGemm(graph, id);
  if (p.k == 0) {  // an empty sum
    return LaunchFill(ctx, out.data, out.storage, out.elements(), 0.0, rounding, what);
  }
  const DeviceTensor& lhs = operands[0];
  const DeviceTensor& rhs = operands[1];
  const bool blas = ctx.blas != nullptr && IsBlasFloat(op.dtype) && IsBlasFloat(lhs.storage) &&
                    IsBlasFloat(rhs.storage) && p.batch <= INT32_MAX && p.m <= INT32_MAX &&
                    p.n <= INT32_MAX && p.k <= INT32_MAX;
  last_dot_path = "kernel";
  if (!blas) return LaunchDotKernel(ctx, graph, id, operands, out, rounding);

  // Both operands in one storage type: the 16-bit type when both hold it, else f32.
  const DType input_type = lhs.storage == rhs.storage ? lhs.storage : DType::kF32;
  const bool lhs_copy = !p.lhs_permutation.empty() || lhs.storage != input_type;
  const bool rhs_copy = !p.rhs_permutation.empty() || rhs.storage != input_type;
  // cuBLASLt writes f32 or the input's 16-bit type; anything else (or a 16-bit output of f32
  // inputs) goes through an f32 result in scratch and a conversion.
  const bool direct = out.storage == DType::kF32 || out.storage == input_type;
  const DType result_type = direct ? out.storage : DType::kF32;
  const size_t in_bytes = static_cast<size_t>(DTypeBytes(input_type));
  ScratchPlan plan;
  const size_t lhs_at = lhs_copy ? plan.Add(static_cast<size_t>(lhs.elements()) * in_bytes) : 0;
  const size_t rhs_at = rhs_copy ? plan.Add(static_cast<size_t>(rhs.elements()) * in_bytes) : 0;
  const size_t result_at = direct ? 0 : plan.Add(static_cast<size_t>(out.elements()) * 4);
  char* scratch = nullptr;
  if (plan.total() > 0) {
    Result<char*> reserved = ReserveScratch(ctx, plan, what);
    if (!reserved.ok()) return reserved.status();
    scratch = reserved.value();
  }
  GemmOperands g;
  g.input_type = input_type;
  g.lhs = lhs.data;
  g.rhs = rhs.data;
  if (lhs_copy) {
    ALPA_RETURN_IF_ERROR(
        LaunchArrange(ctx, lhs, p.lhs_permutation, scratch + lhs_at, input_type, what));
    g.lhs = scratch + lhs_at;
  }
  if (rhs_copy) {
    ALPA_RETURN_IF_ERROR(
        LaunchArrange(ctx, rhs, p.rhs_permutation, scratch + rhs_at, input_type, what));
    g.rhs = scratch + rhs_at;
  }
  GemmPlan layout = p;  // a copied operand is in the plain order
  if (!p.lhs_permutation.empty()) layout.lhs_transposed = false;
  if (!p.rhs_permutation.empty()) layout.rhs_transposed = false;
  g.result = direct ? out.data : scratch + result_at;
  g.result_type = result_type;
  bool found = false;
  ALPA_RETURN_IF_ERROR(RunGemm(ctx, layout, g, &found, what));
  last_dot_path = "cublaslt";
  if (!found) {
    ALPA_RETURN_IF_ERROR(RunCublasGemm(ctx, layout, g, &found, what));
    last_dot_path = "cublas";
  }
  if (!found) {
    last_dot_path = "kernel";
    return LaunchDotKernel(ctx, graph, id, operands, out, rounding);
  }
  // The f32 result rounded once to the dtype (or converted to the output's storage).
  const bool needs_rounding = rounding.round && rounding.round_to != result_type;
  if (!direct || needs_rounding) {
    return LaunchBoxElementwise(ctx, BoxMode::kConvert, g.result, result_type, out.data,
                                out.storage, out.elements(), 0.0, rounding, what);
  }
  return Status::Ok();
}

}  // namespace cuda
}  // namespace alpa
