#include "exec/cuda/cuda_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "exec/cuda/buffer_handover.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/storage_codec.h"
#include "exec/cuda/storage_policy.h"
#include "exec/runtime/host_collective.h"
#include "exec/runtime/runner_inputs.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace {

using Clock = std::chrono::steady_clock;

// cuBLASLt's workspace: NVIDIA recommends 32 MiB on Hopper for its best algorithms.
constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;

Status CudaError(cudaError_t e, const std::string& what) {
  const StatusCode code =
      e == cudaErrorMemoryAllocation ? StatusCode::kOutOfMemory : StatusCode::kInternal;
  return Status(code, what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

#define ALPA_CUDA_RETURN_IF_ERROR(call, what)     \
  do {                                            \
    const cudaError_t alpa_cuda_error_ = (call);  \
    if (alpa_cuda_error_ != cudaSuccess) {        \
      return CudaError(alpa_cuda_error_, (what)); \
    }                                             \
  } while (false)

// `t` seen with another shape of the same element count (a box's sizes for the dense buffer
// it fills).
Result<cuda::DeviceTensor> Reshaped(const cuda::DeviceTensor& t, const Dims& shape) {
  if (ElementCountOf(shape) != t.elements()) {
    return InternalError("a box of " + ShapeString(shape) + " does not fit a buffer of " +
                         ShapeString(t.shape));
  }
  cuda::DeviceTensor view = t;
  view.shape = shape;
  return view;
}

}  // namespace

Result<std::unique_ptr<CudaRunner>> CudaRunner::Create(const DeviceProgram& program,
                                                       const CudaBackendOptions& options) {
  std::string why;
  const int32_t count = CudaDeviceCount(&why);
  if (count == 0) return Status(StatusCode::kUnsupported, "the CUDA backend: " + why);
  if (options.gpu < -1 || options.gpu >= count) {
    return InvalidArgument("GPU " + std::to_string(options.gpu) +
                           " does not exist (this process sees " + std::to_string(count) + ")");
  }
  const int32_t gpu = options.gpu >= 0 ? options.gpu : program.device % count;
  std::unique_ptr<CudaRunner> runner(new CudaRunner(program, gpu, options));
  Status s = runner->Initialize();
  if (!s.ok()) {
    return Status(s.code(), "device " + std::to_string(program.device) + " on GPU " +
                                std::to_string(gpu) + ": " + s.message());
  }
  return runner;
}

CudaRunner::CudaRunner(const DeviceProgram& program, int32_t gpu, const CudaBackendOptions& options)
    : program_(program),
      profiling_(std::getenv("ALPA_CUDA_PROFILE") != nullptr),
      gpu_(gpu),
      options_(options),
      storage_(cuda::StorageDTypes(program)),
      read_(program.buffers.size(), 0),
      buffers_(program.buffers.size()),
      allocated_(program.buffers.size(), 0) {
  for (size_t b = 0; b < buffers_.size(); ++b) {
    buffers_[b].shape = program.buffers[b].shape;
    buffers_[b].storage = storage_[b];
  }
  for (const Instruction& in : program.code) {
    if (in.kind == InstructionKind::kFree) continue;
    for (int32_t b : in.in) {
      if (b >= 0 && static_cast<size_t>(b) < read_.size()) read_[static_cast<size_t>(b)] = 1;
    }
  }
}

Status CudaRunner::Initialize() {
  ALPA_RETURN_IF_ERROR(SelectGpu());
  ALPA_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                            "creating the compute stream");
  const cublasStatus_t blas = cublasLtCreate(&blas_);
  if (blas != CUBLAS_STATUS_SUCCESS) {
    blas_ = nullptr;
    return InternalError(std::string("creating the cuBLASLt handle: ") +
                         cublasLtGetStatusString(blas));
  }
  const cublasStatus_t gemm = cublasCreate(&gemm_);
  if (gemm != CUBLAS_STATUS_SUCCESS) {
    gemm_ = nullptr;
    return InternalError(std::string("creating the cuBLAS handle: ") + cublasGetStatusString(gemm));
  }
  const cublasStatus_t bound = cublasSetStream(gemm_, stream_);
  if (bound != CUBLAS_STATUS_SUCCESS) {
    return InternalError(std::string("setting the cuBLAS stream: ") + cublasGetStatusString(bound));
  }
  ALPA_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&feed_copied_, cudaEventDisableTiming),
                            "creating the feed event");
  allocator_ = std::make_unique<cuda::DeviceAllocator>();
  scratch_ = std::make_unique<cuda::AllocatorScratch>(*allocator_);
  Result<void*> workspace = allocator_->Allocate(kBlasWorkspaceBytes);
  if (!workspace.ok()) {
    return Status(workspace.status().code(),
                  "the cuBLASLt workspace: " + workspace.status().message());
  }
  blas_workspace_ = workspace.value();
  ALPA_RETURN_IF_ERROR(PrepareFusion());
  PrepareConvolutions();
  handover_ = cuda::PlanHandovers(program_, storage_, fusion_);
  return Status::Ok();
}

