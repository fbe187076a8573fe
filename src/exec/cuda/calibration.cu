// `alpa calibrate`'s measurements on a GPU (calibration.h).
#include "exec/cuda/calibration.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "exec/cuda/attention_calibration.h"
#include "exec/cuda/attention_plan.h"
#include "exec/cuda/convolution_calibration.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/dnn_convolution.h"
#include "exec/cuda/fused_calibration.h"
#include "exec/cuda/fused_kernels.h"
#include "exec/cuda/kernels.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int kThreads = 256;
// Enough blocks of kThreads to fill every SM several times over; grid-stride loops do the rest.
constexpr int kMaxBlocks = 132 * 16;
constexpr size_t kGemmWorkspaceBytes = 64 * kMiB;

// ---- Errors ------------------------------------------------------------------------------------

Status CudaCheck(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return Status::Ok();
  (void)cudaGetLastError();  // clear a non-sticky error so that later calls report their own
  return InternalError(what + ": " + cudaGetErrorString(e));
}

Status LtCheck(cublasStatus_t s, const std::string& what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return InternalError(what + ": " + cublasLtGetStatusString(s));
}

// ---- Owners of CUDA objects ----------------------------------------------------------------

struct DeviceMemory {
  void* ptr = nullptr;
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory() {
    if (ptr != nullptr) (void)cudaFree(ptr);
  }
  Status Allocate(int64_t bytes, const std::string& what) {
    return CudaCheck(cudaMalloc(&ptr, static_cast<size_t>(bytes)),
                     "allocating " + std::to_string(bytes / kMiB) + " MiB for " + what);
  }
  template <typename T>
  T* As() const {
    return static_cast<T*>(ptr);
  }
};

struct Stream {
  cudaStream_t stream = nullptr;
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (stream != nullptr) (void)cudaStreamDestroy(stream);
  }
};

struct Events {
  std::vector<cudaEvent_t> events;
  Events() = default;
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  ~Events() {
    for (cudaEvent_t e : events) (void)cudaEventDestroy(e);
  }
  Status Create(size_t count) {
    while (events.size() < count) {
      cudaEvent_t e = nullptr;
      ALPA_RETURN_IF_ERROR(CudaCheck(cudaEventCreate(&e), "cudaEventCreate"));
      events.push_back(e);
    }
    return Status::Ok();
  }
};

struct LtHandle {
  cublasLtHandle_t handle = nullptr;
  LtHandle() = default;
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  ~LtHandle() {
    if (handle != nullptr) (void)cublasLtDestroy(handle);
  }
};

struct MatmulDesc {
  cublasLtMatmulDesc_t desc = nullptr;
  MatmulDesc() = default;
  MatmulDesc(const MatmulDesc&) = delete;
  MatmulDesc& operator=(const MatmulDesc&) = delete;
  ~MatmulDesc() {
    if (desc != nullptr) (void)cublasLtMatmulDescDestroy(desc);
  }
};

struct MatrixLayout {
  cublasLtMatrixLayout_t layout = nullptr;
  MatrixLayout() = default;
  MatrixLayout(const MatrixLayout&) = delete;
  MatrixLayout& operator=(const MatrixLayout&) = delete;
  ~MatrixLayout() {
    if (layout != nullptr) (void)cublasLtMatrixLayoutDestroy(layout);
  }
};

struct Preference {
  cublasLtMatmulPreference_t pref = nullptr;
  Preference() = default;
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
  ~Preference() {
    if (pref != nullptr) (void)cublasLtMatmulPreferenceDestroy(pref);
  }
};

// ---- Kernels -----------------------------------------------------------------------------------

__device__ inline float HashToUnit(uint64_t i, uint32_t seed) {
  // SplitMix-style mixing: data that is neither zero nor constant (tensor cores draw less power
  // on zeros, which would flatter the GEMM rates).
  uint64_t z = i + 0x9E3779B97F4A7C15ull * (seed + 1u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;  // [-1, 1)
}

__device__ inline void Store(float* p, float v) { *p = v; }
__device__ inline void Store(__half* p, float v) { *p = __float2half(v); }
__device__ inline void Store(__nv_bfloat16* p, float v) { *p = __float2bfloat16(v); }

template <typename T>
__global__ void FillKernel(T* x, int64_t n, uint32_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    Store(x + i, HashToUnit(static_cast<uint64_t>(i), seed));
  }
}

// Read + write streaming: 16-byte loads and stores, the widest a thread issues.
__global__ void StreamCopyKernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    y[i] = x[i];
  }
}

