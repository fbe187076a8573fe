// Sharded equals one device on MPI processes: every case of the shared list
// (support/plan_equivalence_cases.h) runs with device d as MPI rank d, run by ctest as
// `mpirun -np 8` (mpirun_test.sh); a case on fewer devices leaves the spare ranks idle. Rank 0
// plans each case (the planner's time-limited solves may differ between processes) and hands
// every rank the plan as its JSON (kPlanJsonExecutable), so all run the same plan; rank 0
// gathers the results and checks them against the interpreter and the plan exactly as the
// thread-device test does, and every rank learns the verdict, so all exit with the same status.
//   mpi_plan_equivalence_checks [NAME_FILTER]   only the cases whose name contains NAME_FILTER
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "exec/comm/mpi_communicator.h"
#include "models/planner_model.h"
#include "solvers/planner/plan_json.h"
#include "solvers/planner/plan_json_read.h"
#include "support/plan_equivalence_cases.h"

namespace alpa::testing {
namespace {

DeviceGroup World(const Communicator& comm) {
  DeviceGroup all;
  for (int32_t r = 0; r < comm.size(); ++r) all.push_back(r);
  return all;
}

// Rank 0's text on every rank: its length, then its bytes, each as a double of a sum to which
// only rank 0 adds (exact).
Result<std::string> ShareText(Communicator& comm, const std::string& text) {
  const DeviceGroup all = World(comm);
  double length = comm.rank() == 0 ? static_cast<double>(text.size()) : 0;
  ALPA_RETURN_IF_ERROR(comm.AllReduce(all, ReduceOp::kSum, &length, 1));
  std::vector<double> bytes(static_cast<size_t>(length), 0.0);
  if (comm.rank() == 0) {
    for (size_t i = 0; i < text.size(); ++i) bytes[i] = static_cast<unsigned char>(text[i]);
  }
  ALPA_RETURN_IF_ERROR(
      comm.AllReduce(all, ReduceOp::kSum, bytes.data(), static_cast<int64_t>(bytes.size())));
  std::string shared(bytes.size(), '\0');
  for (size_t i = 0; i < bytes.size(); ++i) shared[i] = static_cast<char>(bytes[i]);
  return shared;
}

// Rank 0 plans the case and writes the plan as JSON; "" on the other ranks.
Result<std::string> PlanOnRankZero(const Communicator& comm, const EquivalenceCase& c) {
  if (comm.rank() != 0) return std::string();
  Result<PlannedCase> planned = PlanEquivalenceCase(c);
  if (!planned.ok()) return planned.status();
  return PipelinePlanJson(planned.value().plan, planned.value().cluster, c.model,
                          kPlanJsonExecutable);
}

// Runs one case on every rank; Ok on rank 0 when it passed (the other ranks return Ok unless
// their part failed).
Status RunCase(Communicator& comm, const EquivalenceCase& c, double* memory_ratio) {
  // Every rank takes part in sharing, even when rank 0 could not plan (it shares "").
  Result<std::string> json = PlanOnRankZero(comm, c);
  Result<std::string> shared = ShareText(comm, json.ok() ? json.value() : std::string());
  if (!json.ok()) return json.status();
  if (!shared.ok()) return shared.status();
  if (shared.value().empty()) return InternalError("rank 0 could not plan the case");
  Cluster cluster;
  Result<PipelinePlan> plan = ReadPipelinePlanJson(shared.value(), &cluster);
  if (!plan.ok()) return plan.status();
  Result<PlannerModel> model = PlannerModelFromSpec(c.model);
  if (!model.ok()) return model.status();
  Result<Graph> whole = model.value().build(1);
  if (!whole.ok()) return whole.status();
  Result<PlanRunReport> run =
      RunPlanOnProcesses(plan.value(), whole.value(), EquivalenceRunOptions(c), comm);
  if (!run.ok()) return run.status();
  if (comm.rank() != 0) return Status::Ok();
  *memory_ratio = WorstMemoryRatio(run.value());
  return CheckEquivalenceRun(plan.value(), run.value());
}

int Main(int argc, char** argv) {
  Result<std::unique_ptr<Communicator>> created = CreateMpiCommunicator();
  if (!created.ok()) {
    std::fprintf(stderr, "CreateMpiCommunicator: %s\n", created.status().message().c_str());
    return 1;
  }
  std::unique_ptr<Communicator> comm = std::move(created).value();
  const std::string filter = argc > 1 ? argv[1] : "";
  int64_t ran = 0, failed = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const EquivalenceCase& c : EquivalenceCases()) {
    if (c.name.find(filter) == std::string::npos) continue;
    const auto case_start = std::chrono::steady_clock::now();
    double memory_ratio = 1;
    Status status = RunCase(*comm, c, &memory_ratio);
    // A failure during the run has aborted the job (the executor's Abort); one before it (the
    // plan, its JSON, the model) happens on every rank alike. Every rank contributes its
    // verdict, so all agree on the case.
    double verdict = status.ok() ? 0 : 1;
    Status agreed = comm->AllReduce(World(*comm), ReduceOp::kMax, &verdict, 1);
    if (!agreed.ok()) comm->Abort(agreed);
    ++ran;
    failed += verdict != 0 ? 1 : 0;
    if (comm->rank() == 0) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - case_start).count();
      if (status.ok()) {
        std::printf("passed %s (%.2f s; memory: measured / planned peak, worst device %.3f)\n",
                    c.name.c_str(), seconds, memory_ratio);
      } else {
        std::printf("FAILED %s: %s\n", c.name.c_str(), status.message().c_str());
      }
      std::fflush(stdout);
    }
  }
  if (comm->rank() == 0) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%lld of %lld cases passed on %d processes in %.1f s\n",
                static_cast<long long>(ran - failed), static_cast<long long>(ran), comm->size(),
                seconds);
  }
  const bool passed = ran > 0 && failed == 0;
  comm.reset();
  Status finalized = FinalizeMpi();
  if (!finalized.ok()) std::fprintf(stderr, "FinalizeMpi: %s\n", finalized.message().c_str());
  return passed ? 0 : 1;
}

}  // namespace
}  // namespace alpa::testing

int main(int argc, char** argv) { return alpa::testing::Main(argc, argv); }