Status CudaRunner::PrepareFusion() {
  if (!cuda::FusionEnabled()) return Status::Ok();
  std::vector<cuda::AttentionRegion> attention;
  if (cuda::AttentionFusionEnabled()) attention = cuda::PlanAttention(program_, storage_);
  cuda::FusionPlan plan = cuda::PlanFusion(program_, storage_, std::move(attention));
  if (plan.empty()) return Status::Ok();
  if (!plan.groups.empty()) {
    Result<std::unique_ptr<cuda::FusedKernels>> kernels =
        cuda::FusedKernels::Load(plan.groups, "the fused elementwise kernels");
    if (!kernels.ok()) return kernels.status();
    fused_ = std::move(kernels.value());
  }
  attention_lse_.assign(plan.attention.size(), nullptr);
  fusion_ = std::move(plan);
  return Status::Ok();
}

void CudaRunner::PrepareConvolutions() {
  if (!cuda::DnnConvolutionsEnabled()) return;
  bool any = false;
  for (const Graph& local : program_.local_ops) {
    any = any || (local.size() > 0 && local.ops.back().kind == OpKind::kConvolution);
  }
  if (!any) return;
  // Without a usable cuDNN the convolutions run the direct kernel (LastConvolutionPath says so).
  Result<std::unique_ptr<cuda::DnnConvolutions>> dnn = cuda::DnnConvolutions::Create();
  if (dnn.ok()) dnn_ = std::move(dnn.value());
}

