#include "exec/cuda/dnn_convolution.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exec/cuda/dnn_loader.h"
#include "exec/cuda/env_switch.h"

namespace alpa {
namespace cuda {

namespace {

// Plans needing more workspace than this are passed over (the next engine is tried).
constexpr int64_t kMaxWorkspaceBytes = int64_t{1} << 30;

// Unique ids of the three tensors in a plan's variant pack.
constexpr int64_t kXId = 1, kWId = 2, kYId = 3;

// The process's cuDNN, loaded by DnnConvolutions::Create before anything here runs.
const DnnApi& Api() { return *LoadDnn().value(); }

Status DnnError(cudnnStatus_t s, const std::string& what) {
  char detail[512] = {0};
  Api().GetLastErrorString(detail, sizeof detail);
  std::string message = what + ": cuDNN " + Api().GetErrorString(s);
  if (detail[0] != '\0') message += std::string(" (") + detail + ")";
  return InternalError(message);
}

#define ALPA_DNN_RETURN_IF_ERROR(expr, what)        \
  do {                                              \
    const cudnnStatus_t alpa_dnn_status_ = (expr);  \
    if (alpa_dnn_status_ != CUDNN_STATUS_SUCCESS) { \
      return DnnError(alpa_dnn_status_, (what));    \
    }                                               \
  } while (0)

// One backend descriptor, destroyed with its owner.
class Descriptor {
 public:
  Descriptor() = default;
  ~Descriptor() {
    if (d_ != nullptr) (void)Api().BackendDestroyDescriptor(d_);
  }
  Descriptor(Descriptor&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  Descriptor& operator=(Descriptor&& o) noexcept {
    if (this != &o) {
      if (d_ != nullptr) (void)Api().BackendDestroyDescriptor(d_);
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnStatus_t Create(cudnnBackendDescriptorType_t type) {
    return Api().BackendCreateDescriptor(type, &d_);
  }
  cudnnStatus_t Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                    int64_t count, const void* values) {
    return Api().BackendSetAttribute(d_, name, type, count, values);
  }
  cudnnStatus_t Finalize() { return Api().BackendFinalize(d_); }
  cudnnBackendDescriptor_t get() const { return d_; }
  cudnnBackendDescriptor_t* address() { return &d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

cudnnDataType_t DnnType(DType t) {
  switch (t) {
    case DType::kF16:
      return CUDNN_DATA_HALF;
    case DType::kBF16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

std::vector<int64_t> DenseStridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

Status MakeTensor(Descriptor* t, int64_t uid, DType type, const std::vector<int64_t>& dims,
                  int64_t alignment, const std::string& what) {
  const std::string where = what + ": tensor descriptor";
  const cudnnDataType_t data_type = DnnType(type);
  const std::vector<int64_t> strides = DenseStridesOf(dims);
  const int64_t rank = static_cast<int64_t>(dims.size());
  ALPA_DNN_RETURN_IF_ERROR(t->Create(CUDNN_BACKEND_TENSOR_DESCRIPTOR), where);
  ALPA_DNN_RETURN_IF_ERROR(t->Set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &data_type),
                           where);
  ALPA_DNN_RETURN_IF_ERROR(
      t->Set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank, dims.data()), where);
  ALPA_DNN_RETURN_IF_ERROR(
      t->Set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank, strides.data()), where);
  ALPA_DNN_RETURN_IF_ERROR(t->Set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid), where);
  ALPA_DNN_RETURN_IF_ERROR(
      t->Set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment), where);
  ALPA_DNN_RETURN_IF_ERROR(t->Finalize(), where);
  return Status::Ok();
}

Status MakeConvolution(Descriptor* c, const DnnConvGeometry& g, const std::string& what) {
  const std::string where = what + ": convolution descriptor";
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  // The backward-data geometry's kernel is flipped (dnn_convolution_geometry.h).
  const cudnnConvolutionMode_t mode =
      g.direction == DnnConvDirection::kForward ? CUDNN_CROSS_CORRELATION : CUDNN_CONVOLUTION;
  const int64_t spatial = static_cast<int64_t>(g.strides.size());
  ALPA_DNN_RETURN_IF_ERROR(c->Create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR), where);
  ALPA_DNN_RETURN_IF_ERROR(
      c->Set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute), where);
  ALPA_DNN_RETURN_IF_ERROR(
      c->Set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode), where);
  ALPA_DNN_RETURN_IF_ERROR(
      c->Set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial), where);
  ALPA_DNN_RETURN_IF_ERROR(
      c->Set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial, g.dilations.data()),
      where);
  ALPA_DNN_RETURN_IF_ERROR(
      c->Set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial, g.strides.data()),
      where);
  ALPA_DNN_RETURN_IF_ERROR(
      c->Set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial, g.pre_padding.data()),
      where);
  ALPA_DNN_RETURN_IF_ERROR(c->Set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial,
                                  g.post_padding.data()),
                           where);
  ALPA_DNN_RETURN_IF_ERROR(c->Finalize(), where);
  return Status::Ok();
}