// z = x + y on bf16 pairs, the math in f32 (as the backend's elementwise kernels do).
__global__ void AddKernel(const __nv_bfloat162* __restrict__ x,
                          const __nv_bfloat162* __restrict__ y, __nv_bfloat162* __restrict__ z,
                          int64_t pairs) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < pairs;
       i += stride) {
    const float2 a = __bfloat1622float2(x[i]);
    const float2 b = __bfloat1622float2(y[i]);
    z[i] = __floats2bfloat162_rn(a.x + b.x, a.y + b.y);
  }
}

__device__ inline float Gelu(float v) {
  // The tanh approximation (GPT-2's).
  const float inner = 0.7978845608f * (v + 0.044715f * v * v * v);
  return 0.5f * v * (1.0f + tanhf(inner));
}

__global__ void GeluKernel(const __nv_bfloat162* __restrict__ x, __nv_bfloat162* __restrict__ y,
                           int64_t pairs) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < pairs;
       i += stride) {
    const float2 a = __bfloat1622float2(x[i]);
    y[i] = __floats2bfloat162_rn(Gelu(a.x), Gelu(a.y));
  }
}

// The vector units' arithmetic rate: kChains independent f32 FMA chains per element, long
// enough that the loads and stores are negligible. Each iteration is kChains FMAs = 2 * kChains
// FLOPs.
constexpr int kChains = 8;

__global__ void FmaChainKernel(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y,
                               int64_t n, int iterations) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float v = __bfloat162float(x[i]);
    float acc[kChains];
#pragma unroll
    for (int c = 0; c < kChains; ++c) acc[c] = v + static_cast<float>(c);
#pragma unroll 4
    for (int k = 0; k < iterations; ++k) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) acc[c] = fmaf(acc[c], 0.9999f, 0.0001f);
    }
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < kChains; ++c) sum += acc[c];
    y[i] = __float2bfloat16(sum);
  }
}

__global__ void EmptyKernel() {}

int Blocks(int64_t n) {
  const int64_t needed = (n + kThreads - 1) / kThreads;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(needed, kMaxBlocks)));
}

template <typename T>
Status Fill(T* x, int64_t n, uint32_t seed, cudaStream_t stream) {
  FillKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, n, seed);
  return CudaCheck(cudaGetLastError(), "fill kernel");
}

// ---- Timing ------------------------------------------------------------------------------------

struct Repeats {
  int warmup = 3;
  int timed = 10;
};

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// The median seconds of one `enqueue` (which puts work on `stream`): the warm-up runs, then
// every timed run between its own pair of events, all enqueued before one synchronisation.
Result<double> MedianSeconds(cudaStream_t stream, const Repeats& repeats, const std::string& what,
                             const std::function<Status()>& enqueue) {
  for (int i = 0; i < repeats.warmup; ++i) ALPA_RETURN_IF_ERROR(enqueue());
  Events events;
  ALPA_RETURN_IF_ERROR(events.Create(2 * static_cast<size_t>(repeats.timed)));
  for (int i = 0; i < repeats.timed; ++i) {
    ALPA_RETURN_IF_ERROR(CudaCheck(cudaEventRecord(events.events[2 * i], stream), what));
    ALPA_RETURN_IF_ERROR(enqueue());
    ALPA_RETURN_IF_ERROR(CudaCheck(cudaEventRecord(events.events[2 * i + 1], stream), what));
  }
  ALPA_RETURN_IF_ERROR(CudaCheck(cudaStreamSynchronize(stream), what));
  std::vector<double> seconds;
  for (int i = 0; i < repeats.timed; ++i) {
    float ms = 0;
    ALPA_RETURN_IF_ERROR(
        CudaCheck(cudaEventElapsedTime(&ms, events.events[2 * i], events.events[2 * i + 1]), what));
    seconds.push_back(static_cast<double>(ms) * 1e-3);
  }
  return Median(std::move(seconds));
}

// ---- GEMMs -------------------------------------------------------------------------------------

struct GemmShape {
  const char* label;
  int64_t batch, m, n, k;  // C[batch, m, n] = A[batch, m, k] B[batch, k, n]
  bool fit;                // part of the matmul efficiency (when its dtype is the fit's)
};

struct GemmType {
  const char* label;
  DType dtype;
  cudaDataType_t data;
  cublasComputeType_t compute;
  bool tf32;
};

