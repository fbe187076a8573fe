#include "exec/driver/plan_run.h"

#include <utility>

#include "exec/driver/plan_executor.h"

namespace alpa {

namespace {

// world: null for thread devices.
Result<PlanRunReport> RunPlan(const PipelinePlan& plan, const Graph& reference,
                              const PlanRunOptions& options, Communicator* world) {
  if (options.steps < 1) return InvalidArgument("steps must be >= 1");
  Result<std::unique_ptr<PlanExecutor>> created =
      PlanExecutor::Create(plan, reference, options, world);
  if (!created.ok()) return created.status();
  PlanExecutor& ex = *created.value();
  PlanRunReport report;
  for (int64_t s = 0; s < options.steps; ++s) {
    Result<StepSummary> step = ex.RunStep();
    if (!step.ok()) return step.status();
    if (s == 0) {
      for (const DeviceStepResult& r : ex.last_results()) report.first_step.push_back(r.report);
    }
    report.passed = report.passed && step.value().passed;
    report.steps.push_back(std::move(step).value());
  }
  report.programs = ex.programs();
  return report;
}

}  // namespace

Result<PlanRunReport> RunPlanOnThreads(const PipelinePlan& plan, const Graph& reference,
                                       const PlanRunOptions& options) {
  return RunPlan(plan, reference, options, nullptr);
}

Result<PlanRunReport> RunPlanOnProcesses(const PipelinePlan& plan, const Graph& reference,
                                         const PlanRunOptions& options, Communicator& world) {
  return RunPlan(plan, reference, options, &world);
}

}  // namespace alpa
