#include "exec/driver/plan_executor.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "exec/comm/thread_communicator.h"
#include "exec/driver/synthetic_data.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace {

// The microbatch graph must be the reference graph with the batch cut: same ops, same
// persistent parameter types.
Status CheckSameModel(const Graph& micro, const Graph& reference) {
  if (micro.size() != reference.size()) {
    return InvalidArgument("the reference graph has " + std::to_string(reference.size()) +
                           " ops, the plan's graph " + std::to_string(micro.size()) +
                           ": not the same model");
  }
  for (int32_t id = 0; id < micro.size(); ++id) {
    const Op& a = micro.op(id);
    const Op& b = reference.op(id);
    const bool persistent = a.kind == OpKind::kParameter && (a.role == TensorRole::kParameter ||
                                                             a.role == TensorRole::kOptimizerState);
    if (a.kind != b.kind || a.role != b.role || a.dtype != b.dtype || a.name != b.name ||
        (persistent && a.shape != b.shape) || a.shape.size() != b.shape.size()) {
      return InvalidArgument("the plan's graph and the reference differ at " +
                             DescribeOp(micro, id) + " (reference: " + DescribeOp(reference, id) +
                             "): not the same model");
    }
  }
  return Status::Ok();
}

// Microbatch k of a whole-batch input: the rows [k * m, (k + 1) * m) of the dim where the two
// shapes differ.
Result<std::vector<HostTensor>> CutMicrobatches(const HostTensor& whole, const Dims& micro_shape,
                                                int64_t microbatches, const std::string& what) {
  int32_t dim = -1;
  for (size_t d = 0; d < whole.shape.size(); ++d) {
    if (whole.shape[d] != micro_shape[d]) dim = static_cast<int32_t>(d);
  }
  std::vector<HostTensor> out;
  if (dim < 0) {
    if (microbatches != 1) {
      return InvalidArgument(what + ": the input has the same shape " + ShapeString(whole.shape) +
                             " for the batch and a microbatch");
    }
    out.push_back(whole);
    return out;
  }
  if (whole.shape[static_cast<size_t>(dim)] !=
      micro_shape[static_cast<size_t>(dim)] * microbatches) {
    return InvalidArgument(what + ": " + ShapeString(whole.shape) + " is not " +
                           std::to_string(microbatches) + " microbatches of " +
                           ShapeString(micro_shape));
  }
  for (int64_t k = 0; k < microbatches; ++k) {
    HostTensor t;
    t.shape = micro_shape;
    t.dtype = whole.dtype;
    t.data.resize(static_cast<size_t>(ElementCountOf(micro_shape)));
    std::vector<int64_t> offsets(whole.shape.size(), 0);
    offsets[static_cast<size_t>(dim)] = k * micro_shape[static_cast<size_t>(dim)];
    ExtractBox(whole.data.data(), whole.shape, offsets, micro_shape, t.data.data());
    out.push_back(std::move(t));
  }
  return out;
}

struct Difference {
  double allclose = 0;  // max |a - b| / (atol + rtol |b|)
  double relative = 0;  // max |a - b| / |b| (|b| > 0)
};

// The tolerance for values of `dtype`: the caller's, raised for 16-bit floats to
// torch.testing.assert_close's defaults for them (f16 rtol 1e-3 atol 1e-5, bf16 rtol 1.6e-2
// atol 1e-5): one rounding of a sum taken in another order moves such a value by about its
// precision, far beyond the f32-sized default.
struct Tolerance {
  double rtol = 0, atol = 0;
};
Tolerance ToleranceFor(DType dtype, double rtol, double atol) {
  if (dtype == DType::kF16) return {std::max(rtol, 1e-3), std::max(atol, 1e-5)};
  if (dtype == DType::kBF16) return {std::max(rtol, 1.6e-2), std::max(atol, 1e-5)};
  return {rtol, atol};
}

// The loss is computed (often in f32) from values of the model's own precision: its noise is
// theirs. bf16 if any op is bf16, else f16 if any is f16, else f32.
DType LeastPreciseFloat(const Graph& graph) {
  DType least = DType::kF32;
  for (const Op& op : graph.ops) {
    if (op.dtype == DType::kBF16) return DType::kBF16;
    if (op.dtype == DType::kF16) least = DType::kF16;
  }
  return least;
}

