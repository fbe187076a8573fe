// The CUDA kernels (exec/cuda/kernels.h) on a GPU against the interpreter's EvaluateOp: every
// op kind and dtype of kernel_cases.h, unrounded (f32-stored) results and operands, the masked
// indexing of a split table axis, and the runner's box operations. Built with ALPA_WITH_CUDA
// only; without a GPU every test but the argument checks skips.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_assert.h"
#include "exec/cpu/interpreter.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/dnn_convolution.h"
#include "exec/cuda/dnn_convolution_geometry.h"
#include "exec/cuda/kernel_math.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/strided_index.h"
#include "exec/runtime/masked_indexing.h"
#include "kernel_cases.h"

namespace alpa {
namespace cuda {
namespace {

using kernel_cases::KernelCase;

// A bump allocator over one device buffer, reset between cases (the tests' tensors are small).
class Arena {
 public:
  ~Arena() {
    if (base_ != nullptr) cudaFree(base_);
  }
  bool Init(size_t bytes) {
    size_ = bytes;
    return cudaMalloc(&base_, bytes) == cudaSuccess;
  }
  void* Take(size_t bytes) {
    const size_t at = used_;
    used_ += (bytes + 255) / 256 * 256;
    if (used_ > size_) return nullptr;
    return static_cast<char*>(base_) + at;
  }
  void Reset() { used_ = 0; }