CudaRunner::~CudaRunner() {
  // Nothing here can be reported: the runner goes either way.
  if (!SelectGpu().ok()) return;
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  if (feed_staging_ != nullptr) (void)cudaFreeHost(feed_staging_);
  if (feed_copied_ != nullptr) (void)cudaEventDestroy(feed_copied_);
  dnn_.reset();
  scratch_.reset();
  allocator_.reset();  // frees every buffer
  if (blas_ != nullptr) (void)cublasLtDestroy(blas_);
  if (gemm_ != nullptr) (void)cublasDestroy(gemm_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

Status CudaRunner::SelectGpu() const {
  ALPA_CUDA_RETURN_IF_ERROR(cudaSetDevice(gpu_), "selecting GPU " + std::to_string(gpu_));
  return Status::Ok();
}

cuda::LaunchContext CudaRunner::Context() {
  cuda::LaunchContext ctx;
  ctx.stream = stream_;
  ctx.blas = blas_;
  ctx.blas_workspace = blas_workspace_;
  ctx.blas_workspace_bytes = kBlasWorkspaceBytes;
  ctx.gemm = gemm_;
  ctx.allow_tf32 = options_.allow_tf32;
  ctx.scratch = scratch_.get();
  ctx.dnn = dnn_.get();
  return ctx;
}

// ---- Buffers ----

Result<cuda::DeviceTensor*> CudaRunner::Allocate(int32_t buffer) {
  cuda::DeviceTensor& t = buffers_[static_cast<size_t>(buffer)];
  if (allocated_[static_cast<size_t>(buffer)]) return &t;
  const Buffer& b = program_.buffers[static_cast<size_t>(buffer)];
  const int64_t elements = t.elements();
  const int64_t width = DTypeBytes(t.storage);
  if (elements < 0 || elements > std::numeric_limits<int64_t>::max() / width) {
    return InternalError("buffer " + std::to_string(buffer) + " '" + b.name + "' " +
                         ShapeString(b.shape) + " has too many bytes to address");
  }
  const int64_t bytes = elements * width;
  Result<void*> block = allocator_->Allocate(static_cast<size_t>(bytes));
  if (!block.ok()) {
    return Status(block.status().code(),
                  "out of GPU memory for buffer " + std::to_string(buffer) + " '" + b.name + "' " +
                      ShapeString(b.shape) + " " + DTypeName(t.storage) + " (" +
                      std::to_string(bytes) + " bytes; " + std::to_string(live_bytes_) +
                      " bytes of the program live): " + block.status().message());
  }
  t.data = block.value();
  allocated_[static_cast<size_t>(buffer)] = 1;
  live_bytes_ += elements * DTypeBytes(b.dtype);
  peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  return &t;
}

void CudaRunner::Release(int32_t buffer) {
  if (!allocated_[static_cast<size_t>(buffer)]) return;
  cuda::DeviceTensor& t = buffers_[static_cast<size_t>(buffer)];
  // Stream-ordered: the launches that read the block are enqueued before any that reuses it.
  allocator_->Release(t.data);
  t.data = nullptr;
  allocated_[static_cast<size_t>(buffer)] = 0;
  live_bytes_ -= t.elements() * DTypeBytes(program_.buffers[static_cast<size_t>(buffer)].dtype);
}

void CudaRunner::HandOver(int32_t src, int32_t dst) {
  cuda::DeviceTensor& s = buffers_[static_cast<size_t>(src)];
  cuda::DeviceTensor& d = buffers_[static_cast<size_t>(dst)];
  if (allocated_[static_cast<size_t>(dst)]) {
    std::swap(s.data, d.data);  // src's kFree frees what dst held
    return;
  }
  d.data = s.data;
  s.data = nullptr;
  allocated_[static_cast<size_t>(src)] = 0;
  allocated_[static_cast<size_t>(dst)] = 1;
  // The bytes of the copy's moment: both buffers, then src's freed.
  live_bytes_ += d.elements() * DTypeBytes(program_.buffers[static_cast<size_t>(dst)].dtype);
  peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  live_bytes_ -= s.elements() * DTypeBytes(program_.buffers[static_cast<size_t>(src)].dtype);
}

Result<const cuda::DeviceTensor*> CudaRunner::Get(int32_t buffer) const {
  if (!allocated_[static_cast<size_t>(buffer)]) {
    return InternalError("buffer " + std::to_string(buffer) + " '" +
                         program_.buffers[static_cast<size_t>(buffer)].name +
                         "' is read before it is written");
  }
  return &buffers_[static_cast<size_t>(buffer)];
}

Result<cuda::DeviceTensor> CudaRunner::AllocateTemp(const Dims& shape, DType storage) {
  cuda::DeviceTensor t;
  t.shape = shape;
  t.storage = storage;
  const int64_t bytes = t.elements() * DTypeBytes(storage);
  Result<void*> block = allocator_->Allocate(static_cast<size_t>(bytes));
  if (!block.ok()) {
    return Status(block.status().code(), "out of GPU memory for a staging box of " +
                                             std::to_string(bytes) +
                                             " bytes: " + block.status().message());
  }
  t.data = block.value();
  return t;
}

void CudaRunner::ReleaseTemp(cuda::DeviceTensor& t) {
  allocator_->Release(t.data);
  t.data = nullptr;
}

// ---- Host <-> device ----

Status CudaRunner::Synchronize(const char* what) const {
  const cudaError_t e = cudaStreamSynchronize(stream_);
  if (e != cudaSuccess) {
    // A kernel's own error surfaces at the next wait: name the launches it may come from.
    const std::string since = waited_after_ < 0
                                  ? std::string("since the step began")
                                  : "after instruction " + std::to_string(waited_after_);
    return CudaError(e, std::string(what) + ": the GPU failed in a launch " + since +
                            " (asynchronous error; CUDA_LAUNCH_BLOCKING=1 names the launch)");
  }
  waited_after_ = instruction_;
  return Status::Ok();
}

Status CudaRunner::Download(const cuda::DeviceTensor& t, std::vector<double>& values) const {
  const size_t bytes = static_cast<size_t>(t.elements() * DTypeBytes(t.storage));
  staging_.resize(bytes);
  values.assign(static_cast<size_t>(t.elements()), 0.0);
  if (bytes == 0) return Status::Ok();
  ALPA_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(staging_.data(), t.data, bytes, cudaMemcpyDeviceToHost, stream_),
      "copying to the host");
  ALPA_RETURN_IF_ERROR(Synchronize("copying to the host"));
  cuda::DecodeStorage(staging_.data(), t.elements(), t.storage, values.data());
  return Status::Ok();
}

Status CudaRunner::Upload(const std::vector<double>& values, DType round_to,
                          cuda::DeviceTensor& t) {
  if (static_cast<int64_t>(values.size()) != t.elements()) {
    return InternalError("uploading " + std::to_string(values.size()) + " values into " +
                         ShapeString(t.shape));
  }
  cuda::EncodeStorage(values.data(), t.elements(), round_to, t.storage, staging_);
  if (staging_.empty()) return Status::Ok();
  // From pageable memory the copy has taken the bytes when it returns, so staging_ may be
  // reused at once; the GPU side stays ordered on the stream.
  ALPA_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(t.data, staging_.data(), staging_.size(), cudaMemcpyHostToDevice, stream_),
      "copying to the GPU");
  return Status::Ok();
}

Status CudaRunner::ReserveFeedStaging(size_t bytes) {
  // The previous feed's copy reads the staging memory until its event has passed.
  ALPA_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(feed_copied_), "waiting for the previous feed");
  if (bytes <= feed_staging_bytes_) return Status::Ok();
  if (feed_staging_ != nullptr) {
    ALPA_CUDA_RETURN_IF_ERROR(cudaFreeHost(feed_staging_), "freeing the feed staging memory");
    feed_staging_ = nullptr;
    feed_staging_bytes_ = 0;
  }
  ALPA_CUDA_RETURN_IF_ERROR(
      cudaHostAlloc(&feed_staging_, bytes, cudaHostAllocDefault),
      "allocating " + std::to_string(bytes) + " bytes of pinned host memory for a feed");
  feed_staging_bytes_ = bytes;
  return Status::Ok();
}

