// The CUDA backend's ProgramRunner: one device's program (exec/program) on one GPU, mirroring
// the CPU runtime (exec/runtime/device_runtime.h) instruction by instruction.
//
// A runner owns one compute stream, a cuBLASLt handle with its workspace, a caching allocator
// (device_allocator.h) and the buffer table in device memory, each buffer in its storage dtype
// (storage_policy.h). Ops run as the kernels of kernels.h; collectives and point-to-point moves
// go through the communicator, which moves host doubles: the runner stages the buffer to the
// host, converts, calls the communicator and uploads the result (the chunk layout of
// host_collective.h, the CPU runtime's). The host waits for the GPU only where it needs data:
// staging, a reported loss, reading parameters and the end of a step.
//
// Several runners may share one GPU (the devices of a plan larger than the machine), each with
// its own stream; every entry point selects the runner's GPU on the calling thread, so the
// driver may call each runner from a thread of its own.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/device_allocator.h"
#include "exec/cuda/device_tensor.h"
#include "exec/cuda/dnn_convolution.h"
#include "exec/cuda/flash_attention.h"
#include "exec/cuda/fused_kernels.h"
#include "exec/cuda/fusion_plan.h"
#include "exec/cuda/kernels.h"
#include "exec/cuda/prepared_feeds.h"
#include "exec/cuda/step_profile.h"
#include "exec/program/program.h"
#include "exec/runtime/program_runner.h"

namespace alpa {

class CudaRunner : public ProgramRunner {
 public:
  // The runner of `program` (which must outlive it) on GPU options.gpu, or program.device
  // modulo the GPUs there are when it is -1. kUnsupported without a GPU; kInvalidArgument for a
  // GPU index out of range; the CUDA error of a failed stream / handle creation.
  static Result<std::unique_ptr<CudaRunner>> Create(const DeviceProgram& program,
                                                    const CudaBackendOptions& options);
  ~CudaRunner() override;
  CudaRunner(const CudaRunner&) = delete;
  CudaRunner& operator=(const CudaRunner&) = delete;

  Status LoadParameters(const ParameterValue& value, const Graph& graph,
                        int32_t tensor = -1) override;
  Result<StepReport> RunStep(Communicator& comm, const MicrobatchInput& input,
                             const Graph& graph) override;
  Result<std::vector<ParameterTile>> FetchParameters() const override;
  // The next step's feeds are encoded while the GPU finishes this step (prepared_feeds.h).
  void AnnounceNextInput(MicrobatchInput next) override;
  bool PreparesNextInput() const override { return true; }

  int32_t gpu() const override { return gpu_; }
  const std::vector<DType>& storage() const { return storage_; }

 private:
  CudaRunner(const DeviceProgram& program, int32_t gpu, const CudaBackendOptions& options);
  Status Initialize();

  // The step's instructions in order, then the announced feeds prepared, then the wait for
  // the GPU.
  Result<StepReport> RunInstructions(Communicator& comm, const MicrobatchInput& input,
                                     const Graph& graph);
  // One function per instruction kind (Execute dispatches).
  Status Execute(Communicator& comm, const Instruction& in, const MicrobatchInput& input,
                 const Graph& graph, StepReport& report);
  Status RunOp(const Instruction& in);
  // Launches op `id` of `local` on the buffers `operands` into buffer `out` (allocated here).
  Status LaunchOn(const Graph& local, int32_t id, const std::vector<int32_t>& operands, int32_t out,
                  const cuda::OpLaunch& launch);
  // Runs fused group `index` (fusion_plan.h) in place of its root instruction.
  Status RunFused(size_t index);
  // Runs product `index` (transposed_product.h) in place of its dot: the swapped operands'
  // product into the transpose's buffer.
  Status RunTransposedProduct(size_t index);
  // Runs the forward or backward kernels of attention region `index` (attention_plan.h) in place
  // of `instruction` (the region's forward_at or backward_at): the forward keeps the rows'
  // log-sum-exp in attention_lse_ until the backward has read it.
  Status RunAttention(size_t index, int32_t instruction);
  Status RunAttentionForward(size_t index);
  Status RunAttentionBackward(size_t index);
  // An operand's buffer as the kernels' view: allocated when the kernels write it.
  Result<cuda::AttentionView> AttentionViewOf(const cuda::AttentionOperand& x, bool write);
  struct AttentionBinding {
    const cuda::AttentionOperand* operand;
    cuda::AttentionView* view;
    bool write;
  };
  // Each binding's view (AttentionViewOf) into *view.
  Status BindAttentionViews(std::initializer_list<AttentionBinding> bindings);
  // Plans the fusion of the program's elementwise chains (and, with ALPA_CUDA_FLASH_ATTENTION=1,
  // its attention cores: attention_plan.h) and compiles their kernels, unless
  // ALPA_CUDA_FUSION=0 is in the environment.
  Status PrepareFusion();
  // cuDNN for the program's convolutions, when it has some and cuDNN can be used.
  void PrepareConvolutions();
  Status RunCollective(Communicator& comm, const Instruction& in, StepReport& report);
  Status RunSlice(const Instruction& in);
  Status RunSend(Communicator& comm, const Instruction& in, StepReport& report);
  Status RunRecv(Communicator& comm, const Instruction& in, StepReport& report);
  Status RunFeed(const Instruction& in, const MicrobatchInput& input, const Graph& graph);
  Status RunAccumulate(const Instruction& in);
  Status RunScale(const Instruction& in);
  Status RunCopy(const Instruction& in);
  Status ReportLoss(const Instruction& in, StepReport& report);