std::string ShapeName(const GemmShape& s) {
  std::string name = std::string(s.label) + " ";
  if (s.batch > 1) name += std::to_string(s.batch) + "x";
  return name + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

Status SetLayout(MatrixLayout* layout, cudaDataType_t type, int64_t rows, int64_t cols,
                 int64_t batch, const std::string& what) {
  ALPA_RETURN_IF_ERROR(
      LtCheck(cublasLtMatrixLayoutCreate(&layout->layout, type, static_cast<uint64_t>(rows),
                                         static_cast<uint64_t>(cols), rows),
              what + ": cublasLtMatrixLayoutCreate"));
  if (batch <= 1) return Status::Ok();
  const int32_t count = static_cast<int32_t>(batch);
  const int64_t stride = rows * cols;
  ALPA_RETURN_IF_ERROR(
      LtCheck(cublasLtMatrixLayoutSetAttribute(layout->layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                               &count, sizeof count),
              what + ": batch count"));
  return LtCheck(
      cublasLtMatrixLayoutSetAttribute(layout->layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                       &stride, sizeof stride),
      what + ": batch stride");
}

struct GemmContext {
  cublasLtHandle_t lt = nullptr;
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  Repeats repeats;
};

// The median seconds of one GEMM of `shape` in `type`. Column-major, as cuBLASLt counts: A is
// stored k x m and transposed (the "TN" layout, the tensor cores' native one), B k x n, C m x n.
Result<double> TimeGemm(const GemmContext& ctx, const GemmShape& shape, const GemmType& type) {
  const std::string what = std::string("gemm ") + type.label + " " + ShapeName(shape);
  const int64_t elem = DTypeBytes(type.dtype);
  DeviceMemory a, b, c;
  ALPA_RETURN_IF_ERROR(a.Allocate(shape.batch * shape.m * shape.k * elem, what));
  ALPA_RETURN_IF_ERROR(b.Allocate(shape.batch * shape.k * shape.n * elem, what));
  ALPA_RETURN_IF_ERROR(c.Allocate(shape.batch * shape.m * shape.n * elem, what));
  const int64_t a_count = shape.batch * shape.m * shape.k;
  const int64_t b_count = shape.batch * shape.k * shape.n;
  if (type.dtype == DType::kBF16) {
    ALPA_RETURN_IF_ERROR(Fill(a.As<__nv_bfloat16>(), a_count, 1, ctx.stream));
    ALPA_RETURN_IF_ERROR(Fill(b.As<__nv_bfloat16>(), b_count, 2, ctx.stream));
  } else if (type.dtype == DType::kF16) {
    ALPA_RETURN_IF_ERROR(Fill(a.As<__half>(), a_count, 1, ctx.stream));
    ALPA_RETURN_IF_ERROR(Fill(b.As<__half>(), b_count, 2, ctx.stream));
  } else {
    ALPA_RETURN_IF_ERROR(Fill(a.As<float>(), a_count, 1, ctx.stream));
    ALPA_RETURN_IF_ERROR(Fill(b.As<float>(), b_count, 2, ctx.stream));
  }

  MatmulDesc op;
  ALPA_RETURN_IF_ERROR(LtCheck(cublasLtMatmulDescCreate(&op.desc, type.compute, CUDA_R_32F),
                               what + ": cublasLtMatmulDescCreate"));
  const cublasOperation_t transpose = CUBLAS_OP_T;
  ALPA_RETURN_IF_ERROR(LtCheck(cublasLtMatmulDescSetAttribute(op.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                              &transpose, sizeof transpose),
                               what + ": transa"));
  MatrixLayout a_layout, b_layout, c_layout;
  ALPA_RETURN_IF_ERROR(SetLayout(&a_layout, type.data, shape.k, shape.m, shape.batch, what));
  ALPA_RETURN_IF_ERROR(SetLayout(&b_layout, type.data, shape.k, shape.n, shape.batch, what));
  ALPA_RETURN_IF_ERROR(SetLayout(&c_layout, type.data, shape.m, shape.n, shape.batch, what));

  Preference pref;
  ALPA_RETURN_IF_ERROR(LtCheck(cublasLtMatmulPreferenceCreate(&pref.pref),
                               what + ": cublasLtMatmulPreferenceCreate"));
  const uint64_t workspace_bytes = kGemmWorkspaceBytes;
  ALPA_RETURN_IF_ERROR(LtCheck(
      cublasLtMatmulPreferenceSetAttribute(pref.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &workspace_bytes, sizeof workspace_bytes),
      what + ": workspace preference"));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  ALPA_RETURN_IF_ERROR(
      LtCheck(cublasLtMatmulAlgoGetHeuristic(ctx.lt, op.desc, a_layout.layout, b_layout.layout,
                                             c_layout.layout, c_layout.layout, pref.pref, 1,
                                             &heuristic, &found),
              what + ": cublasLtMatmulAlgoGetHeuristic"));
  if (found == 0) return InternalError(what + ": cuBLASLt has no algorithm for it");

  const float alpha = 1.0f, beta = 0.0f;
  return MedianSeconds(ctx.stream, ctx.repeats, what, [&]() {
    return LtCheck(
        cublasLtMatmul(ctx.lt, op.desc, &alpha, a.ptr, a_layout.layout, b.ptr, b_layout.layout,
                       &beta, c.ptr, c_layout.layout, c.ptr, c_layout.layout, &heuristic.algo,
                       ctx.workspace, kGemmWorkspaceBytes, ctx.stream),
        what);
  });
}

// GPT-like shapes for hidden h = 4096 (32 heads of 128), 8 sequences of 2048 tokens (T = 16384):
// the block's projections forward, a weight gradient (contracting the tokens) and the attention
// batched over sequences x heads; squares for reference.
std::vector<GemmShape> GemmShapes(bool quick) {
  constexpr int64_t h = 4096, t = 16384, s = 2048, heads_x_batch = 256, d = 128;
  std::vector<GemmShape> shapes;
  if (!quick) {
    shapes.push_back({"square", 1, 1024, 1024, 1024, false});
    shapes.push_back({"square", 1, 2048, 2048, 2048, false});
  }
  shapes.push_back({"square", 1, 4096, 4096, 4096, true});
  shapes.push_back({"square", 1, 8192, 8192, 8192, true});
  shapes.push_back({"gpt qkv", 1, t, 3 * h, h, true});
  if (!quick) shapes.push_back({"gpt attention out", 1, t, h, h, true});
  shapes.push_back({"gpt mlp up", 1, t, 4 * h, h, true});
  if (!quick) shapes.push_back({"gpt mlp down", 1, t, h, 4 * h, true});
  shapes.push_back({"gpt weight grad", 1, h, 4 * h, t, true});
  shapes.push_back({"gpt scores", heads_x_batch, s, s, d, true});
  if (!quick) shapes.push_back({"gpt context", heads_x_batch, s, d, s, true});
  return shapes;
}

Status MeasureGemms(const GemmContext& ctx, const GpuMeasureOptions& options,
                    std::vector<Measurement>* out) {
  const GemmType bf16{"bf16", DType::kBF16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, false};
  const GemmType f16{"f16", DType::kF16, CUDA_R_16F, CUBLAS_COMPUTE_32F, false};
  const GemmType f32{"f32", DType::kF32, CUDA_R_32F, CUBLAS_COMPUTE_32F, false};
  const GemmType tf32{"tf32", DType::kF32, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, true};
  auto add = [&](const GemmShape& shape, const GemmType& type) -> Status {
    Result<double> seconds = TimeGemm(ctx, shape, type);
    if (!seconds.ok()) return seconds.status();
    Measurement m;
    m.kind = MeasurementKind::kGemm;
    m.name = std::string("gemm ") + type.label + " " + ShapeName(shape);
    m.dtype = type.dtype;
    m.tf32 = type.tf32;
    m.fit = shape.fit && type.dtype == options.fit_dtype && !type.tf32;
    m.work = 2.0 * static_cast<double>(shape.batch) * static_cast<double>(shape.m) *
             static_cast<double>(shape.n) * static_cast<double>(shape.k);
    m.seconds = seconds.value();
    out->push_back(std::move(m));
    return Status::Ok();
  };
  const GemmType& fit_type = options.fit_dtype == DType::kF16 ? f16 : bf16;
  for (const GemmShape& shape : GemmShapes(options.quick))
    ALPA_RETURN_IF_ERROR(add(shape, fit_type));
  // The other dtypes on one large square each (reported only).
  const int64_t side = options.quick ? 4096 : 8192;
  const GemmShape square{"square", 1, side, side, side, false};
  ALPA_RETURN_IF_ERROR(add(square, options.fit_dtype == DType::kF16 ? bf16 : f16));
  ALPA_RETURN_IF_ERROR(add(square, f32));
  return add(square, tf32);
}

// ---- Memory, elementwise, launches ---------------------------------------------------------

Measurement Make(MeasurementKind kind, std::string name, DType dtype, bool fit, double work,
                 double seconds) {
  Measurement m;
  m.kind = kind;
  m.name = std::move(name);
  m.dtype = dtype;
  m.fit = fit;
  m.work = work;
  m.seconds = seconds;
  return m;
}

Status MeasureMemory(cudaStream_t stream, const Repeats& repeats, const GpuMeasureOptions& options,
                     std::vector<Measurement>* out) {
  // Far above the 50 MB L2 of an H100: every byte comes from HBM.
  const int64_t bytes = (options.quick ? 512 : 1024) * kMiB;
  const std::string size = std::to_string(bytes / kMiB) + " MiB";
  DeviceMemory x, y, z;
  ALPA_RETURN_IF_ERROR(x.Allocate(bytes, "the memory measurements"));
  ALPA_RETURN_IF_ERROR(y.Allocate(bytes, "the memory measurements"));
  ALPA_RETURN_IF_ERROR(z.Allocate(bytes, "the memory measurements"));
  const int64_t halves = bytes / 2;
  ALPA_RETURN_IF_ERROR(Fill(x.As<__nv_bfloat16>(), halves, 3, stream));
  ALPA_RETURN_IF_ERROR(Fill(y.As<__nv_bfloat16>(), halves, 4, stream));

  const std::string memcpy_name = "hbm cudaMemcpy d2d " + size;
  Result<double> copy = MedianSeconds(stream, repeats, memcpy_name, [&]() {
    return CudaCheck(
        cudaMemcpyAsync(y.ptr, x.ptr, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream),
        memcpy_name);
  });
  if (!copy.ok()) return copy.status();
  out->push_back(
      Make(MeasurementKind::kMemory, memcpy_name, DType::kBF16, false, 2.0 * bytes, copy.value()));

  const int64_t vectors = bytes / static_cast<int64_t>(sizeof(float4));
  const std::string stream_name = "hbm stream kernel (read + write) " + size;
  Result<double> streamed = MedianSeconds(stream, repeats, stream_name, [&]() {
    StreamCopyKernel<<<Blocks(vectors), kThreads, 0, stream>>>(x.As<float4>(), z.As<float4>(),
                                                               vectors);
    return CudaCheck(cudaGetLastError(), stream_name);
  });
  if (!streamed.ok()) return streamed.status();
  out->push_back(Make(MeasurementKind::kMemory, stream_name, DType::kBF16, true, 2.0 * bytes,
                      streamed.value()));

  const int64_t pairs = halves / 2;
  const std::string add_name = "elementwise add bf16 (2 reads, 1 write) " + size;
  Result<double> added = MedianSeconds(stream, repeats, add_name, [&]() {
    AddKernel<<<Blocks(pairs), kThreads, 0, stream>>>(
        x.As<__nv_bfloat162>(), y.As<__nv_bfloat162>(), z.As<__nv_bfloat162>(), pairs);
    return CudaCheck(cudaGetLastError(), add_name);
  });
  if (!added.ok()) return added.status();
  out->push_back(
      Make(MeasurementKind::kMemory, add_name, DType::kBF16, true, 3.0 * bytes, added.value()));

  const std::string gelu_name = "elementwise gelu bf16 (1 read, 1 write) " + size;
  Result<double> gelu = MedianSeconds(stream, repeats, gelu_name, [&]() {
    GeluKernel<<<Blocks(pairs), kThreads, 0, stream>>>(x.As<__nv_bfloat162>(),
                                                       z.As<__nv_bfloat162>(), pairs);
    return CudaCheck(cudaGetLastError(), gelu_name);
  });
  if (!gelu.ok()) return gelu.status();
  out->push_back(
      Make(MeasurementKind::kMemory, gelu_name, DType::kBF16, true, 2.0 * bytes, gelu.value()));
  return Status::Ok();
}

// The runner's own generated kernels (fused_calibration.h) on attention-score-sized bf16 rows:
// the rate the planner's single-reader fusion model prices elementwise traffic at.
Status MeasureFusedKernels(cudaStream_t stream, const Repeats& repeats,
                           const GpuMeasureOptions& options, std::vector<Measurement>* out) {
  // Rows of 2,048 (a sequence's scores), 512 MiB per bf16 tensor (256 MiB quick).
  const int64_t row = 2048;
  const int64_t rows = (options.quick ? 256 : 512) * kMiB / 2 / row;
  Result<std::vector<cuda::FusedCalibrationCase>> cases = cuda::FusedCalibrationCases(rows, row);
  if (!cases.ok()) return cases.status();
  std::vector<cuda::FusedGroup> groups;
  for (const cuda::FusedCalibrationCase& c : cases.value()) groups.push_back(c.group);
  Result<std::unique_ptr<cuda::FusedKernels>> kernels =
      cuda::FusedKernels::Load(groups, "the calibration's fused kernels");
  if (!kernels.ok()) return kernels.status();
  for (size_t k = 0; k < cases.value().size(); ++k) {
    const cuda::FusedCalibrationCase& c = cases.value()[k];
    const cuda::FusedGroup& g = c.group;
    std::vector<std::unique_ptr<DeviceMemory>> inputs;
    std::vector<const void*> pointers;
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      const int64_t n = ElementCountOf(c.program.buffers[static_cast<size_t>(g.inputs[i])].shape);
      if (g.input_storage[i] != DType::kBF16) {
        return InternalError(c.name + ": input " + std::to_string(i) + " is not bf16");
      }
      inputs.push_back(std::make_unique<DeviceMemory>());
      ALPA_RETURN_IF_ERROR(inputs.back()->Allocate(n * 2, c.name));
      ALPA_RETURN_IF_ERROR(
          Fill(inputs.back()->As<__nv_bfloat16>(), n, static_cast<uint32_t>(7 + i), stream));
      pointers.push_back(inputs.back()->ptr);
    }
    const Buffer& result = c.program.buffers[static_cast<size_t>(g.out)];
    DeviceMemory output;
    ALPA_RETURN_IF_ERROR(
        output.Allocate(ElementCountOf(result.shape) * DTypeBytes(g.nodes.back().storage), c.name));
    Result<double> seconds = MedianSeconds(stream, repeats, c.name, [&]() {
      return kernels.value()->Launch(k, pointers, {output.ptr}, stream, c.name);
    });
    if (!seconds.ok()) return seconds.status();
    out->push_back(Make(MeasurementKind::kFusedMemory, c.name, DType::kBF16, true,
                        static_cast<double>(c.bytes), seconds.value()));
  }
  return Status::Ok();
}