Status CudaRunner::UploadFeed(const double* values, DType round_to, cuda::DeviceTensor& t) {
  const size_t bytes = static_cast<size_t>(t.elements() * DTypeBytes(t.storage));
  if (bytes == 0) return Status::Ok();
  ALPA_RETURN_IF_ERROR(ReserveFeedStaging(bytes));
  cuda::EncodeStorageInto(values, t.elements(), round_to, t.storage, feed_staging_);
  ALPA_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(t.data, feed_staging_, bytes, cudaMemcpyHostToDevice, stream_),
      "copying a feed to the GPU");
  ALPA_CUDA_RETURN_IF_ERROR(cudaEventRecord(feed_copied_, stream_), "recording the feed's copy");
  return Status::Ok();
}

// ---- Parameters ----

Status CudaRunner::LoadParameters(const ParameterValue& value, const Graph& graph, int32_t tensor) {
  ALPA_RETURN_IF_ERROR(SelectGpu());
  for (const ParameterBinding& b : program_.parameters) {
    if (tensor >= 0 && b.tensor != tensor) continue;
    Result<const HostTensor*> checked =
        CheckedParameterValue(value, graph, b.tensor, program_.device);
    if (!checked.ok()) return checked.status();
    const HostTensor* full = checked.value();
    Result<cuda::DeviceTensor*> t = Allocate(b.buffer);
    if (!t.ok()) return t.status();
    std::vector<double> tile(static_cast<size_t>(t.value()->elements()), 0.0);
    if (b.owner) ExtractBox(full->data.data(), full->shape, b.offsets, b.sizes, tile.data());
    ALPA_RETURN_IF_ERROR(
        Upload(tile, program_.buffers[static_cast<size_t>(b.buffer)].dtype, *t.value()));
  }
  return Synchronize("loading the parameters");
}

Result<std::vector<ParameterTile>> CudaRunner::FetchParameters() const {
  ALPA_RETURN_IF_ERROR(SelectGpu());
  std::vector<ParameterTile> tiles;
  for (const ParameterBinding& b : program_.parameters) {
    if (!b.owner) continue;
    Result<const cuda::DeviceTensor*> t = Get(b.buffer);
    if (!t.ok()) return t.status();
    ParameterTile tile{b.tensor, b.offsets, b.sizes, {}, b.fetch};
    ALPA_RETURN_IF_ERROR(Download(*t.value(), tile.values));
    tiles.push_back(std::move(tile));
  }
  return tiles;
}

// ---- A step ----

Result<StepReport> CudaRunner::RunStep(Communicator& comm, const MicrobatchInput& input,
                                       const Graph& graph) {
  Result<StepReport> report = RunInstructions(comm, input, graph);
  prepared_.EndStep();
  return report;
}

void CudaRunner::AnnounceNextInput(MicrobatchInput next) {
  if (!next) prepared_.Drop();
  announced_ = std::move(next);
}

