// The (model, plan) cases that prove sharded execution equal to one device, shared by the
// thread-device test (tests/unit/exec/driver/plan_equivalence_test.cc) and the MPI test program
// (mpi_plan_equivalence_checks.cc, 8 processes under mpirun): plans that `alpa baseline` (manual
// Megatron-style plans) and `alpa plan` (the planner) produce for every zoo family, run for 3
// Adam (or momentum) steps in f32 and checked against the one-device interpreter within rtol
// 1e-5, atol 4e-5, and against the plan (plan_conformance.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/util/status.h"
#include "exec/driver/plan_run.h"
#include "solvers/planner/manual_plan.h"

namespace alpa::testing {

struct EquivalenceCase {
  std::string name;
  std::string model;
  std::string cluster;
  bool planner = false;  // the planner's plan; else the manual spec
  ManualPlanSpec manual;
  int64_t microbatches = 1;  // planner: fixed B
  RematMode remat = RematMode::kSearch;
  PipelineScheduleKind schedule = PipelineScheduleKind::kOneFOneB;
  // Planner only: the device memory to fit (0: the cluster's), and the pins.
  int64_t device_memory_bytes = 0;
  int32_t pipeline_stages = 0;
  int64_t max_tensor_parallel = 0;
};

// Every family on the meshes 1x2, 2x1, 2x2, 1x4, 2x4, pipelines of 1 to 4 stages, ZeRO and
// rematerialization on and off, 1F1B, GPipe, ZB-H1 and interleaved 1F1B (2 device groups of 2
// stages), selective recomputation, ZeRO-2, ZeRO-3 (manual and planned) and transfers with a
// local all-gather: 100 cases on 2 to 8 devices.
std::vector<EquivalenceCase> EquivalenceCases();

struct PlannedCase {
  PipelinePlan plan;
  Cluster cluster;
  Graph whole;  // the model's graph for the whole batch (the check's reference)
};

// Builds the case's model and cluster and plans it (the planner, or the manual plan).
Result<PlannedCase> PlanEquivalenceCase(const EquivalenceCase& c);

// 3 steps with the check on, in the case's schedule.
PlanRunOptions EquivalenceRunOptions(const EquivalenceCase& c);

// Ok when every step of the run is within tolerance and the run conforms to the plan; else the
// first failing step (loss and worst parameter against the reference) or the conformance error.
Status CheckEquivalenceRun(const PipelinePlan& plan, const PlanRunReport& run);

// Measured over planned peak memory at the last step, the device farthest from 1 (the thread
// test asserts the bounds of docs/executor.md per device; this is the MPI test's report).
double WorstMemoryRatio(const PlanRunReport& run);

}  // namespace alpa::testing
