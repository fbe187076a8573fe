#include "solvers/planner/microbatch_search.h"

#include <algorithm>
#include <map>
#include <utility>

namespace alpa {
namespace {

constexpr size_t kExtraCounts = 2;
constexpr int64_t kExtraCountSolves = 1000;
constexpr double kScreenMargin = 0.02;

// The counts next to `count` on the ladder `choices` (largest first): half of it, then twice it
// (those that exist).
std::vector<int64_t> LadderNeighbours(const std::vector<int64_t>& choices, int64_t count) {
  std::vector<int64_t> out;
  const auto at = std::find(choices.begin(), choices.end(), count);
  if (at == choices.end()) return out;
  if (at + 1 != choices.end()) out.push_back(*(at + 1));
  if (at != choices.begin()) out.push_back(*(at - 1));
  return out;
}

// One pass over the counts: screening (1-D meshes) or over every mesh.
struct Pass {
  bool screening = false;
  int64_t first_solve = 0;  // the call's intra-op solves before this pass
  std::vector<int64_t> tried;
  std::optional<double> best_seconds;
  int64_t best_count = 0;
};

class MicrobatchSearch {
 public:
  MicrobatchSearch(const std::vector<int64_t>& choices, const CountPlanner& planner)
      : choices_(choices), planner_(planner) {}

  Result<MicrobatchSearchResult> Run(bool screen) {
    if (choices_.size() > 1 && screen) {
      ALPA_RETURN_IF_ERROR(ScreenThenPlanBest());
    } else {
      Pass full;
      ALPA_RETURN_IF_ERROR(Search(full));
    }
    return std::move(result_);
  }

 private:
  // Plans count b in `pass`; false when the pass's plan got no better (or none fits while one
  // already does), or when the deadline stops the search.
  Result<bool> Plan(int64_t b, Pass& pass) {
    if (planner_.deadline_passed()) result_.time_limit_reached = true;
    if (result_.time_limit_reached) return false;
    pass.tried.push_back(b);
    if (std::find(result_.tried.begin(), result_.tried.end(), b) == result_.tried.end()) {
      result_.tried.push_back(b);
    }
    if (!pass.screening) result_.full.push_back(b);
    Result<CountAttempt> attempt = planner_.plan(b, pass.screening);
    if (!attempt.ok()) {
      // A count the deadline left nothing of ends the search with the plans found so far.
      if (attempt.status().code() != StatusCode::kTimeout) return attempt.status();
      result_.time_limit_reached = true;
      if (!result_.best) return attempt.status();
      return false;
    }
    CountAttempt& a = attempt.value();
    if (a.time_limit_reached) result_.time_limit_reached = true;
    if (!a.feasible) {
      if (!pass.screening) NoteInfeasible(a);
      return !pass.best_seconds;
    }
    const double seconds = a.plan.iteration_seconds;
    if (pass.screening) screened_[b] = seconds;
    if (!result_.best || seconds < result_.best->iteration_seconds) {
      result_.best = std::move(a.plan);
    }
    if (pass.best_seconds && seconds >= *pass.best_seconds) return false;
    pass.best_seconds = seconds;
    pass.best_count = b;
    return true;
  }

  // What a count planned on every mesh that fits nothing tells the final message.
  void NoteInfeasible(const CountAttempt& a) {
    if (a.pinned_out) ++result_.pinned_out_counts;
    result_.fitting_memory_skipped = result_.fitting_memory_skipped || a.fitting_memory_skipped;
    if (a.smallest_fitting_memory > 0 &&
        (result_.smallest_fitting < 0 || a.smallest_fitting_memory < result_.smallest_fitting)) {
      result_.smallest_fitting = a.smallest_fitting_memory;
    }
  }

  // Whether `pass` may plan another count: the first kCountsPerPass, then up to kExtraCounts
  // while the pass's solves stay cheap.
  bool WithinBudget(const Pass& pass) const {
    return pass.tried.size() < kCountsPerPass ||
           (pass.tried.size() < kCountsPerPass + kExtraCounts &&
            planner_.solves() - pass.first_solve <= kExtraCountSolves);
  }

