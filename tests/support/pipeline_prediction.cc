// Bisection over the 1F1B event graph's cycle ratio (pipeline_prediction.h).
#include "support/pipeline_prediction.h"

#include <algorithm>
#include <cstddef>
#include <limits>

namespace alpa::testing {
namespace {

struct Edge {
  size_t from, to;
  double weight;
  double slots;
};

// Whether some cycle has weight - period * slots > 0 (Bellman-Ford for longest paths).
bool HasPositiveCycle(size_t nodes, const std::vector<Edge>& edges, double period) {
  std::vector<double> dist(nodes, 0.0);
  for (size_t round = 0; round <= nodes; ++round) {
    bool changed = false;
    for (const Edge& e : edges) {
      const double d = dist[e.from] + e.weight - period * e.slots;
      if (d > dist[e.to] + 1e-15) {
        dist[e.to] = d;
        changed = true;
      }
    }
    if (!changed) return false;
  }
  return true;
}

}  // namespace

double PredictIterationByBisection(const std::vector<PredictionStage>& stages,
                                   long long microbatches, double* period) {
  const size_t n = stages.size();
  auto in_flight = [&](size_t s) {
    return static_cast<double>(std::min<long long>(microbatches, static_cast<long long>(n - s)));
  };
  // Node 2s: the forward of stage s in a slot, 2s + 1: its backward.
  std::vector<Edge> edges;
  double total = 0, hi = 0;
  for (size_t s = 0; s < n; ++s) {
    const PredictionStage& st = stages[s];
    edges.push_back({2 * s, 2 * s + 1, st.forward, 0});
    edges.push_back({2 * s + 1, 2 * s, st.backward, 1});
    total += st.forward + st.backward;
    hi += st.forward + st.backward;
    if (s + 1 < n) {
      edges.push_back({2 * s, 2 * s + 2, st.forward + st.to_next, in_flight(s) - in_flight(s + 1)});
      edges.push_back({2 * s + 3, 2 * s + 1, stages[s + 1].backward + st.from_next, 0});
      total += st.to_next + st.from_next;
      hi += st.to_next + st.from_next;
    }
  }
  double lo = 0;
  hi += 1;
  for (int it = 0; it < 200 && hi - lo > 1e-13 * hi; ++it) {
    const double mid = (lo + hi) / 2;
    (HasPositiveCycle(2 * n, edges, mid) ? lo : hi) = mid;
  }
  if (period != nullptr) *period = hi;
  // The once-per-iteration work: stage s starts it when its last backward ends. That backward
  // ends before stage 0's by the chain of backward edges from it down to stage 0 (the last
  // microbatch's gradient passing through b and the transfer back of every stage before it).
  double last_end = -std::numeric_limits<double>::infinity();
  for (size_t s = 0; s < n; ++s) {
    double before_stage0 = 0;
    for (size_t r = 0; r < s; ++r) before_stage0 += stages[r].backward + stages[r].from_next;
    last_end = std::max(last_end, stages[s].overhead - before_stage0);
  }
  return total + static_cast<double>(microbatches - 1) * hi + last_end;
}

double PredictPlanByBisection(const PipelinePlan& plan, double* period) {
  std::vector<PredictionStage> stages(plan.stages.size());
  for (size_t s = 0; s < stages.size(); ++s) {
    const PlannedStage& st = plan.stages[s];
    stages[s].forward = st.forward_latency;
    stages[s].backward = st.latency - st.forward_latency;
    stages[s].overhead = st.iteration_overhead;
  }
  for (const CrossStageTransfer& tr : plan.transfers) {
    if (tr.once_per_iteration) continue;
    if (tr.to_stage > tr.from_stage) {
      stages[static_cast<size_t>(tr.to_stage - 1)].to_next += tr.seconds;
    } else {
      stages[static_cast<size_t>(tr.to_stage)].from_next += tr.seconds;
    }
  }
  return PredictIterationByBisection(stages, static_cast<long long>(plan.microbatches), period);
}

}  // namespace alpa::testing