// Whether an engine with these numerical notes computes what the kernels' contract allows.
bool KeepsNumerics(const std::vector<cudnnBackendNumericalNote_t>& notes, DType type,
                   bool allow_tf32) {
  for (cudnnBackendNumericalNote_t note : notes) {
    switch (note) {
      case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
      case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
        // Tensor cores take 16-bit inputs as they are; f32 inputs only as TF32.
        if (type == DType::kF32 && !allow_tf32) return false;
        if (note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS && type != DType::kF32) return false;
        break;
      case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
      case CUDNN_NUMERICAL_NOTE_FFT:
      case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
      case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13:
        return false;
      default:
        break;
    }
  }
  return true;
}

std::string RequestKey(const DnnConvRequest& r) {
  return DnnConvGeometryKey(r.geometry) + " " + DTypeName(r.type) + "->" +
         DTypeName(r.result_type) + " align " + std::to_string(r.input_alignment) + "," +
         std::to_string(r.kernel_alignment) + "," + std::to_string(r.result_alignment) +
         (r.allow_tf32 ? " tf32" : "");
}

}  // namespace

struct DnnConvPlan {
  DnnConvDirection direction = DnnConvDirection::kForward;
  Descriptor x, w, y, convolution, operation, graph, config, plan;
  int64_t workspace_bytes = 0;
};

bool DnnConvolutionsEnabled() { return SwitchedOnByDefault("ALPA_CUDA_CUDNN"); }

Result<std::unique_ptr<DnnConvolutions>> DnnConvolutions::Create() {
  Result<const DnnApi*> api = LoadDnn();
  if (!api.ok()) return api.status();
  cudnnHandle_t handle = nullptr;
  const cudnnStatus_t s = api.value()->Create(&handle);
  if (s != CUDNN_STATUS_SUCCESS) {
    return Status(StatusCode::kUnsupported, DnnError(s, "creating a cuDNN handle").message());
  }
  return std::unique_ptr<DnnConvolutions>(new DnnConvolutions(handle));
}

DnnConvolutions::DnnConvolutions(cudnnContext* handle) : handle_(handle) {}

DnnConvolutions::~DnnConvolutions() {
  plans_.clear();  // their descriptors go before the handle
  if (handle_ != nullptr) (void)Api().Destroy(handle_);
}

int64_t DnnConvolutions::WorkspaceBytes(const DnnConvPlan& plan) { return plan.workspace_bytes; }

namespace {

// The engine configurations of `heuristics_mode` for `graph`, best first.
Status HeuristicConfigs(const Descriptor& graph, cudnnBackendHeurMode_t heuristics_mode,
                        std::vector<Descriptor>* configs, const std::string& what) {
  const std::string where = what + ": engine heuristics";
  Descriptor heuristics;
  ALPA_DNN_RETURN_IF_ERROR(heuristics.Create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR), where);
  cudnnBackendDescriptor_t g = graph.get();
  ALPA_DNN_RETURN_IF_ERROR(
      heuristics.Set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g),
      where);
  ALPA_DNN_RETURN_IF_ERROR(
      heuristics.Set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heuristics_mode), where);
  ALPA_DNN_RETURN_IF_ERROR(heuristics.Finalize(), where);
  int64_t count = 0;
  ALPA_DNN_RETURN_IF_ERROR(
      Api().BackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
      where);
  configs->clear();
  configs->resize(static_cast<size_t>(count));
  std::vector<cudnnBackendDescriptor_t> raw;
  for (Descriptor& c : *configs) {
    ALPA_DNN_RETURN_IF_ERROR(c.Create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR), where);
    raw.push_back(c.get());
  }
  int64_t got = 0;
  if (count > 0) {
    ALPA_DNN_RETURN_IF_ERROR(
        Api().BackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
        where);
  }
  configs->resize(static_cast<size_t>(got));
  return Status::Ok();
}