// The runner's Scratch for the convolutions' launches: one device buffer, grown on demand (the
// stream is synchronised before it is replaced).
class GrowingScratch : public cuda::Scratch {
 public:
  explicit GrowingScratch(cudaStream_t stream) : stream_(stream) {}
  Result<void*> Reserve(size_t bytes) override {
    if (bytes > size_) {
      ALPA_RETURN_IF_ERROR(CudaCheck(cudaStreamSynchronize(stream_), "convolution scratch"));
      memory_ = std::make_unique<DeviceMemory>();
      ALPA_RETURN_IF_ERROR(
          memory_->Allocate(static_cast<int64_t>(bytes), "the convolutions' scratch"));
      size_ = bytes;
    }
    return memory_->ptr;
  }

 private:
  cudaStream_t stream_;
  std::unique_ptr<DeviceMemory> memory_;
  size_t size_ = 0;
};

// A wide ResNet block's convolutions in bf16 (convolution_calibration.h), launched as the runner
// launches them (LaunchOp with cuDNN): the rate the planner prices convolutions at. Without a
// usable cuDNN (no cuDNN 9, ALPA_CUDA_CUDNN=0) nothing is measured and the efficiency keeps its
// default; a case that ran the direct kernel is reported only.
Status MeasureConvolutions(cudaStream_t stream, const Repeats& repeats,
                           const GpuMeasureOptions& options, std::vector<Measurement>* out) {
  if (!cuda::DnnConvolutionsEnabled()) return Status::Ok();
  Result<std::unique_ptr<cuda::DnnConvolutions>> dnn = cuda::DnnConvolutions::Create();
  if (!dnn.ok()) return Status::Ok();
  Result<std::vector<cuda::ConvolutionCalibrationCase>> cases =
      cuda::ConvolutionCalibrationCases(options.quick ? 16 : 64);
  if (!cases.ok()) return cases.status();
  GrowingScratch scratch(stream);
  cuda::LaunchContext ctx;
  ctx.stream = stream;
  ctx.scratch = &scratch;
  ctx.dnn = dnn.value().get();
  for (const cuda::ConvolutionCalibrationCase& c : cases.value()) {
    const Op& op = c.graph.op(c.id);
    std::vector<std::unique_ptr<DeviceMemory>> memory;
    std::vector<cuda::DeviceTensor> operands;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const Dims& shape = c.graph.op(op.operands[i]).shape;
      memory.push_back(std::make_unique<DeviceMemory>());
      ALPA_RETURN_IF_ERROR(memory.back()->Allocate(ElementCountOf(shape) * 2, c.name));
      ALPA_RETURN_IF_ERROR(Fill(memory.back()->As<__nv_bfloat16>(), ElementCountOf(shape),
                                static_cast<uint32_t>(11 + i), stream));
      operands.push_back(cuda::DeviceTensor{memory.back()->ptr, shape, DType::kBF16});
    }
    DeviceMemory result;
    ALPA_RETURN_IF_ERROR(result.Allocate(ElementCountOf(op.shape) * 2, c.name));
    const cuda::DeviceTensor written{result.ptr, op.shape, DType::kBF16};
    std::string path;
    Result<double> seconds = MedianSeconds(stream, repeats, c.name, [&]() {
      const Status s = cuda::LaunchOp(ctx, c.graph, c.id, operands, written, cuda::OpLaunch{});
      path = cuda::LastConvolutionPath();
      return s;
    });
    if (!seconds.ok()) return seconds.status();
    const bool on_dnn = path == "cudnn";
    out->push_back(Make(MeasurementKind::kConvolution,
                        c.name + (on_dnn ? "" : " (direct kernel: reported only)"), DType::kBF16,
                        on_dnn, c.flops, seconds.value()));
  }
  return Status::Ok();
}