  // The buffer table. Allocate keeps the memory of a buffer that is already allocated (the
  // same shape: an instruction overwriting it); the memory is not cleared.
  Result<cuda::DeviceTensor*> Allocate(int32_t buffer);
  void Release(int32_t buffer);
  // Gives `dst` the memory of `src` (handover_): swapped when dst holds memory, else moved.
  void HandOver(int32_t src, int32_t dst);
  Result<const cuda::DeviceTensor*> Get(int32_t buffer) const;
  // A dense tensor of `shape` in `storage` outside the table (staging), freed by ReleaseTemp.
  Result<cuda::DeviceTensor> AllocateTemp(const Dims& shape, DType storage);
  void ReleaseTemp(cuda::DeviceTensor& t);

  // Host <-> device: the values of `t` as doubles (waits for the stream), and `values` (t's
  // elements) rounded to `round_to` into t's storage.
  Status Download(const cuda::DeviceTensor& t, std::vector<double>& values) const;
  Status Upload(const std::vector<double>& values, DType round_to, cuda::DeviceTensor& t);
  // A feed's upload: encoded on every host thread into pinned staging memory (reused once the
  // previous feed's copy from it is done) and copied without waiting for the copy.
  Status UploadFeed(const double* values, DType round_to, cuda::DeviceTensor& t);
  Status ReserveFeedStaging(size_t bytes);
  Status Synchronize(const char* what) const;
  Status SelectGpu() const;

  cuda::LaunchContext Context();

  std::string ProfileLabel(const Instruction& in) const;

  const DeviceProgram& program_;
  // ALPA_CUDA_PROFILE: wait after every instruction and print where the step's time went.
  const bool profiling_;
  cuda::StepProfile profile_;
  const int32_t gpu_;
  const CudaBackendOptions options_;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t blas_ = nullptr;
  cublasHandle_t gemm_ = nullptr;
  // Declared before everything that holds its blocks, so that it is destroyed after them.
  std::unique_ptr<cuda::DeviceAllocator> allocator_;
  std::unique_ptr<cuda::AllocatorScratch> scratch_;
  void* blas_workspace_ = nullptr;
  std::vector<DType> storage_;  // per buffer (storage_policy.h)
  cuda::FusionPlan fusion_;     // empty: every instruction runs alone
  std::vector<char> handover_;  // per instruction: a move done by handing memory over
  std::unique_ptr<cuda::FusedKernels> fused_;
  // Per attention region: its forward's row statistics (the log-sum-exp per query row), held
  // from the forward to the backward; null outside.
  std::vector<void*> attention_lse_;
  std::unique_ptr<cuda::DnnConvolutions> dnn_;  // null: convolutions on the direct kernel
  // Per buffer: whether an instruction other than kFree reads it. A feed of a buffer nothing
  // reads (an input of a piece that does not use it) uploads nothing.
  std::vector<char> read_;
  void* feed_staging_ = nullptr;  // pinned host memory of feed_staging_bytes_
  size_t feed_staging_bytes_ = 0;
  cudaEvent_t feed_copied_ = nullptr;  // recorded after the last copy from feed_staging_
  std::vector<double> feed_box_;       // a feed's box when it is not the whole tensor
  cuda::PreparedFeeds prepared_;       // feeds encoded during the previous step
  MicrobatchInput announced_;          // the next step's input (empty: not known)
  std::vector<cuda::DeviceTensor> buffers_;
  std::vector<char> allocated_;
  mutable std::vector<unsigned char> staging_;  // host bytes of an upload or download
  // For messages: the instruction running, and the last one after which the host waited for
  // the GPU (an asynchronous kernel error happened in between).
  mutable int64_t instruction_ = -1, waited_after_ = -1;
  int64_t live_bytes_ = 0;
  int64_t peak_bytes_ = 0;
};

}  // namespace alpa