  // A pass over the counts: the walk down the ladder, then the best count's neighbours.
  Status Search(Pass& pass) {
    for (size_t k = 0; k < choices_.size() && pass.tried.size() < kCountsPerPass; k += 2) {
      Result<bool> improved = Plan(choices_[k], pass);
      if (!improved.ok()) return improved.status();
      if (!improved.value()) break;
    }
    while (pass.best_seconds && WithinBudget(pass) && !result_.time_limit_reached) {
      int64_t next = 0;
      for (int64_t b : LadderNeighbours(choices_, pass.best_count)) {
        if (std::find(pass.tried.begin(), pass.tried.end(), b) == pass.tried.end()) {
          next = b;
          break;
        }
      }
      if (next == 0) break;
      Result<bool> improved = Plan(next, pass);
      if (!improved.ok()) return improved.status();
    }
    return Status::Ok();
  }

  // The screened count of the fastest plan and its neighbours within kScreenMargin, on every
  // logical mesh.
  Status PlanScreenedBest(const Pass& screening) {
    Pass full;
    Result<bool> first = Plan(screening.best_count, full);
    if (!first.ok()) return first.status();
    const double limit = *screening.best_seconds * (1 + kScreenMargin);
    for (int64_t b : LadderNeighbours(choices_, screening.best_count)) {
      const auto seen = screened_.find(b);
      if (result_.time_limit_reached || seen == screened_.end() || seen->second > limit) continue;
      Result<bool> next = Plan(b, full);
      if (!next.ok()) return next.status();
    }
    return Status::Ok();
  }

  // The screening pass, then the screened best on every mesh, or, where the screened plan has
  // a stage spanning hosts or none fits, the search over every mesh alone (cold, nothing of the
  // screening reused); the screened plan stays only if the deadline leaves that nothing.
  Status ScreenThenPlanBest() {
    Pass screening;
    screening.screening = true;
    ALPA_RETURN_IF_ERROR(Search(screening));
    if (result_.time_limit_reached) return Status::Ok();
    if (screening.best_seconds && StagesInsideHosts(*result_.best)) {
      return PlanScreenedBest(screening);
    }
    std::optional<PipelinePlan> screened_best = std::move(result_.best);
    result_.best.reset();
    planner_.forget_screening();
    Pass full;
    full.first_solve = planner_.solves();
    ALPA_RETURN_IF_ERROR(Search(full));
    if (!result_.best) result_.best = std::move(screened_best);
    return Status::Ok();
  }

  const std::vector<int64_t>& choices_;
  const CountPlanner& planner_;
  MicrobatchSearchResult result_;
  std::map<int64_t, double> screened_;  // count -> its screened plan's iteration seconds
};

}  // namespace

Result<MicrobatchSearchResult> SearchMicrobatchCounts(const std::vector<int64_t>& choices,
                                                      bool screen, const CountPlanner& planner) {
  return MicrobatchSearch(choices, planner).Run(screen);
}

bool ScreensMicrobatchCounts(const PlannerModel& model, const Cluster& cluster,
                             const PlannerOptions& options) {
  const bool two_dimensional_meshes =
      cluster.devices_per_host >= 4 || (cluster.hosts > 1 && cluster.devices_per_host >= 2);
  const int64_t group_cap =
      options.num_layers > 0 ? options.num_layers : DefaultLayerGroupCap(cluster);
  const int64_t groups = model.layers > 0 ? std::min(model.layers, group_cap) : group_cap;
  return options.screen_microbatch_counts && !cluster.mixed() && two_dimensional_meshes &&
         groups >= cluster.hosts;
}

bool StagesInsideHosts(const PipelinePlan& plan) {
  return std::all_of(plan.stages.begin(), plan.stages.end(),
                     [](const PlannedStage& st) { return st.submesh.hosts == 1; });
}

}  // namespace alpa