Result<StepReport> CudaRunner::RunInstructions(Communicator& comm, const MicrobatchInput& input,
                                               const Graph& graph) {
  ALPA_RETURN_IF_ERROR(SelectGpu());
  StepReport report;
  report.seconds_by_kind.assign(static_cast<size_t>(InstructionKind::kReportLoss) + 1, 0.0);
  peak_bytes_ = live_bytes_;
  waited_after_ = -1;
  const Clock::time_point start = Clock::now();
  const bool fusing = !fusion_.empty();
  for (size_t i = 0; i < program_.code.size(); ++i) {
    const Instruction& in = program_.code[i];
    if (fusing && fusion_.skip[i]) continue;
    instruction_ = static_cast<int64_t>(i);
    const Clock::time_point t0 = Clock::now();
    const int32_t group = fusing ? fusion_.group_at[i] : -1;
    const int32_t region = fusing ? fusion_.attention_at[i] : -1;
    const int32_t product = fusing ? fusion_.product_at[i] : -1;
    Status s = group >= 0     ? RunFused(static_cast<size_t>(group))
               : region >= 0  ? RunAttention(static_cast<size_t>(region), static_cast<int32_t>(i))
               : product >= 0 ? RunTransposedProduct(static_cast<size_t>(product))
                              : Execute(comm, in, input, graph, report);
    if (s.ok() && fusing) {
      for (int32_t b : fusion_.free_after[i]) Release(b);
    }
    if (!s.ok()) {
      if (s.code() == StatusCode::kCancelled) return s;  // another device failed: its message
      return Status(s.code(), "device " + std::to_string(program_.device) + " (GPU " +
                                  std::to_string(gpu_) + ") instruction " + std::to_string(i) +
                                  " (" + InstructionText(program_, in) + "): " + s.message());
    }
    if (profiling_) {
      ALPA_RETURN_IF_ERROR(Synchronize("profiling"));
      const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      std::string label = ProfileLabel(in);
      if (group >= 0) {
        label = "run fused " +
                std::to_string(fusion_.groups[static_cast<size_t>(group)].nodes.size()) + " nodes";
      } else if (region >= 0) {
        const bool backward =
            fusion_.attention[static_cast<size_t>(region)].backward_at == static_cast<int32_t>(i);
        label = backward ? "run flash attention backward" : "run flash attention forward";
      } else if (product >= 0) {
        label += " (written transposed)";
      }
      profile_.Add(label, seconds);
      profile_.AddInstruction(seconds, std::to_string(i) + " " + InstructionText(program_, in));
    }
    // Host time: the launch, or the staging and the wait for a move (launches run on).
    report.seconds_by_kind[static_cast<size_t>(in.kind)] +=
        std::chrono::duration<double>(Clock::now() - t0).count();
  }
  instruction_ = static_cast<int64_t>(program_.code.size());
  if (announced_) {
    // While the GPU runs what was queued. A failure (no pinned memory) only means that the
    // next step encodes its feeds when they run.
    (void)prepared_.Prepare(program_, storage_, read_, announced_, graph);
    announced_ = nullptr;
  }
  Status done = Synchronize("the end of the step");
  if (!done.ok()) {
    return Status(done.code(), "device " + std::to_string(program_.device) + " (GPU " +
                                   std::to_string(gpu_) + "): " + done.message());
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report.peak_bytes = peak_bytes_;
  if (profiling_) {
    std::fprintf(stderr, "device %d (GPU %d) %s", program_.device, gpu_,
                 profile_.Table(25).c_str());
    profile_.Clear();
  }
  return report;
}

std::string CudaRunner::ProfileLabel(const Instruction& in) const {
  std::string label = InstructionKindName(in.kind);
  if (in.kind != InstructionKind::kRun) return label;
  const Op& op = LocalOpOf(program_, in);
  label += std::string(" ") + OpKindName(op.kind) + " " + DTypeName(op.dtype) + " <-";
  for (int32_t b : in.in) label += std::string(" ") + DTypeName(storage_[static_cast<size_t>(b)]);
  label += std::string(" -> ") + DTypeName(storage_[static_cast<size_t>(in.out)]);
  if (op.kind == OpKind::kDotGeneral) label += std::string(" ") + cuda::LastDotGeneralPath();
  if (op.kind == OpKind::kConvolution) label += std::string(" ") + cuda::LastConvolutionPath();
  if (!in.round) label += " unrounded";
  return label;
}

Status CudaRunner::Execute(Communicator& comm, const Instruction& in, const MicrobatchInput& input,
                           const Graph& graph, StepReport& report) {
  switch (in.kind) {
    case InstructionKind::kRun:
      return RunOp(in);
    case InstructionKind::kAllReduce:
    case InstructionKind::kAllGather:
    case InstructionKind::kReduceScatter:
    case InstructionKind::kAllToAll:
      return RunCollective(comm, in, report);
    case InstructionKind::kSlice:
      return RunSlice(in);
    case InstructionKind::kSend:
      return RunSend(comm, in, report);
    case InstructionKind::kRecv:
      return RunRecv(comm, in, report);
    case InstructionKind::kFeed:
      return RunFeed(in, input, graph);
    case InstructionKind::kAccumulate:
      return RunAccumulate(in);
    case InstructionKind::kZero: {
      Result<cuda::DeviceTensor*> out = Allocate(in.out);
      if (!out.ok()) return out.status();
      const size_t bytes =
          static_cast<size_t>(out.value()->elements() * DTypeBytes(out.value()->storage));
      if (bytes == 0) return Status::Ok();
      ALPA_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(out.value()->data, 0, bytes, stream_),
                                "clearing the buffer");
      return Status::Ok();
    }
    case InstructionKind::kScale:
      return RunScale(in);
    case InstructionKind::kCopy:
      return RunCopy(in);
    case InstructionKind::kFree:
      Release(in.in[0]);
      return Status::Ok();
    case InstructionKind::kReportLoss:
      return ReportLoss(in, report);
  }
  return InternalError("unknown instruction kind");
}

Status CudaRunner::RunOp(const Instruction& in) {
  const Graph& local = program_.local_ops[static_cast<size_t>(in.local_op)];
  const int32_t id = local.size() - 1;
  if (handover_[static_cast<size_t>(instruction_)]) {  // a reshape of a buffer that dies here
    ALPA_RETURN_IF_ERROR(Get(in.in[0]).status());
    HandOver(in.in[0], in.out);
    return Status::Ok();
  }
  cuda::OpLaunch launch;
  launch.round = in.round;
  launch.axis_offset = in.axis_offset;
  launch.axis_size = in.axis_size;
  return LaunchOn(local, id, in.in, in.out, launch);
}