Difference Compare(const std::vector<double>& got, const std::vector<double>& want,
                   const Tolerance& tolerance) {
  const double rtol = tolerance.rtol, atol = tolerance.atol;
  Difference d;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double diff = std::fabs(got[i] - want[i]);
    if (!std::isfinite(got[i]) || !std::isfinite(want[i])) {
      if (!(got[i] == want[i]) && !(std::isnan(got[i]) && std::isnan(want[i]))) {
        d.allclose = HUGE_VAL;
        d.relative = HUGE_VAL;
      }
      continue;
    }
    d.allclose = std::max(d.allclose, diff / (atol + rtol * std::fabs(want[i])));
    if (want[i] != 0) d.relative = std::max(d.relative, diff / std::fabs(want[i]));
  }
  return d;
}

}  // namespace

namespace {

Result<std::unique_ptr<ProgramRunner>> CreateRunner(const DeviceProgram& program,
                                                    const PlanRunOptions& options) {
  if (options.backend == ExecBackend::kCuda) return CreateCudaRunner(program, options.cuda);
  return std::unique_ptr<ProgramRunner>(std::make_unique<DeviceRuntime>(program));
}

}  // namespace

Result<std::unique_ptr<PlanExecutor>> PlanExecutor::Create(const PipelinePlan& plan,
                                                           const Graph& whole,
                                                           const PlanRunOptions& options,
                                                           Communicator* world) {
  ALPA_RETURN_IF_ERROR(CheckSameModel(plan.graph, whole));
  std::unique_ptr<PlanExecutor> ex(new PlanExecutor());
  ex->world_ = world;
  ex->plan_ = plan;
  ex->whole_ = whole;
  ex->options_ = options;
  LowerOptions lower = options.lower;
  lower.whole_batch = &ex->whole_;
  // Processes of one job share their hosts' cores: each lowers on one thread.
  if (world != nullptr) lower.threads = 1;
  Result<ProgramSet> lowered = LowerPlan(ex->plan_, lower);
  if (!lowered.ok()) return lowered.status();
  ex->programs_ = std::move(lowered).value();
  for (const DeviceProgram& p : ex->programs_.programs) ALPA_RETURN_IF_ERROR(ValidateProgram(p));
  if (world != nullptr && ex->programs_.devices > world->size()) {
    return InvalidArgument("the plan runs on " + std::to_string(ex->programs_.devices) +
                           " devices, the job has " + std::to_string(world->size()) +
                           " processes (mpirun -np " + std::to_string(ex->programs_.devices) + ")");
  }
  for (const DeviceProgram& p : ex->programs_.programs) {
    const bool here = world == nullptr || p.device == world->rank();
    if (p.stage < 0 || !here) {
      ex->runtimes_.push_back(nullptr);
      continue;
    }
    Result<std::unique_ptr<ProgramRunner>> runner = CreateRunner(p, options);
    if (!runner.ok()) return runner.status();
    ex->runtimes_.push_back(std::move(runner).value());
  }
  ex->results_.assign(ex->runtimes_.size(), DeviceStepResult());
  return ex;
}

// The parameters are made and loaded at the first use, so that lowering alone (alpa compile)
// allocates no tensor.
Status PlanExecutor::EnsureLoaded() {
  if (loaded_) return Status::Ok();
  parameters_ = InitialParameters(whole_, options_.seed);
  ALPA_RETURN_IF_ERROR(LoadAll());
  loaded_ = true;
  return Status::Ok();
}

Status PlanExecutor::LoadAll() {
  for (const auto& runtime : runtimes_) {
    if (runtime == nullptr) continue;
    ALPA_RETURN_IF_ERROR(runtime->LoadParameters(
        [&](int32_t t) -> const HostTensor* {
          auto it = parameters_.find(t);
          return it == parameters_.end() ? nullptr : &it->second;
        },
        plan_.graph));
  }
  // The tiles as loaded, so that Parameter() answers before the first step.
  results_.assign(runtimes_.size(), DeviceStepResult());
  ALPA_RETURN_IF_ERROR(FetchAllTiles());
  return Status::Ok();
}