// The runner's fused attention kernels (attention_calibration.h), where the runner uses them
// (ALPA_CUDA_FLASH_ATTENTION=1): the forward and the backward alone (reported only), and the two
// together, whose rate over the planner's flops for the core's products is the `attention`
// efficiency (the backward's share of the flops weighs in as it does in a step).
Status MeasureAttention(cudaStream_t stream, const Repeats& repeats,
                        const GpuMeasureOptions& options, std::vector<Measurement>* out) {
  if (!cuda::AttentionFusionEnabled()) return Status::Ok();
  Result<cuda::AttentionCalibrationCase> made =
      cuda::AttentionCalibrationCaseFor(options.quick ? 2 : 4);
  if (!made.ok()) return made.status();
  const cuda::AttentionCalibrationCase& c = made.value();
  const cuda::AttentionShape& s = c.shape;
  const int64_t elements = s.batch * s.heads * s.q_seq * s.head_dim;
  DeviceMemory q, k, v, o, d_o, dq, dk, dv, lse, scratch;
  for (DeviceMemory* m : {&q, &k, &v, &o, &d_o, &dq, &dk, &dv})
    ALPA_RETURN_IF_ERROR(m->Allocate(elements * 2, c.name));
  ALPA_RETURN_IF_ERROR(lse.Allocate(cuda::AttentionLseBytes(s), c.name));
  ALPA_RETURN_IF_ERROR(scratch.Allocate(cuda::AttentionBackwardScratchBytes(s), c.name));
  uint32_t seed = 21;
  for (DeviceMemory* m : {&q, &k, &v, &d_o})
    ALPA_RETURN_IF_ERROR(Fill(m->As<__nv_bfloat16>(), elements, seed++, stream));
  auto view = [&](const DeviceMemory& m) {  // dense [batch, heads, seq, head_dim]
    cuda::AttentionView x;
    x.data = m.ptr;
    x.stride[0] = s.heads * s.q_seq * s.head_dim;
    x.stride[1] = s.q_seq * s.head_dim;
    x.stride[2] = s.head_dim;
    x.stride[3] = 1;
    return x;
  };
  cuda::AttentionForwardArgs f;
  f.shape = s;
  f.q = view(q);
  f.k = view(k);
  f.v = view(v);
  f.o = view(o);
  f.lse = lse.As<float>();
  const std::string forward_name = c.name + " forward";
  Result<double> forward = MedianSeconds(stream, repeats, forward_name,
                                         [&]() { return cuda::LaunchAttentionForward(f, stream); });
  if (!forward.ok()) return forward.status();
  cuda::AttentionBackwardArgs b;
  b.shape = s;
  b.q = f.q;
  b.k = f.k;
  b.v = f.v;
  b.o = f.o;
  b.d_o = view(d_o);
  b.lse = lse.As<float>();
  b.dq = view(dq);
  b.dk = view(dk);
  b.dv = view(dv);
  b.scratch = scratch.ptr;
  const std::string backward_name = c.name + " backward";
  Result<double> backward = MedianSeconds(
      stream, repeats, backward_name, [&]() { return cuda::LaunchAttentionBackward(b, stream); });
  if (!backward.ok()) return backward.status();
  out->push_back(Make(MeasurementKind::kAttention, forward_name, DType::kBF16, false,
                      c.forward_flops, forward.value()));
  out->push_back(Make(MeasurementKind::kAttention, backward_name, DType::kBF16, false,
                      c.backward_flops, backward.value()));
  out->push_back(Make(MeasurementKind::kAttention, c.name + " forward + backward", DType::kBF16,
                      true, c.forward_flops + c.backward_flops,
                      forward.value() + backward.value()));
  return Status::Ok();
}

