// The microbatch search of PlanPipeline: which counts of the global batch are planned, on which
// logical meshes, and which plan is kept.
//
// Each count costs every intra-op solve again, so a pass over the counts plans at most three of
// them: from the largest count down in steps of 4 (1024, 256, 64, ...) while the plan improves
// (or none fits yet); when the walk stops early, the counts next to the best one (half, then
// twice) fill the remaining ones. Up to two more neighbours are planned while the pass took at
// most 1,000 intra-op solves (counts that are cheap to solve; deterministic, unlike a time
// budget).
// With several counts to choose from (on one device type), the first pass screens them
// (ScreensMicrobatchCounts): it plans only the one-dimensional logical meshes (D, 1) of each
// submesh, about a tenth of the work (a two-dimensional mesh gives each op many more
// strategies). The count whose screened plan is fastest is then planned on every logical mesh
// (its 1-D solves taken from the screening), and so is each neighbour of it (half, twice) whose
// screened plan is within 2 % of it: the two-dimensional meshes speed plans up by a few percent
// and rarely move the best count. The plan kept is the fastest of all (a screened plan is a
// plan too). Where the screened plan has a stage spanning hosts (StagesInsideHosts) or none
// fits, the search runs again on every mesh as without screening (cold), and its plan alone is
// kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/cluster/cluster.h"
#include "core/util/status.h"
#include "solvers/planner/planner.h"

namespace alpa {

// The counts one pass plans before its extra neighbours (the work estimate's count).
constexpr size_t kCountsPerPass = 3;

// What planning one microbatch count gave.
struct CountAttempt {
  bool feasible = false;
  PipelinePlan plan;
  int64_t smallest_fitting_memory = -1;  // when infeasible: the least device memory that fits
  bool fitting_memory_skipped = false;   // when infeasible: the deadline left no time for it
  bool time_limit_reached = false;       // the deadline cut this count's work short
  bool pinned_out = false;               // the pins left no logical mesh at this count
};

// What the search asks of its planning call.
struct CountPlanner {
  // Plans one count; `screening`: on the one-dimensional logical meshes only.
  std::function<Result<CountAttempt>(int64_t count, bool screening)> plan;
  std::function<bool()> deadline_passed;
  std::function<int64_t()> solves;  // the call's intra-op solves so far
  // Forgets the screening's solves and warm starts, before a search over every mesh that
  // decides alone.
  std::function<void()> forget_screening;
};

struct MicrobatchSearchResult {
  std::optional<PipelinePlan> best;  // the fastest plan found, if any
  std::vector<int64_t> tried;        // every count planned, in order (once each)
  std::vector<int64_t> full;         // the counts planned on every logical mesh
  // Of the counts planned on every mesh that fit nothing: the least memory that fits one of
  // them, whether the deadline skipped finding it, and how many the pins left no mesh.
  int64_t smallest_fitting = -1;
  bool fitting_memory_skipped = false;
  int64_t pinned_out_counts = 0;
  bool time_limit_reached = false;  // the deadline stopped the search
};

// Searches `choices` (the counts, largest first) as the header comment says, screening first
// when `screen`. Errors: the planner's; kTimeout (the count's message) when the deadline cut a
// count short before any plan was found.
Result<MicrobatchSearchResult> SearchMicrobatchCounts(const std::vector<int64_t>& choices,
                                                      bool screen, const CountPlanner& planner);

// Whether the search screens its counts: not where every logical mesh is one-dimensional (one
// host of at most 3 devices, or one device per host: nothing to screen out), nor with fewer
// layer groups than hosts (some stage then spans hosts, where screening misleads:
// StagesInsideHosts), nor on mixed clusters (planned per pool), nor when the options turn it
// off.
bool ScreensMicrobatchCounts(const PlannerModel& model, const Cluster& cluster,
                             const PlannerOptions& options);

// Whether every stage of `plan` lies in one host. There a host's one-dimensional logical meshes
// stand for its meshes well enough to rank the microbatch counts (the two-dimensional ones
// refine the split inside a host by a few percent); a stage spanning hosts needs the
// two-dimensional meshes (tensor parallelism inside hosts, data parallelism across them), and
// the one-dimensional ones rank the counts wrongly there (SC'21's 76.1B on 128 hosts: 141
// instead of 202 TFLOP/s per GPU).
bool StagesInsideHosts(const PipelinePlan& plan);

}  // namespace alpa