 private:
  void* base_ = nullptr;
  size_t size_ = 0, used_ = 0;
};

// The Scratch of the tests: one device buffer, grown on demand (every launch is followed by a
// synchronisation here, so freeing the old buffer is safe).
class TestScratch : public Scratch {
 public:
  ~TestScratch() override {
    if (data_ != nullptr) cudaFree(data_);
  }
  Result<void*> Reserve(size_t bytes) override {
    if (bytes > size_) {
      if (data_ != nullptr) cudaFree(data_);
      data_ = nullptr;
      size_ = 0;
      const cudaError_t e = cudaMalloc(&data_, bytes);
      if (e != cudaSuccess) {
        return Status(StatusCode::kOutOfMemory, std::string("scratch: ") + cudaGetErrorString(e));
      }
      size_ = bytes;
    }
    return data_;
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (CudaDeviceCount(&why) == 0) GTEST_SKIP() << "no GPU: " << why;
    ASSERT_CUDA(cudaStreamCreate(&stream_));
    ASSERT_EQ(cublasLtCreate(&blas_), CUBLAS_STATUS_SUCCESS);
    ASSERT_CUDA(cudaMalloc(&workspace_, kWorkspaceBytes));
    ASSERT_TRUE(arena_.Init(size_t{256} << 20));
    ctx_.stream = stream_;
    ctx_.blas = blas_;
    ctx_.blas_workspace = workspace_;
    ctx_.blas_workspace_bytes = kWorkspaceBytes;
    ctx_.allow_tf32 = false;
    ctx_.scratch = &scratch_;
    Result<std::unique_ptr<DnnConvolutions>> dnn = DnnConvolutions::Create();
    ASSERT_TRUE(dnn.ok()) << "cuDNN on this GPU: " << dnn.status().message();
    dnn_ = std::move(dnn.value());
    ctx_.dnn = dnn_.get();
  }
  void TearDown() override {
    dnn_.reset();
    if (workspace_ != nullptr) cudaFree(workspace_);
    if (blas_ != nullptr) cublasLtDestroy(blas_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  // `t` in device memory at `storage`.
  DeviceTensor Upload(const HostTensor& t, DType storage) {
    const size_t bytes = static_cast<size_t>(t.size() * DTypeBytes(storage));
    std::vector<unsigned char> host(bytes + 8);
    for (int64_t i = 0; i < t.size(); ++i)
      StoreElement(host.data(), storage, i, t.data[static_cast<size_t>(i)]);
    DeviceTensor d;
    d.shape = t.shape;
    d.storage = storage;
    d.data = arena_.Take(bytes + 8);
    EXPECT_NE(d.data, nullptr) << "the test arena is full";
    if (d.data != nullptr && bytes > 0) {
      EXPECT_EQ(cudaMemcpy(d.data, host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    }
    return d;
  }
  DeviceTensor Allocate(const Dims& shape, DType storage) {
    return Upload(HostTensor{shape, storage,
                             std::vector<double>(static_cast<size_t>(ElementsOf(shape)), 0.0)},
                  storage);
  }
  HostTensor Download(const DeviceTensor& d, DType dtype) {
    const size_t bytes = static_cast<size_t>(d.elements() * DTypeBytes(d.storage));
    std::vector<unsigned char> host(bytes + 8);
    if (bytes > 0) {
      EXPECT_EQ(cudaMemcpy(host.data(), d.data, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    HostTensor t{d.shape, dtype, {}};
    for (int64_t i = 0; i < d.elements(); ++i)
      t.data.push_back(LoadElement(host.data(), d.storage, i));
    return t;
  }
  // Launches and waits; the launch's and the kernel's errors as a string ("" when none).
  std::string Run(const KernelCase& c, const std::vector<DeviceTensor>& in, const DeviceTensor& out,
                  const OpLaunch& launch) {
    const Status s = LaunchOp(ctx_, c.graph, c.id, in, out, launch);
    if (!s.ok()) return c.name + ": LaunchOp: " + s.message();
    const cudaError_t e = cudaStreamSynchronize(stream_);
    if (e != cudaSuccess) return c.name + ": kernel: " + cudaGetErrorString(e);
    return "";
  }

  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t blas_ = nullptr;
  void* workspace_ = nullptr;
  Arena arena_;
  TestScratch scratch_;
  std::unique_ptr<DnnConvolutions> dnn_;
  LaunchContext ctx_;
};

std::vector<const HostTensor*> Pointers(const KernelCase& c) {
  std::vector<const HostTensor*> p;
  for (const HostTensor& t : c.operands) p.push_back(&t);
  return p;
}

// The tolerance of a case on the GPU (called after the case ran: a convolution's depends on the
// path it took): its error in ulps of the dtype, plus an absolute error for sums (f32
// accumulation on cuBLASLt and cuDNN, other summation orders in double).
struct Tolerance {
  double ulps = 0.0, abs = 0.0;
};

Tolerance ToleranceOf(const KernelCase& c, DType result) {
  const OpKind kind = c.graph.op(c.id).kind;
  switch (kind) {
    case OpKind::kBroadcastInDim:
    case OpKind::kReshape:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kConcatenate:
    case OpKind::kPad:
    case OpKind::kReverse:
    case OpKind::kGather:
    case OpKind::kSelect:
    case OpKind::kConstant:
    case OpKind::kIota:
    case OpKind::kCompare:
    case OpKind::kReduceWindow:
      return {result == DType::kF64 ? 4.0 : 0.0, result == DType::kF64 ? 1e-12 : 0.0};
    case OpKind::kDotGeneral:
    case OpKind::kConvolution: {
      // f32 accumulation over K terms of magnitude <= 9 (operands within +-3).
      const double k = static_cast<double>(std::max<int64_t>(1, c.contracted));
      const bool on_blas =
          (kind == OpKind::kDotGeneral && result != DType::kF64 && IsFloating(result)) ||
          (kind == OpKind::kConvolution && std::string(LastConvolutionPath()) == "cudnn");
      return {1.0, on_blas ? 9.0 * k * std::ldexp(1.0, -22) : 1e-12 * k};
    }
    default:
      // Elementwise math in the device's double functions (within an ulp or two of double) and
      // sums in double in another order: at most one ulp of the dtype once rounded.
      return {result == DType::kF64 ? 4.0 : 1.0, result == DType::kF64 ? 1e-10 : 0.0};
  }
}

TEST_F(CudaKernels, EveryOpKindAndDTypeEqualsTheInterpreter) {
  for (const KernelCase& c : kernel_cases::AllCases(1)) {
    ASSERT_EQ(c.name.rfind("invalid", 0), std::string::npos) << c.name;
    arena_.Reset();
    const Op& op = c.graph.op(c.id);
    std::vector<DeviceTensor> in;
    for (const HostTensor& t : c.operands) in.push_back(Upload(t, t.dtype));
    const DeviceTensor out = Allocate(op.shape, op.dtype);
    const std::string error = Run(c, in, out, OpLaunch{});
    ASSERT_EQ(error, "");
    Result<HostTensor> want = EvaluateOp(c.graph, c.id, Pointers(c));
    ASSERT_TRUE(want.ok()) << c.name << ": " << want.status().message();
    const Tolerance tol = ToleranceOf(c, op.dtype);
    EXPECT_EQ(kernel_cases::Compare(c, Download(out, op.dtype), want.value(), tol.ulps, tol.abs),
              "");
  }
}

TEST_F(CudaKernels, ModelSizedShapesEqualTheInterpreter) {
  for (const KernelCase& c : kernel_cases::LargeCases(6)) {
    ASSERT_EQ(c.name.rfind("invalid", 0), std::string::npos) << c.name;
    arena_.Reset();
    const Op& op = c.graph.op(c.id);
    std::vector<DeviceTensor> in;
    for (const HostTensor& t : c.operands) in.push_back(Upload(t, t.dtype));
    const DeviceTensor out = Allocate(op.shape, op.dtype);
    ASSERT_EQ(Run(c, in, out, OpLaunch{}), "");
    Result<HostTensor> want = EvaluateOp(c.graph, c.id, Pointers(c));
    ASSERT_TRUE(want.ok()) << c.name << ": " << want.status().message();
    const Tolerance tol = ToleranceOf(c, op.dtype);
    EXPECT_EQ(kernel_cases::Compare(c, Download(out, op.dtype), want.value(), tol.ulps, tol.abs),
              "");
  }
}

TEST_F(CudaKernels, Tf32ContractionsWhenAllowed) {
  // TF32 keeps 10 mantissa bits of each product's operands: errors of about 2^-11 per term.
  ctx_.allow_tf32 = true;
  for (const KernelCase& c : kernel_cases::LargeCases(7)) {
    const Op& op = c.graph.op(c.id);
    if (op.kind != OpKind::kDotGeneral || op.dtype != DType::kF32) continue;
    arena_.Reset();
    std::vector<DeviceTensor> in;
    for (const HostTensor& t : c.operands) in.push_back(Upload(t, t.dtype));
    const DeviceTensor out = Allocate(op.shape, op.dtype);
    ASSERT_EQ(Run(c, in, out, OpLaunch{}), "");
    Result<HostTensor> want = EvaluateOp(c.graph, c.id, Pointers(c));
    ASSERT_TRUE(want.ok());
    const double tol = 9.0 * static_cast<double>(c.contracted) * std::ldexp(1.0, -10);
    EXPECT_EQ(kernel_cases::Compare(c, Download(out, op.dtype), want.value(), 1.0, tol), "");
  }
}

TEST_F(CudaKernels, ContractionsOnOperandsOffTheAllocationAlignment) {
  // Tensors that start one element into a buffer (a view): cuBLASLt must pick algorithms for
  // that alignment, or the kernel runs instead.
  for (const KernelCase& c : kernel_cases::AllCases(8)) {
    const Op& op = c.graph.op(c.id);
    if (op.kind != OpKind::kDotGeneral || !IsFloating(op.dtype)) continue;
    arena_.Reset();
    std::vector<DeviceTensor> in;
    for (const HostTensor& t : c.operands) {
      HostTensor shifted{{t.size() + 1}, t.dtype, t.data};
      shifted.data.insert(shifted.data.begin(), 0.0);
      DeviceTensor d = Upload(shifted, t.dtype);
      d.data = static_cast<char*>(d.data) + DTypeBytes(t.dtype);
      d.shape = t.shape;
      in.push_back(d);
    }
    const DeviceTensor out = Allocate(op.shape, op.dtype);
    ASSERT_EQ(Run(c, in, out, OpLaunch{}), "");
    Result<HostTensor> want = EvaluateOp(c.graph, c.id, Pointers(c));
    ASSERT_TRUE(want.ok());
    const Tolerance tol = ToleranceOf(c, op.dtype);
    EXPECT_EQ(kernel_cases::Compare(c, Download(out, op.dtype), want.value(), tol.ulps, tol.abs),
              "");
  }
}

TEST_F(CudaKernels, ConvolutionsRunOnCudnnWhereItsGeometryAllows) {
  // f32 / f16 / bf16 convolutions that map onto a cuDNN operation (forward, or backward data for
  // an input dilation) run there (an H100 with cuDNN 9 has engines for all of these); the others,
  // f64 and integers, and every convolution without cuDNN in the context run the direct kernel.
  // All equal the interpreter.
  std::vector<KernelCase> cases = kernel_cases::AllCases(9);
  for (KernelCase& c : kernel_cases::LargeCases(9)) cases.push_back(std::move(c));
  int64_t on_dnn = 0;
  for (const KernelCase& c : cases) {
    const Op& op = c.graph.op(c.id);
    if (op.kind != OpKind::kConvolution) continue;
    for (bool with_dnn : {true, false}) {
      ctx_.dnn = with_dnn ? dnn_.get() : nullptr;
      arena_.Reset();
      std::vector<DeviceTensor> in;
      for (const HostTensor& t : c.operands) in.push_back(Upload(t, t.dtype));
      const DeviceTensor out = Allocate(op.shape, op.dtype);
      ASSERT_EQ(Run(c, in, out, OpLaunch{}), "");
      const bool expect_dnn =
          with_dnn &&
          (op.dtype == DType::kF32 || op.dtype == DType::kF16 || op.dtype == DType::kBF16) &&
          DnnConvGeometryFor(c.graph, c.id).ok();
      EXPECT_EQ(std::string(LastConvolutionPath()), expect_dnn ? "cudnn" : "kernel") << c.name;
      on_dnn += expect_dnn ? 1 : 0;
      Result<HostTensor> want = EvaluateOp(c.graph, c.id, Pointers(c));
      ASSERT_TRUE(want.ok());
      const Tolerance tol = ToleranceOf(c, op.dtype);
      EXPECT_EQ(kernel_cases::Compare(c, Download(out, op.dtype), want.value(), tol.ulps, tol.abs),
                "")
          << (with_dnn ? "with cuDNN" : "direct kernel");
    }
  }
  ctx_.dnn = dnn_.get();
  EXPECT_GE(on_dnn, 12);
}

TEST_F(CudaKernels, UnroundedResultsAndF32StoredOperands) {
  // 16-bit float ops whose operands are held in f32 (exact copies) and whose result is kept in
  // f32 unrounded: the interpreter's kKeepExact result, rounded to f32.
  for (const KernelCase& c : kernel_cases::AllCases(2)) {
    const Op& op = c.graph.op(c.id);
    if (op.dtype != DType::kBF16 && op.dtype != DType::kF16) continue;
    arena_.Reset();
    std::vector<DeviceTensor> in;
    for (size_t k = 0; k < c.operands.size(); ++k) {
      const HostTensor& t = c.operands[k];
      // The first operand of each case in f32, the others in their dtype: mixed storage.
      const bool wide = k == 0 && (t.dtype == DType::kBF16 || t.dtype == DType::kF16);
      in.push_back(Upload(t, wide ? DType::kF32 : t.dtype));
    }
    const DeviceTensor out = Allocate(op.shape, DType::kF32);
    OpLaunch launch;
    launch.round = false;
    ASSERT_EQ(Run(c, in, out, launch), "");
    HostTensor want =
        EvaluateValidatedOp(c.graph, c.id, Pointers(c), alpa::ResultRounding::kKeepExact);
    for (double& v : want.data) v = RoundToDType(v, DType::kF32);
    want.dtype = DType::kF32;
    const Tolerance tol = ToleranceOf(c, DType::kF32);
    EXPECT_EQ(kernel_cases::Compare(c, Download(out, DType::kF32), want, tol.ulps, tol.abs), "");
  }
}

TEST_F(CudaKernels, MaskedIndexingOfASplitAxis) {
  for (const KernelCase& c : kernel_cases::AllCases(3)) {
    const Op& op = c.graph.op(c.id);
    if (op.kind != OpKind::kGather && op.kind != OpKind::kScatterAdd) continue;
    arena_.Reset();
    const int64_t rows = c.operands[0].shape[static_cast<size_t>(op.attrs.axis)];
    OpLaunch launch;
    launch.axis_offset = 2;  // this device: rows [2, 2 + rows) of rows + 3
    launch.axis_size = rows + 3;
    std::vector<DeviceTensor> in;
    for (const HostTensor& t : c.operands) in.push_back(Upload(t, t.dtype));
    const DeviceTensor out = Allocate(op.shape, op.dtype);
    ASSERT_EQ(Run(c, in, out, launch), "");
    HostTensor want{op.shape, op.dtype,
                    std::vector<double>(static_cast<size_t>(ElementsOf(op.shape)))};
    if (op.kind == OpKind::kGather) {
      MaskedGather(op, c.operands[0], c.operands[1], 2, rows + 3, want);
    } else {
      MaskedScatterAdd(op, c.operands[0], c.operands[1], c.operands[2], 2, rows + 3, want);
      for (double& v : want.data) v = RoundToDType(v, op.dtype);
    }
    EXPECT_EQ(kernel_cases::Compare(c, Download(out, op.dtype), want, 1.0, 0.0), "") << "masked";
  }
}

TEST_F(CudaKernels, BoxCopyAccumulateScaleConvert) {
  arena_.Reset();
  std::mt19937_64 rng(5);
  const HostTensor a{{5, 7}, DType::kF32, kernel_cases::RandomValues(DType::kF32, 35, rng, false)};
  const HostTensor b{
      {5, 7}, DType::kBF16, kernel_cases::RandomValues(DType::kBF16, 35, rng, false)};
  const DeviceTensor da = Upload(a, DType::kF32), db = Upload(b, DType::kBF16);
  // Copy box [2, 3] at (1, 2) of a into (3, 0) of a bf16 tensor: converted (rounded) to bf16.
  const DeviceTensor dst = Upload(b, DType::kBF16);
  ASSERT_TRUE(LaunchCopyBox(ctx_, da, {1, 2}, dst, {3, 0}, {2, 3}).ok());
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  HostTensor want = b;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      want.data[static_cast<size_t>((3 + i) * 7 + j)] =
          RoundToDType(a.data[static_cast<size_t>((1 + i) * 7 + 2 + j)], DType::kBF16);
    }
  }
  EXPECT_EQ(Download(dst, DType::kBF16).data, want.data);
  EXPECT_EQ(LaunchCopyBox(ctx_, da, {4, 2}, dst, {3, 0}, {2, 3}).code(),
            StatusCode::kInvalidArgument);
  // dst (f32) += b, rounded to bf16; then scaled by 0.5 without rounding; then converted.
  const DeviceTensor acc = Upload(a, DType::kF32);
  ASSERT_TRUE(LaunchAccumulate(ctx_, db, acc, DType::kBF16, true).ok());
  ASSERT_TRUE(LaunchScale(ctx_, acc, acc, 0.5, DType::kBF16, false).ok());
  const DeviceTensor half = Allocate({5, 7}, DType::kF16);
  ASSERT_TRUE(LaunchConvert(ctx_, acc, half, DType::kF16, true).ok());
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  std::vector<double> expected;
  for (size_t i = 0; i < 35; ++i) {
    const double sum = RoundToDType(a.data[i] + b.data[i], DType::kBF16);
    expected.push_back(RoundToDType(RoundToDType(sum * 0.5, DType::kF32), DType::kF16));
  }
  EXPECT_EQ(Download(half, DType::kF16).data, expected);
}

TEST(CudaKernelsArguments, CudnnWithoutAGpuIsUnsupportedWithCudnnsReason) {
  std::string why;
  if (CudaDeviceCount(&why) > 0) GTEST_SKIP() << "a GPU is present: cuDNN is tested above";
  Result<std::unique_ptr<DnnConvolutions>> dnn = DnnConvolutions::Create();
  ASSERT_FALSE(dnn.ok());
  EXPECT_EQ(dnn.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(dnn.status().message().find("creating a cuDNN handle: cuDNN CUDNN_STATUS_"),
            std::string::npos)
      << dnn.status().message();
}

TEST(CudaKernelsArguments, BadLaunchesAreRejectedBeforeAnyKernel) {
  // No GPU needed: the checks come before any CUDA call.
  GraphBuilder b;
  const int32_t x = b.Parameter({4, 3}, DType::kBF16, TensorRole::kInput, "x");
  const int32_t y = b.Unary(OpKind::kExp, x);
  ASSERT_TRUE(b.ok());
  const Graph& g = b.graph();
  LaunchContext ctx;
  DeviceTensor in{reinterpret_cast<void*>(256), {4, 3}, DType::kBF16};
  DeviceTensor out{reinterpret_cast<void*>(512), {4, 3}, DType::kBF16};
  Status s = LaunchOp(ctx, g, y, {}, out, OpLaunch{});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("takes 1 operand(s), got 0"), std::string::npos) << s.message();
  DeviceTensor wrong_shape = in;
  wrong_shape.shape = {3, 4};
  s = LaunchOp(ctx, g, y, {wrong_shape}, out, OpLaunch{});
  EXPECT_NE(s.message().find("operand 0 of op 1"), std::string::npos) << s.message();
  DeviceTensor wrong_storage = in;
  wrong_storage.storage = DType::kS32;
  s = LaunchOp(ctx, g, y, {wrong_storage}, out, OpLaunch{});
  EXPECT_NE(s.message().find("stored as s32"), std::string::npos) << s.message();
  s = LaunchOp(ctx, g, x, {}, out, OpLaunch{});
  EXPECT_NE(s.message().find("parameter"), std::string::npos) << s.message();
  s = LaunchOp(ctx, g, 7, {in}, out, OpLaunch{});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cuda
}  // namespace alpa