Status MeasureElementwiseCompute(cudaStream_t stream, const Repeats& repeats,
                                 const GpuMeasureOptions& options, std::vector<Measurement>* out) {
  const int64_t n = int64_t{1} << 24;
  const int iterations = options.quick ? 128 : 256;
  const std::string name = "elementwise f32 fma chains on bf16 data, " + std::to_string(n) +
                           " elements x " + std::to_string(iterations * kChains) + " fma";
  DeviceMemory x, y;
  ALPA_RETURN_IF_ERROR(x.Allocate(n * 2, name));
  ALPA_RETURN_IF_ERROR(y.Allocate(n * 2, name));
  ALPA_RETURN_IF_ERROR(Fill(x.As<__nv_bfloat16>(), n, 5, stream));
  Result<double> seconds = MedianSeconds(stream, repeats, name, [&]() {
    FmaChainKernel<<<Blocks(n), kThreads, 0, stream>>>(x.As<__nv_bfloat16>(), y.As<__nv_bfloat16>(),
                                                       n, iterations);
    return CudaCheck(cudaGetLastError(), name);
  });
  if (!seconds.ok()) return seconds.status();
  // Priced against the fit dtype's peak: the planner prices a bf16 elementwise op with
  // peak_flops[bf16] x elementwise_efficiency.
  const double flops = 2.0 * kChains * static_cast<double>(iterations) * static_cast<double>(n);
  out->push_back(Make(MeasurementKind::kElementwiseCompute, name, options.fit_dtype, true, flops,
                      seconds.value()));
  return Status::Ok();
}