Status PlanExecutor::FetchAllTiles() {
  for (size_t d = 0; d < runtimes_.size(); ++d) {
    if (runtimes_[d] == nullptr) continue;
    Result<std::vector<ParameterTile>> tiles = runtimes_[d]->FetchParameters();
    if (!tiles.ok()) return tiles.status();
    results_[d].tiles = std::move(tiles).value();
  }
  return Status::Ok();
}

Result<int32_t> PlanExecutor::FindTensor(const std::string& name) const {
  int32_t found = -1;
  for (int32_t id = 0; id < whole_.size(); ++id) {
    const Op& op = whole_.op(id);
    if (op.kind != OpKind::kParameter || op.name != name) continue;
    if (found >= 0) {
      return InvalidArgument("several parameters are named '" + name + "' (ops " +
                             std::to_string(found) + " and " + std::to_string(id) + ")");
    }
    found = id;
  }
  if (found < 0) return InvalidArgument("the model has no parameter or input named '" + name + "'");
  return found;
}

Status PlanExecutor::SetParameter(int32_t id, const HostTensor& value) {
  ALPA_RETURN_IF_ERROR(EnsureLoaded());
  if (id < 0 || id >= whole_.size() || parameters_.count(id) == 0) {
    return InvalidArgument("op " + std::to_string(id) +
                           " is not a parameter or optimizer state of the model");
  }
  const Op& op = whole_.op(id);
  if (value.shape != op.shape || value.size() != ElementCountOf(op.shape)) {
    return InvalidArgument("the value for " + DescribeOp(whole_, id) + " has shape " +
                           ShapeString(value.shape) + " (" + std::to_string(value.size()) +
                           " values), expected " + ShapeString(op.shape));
  }
  HostTensor t = value;
  t.dtype = op.dtype;
  if (t.dtype != DType::kF64) {
    for (double& v : t.data) v = RoundToDType(v, t.dtype);
  }
  parameters_[id] = std::move(t);
  for (const auto& runtime : runtimes_) {
    if (runtime == nullptr) continue;
    ALPA_RETURN_IF_ERROR(runtime->LoadParameters(
        [&](int32_t) -> const HostTensor* { return &parameters_[id]; }, plan_.graph, id));
  }
  ALPA_RETURN_IF_ERROR(FetchAllTiles());
  return Status::Ok();
}

Status PlanExecutor::SetInput(int32_t id, const HostTensor& value) {
  if (id < 0 || id >= whole_.size() || whole_.op(id).kind != OpKind::kParameter ||
      whole_.op(id).role != TensorRole::kInput) {
    return InvalidArgument("op " + std::to_string(id) + " is not a data input of the model");
  }
  const Op& op = whole_.op(id);
  if (value.shape != op.shape || value.size() != ElementCountOf(op.shape)) {
    return InvalidArgument("the batch for " + DescribeOp(whole_, id) + " has shape " +
                           ShapeString(value.shape) + " (" + std::to_string(value.size()) +
                           " values), expected the whole batch " + ShapeString(op.shape));
  }
  HostTensor t = value;
  t.dtype = op.dtype;
  next_inputs_[id] = std::move(t);
  return Status::Ok();
}

Result<std::map<int32_t, std::vector<HostTensor>>> PlanExecutor::Microbatches(
    const std::map<int32_t, HostTensor>& whole_inputs) const {
  std::map<int32_t, std::vector<HostTensor>> micro;
  for (const auto& [id, t] : whole_inputs) {
    Result<std::vector<HostTensor>> cut =
        CutMicrobatches(t, plan_.graph.op(id).shape, plan_.microbatches, DescribeOp(whole_, id));
    if (!cut.ok()) return cut.status();
    micro[id] = std::move(cut).value();
  }
  return micro;
}