Status CudaRunner::LaunchOn(const Graph& local, int32_t id, const std::vector<int32_t>& operands,
                            int32_t out, const cuda::OpLaunch& launch) {
  std::vector<cuda::DeviceTensor> tensors;
  for (int32_t b : operands) {
    Result<const cuda::DeviceTensor*> t = Get(b);
    if (!t.ok()) return t.status();
    tensors.push_back(*t.value());
  }
  Result<cuda::DeviceTensor*> written = Allocate(out);
  if (!written.ok()) return written.status();
  return cuda::LaunchOp(Context(), local, id, tensors, *written.value(), launch);
}

Status CudaRunner::RunTransposedProduct(size_t index) {
  const cuda::TransposedProduct& p = fusion_.products[index];
  const Instruction& dot = program_.code[static_cast<size_t>(p.dot_at)];
  const Instruction& transpose = program_.code[static_cast<size_t>(p.transpose_at)];
  cuda::OpLaunch launch;
  launch.round = dot.round;
  // The operands swapped, as p.swapped's product reads them.
  return LaunchOn(p.swapped, p.swapped.size() - 1, {dot.in[1], dot.in[0]}, transpose.out, launch);
}

Status CudaRunner::RunFused(size_t index) {
  const cuda::FusedGroup& g = fusion_.groups[index];
  std::vector<const void*> inputs;
  for (int32_t b : g.inputs) {
    Result<const cuda::DeviceTensor*> t = Get(b);
    if (!t.ok()) return t.status();
    inputs.push_back(t.value()->data);
  }
  std::vector<void*> outputs;
  for (int32_t b : cuda::FusedGroupWrites(g)) {
    Result<cuda::DeviceTensor*> out = Allocate(b);
    if (!out.ok()) return out.status();
    outputs.push_back(out.value()->data);
  }
  return fused_->Launch(index, inputs, outputs, stream_,
                        "fused group of " + std::to_string(g.members.size() + 1) + " ops");
}

Result<cuda::AttentionView> CudaRunner::AttentionViewOf(const cuda::AttentionOperand& x,
                                                        bool write) {
  cuda::AttentionView view;
  for (int k = 0; k < 4; ++k) view.stride[k] = x.stride[k];
  const cuda::DeviceTensor* t = nullptr;
  if (write) {
    Result<cuda::DeviceTensor*> out = Allocate(x.buffer);
    if (!out.ok()) return out.status();
    t = out.value();
  } else {
    Result<const cuda::DeviceTensor*> in = Get(x.buffer);
    if (!in.ok()) return in.status();
    t = in.value();
  }
  view.data = static_cast<unsigned char*>(t->data) + x.offset * DTypeBytes(t->storage);
  return view;
}

Status CudaRunner::RunAttention(size_t index, int32_t instruction) {
  const cuda::AttentionRegion& r = fusion_.attention[index];
  return instruction == r.backward_at ? RunAttentionBackward(index) : RunAttentionForward(index);
}

Status CudaRunner::BindAttentionViews(std::initializer_list<AttentionBinding> bindings) {
  for (const AttentionBinding& b : bindings) {
    Result<cuda::AttentionView> view = AttentionViewOf(*b.operand, b.write);
    if (!view.ok()) return view.status();
    *b.view = view.value();
  }
  return Status::Ok();
}

Status CudaRunner::RunAttentionForward(size_t index) {
  const cuda::AttentionRegion& r = fusion_.attention[index];
  cuda::AttentionForwardArgs args;
  args.shape = r.shape;
  ALPA_RETURN_IF_ERROR(BindAttentionViews({{&r.q, &args.q, false},
                                           {&r.k, &args.k, false},
                                           {&r.v, &args.v, false},
                                           {&r.o, &args.o, true}}));
  void*& lse = attention_lse_[index];
  if (lse == nullptr) {
    const size_t bytes = static_cast<size_t>(cuda::AttentionLseBytes(r.shape));
    Result<void*> block = allocator_->Allocate(bytes);
    if (!block.ok()) {
      return Status(block.status().code(),
                    "out of GPU memory for the attention's row statistics (" +
                        std::to_string(bytes) + " bytes): " + block.status().message());
    }
    lse = block.value();
  }
  args.lse = static_cast<float*>(lse);
  ALPA_RETURN_IF_ERROR(cuda::LaunchAttentionForward(args, stream_));
  if (!r.has_backward()) {
    allocator_->Release(lse);  // stream-ordered, as Release
    lse = nullptr;
  }
  return Status::Ok();
}