Status MeasureLaunches(cudaStream_t stream, const Repeats& repeats, std::vector<Measurement>* out) {
  constexpr int kLaunches = 1000;
  const std::string name = "launch: empty kernel x " + std::to_string(kLaunches);
  Result<double> seconds = MedianSeconds(stream, repeats, name, [&]() {
    for (int i = 0; i < kLaunches; ++i) EmptyKernel<<<1, 32, 0, stream>>>();
    return CudaCheck(cudaGetLastError(), name);
  });
  if (!seconds.ok()) return seconds.status();
  out->push_back(
      Make(MeasurementKind::kLaunch, name, DType::kF32, true, kLaunches, seconds.value()));
  return Status::Ok();
}

std::string Libraries() {
  int runtime = 0, driver = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaDriverGetVersion(&driver);
  return "CUDA runtime " + std::to_string(runtime) + ", driver " + std::to_string(driver) +
         ", cuBLASLt " + std::to_string(cublasLtGetVersion());
}

}  // namespace

Result<CalibrationMeasurements> MeasureGpu(const GpuMeasureOptions& options) {
  if (options.fit_dtype != DType::kBF16 && options.fit_dtype != DType::kF16) {
    return InvalidArgument(std::string("calibration dtype must be bf16 or f16 (got ") +
                           DTypeName(options.fit_dtype) + ")");
  }
  std::string why;
  const int32_t gpus = CudaDeviceCount(&why);
  if (gpus == 0) return Status(StatusCode::kUnsupported, why);
  ALPA_RETURN_IF_ERROR(CudaCheck(cudaSetDevice(0), "cudaSetDevice(0)"));
  cudaDeviceProp prop{};
  ALPA_RETURN_IF_ERROR(CudaCheck(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties"));

  CalibrationMeasurements result;
  result.device_name = prop.name;
  result.gpus = gpus;
  result.libraries = Libraries();

  Stream stream;
  ALPA_RETURN_IF_ERROR(CudaCheck(cudaStreamCreateWithFlags(&stream.stream, cudaStreamNonBlocking),
                                 "cudaStreamCreate"));
  Repeats repeats;
  if (options.quick) repeats = {2, 5};
  LtHandle lt;
  ALPA_RETURN_IF_ERROR(LtCheck(cublasLtCreate(&lt.handle), "cublasLtCreate"));
  DeviceMemory workspace;
  ALPA_RETURN_IF_ERROR(workspace.Allocate(kGemmWorkspaceBytes, "the cuBLASLt workspace"));

  // Launches first, on an idle GPU; then the streaming kernels; the GEMMs last (they heat the
  // GPU, which lowers its clocks for what follows).
  ALPA_RETURN_IF_ERROR(MeasureLaunches(stream.stream, repeats, &result.measurements));
  ALPA_RETURN_IF_ERROR(MeasureMemory(stream.stream, repeats, options, &result.measurements));
  if (cuda::FusionEnabled()) {
    ALPA_RETURN_IF_ERROR(
        MeasureFusedKernels(stream.stream, repeats, options, &result.measurements));
    // The runner's elementwise traffic runs in its own kernels: the hand-written streaming
    // kernels are reported only.
    for (Measurement& m : result.measurements) {
      if (m.kind == MeasurementKind::kMemory) m.fit = false;
    }
  }
  ALPA_RETURN_IF_ERROR(
      MeasureElementwiseCompute(stream.stream, repeats, options, &result.measurements));
  const GemmContext ctx{lt.handle, stream.stream, workspace.ptr, repeats};
  ALPA_RETURN_IF_ERROR(MeasureGemms(ctx, options, &result.measurements));
  ALPA_RETURN_IF_ERROR(MeasureConvolutions(stream.stream, repeats, options, &result.measurements));
  // Last, and not fatal: the attention kernels are the newest code measured here; without them
  // the attention products keep the matmuls' efficiency (a note says why).
  const Status attention = MeasureAttention(stream.stream, repeats, options, &result.measurements);
  if (!attention.ok()) {
    result.notes.push_back("attention: not measured (" + attention.message() +
                           "); the attention products are priced as matmuls");
  }
  return result;
}

}  // namespace alpa