namespace {

// The runtime's view of a step's data: microbatch `mb` of input `t`, or null.
MicrobatchInput MicrobatchLookup(const std::map<int32_t, std::vector<HostTensor>>& inputs) {
  return [&inputs](int32_t t, int64_t mb) -> const HostTensor* {
    auto it = inputs.find(t);
    if (it == inputs.end() || mb < 0 || mb >= static_cast<int64_t>(it->second.size())) {
      return nullptr;
    }
    return &it->second[static_cast<size_t>(mb)];
  };
}

}  // namespace

Result<std::unique_ptr<PlanExecutor::StepData>> PlanExecutor::MakeStepData(int64_t step,
                                                                           bool with_fed_inputs) {
  auto data = std::make_unique<StepData>();
  data->whole = StepInputs(whole_, options_.seed, step);
  if (with_fed_inputs) {
    for (auto& [id, t] : next_inputs_) data->whole[id] = std::move(t);
    next_inputs_.clear();
  }
  Result<std::map<int32_t, std::vector<HostTensor>>> micro = Microbatches(data->whole);
  if (!micro.ok()) return micro.status();
  data->micro = std::move(micro).value();
  return data;
}

Result<std::unique_ptr<PlanExecutor::StepData>> PlanExecutor::TakeStepData() {
  if (upcoming_ != nullptr && next_inputs_.empty()) return std::move(upcoming_);
  if (upcoming_ != nullptr) {
    for (auto& runner : runtimes_) {
      if (runner != nullptr) runner->AnnounceNextInput(MicrobatchInput());
    }
    upcoming_.reset();
  }
  return MakeStepData(step_, true);
}

Status PlanExecutor::AnnounceNextStep() {
  const bool wanted = std::any_of(runtimes_.begin(), runtimes_.end(), [](const auto& r) {
    return r != nullptr && r->PreparesNextInput();
  });
  if (!wanted) return Status::Ok();
  Result<std::unique_ptr<StepData>> next = MakeStepData(step_ + 1, false);
  if (!next.ok()) return next.status();
  upcoming_ = std::move(next).value();
  for (auto& runner : runtimes_) {
    if (runner != nullptr) runner->AnnounceNextInput(MicrobatchLookup(upcoming_->micro));
  }
  return Status::Ok();
}

Result<StepSummary> PlanExecutor::RunStep() {
  ALPA_RETURN_IF_ERROR(EnsureLoaded());
  Result<std::unique_ptr<StepData>> taken = TakeStepData();
  if (!taken.ok()) return taken.status();
  const std::unique_ptr<StepData> data = std::move(taken).value();
  ALPA_RETURN_IF_ERROR(AnnounceNextStep());
  ALPA_RETURN_IF_ERROR(world_ == nullptr ? RunDevicesOnThreads(data->micro)
                                         : RunLocalDevice(data->micro));
  Result<StepSummary> sum = Status::Ok();
  if (world_ == nullptr || world_->rank() == 0) sum = Summarize(data->whole);
  if (world_ != nullptr) {
    StepSummary shared = sum.ok() ? sum.value() : StepSummary();
    Status s = sum.ok() ? ShareSummary(shared) : sum.status();
    if (!s.ok()) {
      world_->Abort(s);
      return s;
    }
    sum = shared;
  }
  ++step_;
  return sum;
}

Status PlanExecutor::RunDevicesOnThreads(const std::map<int32_t, std::vector<HostTensor>>& inputs) {
  std::vector<DeviceStepResult> results(runtimes_.size());
  Status run = RunOnThreads(programs_.devices, [&](Communicator& comm) -> Status {
    const size_t d = static_cast<size_t>(comm.rank());
    if (runtimes_[d] == nullptr) return Status::Ok();
    Result<StepReport> step = runtimes_[d]->RunStep(comm, MicrobatchLookup(inputs), plan_.graph);
    if (!step.ok()) return step.status();
    results[d].report = std::move(step).value();
    Result<std::vector<ParameterTile>> tiles = runtimes_[d]->FetchParameters();
    if (!tiles.ok()) return tiles.status();
    results[d].tiles = std::move(tiles).value();
    return Status::Ok();
  });
  if (!run.ok()) return run;
  results_ = std::move(results);
  return Status::Ok();
}