Status CudaRunner::RunAttentionBackward(size_t index) {
  const cuda::AttentionRegion& r = fusion_.attention[index];
  void*& lse = attention_lse_[index];
  if (lse == nullptr) return InternalError("the attention's backward runs before its forward");
  cuda::AttentionBackwardArgs args;
  args.shape = r.shape;
  args.lse = static_cast<const float*>(lse);
  ALPA_RETURN_IF_ERROR(BindAttentionViews({{&r.q, &args.q, false},
                                           {&r.k, &args.k, false},
                                           {&r.v, &args.v, false},
                                           {&r.o, &args.o, false},
                                           {&r.d_o, &args.d_o, false},
                                           {&r.dq, &args.dq, true},
                                           {&r.dk, &args.dk, true},
                                           {&r.dv, &args.dv, true}}));
  Result<void*> scratch =
      scratch_->Reserve(static_cast<size_t>(cuda::AttentionBackwardScratchBytes(r.shape)));
  if (!scratch.ok()) return scratch.status();
  args.scratch = scratch.value();
  ALPA_RETURN_IF_ERROR(cuda::LaunchAttentionBackward(args, stream_));
  allocator_->Release(lse);
  lse = nullptr;
  return Status::Ok();
}

Status CudaRunner::RunCollective(Communicator& comm, const Instruction& in, StepReport& report) {
  Result<const cuda::DeviceTensor*> src = Get(in.in[0]);
  if (!src.ok()) return src.status();
  HostTensor host_src;
  host_src.shape = src.value()->shape;
  host_src.dtype = program_.buffers[static_cast<size_t>(in.in[0])].dtype;
  ALPA_RETURN_IF_ERROR(Download(*src.value(), host_src.data));
  Result<cuda::DeviceTensor*> out = Allocate(in.out);
  if (!out.ok()) return out.status();
  const Buffer& out_buffer = program_.buffers[static_cast<size_t>(in.out)];
  HostTensor host_out;
  host_out.shape = out_buffer.shape;
  host_out.dtype = out_buffer.dtype;
  host_out.data.assign(static_cast<size_t>(ElementCountOf(out_buffer.shape)), 0.0);
  ALPA_RETURN_IF_ERROR(RunCollectiveOnHost(comm, in, program_.device, host_src, host_out));
  const bool reduces =
      in.kind == InstructionKind::kAllReduce || in.kind == InstructionKind::kReduceScatter;
  const DType round_to = reduces && in.round ? out_buffer.dtype : out.value()->storage;
  ALPA_RETURN_IF_ERROR(Upload(host_out.data, round_to, *out.value()));
  report.moves.push_back(MoveOf(in));
  return Status::Ok();
}

Status CudaRunner::RunSlice(const Instruction& in) {
  Result<const cuda::DeviceTensor*> src = Get(in.in[0]);
  if (!src.ok()) return src.status();
  if (!BoxInside(src.value()->shape, in.offsets, in.sizes)) {
    return InternalError("the slice box lies outside its buffer");
  }
  const cuda::DeviceTensor source = *src.value();
  Result<cuda::DeviceTensor*> out = Allocate(in.out);
  if (!out.ok()) return out.status();
  Result<cuda::DeviceTensor> dense = Reshaped(*out.value(), in.sizes);
  if (!dense.ok()) return dense.status();
  return cuda::LaunchCopyBox(Context(), source, in.offsets, dense.value(),
                             std::vector<int64_t>(in.sizes.size(), 0), in.sizes);
}

Status CudaRunner::RunSend(Communicator& comm, const Instruction& in, StepReport& report) {
  Result<const cuda::DeviceTensor*> src = Get(in.in[0]);
  if (!src.ok()) return src.status();
  const cuda::DeviceTensor& source = *src.value();
  if (!BoxInside(source.shape, in.offsets, in.sizes)) {
    return InternalError("the sent box lies outside its buffer");
  }
  std::vector<double> box;
  if (IsWholeBox(source.shape, in.offsets, in.sizes)) {
    ALPA_RETURN_IF_ERROR(Download(source, box));
  } else {
    Result<cuda::DeviceTensor> temp = AllocateTemp(in.sizes, source.storage);
    if (!temp.ok()) return temp.status();
    Status s = cuda::LaunchCopyBox(Context(), source, in.offsets, temp.value(),
                                   std::vector<int64_t>(in.sizes.size(), 0), in.sizes);
    if (s.ok()) s = Download(temp.value(), box);
    ReleaseTemp(temp.value());
    ALPA_RETURN_IF_ERROR(s);
  }
  ALPA_RETURN_IF_ERROR(comm.Send(in.peer, in.tag, box.data(), static_cast<int64_t>(box.size())));
  report.moves.push_back(MoveOf(in));
  return Status::Ok();
}

