#include "exec/driver/plan_run.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
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
    const bool persistent =
        a.kind == OpKind::kParameter &&
        (a.role == TensorRole::kParameter || a.role == TensorRole::kOptimizerState);
    if (a.kind != b.kind || a.role != b.role || a.dtype != b.dtype || a.name != b.name ||
        (persistent && a.shape != b.shape) || a.shape.size() != b.shape.size()) {
      return InvalidArgument("the plan's graph and the reference differ at " +
                             DescribeOp(micro, id) + " (reference: " +
                             DescribeOp(reference, id) + "): not the same model");
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
      return InvalidArgument(what + ": the input has the same shape " +
                             ShapeString(whole.shape) + " for the batch and a microbatch");
    }
    out.push_back(whole);
    return out;
  }
  if (whole.shape[static_cast<size_t>(dim)] != micro_shape[static_cast<size_t>(dim)] * microbatches) {
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

Difference Compare(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                   double atol) {
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

// What every device thread writes back.
struct DeviceResults {
  std::vector<StepReport> reports;               // per step
  std::vector<std::vector<ParameterTile>> tiles;  // per step
};

}  // namespace

Result<PlanRunReport> RunPlanOnThreads(const PipelinePlan& plan, const Graph& reference,
                                       const PlanRunOptions& options) {
  if (options.steps < 1) return InvalidArgument("steps must be >= 1");
  ALPA_RETURN_IF_ERROR(CheckSameModel(plan.graph, reference));
  LowerOptions lower = options.lower;
  lower.whole_batch = &reference;
  Result<ProgramSet> lowered = LowerPlan(plan, lower);
  if (!lowered.ok()) return lowered.status();
  PlanRunReport report;
  report.programs = std::move(lowered).value();
  const ProgramSet& set = report.programs;
  for (const DeviceProgram& p : set.programs) ALPA_RETURN_IF_ERROR(ValidateProgram(p));

  // The data: whole-batch inputs per step, cut into microbatches.
  const std::map<int32_t, HostTensor> initial = InitialParameters(reference, options.seed);
  std::vector<std::map<int32_t, HostTensor>> whole(static_cast<size_t>(options.steps));
  std::vector<std::map<int32_t, std::vector<HostTensor>>> micro(static_cast<size_t>(options.steps));
  for (int64_t s = 0; s < options.steps; ++s) {
    whole[static_cast<size_t>(s)] = StepInputs(reference, options.seed, s);
    for (const auto& [id, t] : whole[static_cast<size_t>(s)]) {
      Result<std::vector<HostTensor>> cut =
          CutMicrobatches(t, plan.graph.op(id).shape, plan.microbatches, DescribeOp(reference, id));
      if (!cut.ok()) return cut.status();
      micro[static_cast<size_t>(s)][id] = std::move(cut).value();
    }
  }

  std::vector<DeviceResults> results(static_cast<size_t>(set.devices));
  Status run = RunOnThreads(set.devices, [&](Communicator& comm) -> Status {
    const DeviceProgram& program = set.programs[static_cast<size_t>(comm.rank())];
    DeviceResults& mine = results[static_cast<size_t>(comm.rank())];
    if (program.stage < 0) return Status::Ok();
    DeviceRuntime runtime(program, comm);
    ALPA_RETURN_IF_ERROR(runtime.LoadParameters(
        [&](int32_t t) -> const HostTensor* {
          auto it = initial.find(t);
          return it == initial.end() ? nullptr : &it->second;
        },
        plan.graph));
    for (int64_t s = 0; s < options.steps; ++s) {
      const auto& inputs = micro[static_cast<size_t>(s)];
      Result<StepReport> step = runtime.RunStep(
          [&](int32_t t, int64_t mb) -> const HostTensor* {
            auto it = inputs.find(t);
            if (it == inputs.end() || mb < 0 || mb >= static_cast<int64_t>(it->second.size())) {
              return nullptr;
            }
            return &it->second[static_cast<size_t>(mb)];
          },
          plan.graph);
      if (!step.ok()) return step.status();
      mine.reports.push_back(std::move(step).value());
      mine.tiles.push_back(runtime.FetchParameters());
    }
    return Status::Ok();
  });
  if (!run.ok()) return run;

  for (const DeviceResults& r : results) {
    report.first_step.push_back(r.reports.empty() ? StepReport() : r.reports[0]);
  }

  // The reference, step by step, with updates fed back.
  std::map<int32_t, HostTensor> feeds = initial;
  for (int64_t s = 0; s < options.steps; ++s) {
    StepSummary sum;
    sum.step = s;
    // The loss: the microbatch losses of the lowest device reporting them.
    for (const DeviceResults& r : results) {
      if (r.reports.empty() || r.reports[static_cast<size_t>(s)].losses.empty()) continue;
      double total = 0;
      for (const auto& [mb, l] : r.reports[static_cast<size_t>(s)].losses) total += l;
      sum.loss = total / static_cast<double>(r.reports[static_cast<size_t>(s)].losses.size());
      break;
    }
    for (size_t d = 0; d < results.size(); ++d) {
      const bool idle = set.programs[d].stage < 0;
      sum.peak_bytes.push_back(idle ? -1 : results[d].reports[static_cast<size_t>(s)].peak_bytes);
      sum.planned_bytes.push_back(idle ? -1 : set.programs[d].planned_memory_bytes);
      if (!idle) {
        sum.seconds = std::max(sum.seconds, results[d].reports[static_cast<size_t>(s)].seconds);
      }
    }
    if (options.check) {
      HostFeeds step_feeds;
      for (const auto& [id, t] : feeds) step_feeds[id] = t;
      for (const auto& [id, t] : whole[static_cast<size_t>(s)]) step_feeds[id] = t;
      InterpretOptions io;
      io.max_total_elements = 0;
      Result<std::vector<HostTensor>> out = Interpret(reference, step_feeds, reference.outputs, io);
      if (!out.ok()) return out.status();
      sum.reference_loss = out.value()[0].data.at(0);
      const Difference ld = Compare({sum.loss}, {sum.reference_loss}, options.rtol, options.atol);
      sum.loss_error = ld.allclose;
      sum.loss_relative = ld.relative;
      for (size_t i = 1; i < reference.outputs.size(); ++i) {
        const int32_t target = reference.op(reference.outputs[i]).alias_of;
        if (target >= 0) feeds[target] = out.value()[i];
      }
      // Every parameter and optimizer state, assembled from the devices' tiles.
      std::map<int32_t, HostTensor> got;
      std::map<int32_t, int64_t> covered;
      for (const DeviceResults& r : results) {
        if (r.tiles.empty()) continue;
        for (const ParameterTile& tile : r.tiles[static_cast<size_t>(s)]) {
          if (!tile.fetch) continue;
          HostTensor& t = got[tile.tensor];
          if (t.data.empty()) {
            t.shape = reference.op(tile.tensor).shape;
            t.data.assign(static_cast<size_t>(ElementCountOf(t.shape)), 0.0);
          }
          InsertBox(tile.values.data(), tile.offsets, tile.sizes, t.data.data(), t.shape);
          covered[tile.tensor] += ElementCountOf(tile.sizes);
        }
      }
      // Every copy of a tile holds the same values (replicas do not drift apart).
      std::map<std::tuple<int32_t, std::vector<int64_t>, std::vector<int64_t>>,
               const ParameterTile*>
          first;
      for (size_t d = 0; d < results.size(); ++d) {
        if (results[d].tiles.empty()) continue;
        for (const ParameterTile& tile : results[d].tiles[static_cast<size_t>(s)]) {
          auto [it, inserted] = first.insert({{tile.tensor, tile.offsets, tile.sizes}, &tile});
          if (!inserted && it->second->values != tile.values) {
            sum.replicas_agree = false;
            if (sum.diverged_parameter.empty()) {
              sum.diverged_parameter = DescribeOp(reference, tile.tensor) + " on device " +
                                       std::to_string(d);
            }
          }
        }
      }
      for (const auto& [id, want] : feeds) {
        auto it = got.find(id);
        if (it == got.end() || covered[id] != want.size()) {
          return InternalError("the devices hold " + std::to_string(covered[id]) + " of the " +
                               std::to_string(want.size()) + " values of " +
                               DescribeOp(reference, id) + " after step " + std::to_string(s));
        }
        const Difference pd = Compare(it->second.data, want.data, options.rtol, options.atol);
        if (pd.allclose > sum.parameter_error) {
          sum.parameter_error = pd.allclose;
          sum.worst_parameter = DescribeOp(reference, id);
        }
        sum.parameter_relative = std::max(sum.parameter_relative, pd.relative);
      }
      sum.passed = sum.loss_error <= 1.0 && sum.parameter_error <= 1.0 && sum.replicas_agree;
      report.passed = report.passed && sum.passed;
    }
    report.steps.push_back(std::move(sum));
  }
  return report;
}

}  // namespace alpa