Status PlanExecutor::RunLocalDevice(const std::map<int32_t, std::vector<HostTensor>>& inputs) {
  const size_t me = static_cast<size_t>(world_->rank());
  results_.assign(runtimes_.size(), DeviceStepResult());
  if (me < runtimes_.size() && runtimes_[me] != nullptr) {
    Result<StepReport> step =
        runtimes_[me]->RunStep(*world_, MicrobatchLookup(inputs), plan_.graph);
    if (!step.ok()) {
      world_->Abort(step.status());
      return step.status();
    }
    results_[me].report = std::move(step).value();
    Result<std::vector<ParameterTile>> tiles = runtimes_[me]->FetchParameters();
    if (!tiles.ok()) {
      world_->Abort(tiles.status());
      return tiles.status();
    }
    results_[me].tiles = std::move(tiles).value();
  }
  Status gathered = GatherResults();
  if (!gathered.ok()) world_->Abort(gathered);
  return gathered;
}

namespace {

// Above the lowering's tags (lower_plan.cc), within MPI's.
constexpr int64_t kResultTag = int64_t{1} << 30;
constexpr int64_t kSummaryTag = kResultTag + 1;

// A device's step result as doubles: losses (count, then microbatch and value pairs), peak
// bytes, seconds, the executed moves (count, then each as kind, origin, bytes, microbatch,
// tensor, collective, stage, group size and group), then every tile's values in the order of its
// program's owned bindings (rank 0 knows every program, so the tiles' places need not travel).
// Every integer is below 2^53, so it travels exactly as a double.
std::vector<double> PackResult(const DeviceStepResult& r) {
  std::vector<double> out;
  out.push_back(static_cast<double>(r.report.losses.size()));
  for (const auto& [mb, loss] : r.report.losses) {
    out.push_back(static_cast<double>(mb));
    out.push_back(loss);
  }
  out.push_back(static_cast<double>(r.report.peak_bytes));
  out.push_back(r.report.seconds);
  out.push_back(static_cast<double>(r.report.moves.size()));
  for (const ExecutedMove& m : r.report.moves) {
    out.insert(out.end(), {static_cast<double>(m.kind), static_cast<double>(m.origin),
                           static_cast<double>(m.bytes), static_cast<double>(m.microbatch),
                           static_cast<double>(m.tensor), static_cast<double>(m.collective),
                           static_cast<double>(m.stage), static_cast<double>(m.group.size())});
    for (int32_t g : m.group) out.push_back(static_cast<double>(g));
  }
  for (const ParameterTile& t : r.tiles) out.insert(out.end(), t.values.begin(), t.values.end());
  return out;
}

Status UnpackResult(const std::vector<double>& in, const DeviceProgram& program,
                    DeviceStepResult& r) {
  size_t at = 0;
  auto next = [&]() -> double { return at < in.size() ? in[at++] : 0.0; };
  const int64_t losses = static_cast<int64_t>(next());
  for (int64_t i = 0; i < losses; ++i) {
    const int64_t mb = static_cast<int64_t>(next());
    r.report.losses.push_back({mb, next()});
  }
  r.report.peak_bytes = static_cast<int64_t>(next());
  r.report.seconds = next();
  const int64_t moves = static_cast<int64_t>(next());
  for (int64_t i = 0; i < moves && at < in.size(); ++i) {
    ExecutedMove m;
    m.kind = static_cast<InstructionKind>(static_cast<int32_t>(next()));
    m.origin = static_cast<InstructionOrigin>(static_cast<int32_t>(next()));
    m.bytes = static_cast<int64_t>(next());
    m.microbatch = static_cast<int64_t>(next());
    m.tensor = static_cast<int32_t>(next());
    m.collective = static_cast<int32_t>(next());
    m.stage = static_cast<int32_t>(next());
    const int64_t members = static_cast<int64_t>(next());
    for (int64_t g = 0; g < members && at < in.size(); ++g) {
      m.group.push_back(static_cast<int32_t>(next()));
    }
    r.report.moves.push_back(std::move(m));
  }
  for (const ParameterBinding& b : program.parameters) {
    if (!b.owner) continue;
    ParameterTile t{b.tensor, b.offsets, b.sizes, {}, b.fetch};
    const size_t n = static_cast<size_t>(ElementCountOf(b.sizes));
    if (at + n > in.size()) {
      return InternalError("device " + std::to_string(program.device) + " sent " +
                           std::to_string(in.size()) + " values, fewer than its tiles hold");
    }
    t.values.assign(in.begin() + static_cast<std::ptrdiff_t>(at),
                    in.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
    r.tiles.push_back(std::move(t));
  }
  return Status::Ok();
}

}  // namespace

Status PlanExecutor::GatherResults() {
  const int32_t me = world_->rank();
  if (me != 0) {
    if (me >= programs_.devices || programs_.programs[static_cast<size_t>(me)].stage < 0) {
      return Status::Ok();
    }
    const std::vector<double> packed = PackResult(results_[static_cast<size_t>(me)]);
    const double count = static_cast<double>(packed.size());
    ALPA_RETURN_IF_ERROR(world_->Send(0, kResultTag, &count, 1));
    return world_->Send(0, kResultTag, packed.data(), static_cast<int64_t>(packed.size()));
  }
  for (int32_t d = 1; d < programs_.devices; ++d) {
    if (programs_.programs[static_cast<size_t>(d)].stage < 0) continue;
    double count = 0;
    ALPA_RETURN_IF_ERROR(world_->Recv(d, kResultTag, &count, 1));
    std::vector<double> packed(static_cast<size_t>(count));
    ALPA_RETURN_IF_ERROR(
        world_->Recv(d, kResultTag, packed.data(), static_cast<int64_t>(packed.size())));
    ALPA_RETURN_IF_ERROR(UnpackResult(packed, programs_.programs[static_cast<size_t>(d)],
                                      results_[static_cast<size_t>(d)]));
  }
  return Status::Ok();
}

Status PlanExecutor::ShareSummary(StepSummary& sum) {
  // Rank 0 sends the numbers every process reports; the per-device lists stay on rank 0.
  std::vector<double> v = {sum.loss,
                           sum.seconds,
                           sum.reference_loss,
                           sum.loss_error,
                           sum.loss_relative,
                           sum.parameter_error,
                           sum.parameter_relative,
                           sum.passed ? 1.0 : 0.0,
                           sum.replicas_agree ? 1.0 : 0.0};
  if (world_->rank() == 0) {
    for (int32_t r = 1; r < world_->size(); ++r) {
      ALPA_RETURN_IF_ERROR(world_->Send(r, kSummaryTag, v.data(), static_cast<int64_t>(v.size())));
    }
    return Status::Ok();
  }
  ALPA_RETURN_IF_ERROR(world_->Recv(0, kSummaryTag, v.data(), static_cast<int64_t>(v.size())));
  sum.step = step_;
  sum.loss = v[0];
  sum.seconds = v[1];
  sum.reference_loss = v[2];
  sum.loss_error = v[3];
  sum.loss_relative = v[4];
  sum.parameter_error = v[5];
  sum.parameter_relative = v[6];
  sum.passed = v[7] != 0;
  sum.replicas_agree = v[8] != 0;
  return Status::Ok();
}

Result<HostTensor> PlanExecutor::Parameter(int32_t id) {
  ALPA_RETURN_IF_ERROR(EnsureLoaded());
  if (id < 0 || id >= whole_.size() || parameters_.count(id) == 0) {
    return InvalidArgument("op " + std::to_string(id) +
                           " is not a parameter or optimizer state of the model");
  }
  HostTensor t;
  t.shape = whole_.op(id).shape;
  t.dtype = whole_.op(id).dtype;
  t.data.assign(static_cast<size_t>(ElementCountOf(t.shape)), 0.0);
  int64_t covered = 0;
  for (const DeviceStepResult& r : results_) {
    for (const ParameterTile& tile : r.tiles) {
      if (!tile.fetch || tile.tensor != id) continue;
      InsertBox(tile.values.data(), tile.offsets, tile.sizes, t.data.data(), t.shape);
      covered += ElementCountOf(tile.sizes);
    }
  }
  if (covered != t.size()) {
    return InternalError("the devices hold " + std::to_string(covered) + " of the " +
                         std::to_string(t.size()) + " values of " + DescribeOp(whole_, id));
  }
  return t;
}

Result<StepSummary> PlanExecutor::Summarize(const std::map<int32_t, HostTensor>& whole_inputs) {
  StepSummary sum;
  sum.step = step_;
  // The loss: the microbatch losses of the lowest device reporting them.
  for (const DeviceStepResult& r : results_) {
    if (r.report.losses.empty()) continue;
    double total = 0;
    for (const auto& [mb, l] : r.report.losses) total += l;
    sum.loss = total / static_cast<double>(r.report.losses.size());
    break;
  }
  for (size_t d = 0; d < results_.size(); ++d) {
    const bool idle = programs_.programs[d].stage < 0;
    sum.peak_bytes.push_back(idle ? -1 : results_[d].report.peak_bytes);
    sum.planned_bytes.push_back(idle ? -1 : programs_.programs[d].planned_memory_bytes);
    if (!idle) sum.seconds = std::max(sum.seconds, results_[d].report.seconds);
  }
  // Every copy of a tile holds the same values (replicas do not drift apart).
  std::map<std::tuple<int32_t, std::vector<int64_t>, std::vector<int64_t>>, const ParameterTile*>
      first;
  for (size_t d = 0; d < results_.size(); ++d) {
    for (const ParameterTile& tile : results_[d].tiles) {
      auto [it, inserted] = first.insert({{tile.tensor, tile.offsets, tile.sizes}, &tile});
      if (!inserted && it->second->values != tile.values && sum.replicas_agree) {
        sum.replicas_agree = false;
        sum.diverged_parameter =
            DescribeOp(whole_, tile.tensor) + " on device " + std::to_string(d);
      }
    }
  }
  sum.passed = sum.replicas_agree;
  if (!options_.check) {
    for (size_t i = 1; i < whole_.outputs.size(); ++i) {
      const int32_t target = whole_.op(whole_.outputs[i]).alias_of;
      if (target < 0) continue;
      Result<HostTensor> now = Parameter(target);
      if (!now.ok()) return now.status();
      parameters_[target] = std::move(now).value();
    }
    return sum;
  }
  // The reference steps on the same data, its updates fed back.
  HostFeeds feeds;
  for (const auto& [id, t] : parameters_) feeds[id] = t;
  for (const auto& [id, t] : whole_inputs) feeds[id] = t;
  InterpretOptions io;
  io.max_total_elements = 0;
  Result<std::vector<HostTensor>> out = Interpret(whole_, feeds, whole_.outputs, io);
  if (!out.ok()) return out.status();
  sum.reference_loss = out.value()[0].data.at(0);
  const Difference ld =
      Compare({sum.loss}, {sum.reference_loss},
              ToleranceFor(LeastPreciseFloat(whole_), options_.rtol, options_.atol));
  sum.loss_error = ld.allclose;
  sum.loss_relative = ld.relative;
  for (size_t i = 1; i < whole_.outputs.size(); ++i) {
    const int32_t target = whole_.op(whole_.outputs[i]).alias_of;
    if (target >= 0) parameters_[target] = out.value()[i];
  }
  for (const auto& [id, want] : parameters_) {
    Result<HostTensor> got = Parameter(id);
    if (!got.ok()) return got.status();
    const Difference pd = Compare(got.value().data, want.data,
                                  ToleranceFor(want.dtype, options_.rtol, options_.atol));
    if (pd.allclose > sum.parameter_error) {
      sum.parameter_error = pd.allclose;
      sum.worst_parameter = DescribeOp(whole_, id);
    }
    sum.parameter_relative = std::max(sum.parameter_relative, pd.relative);
  }
  sum.passed = sum.loss_error <= 1.0 && sum.parameter_error <= 1.0 && sum.replicas_agree;
  return sum;
}

}  // namespace alpa