Status CudaRunner::RunRecv(Communicator& comm, const Instruction& in, StepReport& report) {
  Result<const cuda::DeviceTensor*> dst = Get(in.out);
  if (!dst.ok()) return dst.status();
  cuda::DeviceTensor target = *dst.value();
  if (!BoxInside(target.shape, in.offsets, in.sizes)) {
    return InternalError("the received box lies outside its buffer");
  }
  std::vector<double> box(static_cast<size_t>(ElementCountOf(in.sizes)));
  ALPA_RETURN_IF_ERROR(comm.Recv(in.peer, in.tag, box.data(), static_cast<int64_t>(box.size())));
  // The values go in as they came (no rounding beyond the storage's, as the CPU runtime).
  if (IsWholeBox(target.shape, in.offsets, in.sizes)) {
    ALPA_RETURN_IF_ERROR(Upload(box, target.storage, target));
  } else {
    Result<cuda::DeviceTensor> temp = AllocateTemp(in.sizes, target.storage);
    if (!temp.ok()) return temp.status();
    Status s = Upload(box, target.storage, temp.value());
    if (s.ok()) {
      s = cuda::LaunchCopyBox(Context(), temp.value(), std::vector<int64_t>(in.sizes.size(), 0),
                              target, in.offsets, in.sizes);
    }
    ReleaseTemp(temp.value());  // stream-ordered after the copy
    ALPA_RETURN_IF_ERROR(s);
  }
  report.moves.push_back(MoveOf(in));
  return Status::Ok();
}

Status CudaRunner::RunFeed(const Instruction& in, const MicrobatchInput& input,
                           const Graph& graph) {
  Result<const HostTensor*> checked =
      CheckedMicrobatchInput(input, graph, in.tensor, in.microbatch, in.offsets, in.sizes);
  if (!checked.ok()) return checked.status();
  if (!read_[static_cast<size_t>(in.out)]) return Status::Ok();
  const HostTensor* full = checked.value();
  Result<cuda::DeviceTensor*> out = Allocate(in.out);
  if (!out.ok()) return out.status();
  cuda::DeviceTensor& t = *out.value();
  const size_t bytes = static_cast<size_t>(t.elements() * DTypeBytes(t.storage));
  bool prepared = false;
  ALPA_RETURN_IF_ERROR(prepared_.CopyInto(static_cast<size_t>(instruction_), full, t.data, bytes,
                                          stream_, &prepared));
  if (prepared) return Status::Ok();
  const double* values = BoxValues(full->data.data(), full->shape, in.offsets, in.sizes, feed_box_);
  return UploadFeed(values, program_.buffers[static_cast<size_t>(in.out)].dtype, t);
}

Status CudaRunner::RunAccumulate(const Instruction& in) {
  Result<const cuda::DeviceTensor*> src = Get(in.in[0]);
  if (!src.ok()) return src.status();
  Result<const cuda::DeviceTensor*> dst = Get(in.out);
  if (!dst.ok()) return dst.status();
  if (src.value()->elements() != dst.value()->elements()) {
    return InternalError("accumulating a buffer of another size");
  }
  return cuda::LaunchAccumulate(Context(), *src.value(), *dst.value(),
                                program_.buffers[static_cast<size_t>(in.out)].dtype, in.round);
}

Status CudaRunner::RunScale(const Instruction& in) {
  Result<const cuda::DeviceTensor*> src = Get(in.in[0]);
  if (!src.ok()) return src.status();
  const cuda::DeviceTensor source = *src.value();
  Result<cuda::DeviceTensor*> out = Allocate(in.out);
  if (!out.ok()) return out.status();
  if (source.elements() != out.value()->elements()) {
    return InternalError("scaling into a buffer of another size");
  }
  return cuda::LaunchScale(Context(), source, *out.value(), in.value,
                           program_.buffers[static_cast<size_t>(in.out)].dtype, in.round);
}

Status CudaRunner::RunCopy(const Instruction& in) {
  Result<const cuda::DeviceTensor*> src = Get(in.in[0]);
  if (!src.ok()) return src.status();
  if (handover_[static_cast<size_t>(instruction_)]) {
    HandOver(in.in[0], in.out);
    return Status::Ok();
  }
  const cuda::DeviceTensor source = *src.value();
  Result<cuda::DeviceTensor*> out = Allocate(in.out);
  if (!out.ok()) return out.status();
  cuda::DeviceTensor& target = *out.value();
  if (source.elements() != target.elements()) {
    return InternalError("copying a buffer of another size");
  }
  if (source.data == target.data || source.elements() == 0) return Status::Ok();
  if (source.storage == target.storage) {
    const size_t bytes = static_cast<size_t>(source.elements() * DTypeBytes(source.storage));
    ALPA_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(target.data, source.data, bytes, cudaMemcpyDeviceToDevice, stream_),
        "copying the buffer");
    return Status::Ok();
  }
  // The values as they are (kCopy does not round): only the storage's width changes.
  return cuda::LaunchConvert(Context(), source, target, target.storage, false);
}

Status CudaRunner::ReportLoss(const Instruction& in, StepReport& report) {
  Result<const cuda::DeviceTensor*> src = Get(in.in[0]);
  if (!src.ok()) return src.status();
  std::vector<double> values;
  ALPA_RETURN_IF_ERROR(Download(*src.value(), values));
  if (values.empty()) return InternalError("the loss buffer is empty");
  report.losses.push_back({in.microbatch, values[0]});
  return Status::Ok();
}

}  // namespace alpa