// The numerical notes of a configuration's engine.
Status EngineNotes(const Descriptor& config, std::vector<cudnnBackendNumericalNote_t>* notes,
                   const std::string& what) {
  const std::string where = what + ": engine notes";
  Descriptor engine;
  ALPA_DNN_RETURN_IF_ERROR(engine.Create(CUDNN_BACKEND_ENGINE_DESCRIPTOR), where);
  int64_t n = 0;
  ALPA_DNN_RETURN_IF_ERROR(
      Api().BackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, engine.address()),
      where);
  notes->assign(CUDNN_NUMERICAL_NOTE_TYPE_COUNT, CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
  int64_t count = 0;
  ALPA_DNN_RETURN_IF_ERROR(
      Api().BackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count,
                                notes->data()),
      where);
  notes->resize(static_cast<size_t>(count));
  return Status::Ok();
}

// An execution plan of `config` (false in *made when cuDNN cannot finalize it for this graph).
Status MakePlan(cudnnHandle_t handle, const Descriptor& config, Descriptor* plan, bool* made,
                const std::string& what) {
  const std::string where = what + ": execution plan";
  *made = false;
  ALPA_DNN_RETURN_IF_ERROR(plan->Create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR), where);
  ALPA_DNN_RETURN_IF_ERROR(
      plan->Set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle), where);
  cudnnBackendDescriptor_t c = config.get();
  ALPA_DNN_RETURN_IF_ERROR(
      plan->Set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c),
      where);
  *made = plan->Finalize() == CUDNN_STATUS_SUCCESS;
  return Status::Ok();
}

// The tensors, the convolution and the operation of a request (no GPU needed: cuDNN checks them
// on finalizing). cuDNN's x and y are the op's input and result (forward), or its result and
// input (backward data: dx and dy).
Status MakeOperation(const DnnConvRequest& r, DnnConvPlan* p, const std::string& what) {
  const DnnConvGeometry& g = r.geometry;
  const bool forward = g.direction == DnnConvDirection::kForward;
  ALPA_RETURN_IF_ERROR(MakeTensor(&p->x, kXId, forward ? r.type : r.result_type, g.x_dims,
                                  forward ? r.input_alignment : r.result_alignment, what));
  ALPA_RETURN_IF_ERROR(MakeTensor(&p->w, kWId, r.type, g.w_dims, r.kernel_alignment, what));
  ALPA_RETURN_IF_ERROR(MakeTensor(&p->y, kYId, forward ? r.result_type : r.type, g.y_dims,
                                  forward ? r.result_alignment : r.input_alignment, what));
  ALPA_RETURN_IF_ERROR(MakeConvolution(&p->convolution, g, what));
  const std::string where = what + ": convolution operation";
  Descriptor& op = p->operation;
  ALPA_DNN_RETURN_IF_ERROR(
      op.Create(forward ? CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR
                        : CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR),
      where);
  const std::pair<cudnnBackendAttributeName_t, cudnnBackendDescriptor_t> parts[] = {
      {forward ? CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X
               : CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
       p->x.get()},
      {forward ? CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W
               : CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
       p->w.get()},
      {forward ? CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y
               : CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
       p->y.get()},
      {forward ? CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC
               : CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
       p->convolution.get()}};
  for (const auto& part : parts) {
    ALPA_DNN_RETURN_IF_ERROR(op.Set(part.first, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &part.second),
                             where);
  }
  const float alpha = 1.0f, beta = 0.0f;
  ALPA_DNN_RETURN_IF_ERROR(op.Set(forward ? CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA
                                          : CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                                  CUDNN_TYPE_FLOAT, 1, &alpha),
                           where);
  ALPA_DNN_RETURN_IF_ERROR(op.Set(forward ? CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA
                                          : CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                                  CUDNN_TYPE_FLOAT, 1, &beta),
                           where);
  ALPA_DNN_RETURN_IF_ERROR(op.Finalize(), where);
  return Status::Ok();
}

// The operation graph of p's operation (needs the handle, hence a GPU).
Status MakeGraph(cudnnHandle_t handle, DnnConvPlan* p, const std::string& what) {
  const std::string where = what + ": operation graph";
  cudnnBackendDescriptor_t ops = p->operation.get();
  ALPA_DNN_RETURN_IF_ERROR(p->graph.Create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR), where);
  ALPA_DNN_RETURN_IF_ERROR(
      p->graph.Set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ops), where);
  ALPA_DNN_RETURN_IF_ERROR(
      p->graph.Set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle), where);
  ALPA_DNN_RETURN_IF_ERROR(p->graph.Finalize(), where);
  return Status::Ok();
}

// The first configuration (heuristics mode A, then the fallback list) that keeps the numerics,
// finalizes and fits the workspace limit, into p->config and p->plan; false when none does.
Result<bool> ChooseEngine(cudnnHandle_t handle, const DnnConvRequest& r, DnnConvPlan* p,
                          const std::string& what) {
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    std::vector<Descriptor> configs;
    ALPA_RETURN_IF_ERROR(HeuristicConfigs(p->graph, mode, &configs, what));
    for (Descriptor& config : configs) {
      std::vector<cudnnBackendNumericalNote_t> notes;
      ALPA_RETURN_IF_ERROR(EngineNotes(config, &notes, what));
      if (!KeepsNumerics(notes, r.type, r.allow_tf32)) continue;
      Descriptor plan;
      bool made = false;
      ALPA_RETURN_IF_ERROR(MakePlan(handle, config, &plan, &made, what));
      if (!made) continue;
      int64_t workspace = 0, n = 0;
      ALPA_DNN_RETURN_IF_ERROR(
          Api().BackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                    CUDNN_TYPE_INT64, 1, &n, &workspace),
          what + ": workspace size");
      if (workspace < 0 || workspace > kMaxWorkspaceBytes) continue;
      p->workspace_bytes = workspace;
      p->config = std::move(config);
      p->plan = std::move(plan);
      return true;
    }
  }
  return false;
}

}  // namespace

Status CheckDnnConvolutionOperation(const DnnConvRequest& request, const std::string& what) {
  Result<const DnnApi*> api = LoadDnn();
  if (!api.ok()) return api.status();
  DnnConvPlan plan;
  return MakeOperation(request, &plan, what);
}

Result<const DnnConvPlan*> DnnConvolutions::PlanFor(const DnnConvRequest& request,
                                                    const std::string& what) {
  const std::string key = RequestKey(request);
  auto found = plans_.find(key);
  if (found != plans_.end()) return static_cast<const DnnConvPlan*>(found->second.get());
  auto plan = std::make_unique<DnnConvPlan>();
  plan->direction = request.geometry.direction;
  ALPA_RETURN_IF_ERROR(MakeOperation(request, plan.get(), what));
  ALPA_RETURN_IF_ERROR(MakeGraph(handle_, plan.get(), what));
  Result<bool> chosen = ChooseEngine(handle_, request, plan.get(), what);
  if (!chosen.ok()) return chosen.status();
  if (!chosen.value()) plan.reset();
  const DnnConvPlan* result = plan.get();
  plans_[key] = std::move(plan);
  return result;
}

Status DnnConvolutions::Run(const DnnConvPlan& plan, cudaStream_t stream, const void* input,
                            const void* kernel, void* result, void* workspace,
                            const std::string& what) {
  ALPA_DNN_RETURN_IF_ERROR(Api().SetStream(handle_, stream), what + ": cuDNN stream");
  const std::string where = what + ": variant pack";
  Descriptor pack;
  ALPA_DNN_RETURN_IF_ERROR(pack.Create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR), where);
  const int64_t ids[3] = {kXId, kWId, kYId};
  // cuDNN's x, w, y (MakeOperation).
  void* in = const_cast<void*>(input);
  const bool forward = plan.direction == DnnConvDirection::kForward;
  void* pointers[3] = {forward ? in : result, const_cast<void*>(kernel), forward ? result : in};
  ALPA_DNN_RETURN_IF_ERROR(pack.Set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, ids),
                           where);
  ALPA_DNN_RETURN_IF_ERROR(
      pack.Set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers), where);
  ALPA_DNN_RETURN_IF_ERROR(
      pack.Set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace), where);
  ALPA_DNN_RETURN_IF_ERROR(pack.Finalize(), where);
  ALPA_DNN_RETURN_IF_ERROR(Api().BackendExecute(handle_, plan.plan.get(), pack.get()),
                           what + ": cudnnBackendExecute");
  return Status::Ok();
}

}  // namespace cuda
}  // namespace alpa
